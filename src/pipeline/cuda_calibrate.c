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

/* The pids a profile has samples of (its "pid" labels), bounded. */
#define MAX_SERIES_PIDS 256
struct pid_set {
	int64_t pid[MAX_SERIES_PIDS];
	size_t n;
};

static int add_pid(const struct profile_sample_view *v, void *ctx)
{
	struct pid_set *ps = ctx;

	for (int i = 0; i < v->n_labels; i++) {
		const struct profile_label *l = &v->labels[i];
		size_t k = 0;

		if (!l->key || strcmp(l->key, "pid") || l->str)
			continue;
		while (k < ps->n && ps->pid[k] != l->num)
			k++;
		if (k == ps->n && ps->n < MAX_SERIES_PIDS)
			ps->pid[ps->n++] = l->num;
	}
	return 0;
}

static bool in_set(const struct pid_set *ps, int64_t pid)
{
	for (size_t k = 0; k < ps->n; k++)
		if (ps->pid[k] == pid)
			return true;
	return false;
}

/* See cuda_calibrate.h. */
int cuda_calibrate__window(struct pipeline *pl, uint64_t window, struct profile *const *prof,
			   const enum mlprof_sample_kind *kind, size_t n, struct calib_stats *total)
{
	struct all_targets at = {0};
	struct pid_set *ps = malloc(sizeof(*ps));
	int err;

	pipeline__cuda_counts_take(pl, window, collect, &at);
	err = ps ? at.err : -ENOMEM;
	for (size_t k = 0; k < NKINDS && !err; k++) {
		struct targets *ts = &at.k[k];
		struct calib_target *mine = malloc((ts->n ? ts->n : 1) * sizeof(*mine));
		bool *placed = calloc(ts->n ? ts->n : 1, sizeof(*placed));

		for (size_t i = 0; i < n && mine && placed && !err; i++) {
			struct calib_stats st = {0};
			size_t m = 0;

			if (kind[i] != kinds[k] || !prof[i])
				continue;
			/* a series holds the processes of one service: their counts only */
			ps->n = 0;
			profile__for_each_sample(prof[i], add_pid, ps);
			for (size_t t = 0; t < ts->n; t++) {
				if (!in_set(ps, ts->t[t].pid))
					continue;
				mine[m++] = ts->t[t];
				placed[t] = true;
			}
			if (!m)
				continue;
			err = calibrate__profile(prof[i], 0,
						 kinds[k] == MLPROF_SK_CUDA_LAUNCH
							 ? FRAME_CUDA_KERNEL
							 : FRAME_NATIVE,
						 mine, m, &st);
			if (total) {
				total->groups += st.groups;
				total->added += st.added;
				total->before += st.before;
				total->after += st.after;
			}
		}
		if (!mine || !placed)
			err = -ENOMEM;
		/* counts of processes without a capture in this window: nowhere to put them */
		for (size_t t = 0; t < ts->n && total && placed; t++)
			if (!placed[t])
				total->unplaced += ts->t[t].count;
		free(mine);
		free(placed);
	}
	free(ps);
	for (size_t i = 0; i < NKINDS; i++)
		targets_free(&at.k[i]);
	return err;
}
