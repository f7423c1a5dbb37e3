/* SPDX-License-Identifier: Apache-2.0 */
/* The interactive flame graph page, shared by writers of different trees (record, diff). */
#ifndef MLPROF_FLAMEGRAPH_H
#define MLPROF_FLAMEGRAPH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/*
 * What a tree writer supplies to flamegraph__write_page(). The page lays the tree out as an
 * icicle graph (root on top) with zoom, search and a tooltip. Callbacks write into the page
 * at their place and must escape what they print (profile/html.h).
 */
struct flamegraph_page {
	const char *title; /* <title> and heading; NULL or "" for "mlprof flame graph" */
	const char *type;  /* value type and unit, e.g. "cpu", "nanoseconds" (metadata) */
	const char *unit;  /* the page's default tooltip formats values in this unit */
	int64_t total;	   /* value of the root (metadata) */
	size_t n_nodes;	   /* nodes written, and nodes in the whole tree (metadata) */
	size_t n_all_nodes;
	void (*subtitle)(FILE *f, void *ctx); /* HTML after the heading */
	void (*legend)(FILE *f, void *ctx);   /* HTML swatches in the bar under the header */
	void (*notes)(FILE *f, void *ctx);    /* HTML notes at the bar's end; may be NULL */
	/*
	 * Writes the tree as one JSON object per node: {"name":..., "value":..., "kind":...,
	 * "children":[...]} where value includes the children and kind is -1 for the root, else
	 * an enum frame_kind. Other members are kept and reach the hooks as node.o. Returns 0 or
	 * -errno.
	 */
	int (*tree)(FILE *f, void *ctx);
	/*
	 * JavaScript run before the page's own script, or NULL. It may set window.FG_HOOKS to
	 * {color(node), fmt(value), tip(node, row)}: a node's colour, how values print (search
	 * total, zoom), and the tooltip rows (row(key, text) adds one) in place of the defaults.
	 */
	void (*script)(FILE *f, void *ctx);
	void *ctx;
};

/* Writes one self-contained HTML page. Returns 0, the tree callback's error, or -EIO. */
int flamegraph__write_page(FILE *f, const struct flamegraph_page *pg);

#endif
