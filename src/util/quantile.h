/* SPDX-License-Identifier: Apache-2.0 */
/* Percentiles of sorted uint64_t arrays (step times), and the qsort comparator for them. */
#ifndef MLPROF_QUANTILE_H
#define MLPROF_QUANTILE_H

#include <stddef.h>
#include <stdint.h>

/* qsort comparator of uint64_t, ascending. */
static inline int quantile__cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* The index of the pct-th percentile (0..100) in n > 0 sorted values: n * pct / 100, or the
 * last. */
static inline size_t quantile__index(size_t n, unsigned int pct)
{
	size_t i = n * pct / 100;

	return i < n ? i : n - 1;
}

#endif
