/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Sampling allocations by bytes, as tcmalloc and Go do: each CPU counts down the bytes
 * until its next sample, drawn from an exponential distribution (a table of draws filled
 * by user space, MLPROF_HEAP_DRAWS), so that sampling is a Poisson process over bytes and
 * an allocation of s bytes is sampled with probability 1 - e^(-s/mean). Used by the heap
 * probes (malloc & co) and the CUDA probes (PyTorch's tensors).
 */
#ifndef MLPROF_BYTESAMPLE_BPF_H
#define MLPROF_BYTESAMPLE_BPF_H

#include <mlprof/heap.h>

/* A countdown's next start: a random draw of the table. */
static __always_inline __s64 bytes_draw(const volatile __u32 *draws)
{
	__u32 i = bpf_get_prandom_u32() & (MLPROF_HEAP_DRAWS - 1);

	return (__s64)draws[i] + 1;
}

/* Whether an allocation of size bytes is sampled: *left (per CPU) crosses zero. */
static __always_inline bool bytes_sampled(__s64 *left, const volatile __u32 *draws, __u64 size)
{
	if (!*left)
		*left = bytes_draw(draws);
	if (*left > (__s64)size) {
		*left -= (__s64)size;
		return false;
	}
	*left = bytes_draw(draws);
	return true;
}

#endif /* MLPROF_BYTESAMPLE_BPF_H */
