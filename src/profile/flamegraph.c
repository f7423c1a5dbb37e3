// SPDX-License-Identifier: Apache-2.0
/* Flame graphs: a self-contained interactive HTML page (canvas + inline JS) and a static SVG. */
#include "profile/flamegraph.h"
#include "profile/flamegraph_tree.h"
#include "profile/output.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "profile/html.h"
#include "util/hash.h"

#define LOG_MODULE "flamegraph"
#include "util/log.h"
#include "util/utf8.h"

/*
 * Both outputs are "icicle" flame graphs: the root ("all") on top, callees below, like
 * speedscope and pprof's web UI, so deep ML stacks open at the interesting end. Siblings are
 * sorted by name (like flamegraph.pl), so the output is deterministic. Frame names are the
 * profile's display names: kernel frames end in "_[k]", Python frames carry "(file:line)".
 *
 * Stacks are merged into a tree by display name. The tree holds every frame, but at most
 * FG_MAX_NODES nodes are emitted: the smallest are cut (their time stays in their parent,
 * shown as self time) and the page says so.
 *
 * Threads: perf users know the thread name (comm) as a flame graph's base frame; here stacks
 * of all threads merge (an ML step runs the same code in many workers) and the tooltip says
 * which threads a frame ran in: the first FG_THREADS thread names of each node with their
 * values, the rest summed as "other threads" (bounded per node, whatever the thread count).
 */
#define FG_MAX_NODES   200000
#define FG_THREADS     2
#define NAME_LEN       1024
#define SVG_WIDTH      1200
#define SVG_ROW	       16
#define SVG_FONT       12
#define SVG_PAD_TOP    56
#define SVG_PAD_SIDE   10
#define SVG_PAD_BOTTOM 24
/*
 * A flame-graph-only node kind: in a profile whose every sample has an ml_phase label (the
 * training steps' profile), stacks hang under one node per phase ("ml_phase=data_wait"),
 * colored apart, so a click on it shows that phase alone.
 */
#define FG_PHASE_KIND 6

/* A node's values: its total and the threads it ran in. */
struct fg_data {
	int64_t value;		  /* total, including children */
	uint32_t th[FG_THREADS];  /* thread name index + 1, 0 = free slot */
	int64_t th_v[FG_THREADS]; /* value per named thread */
	int64_t th_other;	  /* value of the threads beyond the slots */
};

struct tree {
	struct flamegraph_tree ft;
	const struct profile *p;
	int vi;
	char **names; /* unique display names */
	size_t n_names, cap_names;
	uint32_t *name_slots;
	size_t n_name_slots;
	uint32_t *loc_name; /* location id - 1 -> name index */
	uint8_t *loc_kind;
	int64_t cut_below; /* nodes with smaller values were cut; 0 if none */
	bool by_phase;	   /* every sample has ml_phase: one node per phase under the root */
};

static struct fg_data *fgd(const struct tree *t, uint32_t i)
{
	return flamegraph_tree__data(&t->ft, i);
}

/* ---- the profile's tree (on flamegraph_tree.h) ---- */

static uint64_t name_hash_at(size_t i, const void *ctx)
{
	return hash__str(((const struct tree *)ctx)->names[i]);
}

static int name_intern(struct tree *t, const char *s, uint32_t *out)
{
	size_t j;

	if ((t->n_names + 1) * 2 > t->n_name_slots) {
		size_t ns = t->n_name_slots ? t->n_name_slots * 2 : 1024;
		uint32_t *slots = flamegraph_tree__index(ns, 0, t->n_names, name_hash_at, t);

		if (!slots)
			return -ENOMEM;
		free(t->name_slots);
		t->name_slots = slots;
		t->n_name_slots = ns;
	}
	for (j = hash__str(s) & (t->n_name_slots - 1); t->name_slots[j];
	     j = (j + 1) & (t->n_name_slots - 1)) {
		if (strcmp(t->names[t->name_slots[j] - 1], s) == 0) {
			*out = t->name_slots[j] - 1;
			return 0;
		}
	}
	if (t->n_names == t->cap_names) {
		size_t nc = t->cap_names ? t->cap_names * 2 : 256;
		char **nn = realloc(t->names, nc * sizeof(*nn));

		if (!nn)
			return -ENOMEM;
		t->names = nn;
		t->cap_names = nc;
	}
	t->names[t->n_names] = strdup(s);
	if (!t->names[t->n_names])
		return -ENOMEM;
	t->name_slots[j] = (uint32_t)++t->n_names;
	*out = (uint32_t)t->n_names - 1;
	return 0;
}

static const char *name_of(uint32_t name, const void *ctx)
{
	return ((const struct tree *)ctx)->names[name];
}

