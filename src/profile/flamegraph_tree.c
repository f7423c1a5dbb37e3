// SPDX-License-Identifier: Apache-2.0
/* The node tree flame graphs are drawn from (the profile's and the differential one). */
#include "profile/flamegraph_tree.h"
#include "profile/html.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static uint64_t node_hash(uint32_t parent, uint32_t name, uint8_t kind)
{
	uint64_t h = ((uint64_t)parent << 32 | name) * 0x9e3779b97f4a7c15ULL;

	h ^= kind;
	h *= 0xff51afd7ed558ccdULL;
	return h ^ (h >> 29);
}

/* See flamegraph_tree.h. */
uint32_t *flamegraph_tree__index(size_t ns, size_t first, size_t n,
				 uint64_t (*hash)(size_t i, const void *ctx), const void *ctx)
{
	uint32_t *slots = calloc(ns, sizeof(*slots));

	if (!slots)
		return NULL;
	for (size_t i = first; i < n; i++) {
		size_t j = hash(i, ctx) & (ns - 1);

		while (slots[j])
			j = (j + 1) & (ns - 1);
		slots[j] = (uint32_t)i + 1;
	}
	return slots;
}

static uint64_t node_hash_at(size_t i, const void *ctx)
{
	const struct flamegraph_node *nd = &((const struct flamegraph_tree *)ctx)->nodes[i];

	return node_hash(nd->parent, nd->name, nd->kind);
}

/* Makes room for one more node (and its data) and its index slot. */
static int tree_grow(struct flamegraph_tree *t)
{
	if (t->n == t->cap) {
		size_t nc = t->cap ? t->cap * 2 : 1024;
		struct flamegraph_node *nn = realloc(t->nodes, nc * sizeof(*nn));
		unsigned char *nd;

		if (!nn)
			return -ENOMEM;
		t->nodes = nn;
		nd = realloc(t->data, nc * t->data_size);
		if (!nd)
			return -ENOMEM;
		t->data = nd;
		t->cap = nc;
	}
	if ((t->n + 1) * 2 > t->nslots) {
		size_t ns = t->nslots ? t->nslots * 2 : 2048;
		/* the root is never a child: it is not indexed */
		uint32_t *slots = flamegraph_tree__index(ns, 1, t->n, node_hash_at, t);

		if (!slots)
			return -ENOMEM;
		free(t->slots);
		t->slots = slots;
		t->nslots = ns;
	}
	return 0;
}

/* See flamegraph_tree.h. */
int flamegraph_tree__init(struct flamegraph_tree *t, size_t data_size, uint32_t root_name,
			  const char *(*name_of)(uint32_t name, const void *ctx), const void *ctx)
{
	int err;

	*t = (struct flamegraph_tree){.data_size = data_size, .name_of = name_of, .ctx = ctx};
	err = tree_grow(t);
	if (err)
		return err;
	t->nodes[0] = (struct flamegraph_node){.name = root_name, .kind = FLAMEGRAPH_ROOT_KIND};
	memset(t->data, 0, data_size);
	t->n = 1;
	return 0;
}

/* See flamegraph_tree.h. */
void flamegraph_tree__free(struct flamegraph_tree *t)
{
	free(t->nodes);
	free(t->data);
	free(t->slots);
}

/* See flamegraph_tree.h. */
uint32_t flamegraph_tree__child(struct flamegraph_tree *t, uint32_t parent, uint32_t name,
				uint8_t kind)
{
	struct flamegraph_node *nd;
	size_t j;

	if (tree_grow(t))
		return 0;
	for (j = node_hash(parent, name, kind) & (t->nslots - 1); t->slots[j];
	     j = (j + 1) & (t->nslots - 1)) {
		nd = &t->nodes[t->slots[j] - 1];
		if (nd->parent == parent && nd->name == name && nd->kind == kind)
			return t->slots[j] - 1;
	}
	nd = &t->nodes[t->n];
	*nd = (struct flamegraph_node){
		.name = name,
		.parent = parent,
		.next_sibling = t->nodes[parent].first_child,
		.depth = (uint16_t)(t->nodes[parent].depth + 1),
		.kind = kind,
	};
	memset(flamegraph_tree__data(t, (uint32_t)t->n), 0, t->data_size);
	t->nodes[parent].first_child = (uint32_t)t->n;
	t->slots[j] = (uint32_t)++t->n;
	if (nd->depth > t->max_depth)
		t->max_depth = nd->depth;
	return (uint32_t)t->n - 1;
}

/* See flamegraph_tree.h. */
void flamegraph_tree__keep(struct flamegraph_tree *t,
			   bool (*keep)(const struct flamegraph_tree *t, uint32_t i, void *ctx),
			   void *ctx)
{
	t->n_kept = 0;
	/* node indexes grow from parent to child, so parents are decided first */
	for (size_t i = 0; i < t->n; i++) {
		struct flamegraph_node *nd = &t->nodes[i];

		nd->keep = (i == 0 || t->nodes[nd->parent].keep) && keep(t, (uint32_t)i, ctx);
		t->n_kept += nd->keep;
	}
}

static int child_cmp(const void *a, const void *b, void *ctx)
{
	const struct flamegraph_tree *t = ctx;
	const struct flamegraph_node *x = &t->nodes[*(const uint32_t *)a];
	const struct flamegraph_node *y = &t->nodes[*(const uint32_t *)b];
	int c = strcmp(t->name_of(x->name, t->ctx), t->name_of(y->name, t->ctx));

	return c ? c : (int)x->kind - (int)y->kind;
}

/* See flamegraph_tree.h. */
uint32_t *flamegraph_tree__sorted_children(const struct flamegraph_tree *t, uint32_t i, size_t *n)
{
	uint32_t *arr;
	size_t k = 0;

	for (uint32_t c = t->nodes[i].first_child; c; c = t->nodes[c].next_sibling)
		k += t->nodes[c].keep;
	*n = k;
	arr = malloc((k ? k : 1) * sizeof(*arr));
	if (!arr)
		return NULL;
	k = 0;
	for (uint32_t c = t->nodes[i].first_child; c; c = t->nodes[c].next_sibling)
		if (t->nodes[c].keep)
			arr[k++] = c;
	qsort_r(arr, k, sizeof(*arr), child_cmp, (void *)t);
	return arr;
}

/* See flamegraph_tree.h. */
int flamegraph_tree__write_json(FILE *f, const struct flamegraph_tree *t, uint32_t i,
				void (*members)(FILE *f, uint32_t node, void *ctx), void *ctx)
{
	uint32_t *kids;
	size_t n;
	int err = 0;

	fputs("{\"name\":", f);
	html__json_str(f, t->name_of(t->nodes[i].name, t->ctx));
	members(f, i, ctx);
	kids = flamegraph_tree__sorted_children(t, i, &n);
	if (!kids)
		return -ENOMEM;
	if (n) {
		fputs(",\"children\":[", f);
		for (size_t k = 0; k < n && !err; k++) {
			if (k)
				fputc(',', f);
			err = flamegraph_tree__write_json(f, t, kids[k], members, ctx);
		}
		fputc(']', f);
	}
	fputc('}', f);
	free(kids);
	return err;
}
