/* SPDX-License-Identifier: Apache-2.0 */
/* FNV-1a (64-bit), the hash of mlprof's in-memory tables: strings, cache keys, series. */
#ifndef MLPROF_HASH_H
#define MLPROF_HASH_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

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

/*
 * A string hash that reads 8 bytes at a time, for in-memory tables on hot paths (the
 * profile's string interning: a path or a C++ name per frame). Not FNV: nothing that is
 * stored or compared across runs may use it. *len gets strlen(s).
 */
static inline uint64_t hash__str_words(const char *s, size_t *len)
{
	size_t n = strlen(s), i = 0;
	uint64_t h = 0x9e3779b97f4a7c15ull ^ n, w;

	for (; i + 8 <= n; i += 8) {
		memcpy(&w, s + i, 8);
		h = (h ^ w) * 0xff51afd7ed558ccdull;
		h ^= h >> 32;
	}
	w = 0;
	memcpy(&w, s + i, n - i);
	h = (h ^ w) * 0xc4ceb9fe1a85ec53ull;
	h ^= h >> 29;
	*len = n;
	return h;
}

#endif
