/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Heap profiling shared by bpf/heap.bpf.c and user space: the allocator entry points
 * probed (the BPF cookie of each probe), and the key of the live-allocation table.
 */
#ifndef MLPROF_SHARED_HEAP_H
#define MLPROF_SHARED_HEAP_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

/* Entry points, by their C signature (glibc, jemalloc, tcmalloc and mimalloc alike). */
enum mlprof_heap_fn {
	MLPROF_HEAP_MALLOC = 1,	    /* malloc(size), valloc(size), pvalloc(size) */
	MLPROF_HEAP_CALLOC,	    /* calloc(n, size) */
	MLPROF_HEAP_REALLOC,	    /* realloc(ptr, size) */
	MLPROF_HEAP_FREE,	    /* free(ptr), cfree(ptr) */
	MLPROF_HEAP_MEMALIGN,	    /* memalign(align, size), aligned_alloc(align, size) */
	MLPROF_HEAP_POSIX_MEMALIGN, /* posix_memalign(void **out, align, size) */
	MLPROF_HEAP__COUNT,
};

/* heap_live: sampled blocks not freed yet (value: the requested size). */
struct mlprof_heap_key {
	__u32 pid;
	__u32 pad;
	__u64 ptr;
};

/* Table of exponential draws (bytes until the next sample), indexed by a random number. */
#define MLPROF_HEAP_DRAWS 4096

#endif /* MLPROF_SHARED_HEAP_H */
