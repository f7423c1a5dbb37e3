// SPDX-License-Identifier: Apache-2.0
/* Differential flame graph: both profiles' stacks merged into one tree, coloured by change. */
#include "diff_flamegraph.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "flamegraph.h"

/*
 * Like Brendan Gregg's differential flame graphs, red is growth and blue is shrink; unlike
 * them the width is not the new profile alone but the average of each profile's share of
 * its own total, so frames that vanished still show (in blue) and the root is 100%.
 * Shares make profiles of different lengths comparable, as in the text report.
 */
#define DFG_MAX_NODES 100000
#define DFG_MAX_DEPTH 4096
#define ROOT_NAME     UINT32_MAX
#define WIDTH_UNITS   1e9 /* the root's width: the page lays out integer values */
#define MIN_POINTS    0.005

static const int grow_rgb[3] = {224, 52, 40};
static const int shrink_rgb[3] = {44, 110, 224};
static const int same_rgb[3] = {222, 222, 222};

struct dnode {
	uint32_t name; /* row id, ROOT_NAME for the root */
	uint32_t parent;
	uint32_t first_child; /* 0 = none (node 0 is the root, never a child) */
	uint32_t next_sibling;
	int64_t v[2]; /* base, new: including children */
	double w;     /* average share of both totals, 0..1 */
	bool keep;
};

struct dtree {
	const struct diff_result *r;
	const char *type, *unit;
	struct dnode *nodes;
	size_t n, cap;
	uint32_t *slots; /* (parent, name) -> node index + 1 */
	size_t nslots;
	int side; /* the side being added */
	size_t n_kept;
	double scale; /* a change of this many points is drawn in full colour */
	int err;
};

static uint64_t node_hash(uint32_t parent, uint32_t name)
{
	uint64_t h = ((uint64_t)parent << 32 | name) * 0x9e3779b97f4a7c15ULL;

	return h ^ (h >> 29);
}

static int grow(struct dtree *t)
{
	if (t->n == t->cap) {
		size_t nc = t->cap ? t->cap * 2 : 1024;
		struct dnode *nn = realloc(t->nodes, nc * sizeof(*nn));

		if (!nn)
			return -ENOMEM;
		t->nodes = nn;
		t->cap = nc;
	}
	if ((t->n + 1) * 2 > t->nslots) {
		size_t ns = t->nslots ? t->nslots * 2 : 2048;
		uint32_t *slots = calloc(ns, sizeof(*slots));

		if (!slots)
			return -ENOMEM;
		for (size_t i = 1; i < t->n; i++) {
			size_t j = node_hash(t->nodes[i].parent, t->nodes[i].name) & (ns - 1);

			while (slots[j])
				j = (j + 1) & (ns - 1);
			slots[j] = (uint32_t)i + 1;
		}
		free(t->slots);
		t->slots = slots;
		t->nslots = ns;
	}
	return 0;
}

/* Returns the child of parent with this name, creating it; 0 on ENOMEM. */
static uint32_t child_of(struct dtree *t, uint32_t parent, uint32_t name)
{
	size_t j;

	if (grow(t))
		return 0;
	for (j = node_hash(parent, name) & (t->nslots - 1); t->slots[j];
	     j = (j + 1) & (t->nslots - 1)) {
		const struct dnode *nd = &t->nodes[t->slots[j] - 1];

		if (nd->parent == parent && nd->name == name)
			return t->slots[j] - 1;
	}
	t->nodes[t->n] = (struct dnode){
		.name = name,
		.parent = parent,
		.next_sibling = t->nodes[parent].first_child,
	};
	t->nodes[parent].first_child = (uint32_t)t->n;
	t->slots[j] = (uint32_t)++t->n;
	return (uint32_t)t->n - 1;
}

static int add_cb(const uint32_t *rows, int n, int64_t value, void *ctx)
{
	struct dtree *t = ctx;
	uint32_t cur = 0;

	t->nodes[0].v[t->side] += value;
	/* root first; very deep stacks are cut at their root end's DFG_MAX_DEPTH frames */
	for (int i = n - 1; i >= 0 && n - i <= DFG_MAX_DEPTH; i--) {
		cur = child_of(t, cur, rows[i]);
		if (!cur)
			return -ENOMEM;
		t->nodes[cur].v[t->side] += value;
	}
	return 0;
}

static int cmp_double_desc(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? 1 : x > y ? -1 : 0;
}

/* Keeps at most max nodes, the widest; parents before children, nothing of no width. */
static int prune(struct dtree *t, size_t max)
{
	double *ws, thr = 0;
	size_t above = 0, budget = 0;

	if (t->n > max) {
		ws = malloc(t->n * sizeof(*ws));
		if (!ws)
			return -ENOMEM;
		for (size_t i = 0; i < t->n; i++)
			ws[i] = t->nodes[i].w;
		qsort(ws, t->n, sizeof(*ws), cmp_double_desc);
		thr = ws[max - 1];
		free(ws);
		for (size_t i = 0; i < t->n; i++)
			above += t->nodes[i].w > thr;
		budget = max - above;
	}
	t->n_kept = 0;
	/* node indexes grow from parent to child, so parents are decided first */
	for (size_t i = 0; i < t->n; i++) {
		struct dnode *nd = &t->nodes[i];
		bool pk = i == 0 || t->nodes[nd->parent].keep;

		nd->keep = i == 0 || (pk && nd->w > 0 &&
				      (nd->w > thr || (nd->w == thr && budget && budget--)));
		t->n_kept += nd->keep;
	}
	return 0;
}