/* Adds v of thread th (name index + 1, 0 = unknown) to a node's thread slots. */
static void node_thread(struct fg_data *d, uint32_t th, int64_t v)
{
	if (!th)
		return;
	for (int i = 0; i < FG_THREADS; i++) {
		if (!d->th[i])
			d->th[i] = th;
		if (d->th[i] == th) {
			d->th_v[i] += v;
			return;
		}
	}
	d->th_other += v;
}

/* The sample's string label key, or NULL. */
static const char *label_str(const struct profile_sample_view *s, const char *key)
{
	for (int i = 0; i < s->n_labels; i++)
		if (s->labels[i].str && !strcmp(s->labels[i].key, key))
			return s->labels[i].str;
	return NULL;
}

/* Stops (1) at the first sample without an ml_phase label. */
static int phase_cb(const struct profile_sample_view *s, void *ctx)
{
	(void)ctx;
	return label_str(s, "ml_phase") ? 0 : 1;
}

static int add_cb(const struct profile_sample_view *s, void *ctx)
{
	struct tree *t = ctx;
	int64_t v = s->values[t->vi];
	uint32_t cur = 0, th = 0;
	const char *thread = label_str(s, "thread_name");

	if (v <= 0)
		return 0;
	if (thread) {
		if (name_intern(t, thread, &th))
			return -ENOMEM;
		th++;
	}
	fgd(t, 0)->value += v;
	node_thread(fgd(t, 0), th, v);
	if (t->by_phase) {
		char name[96];
		uint32_t ni;

		snprintf(name, sizeof(name), "ml_phase=%s", label_str(s, "ml_phase"));
		if (name_intern(t, name, &ni))
			return -ENOMEM;
		cur = flamegraph_tree__child(&t->ft, cur, ni, FG_PHASE_KIND);
		if (!cur)
			return -ENOMEM;
		fgd(t, cur)->value += v;
		node_thread(fgd(t, cur), th, v);
	}
	/* cap depth so uint16 depths and recursion stay bounded */
	for (int i = s->n_locations - 1; i >= 0 && s->n_locations - i < 4096; i--) {
		uint32_t loc = s->location_ids[i] - 1;

		cur = flamegraph_tree__child(&t->ft, cur, t->loc_name[loc], t->loc_kind[loc]);
		if (!cur)
			return -ENOMEM;
		fgd(t, cur)->value += v;
		node_thread(fgd(t, cur), th, v);
	}
	return 0;
}

static int cmp_i64_desc(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return x < y ? 1 : x > y ? -1 : 0;
}

/* What prune() keeps: values over thr, and budget more of value thr. */
struct cut {
	int64_t thr;
	size_t budget;
};

static bool keep_cb(const struct flamegraph_tree *ft, uint32_t i, void *ctx)
{
	struct cut *c = ctx;
	int64_t v = ((const struct fg_data *)flamegraph_tree__data(ft, i))->value;

	return v > c->thr || (v == c->thr && c->budget && c->budget--);
}

/* Marks at most max nodes to keep, dropping the smallest; parents before children. */
static int prune(struct tree *t, size_t max)
{
	struct cut c = {.thr = INT64_MIN}; /* keeps all */
	size_t n = t->ft.n, above = 0;
	int64_t *vals;

	if (n > max) {
		vals = malloc(n * sizeof(*vals));
		if (!vals)
			return -ENOMEM;
		for (uint32_t i = 0; i < n; i++)
			vals[i] = fgd(t, i)->value;
		qsort(vals, n, sizeof(*vals), cmp_i64_desc);
		c.thr = vals[max - 1];
		free(vals);
		for (uint32_t i = 0; i < n; i++)
			above += fgd(t, i)->value > c.thr;
		c.budget = max - above;
		t->cut_below = c.thr + 1;
	}
	flamegraph_tree__keep(&t->ft, keep_cb, &c);
	return 0;
}

static void tree_free(struct tree *t)
{
	for (size_t i = 0; i < t->n_names; i++)
		free(t->names[i]);
	free(t->names);
	free(t->name_slots);
	flamegraph_tree__free(&t->ft);
	free(t->loc_name);
	free(t->loc_kind);
}

static int tree_build(struct tree *t, const struct profile *p, int vi)
{
	size_t n_locs = profile__n_locations(p);
	char buf[NAME_LEN];
	uint32_t root;
	int err;

	memset(t, 0, sizeof(*t));
	t->p = p;
	t->vi = vi;
	if (vi < 0 || vi >= profile__config(p)->n_sample_types)
		return -EINVAL;
	t->loc_name = calloc(n_locs ? n_locs : 1, sizeof(*t->loc_name));
	t->loc_kind = calloc(n_locs ? n_locs : 1, sizeof(*t->loc_kind));
	if (!t->loc_name || !t->loc_kind)
		return -ENOMEM;
	for (size_t i = 0; i < n_locs; i++) {
		struct profile_location_view lv;

		profile__location(p, i, &lv);
		t->loc_kind[i] = (uint8_t)lv.kind;
		err = name_intern(t, profile__location_name(p, (uint32_t)i + 1, buf, sizeof(buf)),
				  &t->loc_name[i]);
		if (err)
			return err;
	}
	err = name_intern(t, "all", &root);
	if (err)
		return err;
	err = flamegraph_tree__init(&t->ft, sizeof(struct fg_data), root, name_of, t);
	if (err)
		return err;
	t->by_phase = profile__n_samples(p) && !profile__for_each_sample(p, phase_cb, NULL);
	err = profile__for_each_sample(p, add_cb, t);
	if (err)
		return err;
	return prune(t, FG_MAX_NODES);
}

