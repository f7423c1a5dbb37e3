// SPDX-License-Identifier: Apache-2.0
/* The CUDA profiles of a recording calibrated to BPF's exact counts (see cuda_calibrate.h). */
#include "pipeline/cuda_calibrate.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "pipeline/pipeline.h"
#include "profile/profile.h"

/* The exact counts of one kind, as calibration targets (names copied). */
struct targets {
	enum mlprof_sample_kind kind;
	struct calib_target *t;
	size_t n, cap;
	int err;
};

static void collect(void *ctx, pid_t pid, enum mlprof_sample_kind kind, uint64_t what,
		    const char *name, uint64_t count)
{
	struct targets *ts = ctx;
	struct calib_target *t;

	(void)what;
	if (kind != ts->kind || ts->err)
		return;
	if (ts->n == ts->cap) {
		size_t cap = ts->cap ? ts->cap * 2 : 64;

		t = realloc(ts->t, cap * sizeof(*t));
		if (!t) {
			ts->err = -ENOMEM;
			return;
		}
		ts->t = t;
		ts->cap = cap;
	}
	t = &ts->t[ts->n];
	/* launches per kernel (the leaf is its name); other calls per process */
	t->leaf = NULL;
	if (kind == MLPROF_SK_CUDA_LAUNCH && name && !(t->leaf = strdup(name))) {
		ts->err = -ENOMEM;
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
	static const enum mlprof_sample_kind kinds[] = {MLPROF_SK_CUDA_LAUNCH, MLPROF_SK_CUDA_GRAPH,
							MLPROF_SK_NCCL};
	int err = 0;

	for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]) && !err; i++) {
		struct targets ts = {.kind = kinds[i]};

		if (!prof[kinds[i]])
			continue;
		pipeline__cuda_counts(pl, collect, &ts);
		err = ts.err;
		if (!err)
			err = calibrate__profile(prof[kinds[i]], 0,
						 kinds[i] == MLPROF_SK_CUDA_LAUNCH
							 ? FRAME_CUDA_KERNEL
							 : FRAME_NATIVE,
						 ts.t, ts.n, out ? &out[kinds[i]] : NULL);
		targets_free(&ts);
	}
	return err;
}
