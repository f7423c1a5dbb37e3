/* SPDX-License-Identifier: Apache-2.0 */
/* Intrusive LRU list: a node embedded in each cached entry, the most recently used at head. */
#ifndef MLPROF_LRU_H
#define MLPROF_LRU_H

#include <stdbool.h>
#include <stddef.h>

/* Embedded in an entry; all NULL while the entry is not on a list. */
struct lru_node {
	struct lru_node *prev; /* more recently used, NULL at head */
	struct lru_node *next; /* less recently used, NULL at tail */
};

/* A list of nodes; zero-initialized (or lru__init) means empty. */
struct lru_list {
	struct lru_node *head; /* most recently used */
	struct lru_node *tail; /* least recently used: the next to evict */
};

/* The entry of type `type` whose member `member` is node n; NULL when n is NULL. */
#define lru_entry(n, type, member)                                                                 \
	({                                                                                         \
		struct lru_node *lru_n__ = (n);                                                    \
		lru_n__ ? (type *)(void *)((char *)lru_n__ - offsetof(type, member)) : NULL;       \
	})

/* Empties l without touching the nodes that were on it. */
static inline void lru__init(struct lru_list *l)
{
	l->head = l->tail = NULL;
}

/* Removes n from l (n must be on l) and clears its links. */
static inline void lru__unlink(struct lru_list *l, struct lru_node *n)
{
	if (n->prev)
		n->prev->next = n->next;
	else
		l->head = n->next;
	if (n->next)
		n->next->prev = n->prev;
	else
		l->tail = n->prev;
	n->prev = n->next = NULL;
}

/* Puts n (not on any list) at the head of l: the most recently used. */
static inline void lru__push_head(struct lru_list *l, struct lru_node *n)
{
	n->prev = NULL;
	n->next = l->head;
	if (l->head)
		l->head->prev = n;
	l->head = n;
	if (!l->tail)
		l->tail = n;
}

/* Marks n (on l) as the most recently used. */
static inline void lru__touch(struct lru_list *l, struct lru_node *n)
{
	if (l->head == n)
		return;
	lru__unlink(l, n);
	lru__push_head(l, n);
}

#endif
