/* SPDX-License-Identifier: Apache-2.0 */
/*
 * An open-addressing index over records kept elsewhere (an array the caller grows): a
 * power-of-two capacity, linear probing, doubled at half load. A slot holds the record's
 * 32-bit hash and its 1-based index (0 = empty), so that growing never reads the records.
 * Zero-initialized means empty; no removal.
 */
#ifndef MLPROF_HTAB_H
#define MLPROF_HTAB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define HTAB_MIN_CAP 64

struct htab_slot {
	uint32_t hash;
	uint32_t idx; /* 1-based record index, 0 = empty */
};

struct htab {
	struct htab_slot *slots;
	uint32_t cap; /* power of two, or 0 */
	uint32_t n;
};

/* True when record idx (1-based) of ctx's records is key. */
typedef bool (*htab_eq_fn)(const void *ctx, uint32_t idx, const void *key);

/* The 1-based index of the record that hashes to hash and equals key, or 0. */
static inline uint32_t htab__find(const struct htab *t, uint32_t hash, htab_eq_fn eq,
				  const void *ctx, const void *key)
{
	if (!t->cap)
		return 0;
	for (uint32_t i = hash & (t->cap - 1);; i = (i + 1) & (t->cap - 1)) {
		const struct htab_slot *s = &t->slots[i];

		if (!s->idx)
			return 0;
		if (s->hash == hash && eq(ctx, s->idx, key))
			return s->idx;
	}
}

/* Makes room for one more entry (0 or -ENOMEM); call before the record is appended. */
int htab__reserve(struct htab *t);
/* Adds record idx (1-based) under hash; htab__reserve made the room. */
void htab__insert(struct htab *t, uint32_t hash, uint32_t idx);
/* The bytes that add more entries would allocate (0 when they fit). */
size_t htab__growth(const struct htab *t, size_t add);
/* The bytes the index holds. */
size_t htab__bytes(const struct htab *t);
void htab__free(struct htab *t);

#endif
