// SPDX-License-Identifier: Apache-2.0
/* The CUDA profiles of a recording calibrated to BPF's exact counts (see cuda_calibrate.h). */
#include "pipeline/cuda_calibrate.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "pipeline/pipeline.h"
#include "profile/profile.h"

/* The calibrated kinds: launches per kernel (the leaf is its name), the others per process. */
static const enum mlprof_sample_kind kinds[] = {MLPROF_SK_CUDA_LAUNCH, MLPROF_SK_CUDA_GRAPH,
						MLPROF_SK_NCCL};
#define NKINDS (sizeof(kinds) / sizeof(kinds[0]))

/* The exact counts of one kind, as calibration targets (names copied). */
struct targets {
	struct calib_target *t;
	size_t n, cap;
};

/* All kinds' targets, filled by one walk of the counts. */
struct all_targets {
	struct targets k[NKINDS];
	int err;
};

static void collect(void *ctx, pid_t pid, enum mlprof_sample_kind kind, uint64_t what,
		    const char *name, uint64_t count)
{
	struct all_targets *at = ctx;
	struct targets *ts = NULL;
	struct calib_target *t;

	(void)what;
	for (size_t i = 0; i < NKINDS; i++)
		if (kinds[i] == kind)
			ts = &at->k[i];
	if (!ts || at->err)
		return;
	if (ts->n == ts->cap) {
		size_t cap = ts->cap ? ts->cap * 2 : 64;

		t = realloc(ts->t, cap * sizeof(*t));
		if (!t) {
			at->err = -ENOMEM;
			return;
		}
		ts->t = t;
		ts->cap = cap;
	}
	t = &ts->t[ts->n];
	t->leaf = NULL;
	if (kind == MLPROF_SK_CUDA_LAUNCH && name && !(t->leaf = strdup(name))) {
		at->err = -ENOMEM;
		return;
	}
	t->pid = pid;
	t->count = (int64_t)count;
	ts->n++;
}

static void targets_free(struct targets *ts)
{
	for (size_t i = 0; i < ts->n; i++)
		free((char *)ts->t[i].leaf);
	free(ts->t);
}

/* See cuda_calibrate.h. */
int cuda_calibrate__profiles(struct pipeline *pl, struct profile *const prof[MLPROF_SK__COUNT],
			     struct calib_stats out[MLPROF_SK__COUNT])
{
	struct all_targets at = {0};
	int err;

	/* one walk of the counts (each launch count is named on the way) for every kind */
	pipeline__cuda_counts(pl, collect, &at);
	err = at.err;
	for (size_t i = 0; i < NKINDS && !err; i++) {
		if (!prof[kinds[i]])
			continue;
		err = calibrate__profile(prof[kinds[i]], 0,
					 kinds[i] == MLPROF_SK_CUDA_LAUNCH ? FRAME_CUDA_KERNEL
									   : FRAME_NATIVE,
					 at.k[i].t, at.k[i].n, out ? &out[kinds[i]] : NULL);
	}
	for (size_t i = 0; i < NKINDS; i++)
		targets_free(&at.k[i]);
	return err;
}
