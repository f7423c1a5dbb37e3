// SPDX-License-Identifier: Apache-2.0
/* Shared-library half of the unwinding workload: code the PIE calls through the PLT. */
#include "wl.h"

__attribute__((noinline)) uint64_t lib_leaf(uint64_t n)
{
	uint64_t h = n | 1;

	for (uint64_t i = 0; i < n; i++) {
		h ^= h << 13;
		h ^= h >> 7;
		h ^= h << 17;
		wl_sink += h & 1;
	}
	return h;
}

__attribute__((noinline)) uint64_t lib_work(uint64_t n)
{
	uint64_t r = lib_leaf(n);

	wl_sink += r;
	return r + 1;
}