/* ---- HTML ---- */

/* A profile node's members: value, kind and the threads it ran in. */
static void json_members(FILE *f, uint32_t i, void *ctx)
{
	const struct tree *t = ctx;
	const struct flamegraph_node *nd = &t->ft.nodes[i];
	const struct fg_data *d = fgd(t, i), *pd = fgd(t, nd->parent);

	fprintf(f, ",\"value\":%" PRId64 ",\"kind\":%d", d->value,
		nd->kind == FLAMEGRAPH_ROOT_KIND ? -1 : (int)nd->kind);
	/*
	 * Threads: "th":[[name,value],...] and "tho" (other threads). Left out where the node
	 * ran in one thread only, the one its parent ran in (the page looks up the tree).
	 */
	if (d->th[0] && (i == 0 || d->th[1] || d->th_other || pd->th[1] || pd->th_other ||
			 pd->th[0] != d->th[0])) {
		fputs(",\"th\":[", f);
		for (int k = 0; k < FG_THREADS && d->th[k]; k++) {
			fputs(k ? ",[" : "[", f);
			html__json_str(f, t->names[d->th[k] - 1]);
			fprintf(f, ",%" PRId64 "]", d->th_v[k]);
		}
		fprintf(f, "],\"tho\":%" PRId64, d->th_other);
	}
}

static const char html_head[] =
	"<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
	"<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
	"<meta name=\"generator\" content=\"mlprof\">\n<title>";

static const char html_style[] =
	"</title>\n<style>\n"
	":root{--bg:#fafafa;--fg:#1f2328;--muted:#656d76;--line:#d0d7de;--accent:#0969da}\n"
	"*{box-sizing:border-box}\n"
	"html,body{margin:0;background:var(--bg);color:var(--fg);"
	"font:13px/1.4 -apple-system,BlinkMacSystemFont,'Segoe UI',Helvetica,Arial,sans-serif}\n"
	"header{position:sticky;top:0;z-index:2;background:#fff;border-bottom:1px solid "
	"var(--line);"
	"padding:10px 16px;display:flex;align-items:center;gap:16px;flex-wrap:wrap}\n"
	"header h1{font-size:16px;margin:0;font-weight:600;white-space:nowrap;overflow:hidden;"
	"text-overflow:ellipsis;max-width:45vw}\n"
	"#sub{color:var(--muted);font-size:12px}\n"
	".spacer{flex:1}\n"
	"#search{width:260px;padding:5px 8px;border:1px solid var(--line);border-radius:6px;"
	"font:inherit;outline:none}\n"
	"#search:focus{border-color:var(--accent);box-shadow:0 0 0 3px rgba(9,105,218,.15)}\n"
	"button{font:inherit;padding:5px 12px;border:1px solid var(--line);border-radius:6px;"
	"background:#f6f8fa;cursor:pointer}\nbutton:hover{background:#eef1f4}\n"
	"button:disabled{opacity:.5;cursor:default}\n"
	"#matched{color:#a31da3;font-weight:600;min-width:120px}\n"
	"#bar{padding:6px 16px;color:var(--muted);font-size:12px;display:flex;gap:14px;"
	"align-items:center;flex-wrap:wrap;border-bottom:1px solid var(--line);background:#fff}\n"
	".sw{display:inline-block;width:11px;height:11px;border-radius:2px;margin-right:4px;"
	"vertical-align:-1px;border:1px solid rgba(0,0,0,.15)}\n"
	"#crumbs{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;color:var(--fg)}"
	"\n"
	".note{color:#9a6700}\n"
	"#wrap{padding:8px 16px 24px}\n"
	"canvas{display:block;width:100%;cursor:pointer}\n"
	"#tip{position:fixed;z-index:3;pointer-events:none;display:none;max-width:640px;"
	"background:rgba(255,255,255,.97);border:1px solid var(--line);border-radius:6px;"
	"box-shadow:0 4px 14px rgba(0,0,0,.15);padding:8px 10px;font-size:12px}\n"
	"#tip .n{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;"
	"word-break:break-all;font-weight:600;margin-bottom:4px}\n"
	"#tip .k{color:var(--muted)}\n#tip td{padding:0 10px 0 0}\n"
	"#empty{padding:40px;text-align:center;color:var(--muted);display:none}\n"
	"</style>\n</head>\n<body>\n<header><h1 id=\"title\">";

