/* SPDX-License-Identifier: Apache-2.0 */
/* FNV-1a (64-bit), the hash of mlprof's in-memory tables: strings, cache keys, series. */
#ifndef MLPROF_HASH_H
#define MLPROF_HASH_H

#include <stddef.h>
#include <stdint.h>

#define HASH_FNV1A_INIT 0xcbf29ce484222325ull /* FNV-1a 64-bit offset basis */

/* Continues hash h over n bytes at p (start with HASH_FNV1A_INIT). */
static inline uint64_t hash__fnv1a(const void *p, size_t n, uint64_t h)
{
	const uint8_t *b = p;

	for (size_t i = 0; i < n; i++) {
		h ^= b[i];
		h *= 0x100000001b3ull;
	}
	return h;
}

/* FNV-1a of a NUL-terminated string. */
static inline uint64_t hash__str(const char *s)
{
	uint64_t h = HASH_FNV1A_INIT;

	for (; *s; s++) {
		h ^= (unsigned char)*s;
		h *= 0x100000001b3ull;
	}
	return h;
}

#endif
