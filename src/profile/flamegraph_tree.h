/* SPDX-License-Identifier: Apache-2.0 */
/* The node tree flame graphs are drawn from (the profile's and the differential one). */
#ifndef MLPROF_FLAMEGRAPH_TREE_H
#define MLPROF_FLAMEGRAPH_TREE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/*
 * The tree a flame graph is drawn from: stacks merged frame by frame, node 0 the root and every
 * child's index larger than its parent's. A node is found by (parent, name, kind), where names
 * are the writer's ids that name_of(name, ctx) turns into text. Each node also carries
 * data_size bytes of the writer's own data (its values), zeroed when the node is made.
 */
struct flamegraph_node {
	uint32_t name; /* the writer's name id */
	uint32_t parent;
	uint32_t first_child; /* 0 = none (node 0 is the root, never a child) */
	uint32_t next_sibling;
	uint16_t depth;
	uint8_t kind; /* enum frame_kind; FLAMEGRAPH_ROOT_KIND for the root */
	bool keep;    /* set by flamegraph_tree__keep() */
};

#define FLAMEGRAPH_ROOT_KIND 255

struct flamegraph_tree {
	struct flamegraph_node *nodes;
	size_t n, cap;
	unsigned char *data; /* data_size bytes per node */
	size_t data_size;
	uint32_t *slots; /* child index: hash(parent, name, kind) -> node index + 1 */
	size_t nslots;
	size_t n_kept; /* nodes kept by flamegraph_tree__keep() */
	int max_depth;
	const char *(*name_of)(uint32_t name, const void *ctx);
	const void *ctx;
};

/*
 * Makes t a tree of the root alone, named root_name (kind FLAMEGRAPH_ROOT_KIND). name_of and
 * ctx must outlive t. Returns 0 or -ENOMEM; t is to be freed with flamegraph_tree__free()
 * either way.
 */
int flamegraph_tree__init(struct flamegraph_tree *t, size_t data_size, uint32_t root_name,
			  const char *(*name_of)(uint32_t name, const void *ctx), const void *ctx);
/* Frees what t holds (t itself is the caller's). */
void flamegraph_tree__free(struct flamegraph_tree *t);
/*
 * The child of parent with this name and kind, made when it is new (which may move nodes and
 * data). Returns its index, or 0 on ENOMEM.
 */
uint32_t flamegraph_tree__child(struct flamegraph_tree *t, uint32_t parent, uint32_t name,
				uint8_t kind);

/* Node i's data (data_size bytes), valid until the next flamegraph_tree__child(). */
static inline void *flamegraph_tree__data(const struct flamegraph_tree *t, uint32_t i)
{
	return t->data + (size_t)i * t->data_size;
}

/*
 * Decides which nodes are written, parents before children: a node is kept when its parent is
 * (the root has none) and keep(t, i, ctx) says so; keep is not asked about the others. Sets
 * every node's keep flag and t->n_kept.
 */
void flamegraph_tree__keep(struct flamegraph_tree *t,
			   bool (*keep)(const struct flamegraph_tree *t, uint32_t i, void *ctx),
			   void *ctx);

/*
 * Writes node i and its kept descendants as the JSON of flamegraph_page.tree: the name, then
 * what members(f, node, ctx) writes (from ",\"value\":"), then the kept children sorted by
 * name and kind. Returns 0 or -ENOMEM.
 */
int flamegraph_tree__write_json(FILE *f, const struct flamegraph_tree *t, uint32_t i,
				void (*members)(FILE *f, uint32_t node, void *ctx), void *ctx);

/*
 * A new open-addressing index of ns slots (a power of two) holding entries first..n-1 as
 * index + 1, entry i at hash(i, ctx); NULL on ENOMEM.
 */
uint32_t *flamegraph_tree__index(size_t ns, size_t first, size_t n,
				 uint64_t (*hash)(size_t i, const void *ctx), const void *ctx);

/* The kept children of node i sorted by name then kind (malloc'd, *n set), or NULL on ENOMEM. */
uint32_t *flamegraph_tree__sorted_children(const struct flamegraph_tree *t, uint32_t i, size_t *n);

#endif