/*
 * The page script: flattens the embedded tree, lays it out on a canvas (one row per depth,
 * root on top), and handles zoom (click), reset (button/Esc/double-click on root), search
 * (substring or /regex/, matched % counted once per subtree) and the tooltip.
 */
static const char html_script[] =
	"<script>\n(function(){\n'use strict';\n"
	"var D=JSON.parse(document.getElementById('fg-data').textContent);\n"
	"var M=JSON.parse(document.getElementById('fg-meta').textContent);\n"
	"var H=window.FG_HOOKS||{};\n"
	"var KN=['native','kernel','python','cuda kernel','truncated','process','training "
	"phase'];\n"
	"var ROW=18,FONT='12px ui-monospace,SFMono-Regular,Menlo,Consolas,monospace';\n"
	"var N=[],maxD=0;\n"
	"(function flat(){var st=[[D,0,0,-1]];while(st.length){var e=st.pop(),n=e[0];"
	"var i=N.length;"
	"N.push({n:n.name,v:n.value,k:n.kind,d:e[1],x:e[2],p:e[3],c:[],m:false,o:n});"
	"if(e[3]>=0)N[e[3]].c.push(i);if(e[1]>maxD)maxD=e[1];var ch=n.children||[],x=e[2];"
	"var tmp=[];for(var j=0;j<ch.length;j++){tmp.push([ch[j],e[1]+1,x,i]);x+=ch[j].value;}"
	"for(j=tmp.length-1;j>=0;j--)st.push(tmp[j]);}})();\n"
	"var total=N[0].v;\n"
	"function hash(s){var h=2166136261;for(var i=0;i<s.length;i++){h^=s.charCodeAt(i);"
	"h=Math.imul(h,16777619);}return ((h>>>0)%1000)/1000;}\n"
	"function rgb(r,g,b){return 'rgb('+(r|0)+','+(g|0)+','+(b|0)+')';}\n"
	"function color(n){if(H.color)return H.color(n);\n"
	"var v=hash(n.n),w=hash(n.n+'~');switch(n.k){\n"
	"case -1:return rgb(190,190,200);\n"
	"case 1:return rgb(230+20*v,190+35*w,60+40*v);\n"
	"case 2:return rgb(70+60*v,185+50*w,95+50*v);\n"
	"case 3:return rgb(95+40*v,125+40*w,225+30*v);\n"
	"case 4:return rgb(165+25*v,165+25*v,165+25*v);\n"
	"case 5:return rgb(175+25*v,165+25*w,145+20*v);\n"
	"case 6:return rgb(170+40*v,120+30*w,210+30*v);\n"
	"default:return rgb(225+30*v,75+85*w,45+25*v);}}\n"
	"var "
	"cv=document.getElementById('fg'),cx=cv.getContext('2d'),tip=document.getElementById('tip')"
	";\n"
	"var zoom=0,hover=-1,rows=[],W=0,searchRe=null;\n"
	"function fmt(v){if(H.fmt)return H.fmt(v);var u=M.unit;if(u==='nanoseconds'){var s=v/1e9;"
	"if(s>=1)return s.toFixed(s>=100?0:2)+' s';if(s>=1e-3)return (v/1e6).toFixed(2)+' ms';"
	"return (v/1e3).toFixed(2)+' \\u00b5s';}"
	"var t=v.toLocaleString('en-US');if(u==='count')return t+(v===1?' sample':' samples');"
	"return t+' '+u;}\n"
	"function pct(a,b){return b?(100*a/b).toFixed(2)+'%':'0%';}\n"
	/* the tooltip's thread row: a node without "th" ran in its nearest listed ancestor's one */
	"function threads(n,row){var a=n;while(a&&!a.o.th)a=a.p>=0?N[a.p]:null;if(!a)return;"
	"var th=a===n?a.o.th:[[a.o.th[0][0],n.v]],s=[];"
	"for(var i=0;i<th.length;i++)s.push(th[i][0]+' '+pct(th[i][1],n.v));"
	"if(a===n&&a.o.tho)s.push('other threads '+pct(a.o.tho,n.v));"
	"row(s.length>1?'Threads':'Thread',s.join(', '));}\n"
	"function isAnc(a,i){while(i>=0){if(i===a)return true;i=N[i].p;}return false;}\n"
	"function render(){var dpr=window.devicePixelRatio||1;W=cv.parentNode.clientWidth-32;"
	"if(W<200)W=200;var H=(maxD+1)*ROW+2;cv.style.height=H+'px';cv.width=Math.round(W*dpr);"
	"cv.height=Math.round(H*dpr);cx.setTransform(dpr,0,0,dpr,0,0);cx.clearRect(0,0,W,H);"
	"cx.font=FONT;cx.textBaseline='middle';rows=[];for(var r=0;r<=maxD;r++)rows.push([]);"
	"var z=N[zoom],sc=W/z.v;"
	"for(var a=z.p;a>=0;a=N[a].p)box(a,0,W,true);"
	"var st=[zoom];while(st.length){var i=st.pop(),n=N[i],x=(n.x-z.x)*sc,w=n.v*sc;"
	"if(w<0.3)continue;box(i,x,w,false);for(var j=n.c.length-1;j>=0;j--)st.push(n.c[j]);}"
	"crumbs();}\n"
	"function box(i,x,w,dim){var n=N[i],y=n.d*ROW;rows[n.d].push([x,w,i]);"
	"cx.fillStyle=(searchRe&&n.m)?'rgb(224,64,251)':color(n);"
	"cx.globalAlpha=dim?0.55:1;cx.fillRect(x+0.5,y+0.5,Math.max(w-1,0.5),ROW-1);"
	"if(i===hover){cx.globalAlpha=1;cx.strokeStyle='#1f2328';cx.lineWidth=1.5;"
	"cx.strokeRect(x+1,y+1,Math.max(w-2,1),ROW-2);}"
	"cx.globalAlpha=1;if(w>28){cx.fillStyle=dim?'#444':'#111';var s=n.n,max=w-8;"
	"if(cx.measureText(s).width>max){var lo=0,hi=s.length;while(lo<hi){var mid=(lo+hi+1)>>1;"
	"if(cx.measureText(s.slice(0,mid)+'\\u2026').width<=max)lo=mid;else hi=mid-1;}"
	"s=lo>0?s.slice(0,lo)+'\\u2026':'';}if(s)cx.fillText(s,x+4,y+ROW/2+0.5);}}\n"
	"function hit(ev){var r=cv.getBoundingClientRect(),x=ev.clientX-r.left,y=ev.clientY-r.top;"
	"var d=Math.floor(y/ROW);if(d<0||d>maxD)return -1;var row=rows[d];"
	"for(var k=0;k<row.length;k++){if(x>=row[k][0]&&x<row[k][0]+row[k][1])return row[k][2];}"
	"return -1;}\n"
	"function crumbs(){var c=document.getElementById('crumbs'),z=N[zoom];"
	"document.getElementById('reset').disabled=zoom===0;"
	"c.textContent=zoom===0?'':'Zoomed: '+z.n+' \\u2014 '+fmt(z.v)+' ('+pct(z.v,total)+')';}\n"
	"cv.addEventListener('mousemove',function(ev){var "
	"i=hit(ev);if(i!==hover){hover=i;render();}"
	"if(i<0){tip.style.display='none';return;}var n=N[i],self=n.v;"
	"for(var j=0;j<n.c.length;j++)self-=N[n.c[j]].v;"
	"tip.innerHTML='';var d=document.createElement('div');d.className='n';d.textContent=n.n;"
	"tip.appendChild(d);var t=document.createElement('table');"
	"function row(k,v){var "
	"tr=t.insertRow(),a=tr.insertCell(),b=tr.insertCell();a.className='k';"
	"a.textContent=k;b.textContent=v;}"
	"if(H.tip)H.tip(n,row);else{row('Kind',n.k<0?'root':KN[n.k]||'?');"
	"row('Total',fmt(n.v)+'  ('+pct(n.v,total)+' of all)');"
	"if(zoom!==0)row('In zoom',pct(n.v,N[zoom].v));row('Self',fmt(self)+'  "
	"('+pct(self,total)+')');threads(n,row);}"
	"tip.appendChild(t);tip.style.display='block';var tx=ev.clientX+14,ty=ev.clientY+16;"
	"var "
	"tw=tip.offsetWidth,th=tip.offsetHeight;if(tx+tw>window.innerWidth-8)tx=ev.clientX-tw-14;"
	"if(ty+th>window.innerHeight-8)ty=ev.clientY-th-12;tip.style.left=Math.max(4,tx)+'px';"
	"tip.style.top=Math.max(4,ty)+'px';});\n"
	"cv.addEventListener('mouseleave',function(){hover=-1;tip.style.display='none';render();});"
	"\n"
	"cv.addEventListener('click',function(ev){var i=hit(ev);if(i<0)return;"
	"zoom=(i===zoom)?(N[i].p>=0?N[i].p:0):i;render();});\n"
	"function reset(){zoom=0;render();}\n"
	"document.getElementById('reset').addEventListener('click',reset);\n"
	"var q=document.getElementById('search'),mt=document.getElementById('matched');\n"
	"function search(){var s=q.value;searchRe=null;if(s){var m=/^\\/(.+)\\/([i]?)$/.exec(s);"
	"try{searchRe=m?new RegExp(m[1],m[2]):new "
	"RegExp(s.replace(/[.*+?^${}()|[\\]\\\\]/g,'\\\\$&'),'i');}"
	"catch(e){searchRe=null;}}var sum=0;for(var "
	"i=0;i<N.length;i++){N[i].m=!!searchRe&&searchRe.test(N[i].n);}"
	"if(searchRe){var st=[0];while(st.length){var k=st.pop();if(N[k].m){sum+=N[k].v;continue;}"
	"for(var j=0;j<N[k].c.length;j++)st.push(N[k].c[j]);}mt.textContent='Matched: "
	"'+pct(sum,total)+"
	"' ('+fmt(sum)+')';}else mt.textContent='';render();}\n"
	"var "
	"qt;q.addEventListener('input',function(){clearTimeout(qt);qt=setTimeout(search,120);});\n"
	"document.addEventListener('keydown',function(ev){if((ev.ctrlKey||ev.metaKey)&&ev.key==='f'"
	"){"
	"ev.preventDefault();q.focus();q.select();}else "
	"if(ev.key==='Escape'){if(document.activeElement===q"
	"&&q.value){q.value='';search();}else reset();}});\n"
	"window.addEventListener('resize',render);\n"
	"var "
	"h=/[#&]q=([^&]*)/"
	".exec(location.hash);if(h){try{q.value=decodeURIComponent(h[1]);}catch(e){}search();}\n"
	"if(!total){document.getElementById('empty').style.display='block';cv.style.display='none';"
	"}\n"
	"render();\n})();\n</script>\n</body>\n</html>\n";

