// SPDX-License-Identifier: Apache-2.0
/* Named native frames by (process map generation, pc): a repeated frame skips symbolization. */
#include "pipeline/frame_cache.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/*
 * Frames with longer names or file paths are not cached (C++ template names in PyTorch
 * often pass 512 bytes: at 512, one frame lookup in ten missed on its training loop).
 */
#define FC_MAX_STR 4096
/* Bytes of entries held at most: a put past it is skipped. */
#define FC_MAX_BYTES (4u << 20)

struct fc_entry {
	uint64_t gen, epoch, pc; /* gen 0: empty */
	uint64_t used;		 /* the sample serial of its last get or put */
	struct frame f;		 /* strings point into str */
	size_t bytes;
	char str[];
};

struct frame_cache {
	struct fc_entry **slots;
	size_t mask;
	uint64_t serial; /* frame_cache__begin_sample */
	struct frame_cache_stats stats;
};

/* See frame_cache.h. */
struct frame_cache *frame_cache__new(size_t slots)
{
	struct frame_cache *fc = calloc(1, sizeof(*fc));
	size_t n = 1;

	while (n < slots)
		n <<= 1;
	if (!fc || !(fc->slots = calloc(n, sizeof(*fc->slots)))) {
		free(fc);
		errno = ENOMEM;
		return NULL;
	}
	fc->mask = n - 1;
	return fc;
}

/* See frame_cache.h. */
void frame_cache__free(struct frame_cache *fc)
{
	if (!fc)
		return;
	for (size_t i = 0; i <= fc->mask; i++)
		free(fc->slots[i]);
	free(fc->slots);
	free(fc);
}

static struct fc_entry **slot_of(struct frame_cache *fc, uint64_t gen, uint64_t pc)
{
	uint64_t h = (pc ^ (gen * 0x9e3779b97f4a7c15ull)) * 0xff51afd7ed558ccdull;

	return &fc->slots[(h >> 32) & fc->mask];
}

/* See frame_cache.h. */
void frame_cache__begin_sample(struct frame_cache *fc)
{
	fc->serial++;
}

/* See frame_cache.h. */
void frame_cache__prefetch(struct frame_cache *fc, uint64_t gen, const uint64_t *pcs, int n)
{
	for (int i = 0; i < n; i++)
		__builtin_prefetch(slot_of(fc, gen, i ? pcs[i] - 1 : pcs[i]));
	for (int i = 0; i < n; i++) {
		const struct fc_entry *e = *slot_of(fc, gen, i ? pcs[i] - 1 : pcs[i]);

		if (e) {
			__builtin_prefetch(e);
			__builtin_prefetch((const char *)e + 64);
		}
	}
}

/* See frame_cache.h. */
bool frame_cache__get(struct frame_cache *fc, uint64_t gen, uint64_t epoch, uint64_t pc,
		      struct frame *f)
{
	struct fc_entry *e = *slot_of(fc, gen, pc);

	fc->stats.lookups++;
	if (!e || e->gen != gen || e->pc != pc || e->epoch != epoch)
		return false;
	fc->stats.hits++;
	e->used = fc->serial;
	*f = e->f;
	return true;
}

/* See frame_cache.h. */
bool frame_cache__put(struct frame_cache *fc, uint64_t gen, uint64_t epoch, uint64_t pc,
		      struct frame *f)
{
	struct fc_entry **slot = slot_of(fc, gen, pc), *e;
	size_t nlen = f->function ? strnlen(f->function, FC_MAX_STR + 1) : 0;
	size_t flen = f->file ? strnlen(f->file, FC_MAX_STR + 1) : 0;
	size_t bytes = sizeof(*e) + nlen + 1 + flen + 1;

	if (nlen > FC_MAX_STR || flen > FC_MAX_STR)
		return false;
	e = *slot;
	if (e && e->used == fc->serial) {
		/* its strings are in a frame of this sample */
		fc->stats.busy++;
		return false;
	}
	if (fc->stats.bytes - (e ? e->bytes : 0) + bytes > FC_MAX_BYTES) {
		fc->stats.full++;
		return false;
	}
	if (e)
		fc->stats.bytes -= e->bytes;
	if (!e || e->bytes < bytes) {
		free(e);
		*slot = e = malloc(bytes);
		if (!e)
			return false;
		e->bytes = bytes;
	}
	fc->stats.bytes += e->bytes;
	e->gen = gen;
	e->epoch = epoch;
	e->pc = pc;
	e->used = fc->serial;
	e->f = *f;
	memcpy(e->str, f->function ? f->function : "", nlen + 1);
	memcpy(e->str + nlen + 1, f->file ? f->file : "", flen + 1);
	e->f.function = f->function ? e->str : NULL;
	e->f.file = f->file ? e->str + nlen + 1 : NULL;
	f->function = e->f.function;
	f->file = e->f.file;
	return true;
}

/* See frame_cache.h. */
size_t frame_cache__bound_bytes(size_t slots)
{
	size_t n = 1;

	while (n < slots)
		n <<= 1;
	return n * sizeof(void *) + FC_MAX_BYTES;
}

/* See frame_cache.h. */
void frame_cache__stats(const struct frame_cache *fc, struct frame_cache_stats *out)
{
	*out = fc->stats;
}
