/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Memory still in use, by the stack that brought it in: device allocations (freed by
 * pointer) and sampled anonymous-memory growth (released by address range). Stacks are
 * shared by every entry that has the same one; both are bounded, drops are counted.
 */
#ifndef MLPROF_MEMTRACK_H
#define MLPROF_MEMTRACK_H

#include <stddef.h>
#include <stdint.h>

#include "unwind/unwound.h"

struct memtrack;

struct memtrack_stats {
	uint64_t entries, stacks, stack_bytes;
	uint64_t dropped;   /* entries not kept: a bound was reached */
	uint64_t unmatched; /* frees of addresses not tracked */
};

/* Creates a tracker bounded to max_entries entries and max_stack_bytes of stacks. */
struct memtrack *memtrack__new(size_t max_entries, size_t max_stack_bytes);
/* The most memory a memtrack made with these bounds holds (entry arrays grow by doubling). */
uint64_t memtrack__bound_bytes(size_t max_entries, size_t max_stack_bytes);
void memtrack__free(struct memtrack *mt);

/*
 * Records that [addr, addr + size) of process u->hdr.pid is in use, brought in by the stack
 * u (copied, or shared with an equal one: same frames, thread and aux[1], the size an
 * allocation asked for, so that a stack's in-use bytes stay one size's). kind groups entries (one
 * in-use view per kind). An entry at the same address replaces the old one. Returns 0, -ENOSPC
 * (bound, counted) or -ENOMEM.
 */
int memtrack__add(struct memtrack *mt, uint32_t kind, uint64_t addr, int64_t size,
		  const struct unwound *u);
/* The entry of kind starting exactly at addr was freed (cudaFree). */
void memtrack__free_at(struct memtrack *mt, uint32_t kind, uint32_t pid, uint64_t addr);
/* Every entry of kind starting in [start, start + len) was released (munmap, madvise). */
void memtrack__free_range(struct memtrack *mt, uint32_t kind, uint32_t pid, uint64_t start,
			  uint64_t len);
/* The process exited: everything it held is gone. */
void memtrack__drop_pid(struct memtrack *mt, uint32_t pid);

/*
 * Calls cb once per stack of kind (of process pid, or of all when pid is 0) with the bytes
 * still in use; stops on a non-zero return.
 */
typedef int (*memtrack_cb)(void *ctx, const struct unwound *u, int64_t inuse);
int memtrack__for_each(struct memtrack *mt, uint32_t kind, uint32_t pid, memtrack_cb cb, void *ctx);
/* Bytes in use by kind for one process (for per-service metrics). */
int64_t memtrack__inuse(const struct memtrack *mt, uint32_t kind, uint32_t pid);
void memtrack__stats(const struct memtrack *mt, struct memtrack_stats *out);

#endif
