/* SPDX-License-Identifier: Apache-2.0 */
/* Named native frames by (process map generation, pc): a repeated frame skips symbolization. */
#ifndef MLPROF_FRAME_CACHE_H
#define MLPROF_FRAME_CACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "profile/frame.h"

struct frame_cache;

struct frame_cache_stats {
	uint64_t lookups, hits;
	uint64_t bytes; /* held by cached entries (bounded: 4 MiB) */
	uint64_t full;	/* puts skipped: the byte bound was reached */
	uint64_t busy;	/* puts skipped: the slot's entry is in a frame of the current sample */
};

/* A cache of slots entries (rounded up to a power of two). NULL with errno ENOMEM. */
struct frame_cache *frame_cache__new(size_t slots);
void frame_cache__free(struct frame_cache *fc);

/*
 * Starts a sample: the strings of frames got or put from now on stay valid until the next
 * call (an entry used in the sample is not replaced by a put in it).
 */
void frame_cache__begin_sample(struct frame_cache *fc);

/*
 * Prefetches the slots and entries of an unwound stack's pcs[0..n) in generation gen (the
 * leaf at pcs[0], return addresses after it, looked up at pc - 1): a sample comes every few
 * milliseconds and finds them cold; their cache misses overlap here instead of one by one.
 */
void frame_cache__prefetch(struct frame_cache *fc, uint64_t gen, const uint64_t *pcs, int n);

/*
 * Fills f with the frame cached for pc in the maps of generation gen (proc.gen: unique,
 * never reused, so a hit is always the same code) at symbol epoch epoch (symcache__epoch:
 * a name found later, from a debug file, replaces the old one). Its strings stay valid until
 * the next frame_cache__begin_sample. False on a miss.
 */
bool frame_cache__get(struct frame_cache *fc, uint64_t gen, uint64_t epoch, uint64_t pc,
		      struct frame *f);

/*
 * Keeps a copy of f (its strings copied; f->map must live as long as the generation) for
 * pc in generation gen, replacing what its slot held, and points f's strings at the copies
 * (valid as a get's). False, f unchanged, when it is not kept: strings longer than the cache
 * keeps, the byte bound, or a slot whose entry is in a frame of the current sample.
 */
bool frame_cache__put(struct frame_cache *fc, uint64_t gen, uint64_t epoch, uint64_t pc,
		      struct frame *f);

/* The most memory a cache of slots entries holds. */
size_t frame_cache__bound_bytes(size_t slots);

void frame_cache__stats(const struct frame_cache *fc, struct frame_cache_stats *out);

#endif
