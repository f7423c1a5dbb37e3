/* SPDX-License-Identifier: Apache-2.0 */
/* User-stack unwinding with libunwind's remote API over captured registers + stack bytes. */
#ifndef MLPROF_UNWIND_H
#define MLPROF_UNWIND_H

#include <stddef.h>
#include <stdint.h>

struct mlprof_sample;
struct proc;
struct proc_cache;
struct unwinder;

/* Why the unwind stopped. */
enum unwind_end {
	UNWIND_END_COMPLETE = 0, /* reached the outermost frame (_start / thread start) */
	UNWIND_END_STACK_CUT,	 /* needed stack bytes beyond the captured copy */
	UNWIND_END_NO_INFO,	 /* no unwind info for a pc (JIT, unmapped, no .eh_frame) */
	UNWIND_END_MAX_DEPTH,	 /* frame limit reached */
	UNWIND_END_BAD_FRAME,	 /* libunwind error / looping or invalid frame */
	UNWIND_END_NO_REGS,	 /* the sample carried no user registers */
};

struct unwind_stats {
	uint64_t unwinds;
	uint64_t ends[6]; /* indexed by enum unwind_end */
	uint64_t frames;
	uint64_t debug_frame_tables;  /* .debug_frame sections translated for unwinding */
	uint64_t debug_frame_skipped; /* ... left unused: over the per-file or total size bound */
};

/* Creates an unwinder that resolves code through pc's maps. NULL with errno on failure. */
struct unwinder *unwinder__new(struct proc_cache *pc);
void unwinder__free(struct unwinder *u);

/*
 * Unwinds the user stack of sample s (registers + stack copy) for process p.
 * Writes up to max program counters, leaf first: pcs[0] is the interrupted ip, later
 * entries are return addresses (not adjusted). Returns the number written (>= 0) and
 * sets *end; never fails for bad input, it stops and says why.
 */
int unwinder__unwind(struct unwinder *u, struct proc *p, const struct mlprof_sample *s,
		     uint64_t *pcs, int max, enum unwind_end *end);
const char *unwind_end__str(enum unwind_end end);

void unwinder__stats(const struct unwinder *u, struct unwind_stats *out);

/*
 * Translates a .debug_frame section (untrusted bytes, df_len <= 64 MiB) describing code at
 * link-time vaddrs [lo, hi) (hi - lo < 2 GiB) into an .eh_frame-style image whose FDEs hold
 * absolute 8-byte addresses, and a sorted index of (pc - lo, FDE offset in image) int32
 * pairs. Used by the unwinder; exposed for tests. Returns the number of index pairs (> 0),
 * -ENOENT when no FDE is usable, -E2BIG past the size bound, -EINVAL or -ENOMEM. On
 * success the caller owns *image (*image_len bytes) and *index and frees them with free().
 */
int unwind__debug_frame_to_eh(const uint8_t *df, size_t df_len, uint64_t lo, uint64_t hi,
			      uint8_t **image, size_t *image_len, int32_t **index);

#endif
