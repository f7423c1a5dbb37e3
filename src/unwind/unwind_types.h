/* SPDX-License-Identifier: Apache-2.0 */
/* What unwinding reports: why an unwind stopped, and the unwinder's counters. */
#ifndef MLPROF_UNWIND_TYPES_H
#define MLPROF_UNWIND_TYPES_H

#include <stdint.h>

/* Why the unwind stopped. */
enum unwind_end {
	UNWIND_END_COMPLETE = 0, /* reached the outermost frame (_start / thread start) */
	UNWIND_END_STACK_CUT,	 /* needed stack bytes beyond the captured copy */
	UNWIND_END_NO_INFO,	 /* no unwind info for a pc (JIT, unmapped, no .eh_frame) */
	UNWIND_END_MAX_DEPTH,	 /* frame limit reached */
	UNWIND_END_BAD_FRAME,	 /* libunwind error / looping or invalid frame */
	UNWIND_END_NO_REGS,	 /* the sample carried no user registers */
};

/* Why the frame-pointer fallback (code without CFI) stopped before the outermost frame. */
enum unwind_fp_fail {
	UNWIND_FP_FAIL_BAD_POINTER = 0, /* below its frame, misaligned, or returns to no code */
	UNWIND_FP_FAIL_OUTSIDE_STACK,	/* the frame record lies beyond the copied stack */
	UNWIND_FP_FAIL__COUNT,
};

struct unwind_stats {
	uint64_t unwinds;
	uint64_t ends[6]; /* indexed by enum unwind_end */
	uint64_t frames;
	uint64_t debug_frame_tables;  /* .debug_frame sections translated for unwinding */
	uint64_t debug_frame_skipped; /* ... left unused: over the per-file or total size bound */
	uint64_t fp_frames;    /* frames recovered by frame pointer where no CFI covered the pc */
	uint64_t fp_go_frames; /* ... of which placed by a Go function's stack-pointer delta */
	uint64_t fast_frames;  /* frames stepped with a cached CFI rule (no libunwind) */
	uint64_t rules_evaluated; /* CFI rules evaluated (rule cache misses) */
	uint64_t scan_frames;	  /* callers of frames with neither CFI nor frame pointer found by
				   * scanning the stack for a return address */
	uint64_t scan_hinted;	  /* ... of which where the last scan from the same pc found it */
	uint64_t fp_failed[UNWIND_FP_FAIL__COUNT]; /* fallback stops, by reason */
};

#endif