static void legend(FILE *f, bool phases)
{
	static const struct {
		const char *color, *label;
	} items[] = {
		{"rgb(240,118,58)", "native"},	   {"rgb(240,207,80)", "kernel"},
		{"rgb(100,210,120)", "python"},	   {"rgb(115,145,240)", "cuda kernel"},
		{"rgb(178,178,178)", "truncated"}, {"rgb(187,177,155)", "process"},
	};

	for (size_t i = 0; i < sizeof(items) / sizeof(items[0]); i++)
		fprintf(f, "<span><span class=\"sw\" style=\"background:%s\"></span>%s</span>",
			items[i].color, items[i].label);
	if (phases)
		fputs("<span><span class=\"sw\" style=\"background:rgb(190,135,225)\"></span>"
		      "training phase (click one to see it alone)</span>",
		      f);
}

/* See flamegraph.h. */
int flamegraph__write_page(FILE *f, const struct flamegraph_page *pg)
{
	const char *title = pg->title && *pg->title ? pg->title : "mlprof flame graph";
	int err;

	fputs(html_head, f);
	html__text(f, title, 0);
	fputs(html_style, f);
	html__text(f, title, 0);
	fputs("</h1><span id=\"sub\">", f);
	pg->subtitle(f, pg->ctx);
	fputs("</span>", f);
	fputs("<span class=\"spacer\"></span><span id=\"matched\"></span>"
	      "<input id=\"search\" type=\"search\" placeholder=\"Search (text or /regex/)  "
	      "Ctrl+F\" "
	      "autocomplete=\"off\"><button id=\"reset\" disabled>Reset zoom</button></header>\n"
	      "<div id=\"bar\">",
	      f);
	pg->legend(f, pg->ctx);
	fputs("<span class=\"spacer\"></span><span id=\"crumbs\"></span>", f);
	if (pg->notes)
		pg->notes(f, pg->ctx);
	fputs("</div>\n<div id=\"wrap\"><canvas id=\"fg\"></canvas>"
	      "<div id=\"empty\">No samples in this profile.</div></div>\n<div id=\"tip\"></div>\n",
	      f);

	fputs("<script type=\"application/json\" id=\"fg-meta\">{\"title\":", f);
	html__json_str(f, title);
	fputs(",\"type\":", f);
	html__json_str(f, pg->type ? pg->type : "");
	fputs(",\"unit\":", f);
	html__json_str(f, pg->unit ? pg->unit : "");
	fprintf(f, ",\"total\":%" PRId64 ",\"nodes\":%zu,\"allNodes\":%zu}</script>\n", pg->total,
		pg->n_nodes, pg->n_all_nodes);
	fputs("<script type=\"application/json\" id=\"fg-data\">", f);
	err = pg->tree(f, pg->ctx);
	if (err)
		return err;
	fputs("</script>\n", f);
	if (pg->script) {
		fputs("<script>\n", f);
		pg->script(f, pg->ctx);
		fputs("\n</script>\n", f);
	}
	fputs(html_script, f);
	return ferror(f) ? -EIO : 0;
}