static double delta_points(const struct dtree *t, const struct dnode *nd)
{
	return 100.0 * ((double)nd->v[1] / (double)diff__result_total(t->r, 1) -
			(double)nd->v[0] / (double)diff__result_total(t->r, 0));
}

static int tree_build(struct dtree *t)
{
	double t0 = (double)diff__result_total(t->r, 0), t1 = (double)diff__result_total(t->r, 1);
	int err;

	err = grow(t);
	if (err)
		return err;
	t->nodes[0] = (struct dnode){.name = ROOT_NAME};
	t->n = 1;
	for (t->side = 0; t->side < 2; t->side++) {
		err = diff__for_each_stack(t->r, t->side, add_cb, t);
		if (err)
			return err;
	}
	for (size_t i = 0; i < t->n; i++) {
		struct dnode *nd = &t->nodes[i];

		nd->w = 0.5 * ((double)nd->v[0] / t0 + (double)nd->v[1] / t1);
	}
	err = prune(t, DFG_MAX_NODES);
	if (err)
		return err;
	t->scale = 1.0;
	for (size_t i = 1; i < t->n; i++)
		if (t->nodes[i].keep && fabs(delta_points(t, &t->nodes[i])) > t->scale)
			t->scale = fabs(delta_points(t, &t->nodes[i]));
	return 0;
}

static int child_cmp(const void *a, const void *b, void *ctx)
{
	const struct dtree *t = ctx;
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return strcmp(diff__row_name(t->r, t->nodes[x].name),
		      diff__row_name(t->r, t->nodes[y].name));
}

/* The kept children of node i sorted by name (malloc'd, *n set), or NULL on ENOMEM. */
static uint32_t *sorted_children(const struct dtree *t, uint32_t i, size_t *n)
{
	uint32_t *arr;
	size_t k = 0;

	for (uint32_t c = t->nodes[i].first_child; c; c = t->nodes[c].next_sibling)
		k += t->nodes[c].keep;
	arr = malloc((k ? k : 1) * sizeof(*arr));
	if (!arr)
		return NULL;
	*n = k;
	k = 0;
	for (uint32_t c = t->nodes[i].first_child; c; c = t->nodes[c].next_sibling)
		if (t->nodes[c].keep)
			arr[k++] = c;
	qsort_r(arr, k, sizeof(*arr), child_cmp, (void *)t);
	return arr;
}

/* Writes node i and its kept children as JSON (see flamegraph.h for the members). */
static void json_node(FILE *f, struct dtree *t, uint32_t i)
{
	const struct dnode *nd = &t->nodes[i];
	int64_t self[2] = {nd->v[0], nd->v[1]};
	uint32_t *kids;
	size_t n;

	kids = sorted_children(t, i, &n);
	if (!kids) {
		t->err = -ENOMEM;
		return;
	}
	for (size_t k = 0; k < n; k++) {
		self[0] -= t->nodes[kids[k]].v[0];
		self[1] -= t->nodes[kids[k]].v[1];
	}
	fputs("{\"name\":", f);
	flamegraph__json_str(f, nd->name == ROOT_NAME ? "all" : diff__row_name(t->r, nd->name));
	fprintf(f,
		",\"value\":%" PRId64 ",\"kind\":%d,\"b\":%" PRId64 ",\"n\":%" PRId64
		",\"sb\":%" PRId64 ",\"sn\":%" PRId64 ",\"d\":%.4f",
		(int64_t)llround(nd->w * WIDTH_UNITS), nd->name == ROOT_NAME ? -1 : 0, nd->v[0],
		nd->v[1], self[0], self[1], delta_points(t, nd));
	if (n) {
		fputs(",\"children\":[", f);
		for (size_t k = 0; k < n && !t->err; k++) {
			if (k)
				fputc(',', f);
			json_node(f, t, kids[k]);
		}
		fputc(']', f);
	}
	fputc('}', f);
	free(kids);
}

static int page_tree(FILE *f, void *ctx)
{
	struct dtree *t = ctx;

	json_node(f, t, 0);
	return t->err;
}

static void page_subtitle(FILE *f, void *ctx)
{
	const struct dtree *t = ctx;
	int64_t tb = diff__result_total(t->r, 0), tn = diff__result_total(t->r, 1);
	char a[32], b[32];

	flamegraph__xml_str(f, t->type);
	fputs(" &middot; base total ", f);
	flamegraph__xml_str(f, diff__format_value(tb, t->unit, a, sizeof(a)));
	fputs(" &rarr; new ", f);
	flamegraph__xml_str(f, diff__format_value(tn, t->unit, b, sizeof(b)));
	fprintf(f,
		" (%+.1f%%) &middot; width: average share of both &middot; colour: change of share",
		100.0 * ((double)tn - (double)tb) / (double)tb);
}

