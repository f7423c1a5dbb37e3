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
};

/* A cache of slots entries (rounded up to a power of two). NULL with errno ENOMEM. */
struct frame_cache *frame_cache__new(size_t slots);
void frame_cache__free(struct frame_cache *fc);

/*
 * Fills f with the frame cached for pc in the maps of generation gen (proc.gen: unique,
 * never reused, so a hit is always the same code) at symbol epoch epoch (symcache__epoch:
 * a name found later, from a debug file, replaces the old one). Strings stay valid until the next
 * put. False on a miss.
 */
bool frame_cache__get(struct frame_cache *fc, uint64_t gen, uint64_t epoch, uint64_t pc,
		      struct frame *f);

/*
 * Keeps a copy of f (its strings copied; f->map must live as long as the generation) for
 * pc in generation gen, replacing what its slot held. Frames with longer strings than the
 * cache keeps are left out.
 */
void frame_cache__put(struct frame_cache *fc, uint64_t gen, uint64_t epoch, uint64_t pc,
		      const struct frame *f);

/* The most memory a cache of slots entries holds. */
size_t frame_cache__bound_bytes(size_t slots);

void frame_cache__stats(const struct frame_cache *fc, struct frame_cache_stats *out);

#endif