struct html_ctx {
	const struct profile *p;
	const struct tree *t;
	int vi;
};

static void html_subtitle(FILE *f, void *ctx)
{
	const struct html_ctx *c = ctx;
	const struct profile_config *cfg = profile__config(c->p);

	html__text(f, cfg->sample_types[c->vi].type ? cfg->sample_types[c->vi].type : "", 0);
	fputs(" &middot; ", f);
	html__text(f, cfg->sample_types[c->vi].unit ? cfg->sample_types[c->vi].unit : "", 0);
	fprintf(f, " &middot; total %" PRId64 " &middot; %zu stacks", fgd(c->t, 0)->value,
		profile__n_samples(c->p));
}

static void html_legend(FILE *f, void *ctx)
{
	const struct html_ctx *c = ctx;

	legend(f, c->t->by_phase);
}

static void html_notes(FILE *f, void *ctx)
{
	const struct html_ctx *c = ctx;

	if (c->t->ft.n_kept < c->t->ft.n)
		fprintf(f,
			"<span class=\"note\">Showing %zu of %zu frames: frames under %" PRId64
			" are folded into their callers.</span>",
			c->t->ft.n_kept, c->t->ft.n, c->t->cut_below);
	if (profile__dropped(c->p))
		fprintf(f, "<span class=\"note\">%" PRIu64 " samples dropped (memory bound)</span>",
			profile__dropped(c->p));
}

