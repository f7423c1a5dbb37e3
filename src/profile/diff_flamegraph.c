// SPDX-License-Identifier: Apache-2.0
/* Differential flame graph: both profiles' stacks merged into one tree, coloured by change. */
#include "profile/diff_flamegraph.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>

#include "profile/flamegraph.h"
#include "profile/flamegraph_tree.h"
#include "profile/html.h"

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

/* A node's values. */
struct dval {
	int64_t v[2]; /* base, new: including children */
	double w;     /* average share of both totals, 0..1 */
};

struct dtree {
	struct flamegraph_tree ft;
	const struct diff_result *r;
	const char *type, *unit;
	int side;     /* the side being added */
	double scale; /* a change of this many points is drawn in full colour */
	/* what prune() keeps: widths over thr, and budget more of width thr */
	double thr;
	size_t budget;
};

static struct dval *dval(const struct dtree *t, uint32_t i)
{
	return flamegraph_tree__data(&t->ft, i);
}

static const char *node_name(uint32_t name, const void *ctx)
{
	return name == ROOT_NAME ? "all" : diff__row_name(ctx, name);
}

static int add_cb(const uint32_t *rows, int n, int64_t value, void *ctx)
{
	struct dtree *t = ctx;
	uint32_t cur = 0;

	dval(t, 0)->v[t->side] += value;
	/* root first; very deep stacks are cut at their root end's DFG_MAX_DEPTH frames */
	for (int i = n - 1; i >= 0 && n - i <= DFG_MAX_DEPTH; i--) {
		cur = flamegraph_tree__child(&t->ft, cur, rows[i], 0);
		if (!cur)
			return -ENOMEM;
		dval(t, cur)->v[t->side] += value;
	}
	return 0;
}

static int cmp_double_desc(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? 1 : x > y ? -1 : 0;
}

static bool keep_cb(const struct flamegraph_tree *ft, uint32_t i, void *ctx)
{
	struct dtree *t = ctx;
	double w = dval(t, i)->w;

	return i == 0 || (w > 0 && (w > t->thr || (w == t->thr && t->budget && t->budget--)));
}

/* Keeps at most max nodes, the widest; parents before children, nothing of no width. */
static int prune(struct dtree *t, size_t max)
{
	size_t n = t->ft.n, above = 0;
	double *ws;

	if (n > max) {
		ws = malloc(n * sizeof(*ws));
		if (!ws)
			return -ENOMEM;
		for (uint32_t i = 0; i < n; i++)
			ws[i] = dval(t, i)->w;
		qsort(ws, n, sizeof(*ws), cmp_double_desc);
		t->thr = ws[max - 1];
		free(ws);
		for (uint32_t i = 0; i < n; i++)
			above += dval(t, i)->w > t->thr;
		t->budget = max - above;
	}
	flamegraph_tree__keep(&t->ft, keep_cb, t);
	return 0;
}

static double delta_points(const struct dtree *t, uint32_t i)
{
	const struct dval *d = dval(t, i);

	return 100.0 * ((double)d->v[1] / (double)diff__result_total(t->r, 1) -
			(double)d->v[0] / (double)diff__result_total(t->r, 0));
}

static int tree_build(struct dtree *t)
{
	double t0 = (double)diff__result_total(t->r, 0), t1 = (double)diff__result_total(t->r, 1);
	int err;

	err = flamegraph_tree__init(&t->ft, sizeof(struct dval), ROOT_NAME, node_name, t->r);
	if (err)
		return err;
	for (t->side = 0; t->side < 2; t->side++) {
		err = diff__for_each_stack(t->r, t->side, add_cb, t);
		if (err)
			return err;
	}
	for (uint32_t i = 0; i < t->ft.n; i++) {
		struct dval *d = dval(t, i);

		d->w = 0.5 * ((double)d->v[0] / t0 + (double)d->v[1] / t1);
	}
	err = prune(t, DFG_MAX_NODES);
	if (err)
		return err;
	t->scale = 1.0;
	for (uint32_t i = 1; i < t->ft.n; i++)
		if (t->ft.nodes[i].keep && fabs(delta_points(t, i)) > t->scale)
			t->scale = fabs(delta_points(t, i));
	return 0;
}

/* A node's members (see flamegraph.h): width, both values, self values and the change. */
static void json_members(FILE *f, uint32_t i, void *ctx)
{
	const struct dtree *t = ctx;
	const struct flamegraph_node *nd = &t->ft.nodes[i];
	const struct dval *d = dval(t, i);
	int64_t self[2] = {d->v[0], d->v[1]};

	for (uint32_t c = nd->first_child; c; c = t->ft.nodes[c].next_sibling) {
		if (t->ft.nodes[c].keep) {
			self[0] -= dval(t, c)->v[0];
			self[1] -= dval(t, c)->v[1];
		}
	}
	fprintf(f,
		",\"value\":%" PRId64 ",\"kind\":%d,\"b\":%" PRId64 ",\"n\":%" PRId64
		",\"sb\":%" PRId64 ",\"sn\":%" PRId64 ",\"d\":%.4f",
		(int64_t)llround(d->w * WIDTH_UNITS), nd->name == ROOT_NAME ? -1 : 0, d->v[0],
		d->v[1], self[0], self[1], delta_points(t, i));
}

static int page_tree(FILE *f, void *ctx)
{
	struct dtree *t = ctx;

	return flamegraph_tree__write_json(f, &t->ft, 0, json_members, t);
}

static void page_subtitle(FILE *f, void *ctx)
{
	const struct dtree *t = ctx;
	int64_t tb = diff__result_total(t->r, 0), tn = diff__result_total(t->r, 1);
	char a[32], b[32];

	html__text(f, t->type, 0);
	fputs(" &middot; base total ", f);
	html__text(f, diff__format_value(tb, t->unit, a, sizeof(a)), 0);
	fputs(" &rarr; new ", f);
	html__text(f, diff__format_value(tn, t->unit, b, sizeof(b)), 0);
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

	if (t->ft.n_kept < t->ft.n)
		fprintf(f,
			"<span class=\"note\">Showing %zu of %zu frames: the narrowest are folded "
			"into their callers.</span>",
			t->ft.n_kept, t->ft.n);
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
	html__json_str(f, t->unit);
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
	pg.n_nodes = t.ft.n_kept;
	pg.n_all_nodes = t.ft.n;
	err = flamegraph__write_page(f, &pg);
cleanup:
	flamegraph_tree__free(&t.ft);
	return err;
}
