/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Sampled profiles calibrated to exact counts: BPF counts every CUDA launch (per process and
 * kernel) but captures a stack for a sample of them; the sampled stacks' weights are
 * rescaled so that each kernel's total is its exact count, and a count no stack was captured
 * for still shows up.
 */
#ifndef MLPROF_CALIBRATE_H
#define MLPROF_CALIBRATE_H

#include <stddef.h>
#include <stdint.h>

#include "profile/frame.h"

struct profile;

/* One exact total: the samples of process pid whose leaf frame is named leaf. */
struct calib_target {
	int64_t pid;	  /* the samples' "pid" label */
	const char *leaf; /* their leaf frame's function name; NULL: every sample of pid */
	int64_t count;	  /* the exact total their value must add up to */
};

struct calib_stats {
	size_t groups;	       /* targets (merged by pid and leaf) that samples matched */
	size_t added;	       /* targets no sample matched: added as one stack-less sample */
	int64_t before, after; /* total value over the calibrated samples, before and after */
	int64_t unplaced;      /* counts no profile had a sample of their process for */
};

/*
 * Rescales value vi of p's samples to the exact targets (t[0..n), duplicates summed): the
 * samples of each target get new values that add up to exactly its count, each within one
 * of its proportional share; the samples' other values scale by the same factor. A target
 * that no sample matches is added as one sample: its leaf (frame kind leaf_kind) over a
 * "[stack not captured]" frame, labelled with its pid. Samples no target matches keep their
 * values. Returns 0 or -ENOMEM (p may then be partly calibrated); st may be NULL.
 */
int calibrate__profile(struct profile *p, int vi, enum frame_kind leaf_kind,
		       const struct calib_target *t, size_t n, struct calib_stats *st);

#endif