static int html_tree(FILE *f, void *ctx)
{
	const struct html_ctx *c = ctx;

	return flamegraph_tree__write_json(f, &c->t->ft, 0, json_members, (void *)c->t);
}

int flamegraph__write_html(const struct profile *p, int vi, const char *title, FILE *f)
{
	const struct profile_config *cfg = profile__config(p);
	struct html_ctx c = {.p = p, .vi = vi};
	struct flamegraph_page pg = {
		.title = title,
		.subtitle = html_subtitle,
		.legend = html_legend,
		.notes = html_notes,
		.tree = html_tree,
		.ctx = &c,
	};
	struct tree t;
	int err;

	err = tree_build(&t, p, vi);
	if (err)
		goto cleanup;
	c.t = &t;
	pg.type = cfg->sample_types[vi].type;
	pg.unit = cfg->sample_types[vi].unit;
	pg.total = fgd(&t, 0)->value;
	pg.n_nodes = t.ft.n_kept;
	pg.n_all_nodes = t.ft.n;
	err = flamegraph__write_page(f, &pg);
cleanup:
	tree_free(&t);
	return err;
}

/* ---- SVG ---- */

static uint32_t name_hash(const char *s)
{
	uint64_t h = hash__str(s);

	return (uint32_t)(h ^ (h >> 32));
}

/* Same palette as the HTML page (flamegraph.pl-like hues per frame kind). */
static void svg_color(const char *name, int kind, char *out, size_t len)
{
	double v = (name_hash(name) % 1000) / 1000.0;
	double w = (name_hash(name) / 1000 % 1000) / 1000.0;
	int r, g, b;

	switch (kind) {
	case FLAMEGRAPH_ROOT_KIND:
		r = 190, g = 190, b = 200;
		break;
	case FRAME_KERNEL:
		r = 230 + (int)(20 * v), g = 190 + (int)(35 * w), b = 60 + (int)(40 * v);
		break;
	case FRAME_PYTHON:
		r = 70 + (int)(60 * v), g = 185 + (int)(50 * w), b = 95 + (int)(50 * v);
		break;
	case FRAME_CUDA_KERNEL:
		r = 95 + (int)(40 * v), g = 125 + (int)(40 * w), b = 225 + (int)(30 * v);
		break;
	case FRAME_TRUNCATED:
		r = g = b = 165 + (int)(25 * v);
		break;
	case FRAME_PROCESS:
		r = 175 + (int)(25 * v), g = 165 + (int)(25 * w), b = 145 + (int)(20 * v);
		break;
	case FG_PHASE_KIND:
		r = 170 + (int)(40 * v), g = 120 + (int)(30 * w), b = 210 + (int)(30 * v);
		break;
	default:
		r = 225 + (int)(30 * v), g = 75 + (int)(85 * w), b = 45 + (int)(25 * v);
	}
	if (snprintf(out, len, "rgb(%d,%d,%d)", r, g, b) >= (int)len)
		out[0] = '\0'; /* caller buffers are large enough; never a partial colour */
}

struct svg_ctx {
	FILE *f;
	const struct tree *t;
	double scale; /* pixels per value unit */
	int64_t total;
	const char *unit;
	int err;
};

