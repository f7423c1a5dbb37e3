/* SPDX-License-Identifier: Apache-2.0 */
/* Growable arrays: capacity doubled (from 16) until it holds what is needed. */
#ifndef MLPROF_ARRAY_H
#define MLPROF_ARRAY_H

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>

/* Grows *arr (capacity *cap elements of elem bytes) to hold need: 0 or -ENOMEM. */
static inline int array__grow(void **arr, size_t *cap, size_t need, size_t elem)
{
	size_t ncap = *cap ? *cap : 16;
	void *na;

	if (need <= *cap)
		return 0;
	while (ncap < need)
		ncap *= 2;
	if (ncap > SIZE_MAX / elem)
		return -ENOMEM;
	na = realloc(*arr, ncap * elem);
	if (!na)
		return -ENOMEM;
	*arr = na;
	*cap = ncap;
	return 0;
}

/* The bytes array__grow would add for add more elements to n of capacity cap. */
static inline size_t array__growth(size_t n, size_t cap, size_t add, size_t elem)
{
	size_t ncap = cap ? cap : 16;

	if (n + add <= cap)
		return 0;
	while (ncap < n + add)
		ncap *= 2;
	return (ncap - cap) * elem;
}

/* array__grow for a typed array arr and its capacity variable capvar (any integer type). */
#define ARRAY_GROW(arr, capvar, need)                                                              \
	({                                                                                         \
		size_t _cap = (capvar);                                                            \
		void *_a = (arr);                                                                  \
		int _e = array__grow(&_a, &_cap, (need), sizeof(*(arr)));                          \
		if (!_e) {                                                                         \
			(arr) = _a;                                                                \
			(capvar) = _cap;                                                           \
		}                                                                                  \
		_e;                                                                                \
	})

#endif
