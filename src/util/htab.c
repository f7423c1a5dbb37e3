// SPDX-License-Identifier: Apache-2.0
/* The open-addressing index of htab.h: growing and inserting. */
#include "util/htab.h"

#include <errno.h>
#include <stdlib.h>

/* The first empty slot of hash's probe sequence in slots (capacity cap, not full). */
static uint32_t free_slot(const struct htab_slot *slots, uint32_t cap, uint32_t hash)
{
	uint32_t j;

	for (j = hash & (cap - 1); slots[j].idx; j = (j + 1) & (cap - 1))
		;
	return j;
}

static int grow(struct htab *t)
{
	uint32_t ncap = t->cap ? t->cap * 2 : HTAB_MIN_CAP;
	struct htab_slot *ns;

	if (ncap < t->cap)
		return -ENOMEM;
	ns = calloc(ncap, sizeof(*ns));
	if (!ns)
		return -ENOMEM;
	for (uint32_t i = 0; i < t->cap; i++) {
		const struct htab_slot *s = &t->slots[i];

		if (s->idx)
			ns[free_slot(ns, ncap, s->hash)] = *s;
	}
	free(t->slots);
	t->slots = ns;
	t->cap = ncap;
	return 0;
}

/* See htab.h. */
int htab__reserve(struct htab *t)
{
	if ((t->n + 1) * 2 > t->cap)
		return grow(t);
	return 0;
}

/* See htab.h. */
void htab__insert(struct htab *t, uint32_t hash, uint32_t idx)
{
	uint32_t j = free_slot(t->slots, t->cap, hash);

	t->slots[j].hash = hash;
	t->slots[j].idx = idx;
	t->n++;
}

/* See htab.h. */
size_t htab__growth(const struct htab *t, size_t add)
{
	size_t ncap = t->cap ? t->cap : HTAB_MIN_CAP;

	if ((t->n + add) * 2 <= t->cap)
		return 0;
	while ((t->n + add) * 2 > ncap)
		ncap *= 2;
	return (ncap - t->cap) * sizeof(struct htab_slot);
}

/* See htab.h. */
size_t htab__bytes(const struct htab *t)
{
	return (size_t)t->cap * sizeof(struct htab_slot);
}

/* See htab.h. */
void htab__free(struct htab *t)
{
	free(t->slots);
	t->slots = NULL;
	t->cap = t->n = 0;
}