static void swatch(FILE *f, const int rgb[3], const char *label)
{
	fprintf(f, "<span><span class=\"sw\" style=\"background:rgb(%d,%d,%d)\"></span>%s</span>",
		rgb[0], rgb[1], rgb[2], label);
}

static void page_legend(FILE *f, void *ctx)
{
	const struct dtree *t = ctx;
	char label[64];

	snprintf(label, sizeof(label), "grew (%.2f+ points)", t->scale);
	swatch(f, grow_rgb, label);
	snprintf(label, sizeof(label), "shrank (%.2f+ points)", t->scale);
	swatch(f, shrink_rgb, label);
	swatch(f, same_rgb, "same share");
}

static void page_notes(FILE *f, void *ctx)
{
	const struct dtree *t = ctx;

	if (t->n_kept < t->n)
		fprintf(f,
			"<span class=\"note\">Showing %zu of %zu frames: the narrowest are folded "
			"into their callers.</span>",
			t->n_kept, t->n);
}

/*
 * The page's hooks: colour by change (pale to full at t->scale points), the tooltip with
 * both profiles' values and shares, and widths printed as average shares.
 */
static void page_script(FILE *f, void *ctx)
{
	const struct dtree *t = ctx;

	fprintf(f,
		"window.FG_HOOKS=(function(){\n'use strict';\n"
		"var TB=%" PRId64 ",TN=%" PRId64 ",S=%.4f,MIN=%.3f,WU=%.0f,U=",
		diff__result_total(t->r, 0), diff__result_total(t->r, 1), t->scale, MIN_POINTS,
		WIDTH_UNITS);
	flamegraph__json_str(f, t->unit);
	fprintf(f, ";\nvar G=[%d,%d,%d],B=[%d,%d,%d],Z=[%d,%d,%d];\n", grow_rgb[0], grow_rgb[1],
		grow_rgb[2], shrink_rgb[0], shrink_rgb[1], shrink_rgb[2], same_rgb[0], same_rgb[1],
		same_rgb[2]);
	fputs("function f(v){var a=Math.abs(v);if(U==='nanoseconds'){"
	      "if(a>=1e9)return (v/1e9).toFixed(2)+' s';if(a>=1e6)return (v/1e6).toFixed(2)+' ms';"
	      "if(a>=1e3)return (v/1e3).toFixed(2)+' us';return v+' ns';}"
	      "if(U==='bytes'){var u=['B','KiB','MiB','GiB','TiB'],i=0;"
	      "while(Math.abs(v)>=1024&&i<4){v/=1024;i++;}return i?v.toFixed(2)+' '+u[i]:v+' B';}"
	      "return v.toLocaleString('en-US')+(U&&U!=='count'?' '+U:'');}\n"
	      "function p(a,t){return t?(100*a/t).toFixed(2)+'%':'-';}\n"
	      "function pts(d){return (d>=0?'+':'')+d.toFixed(2)+' points';}\n"
	      "return {\n"
	      "color:function(n){var d=n.o.d,c=d>0?G:B,k;if(n.k<0)return 'rgb(190,190,200)';"
	      "if(Math.abs(d)<MIN)c=Z,k=1;else k=0.25+0.75*Math.min(1,Math.abs(d)/S);"
	      "return 'rgb('+Math.round(Z[0]+(c[0]-Z[0])*k)+','+Math.round(Z[1]+(c[1]-Z[1])*k)+','"
	      "+Math.round(Z[2]+(c[2]-Z[2])*k)+')';},\n"
	      "fmt:function(v){return (100*v/WU).toFixed(2)+'% average share';},\n"
	      "tip:function(n,row){var o=n.o;"
	      "row('Change',pts(o.d));"
	      "row('Base',f(o.b)+'  ('+p(o.b,TB)+' of base)');"
	      "row('New',f(o.n)+'  ('+p(o.n,TN)+' of new)');"
	      "row('Self base',f(o.sb)+'  ('+p(o.sb,TB)+')');"
	      "row('Self new',f(o.sn)+'  ('+p(o.sn,TN)+')');}\n"
	      "};})();",
	      f);
}

/* See diff_flamegraph.h. */
int diff_flamegraph__write_html(const struct diff_result *r, const char *title, const char *type,
				const char *unit, FILE *f)
{
	struct dtree t = {.r = r, .type = type, .unit = unit};
	struct flamegraph_page pg = {
		.title = title,
		.type = type,
		.unit = unit,
		.total = (int64_t)WIDTH_UNITS,
		.subtitle = page_subtitle,
		.legend = page_legend,
		.notes = page_notes,
		.tree = page_tree,
		.script = page_script,
		.ctx = &t,
	};
	int err;

	err = tree_build(&t);
	if (err)
		goto cleanup;
	pg.n_nodes = t.n_kept;
	pg.n_all_nodes = t.n;
	err = flamegraph__write_page(f, &pg);
cleanup:
	free(t.nodes);
	free(t.slots);
	return err;
}