static void svg_node(struct svg_ctx *c, uint32_t i, double x)
{
	const struct tree *t = c->t;
	const struct flamegraph_node *nd = &t->ft.nodes[i];
	const char *name = t->names[nd->name];
	int64_t value = fgd(t, i)->value;
	double w = (double)value * c->scale;
	double y = SVG_PAD_TOP + (double)nd->depth * SVG_ROW;
	uint32_t *kids;
	size_t n, fit;
	char col[32];

	if (w < 0.1) /* like flamegraph.pl --minwidth: invisible frames are left out */
		return;
	svg_color(name, nd->kind, col, sizeof(col));
	fputs("<g><title>", c->f);
	html__text(c->f, name, 0);
	fprintf(c->f, " (%" PRId64 " %s, %.2f%%)</title>", value, c->unit,
		c->total ? 100.0 * (double)value / (double)c->total : 0.0);
	fprintf(c->f,
		"<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%d\" fill=\"%s\" rx=\"2\"/>",
		x, y, w, SVG_ROW - 1, col);
	fit = (size_t)((w - 6) / (SVG_FONT * 0.59));
	if (fit >= 3) {
		fprintf(c->f, "<text x=\"%.1f\" y=\"%.1f\">", x + 3, y + SVG_ROW - 4.5);
		if (utf8__count(name) <= fit) {
			html__text(c->f, name, 0);
		} else {
			html__text(c->f, name, fit - 2);
			fputs("..", c->f);
		}
		fputs("</text>", c->f);
	}
	fputs("</g>\n", c->f);

	kids = flamegraph_tree__sorted_children(&t->ft, i, &n);
	if (!kids) {
		c->err = -ENOMEM;
		return;
	}
	for (size_t k = 0; k < n && !c->err; k++) {
		svg_node(c, kids[k], x);
		x += (double)fgd(t, kids[k])->value * c->scale;
	}
	free(kids);
}

int flamegraph__write_svg(const struct profile *p, int vi, const char *title, FILE *f)
{
	const struct profile_config *cfg = profile__config(p);
	struct svg_ctx c = {.f = f};
	struct tree t;
	int height, err;

	err = tree_build(&t, p, vi);
	if (err)
		goto cleanup;
	if (!title || !*title)
		title = "mlprof flame graph";
	c.t = &t;
	c.total = fgd(&t, 0)->value;
	c.unit = cfg->sample_types[vi].unit ? cfg->sample_types[vi].unit : "";
	if (!strcmp(c.unit, "count"))
		c.unit = "samples";
	c.scale = c.total ? (double)(SVG_WIDTH - 2 * SVG_PAD_SIDE) / (double)c.total : 0;
	height = SVG_PAD_TOP + (t.ft.max_depth + 1) * SVG_ROW + SVG_PAD_BOTTOM;

	fprintf(f,
		"<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" width=\"%d\" "
		"height=\"%d\" viewBox=\"0 0 %d %d\">\n",
		SVG_WIDTH, height, SVG_WIDTH, height);
	fputs("<defs><linearGradient id=\"bg\" x1=\"0\" y1=\"0\" x2=\"0\" y2=\"1\">"
	      "<stop stop-color=\"#eeeeee\" offset=\"5%\"/><stop stop-color=\"#eeeeb0\" "
	      "offset=\"95%\"/></linearGradient></defs>\n"
	      "<style>text{font-family:Verdana,'DejaVu Sans',sans-serif;font-size:12px;fill:#000}"
	      " .t{font-size:17px;text-anchor:middle} .s{font-size:12px;fill:#555;"
	      "text-anchor:middle} g:hover rect{stroke:#000;stroke-width:0.8}</style>\n",
	      f);
	fprintf(f, "<rect x=\"0\" y=\"0\" width=\"%d\" height=\"%d\" fill=\"url(#bg)\"/>\n",
		SVG_WIDTH, height);
	fprintf(f, "<text class=\"t\" x=\"%d\" y=\"24\">", SVG_WIDTH / 2);
	html__text(f, title, 0);
	fprintf(f, "</text>\n<text class=\"s\" x=\"%d\" y=\"44\">", SVG_WIDTH / 2);
	html__text(f, cfg->sample_types[vi].type ? cfg->sample_types[vi].type : "", 0);
	fprintf(f, " &#183; total %" PRId64 " ", c.total);
	html__text(f, c.unit, 0);
	if (t.ft.n_kept < t.ft.n)
		fprintf(f, " &#183; %zu of %zu frames shown", t.ft.n_kept, t.ft.n);
	fputs("</text>\n", f);
	if (c.total)
		svg_node(&c, 0, SVG_PAD_SIDE);
	else
		fprintf(f, "<text class=\"s\" x=\"%d\" y=\"%d\">No samples</text>\n", SVG_WIDTH / 2,
			SVG_PAD_TOP + 20);
	err = c.err;
	if (err)
		goto cleanup;
	fputs("</svg>\n", f);
	err = ferror(f) ? -EIO : 0;
cleanup:
	tree_free(&t);
	return err;
}
