// SPDX-License-Identifier: Apache-2.0
/* Native half of the Python workload: a CPU-burning leaf that py_workload.py calls via ctypes. */
#include <stdint.h>

/*
 * Burns CPU for iters xorshift steps (each depends on the last, so the loop cannot be
 * folded or vectorized) and returns the final state. Thread-safe; no state.
 */
double py_native_spin(long iters);

double py_native_spin(long iters)
{
	uint64_t h = (uint64_t)iters | 1;

	for (long i = 0; i < iters; i++) {
		h ^= h << 13;
		h ^= h >> 7;
		h ^= h << 17;
	}
	return (double)(h >> 11);
}
