// SPDX-License-Identifier: Apache-2.0
/*
 * Exact CUDA/NCCL call counts: read from BPF's counts map, launches named by their kernel;
 * an exited process's counts kept, named while its maps were known.
 */
#include "pipeline/cuda_counts.h"

#include <stdlib.h>
#include <string.h>

#include "capture/sampler.h"
#include "pipeline/frame_cache.h"
#include "pipeline/name_stage.h"
#include "pipeline/pipeline_state.h"
#include "symbolize/proc.h"
#include "symbolize/symcache.h"

/* Exact CUDA counts kept for exited processes (for the end-of-run summary). */
#define DONE_MAX 65536

struct done_count {
	pid_t pid;
	uint32_t kind;
	uint64_t what, window, count;
	char *name;
};

/* What check_one learns: whether a launch count's name waits for an index. */
struct name_check {
	struct pipeline *pl;
	bool pending;
};

struct count_ctx {
	struct pipeline *pl;
	pipeline_count_cb cb;
	void *ctx;
	bool only_window; /* only the counts of window (older ones are dropped) */
	uint64_t window;
};

/* The kernel name of a launch count's function (NULL for other kinds). */
static const char *count_name(struct pipeline *pl, uint32_t pid, uint32_t kind, uint64_t what)
{
	const char *name = NULL;

	if (kind == MLPROF_SK_CUDA_LAUNCH && pl->cuda) {
		struct proc *p = proc_cache__get(pl->procs, (pid_t)pid);
		struct mlprof_sample s = {.pid = pid, .kind = kind};
		bool force = pl->force_emit;
		struct frame f;

		/* a count is named now, never parked (sym_missing is a sample's, not ours) */
		pl->sym_missing = false;
		pl->force_emit = true;
		/* a host stub symbolizes as an address of the process; else a handle */
		s.aux[0] = what;
		s.aux[1] = MLPROF_CUDA_DRIVER;
		if (p) {
			name_stage__native(pl, p, what, &f);
			if (f.function)
				s.aux[1] = MLPROF_CUDA_RT;
		}
		pl->names_used = 0;
		frame_cache__begin_sample(pl->fcache);
		name_stage__kernel_frame(pl, p, &s, &f);
		name = f.function;
		pl->force_emit = force;
	}
	return name;
}

static void count_one(void *ctx, uint32_t pid, uint32_t kind, uint64_t what, uint64_t window,
		      uint64_t count)
{
	struct count_ctx *cc = ctx;

	if (cc->only_window && window != cc->window)
		return;
	cc->cb(cc->ctx, (pid_t)pid, (enum mlprof_sample_kind)kind, what,
	       count_name(cc->pl, pid, kind, what), count);
}

/* Keeps the counts of an exiting process, named while its names and maps are known. */
static void count_keep(void *ctx, uint32_t pid, uint32_t kind, uint64_t what, uint64_t window,
		       uint64_t count)
{
	struct pipeline *pl = ctx;
	const char *name = count_name(pl, pid, kind, what);
	struct done_count *d;

	if (pl->ndone == pl->capdone) {
		size_t cap = pl->capdone ? pl->capdone * 2 : 64;

		if (cap > DONE_MAX || !(d = realloc(pl->done, cap * sizeof(*d)))) {
			pl->done_dropped++;
			return;
		}
		pl->done = d;
		pl->capdone = cap;
	}
	d = &pl->done[pl->ndone];
	d->name = name ? strdup(name) : NULL;
	if (name && !d->name) {
		pl->done_dropped++;
		return;
	}
	d->pid = (pid_t)pid;
	d->kind = kind;
	d->what = what;
	d->window = window;
	d->count = count;
	pl->ndone++;
}

static void check_one(void *ctx, uint32_t pid, uint32_t kind, uint64_t what, uint64_t window,
		      uint64_t count)
{
	struct name_check *nc = ctx;

	(void)window;
	(void)count;
	if (nc->pending || kind != MLPROF_SK_CUDA_LAUNCH)
		return;
	count_name(nc->pl, pid, kind, what);
	nc->pending = nc->pl->sym_missing;
	nc->pl->sym_missing = false;
}

/* See cuda_counts.h. */
bool cuda_counts__wait_index(struct pipeline *pl, pid_t pid)
{
	struct name_check nc = {.pl = pl};

	/* no index being built: every name is final (and the counts map is not walked twice) */
	if (!pl->cuda || !symcache__wait(pl->syms, 0))
		return false;
	sampler__cuda_counts(pl->sampler, pid, false, UINT64_MAX, check_one, &nc);
	return nc.pending;
}

/* See cuda_counts.h. */
int cuda_counts__all(struct pipeline *pl, pipeline_count_cb cb, void *ctx)
{
	struct count_ctx cc = {.pl = pl, .cb = cb, .ctx = ctx};

	for (size_t i = 0; i < pl->ndone; i++)
		cb(ctx, pl->done[i].pid, (enum mlprof_sample_kind)pl->done[i].kind,
		   pl->done[i].what, pl->done[i].name, pl->done[i].count);
	return sampler__cuda_counts(pl->sampler, 0, false, UINT64_MAX, count_one, &cc);
}

/* See cuda_counts.h. */
int cuda_counts__take(struct pipeline *pl, uint64_t window, pipeline_count_cb cb, void *ctx)
{
	struct count_ctx cc = {
		.pl = pl, .cb = cb, .ctx = ctx, .only_window = true, .window = window};
	size_t k = 0;

	for (size_t i = 0; i < pl->ndone; i++) {
		struct done_count *d = &pl->done[i];

		if (d->window > window) {
			pl->done[k++] = *d;
			continue;
		}
		if (d->window == window)
			cb(ctx, d->pid, (enum mlprof_sample_kind)d->kind, d->what, d->name,
			   d->count);
		free(d->name);
	}
	pl->ndone = k;
	return sampler__cuda_counts(pl->sampler, 0, true, window, count_one, &cc);
}

/* See cuda_counts.h. */
void cuda_counts__keep_exited(struct pipeline *pl, pid_t pid)
{
	sampler__cuda_counts(pl->sampler, pid, true, UINT64_MAX, count_keep, pl);
}

/* See cuda_counts.h. */
void cuda_counts__clear(struct pipeline *pl)
{
	for (size_t i = 0; i < pl->ndone; i++)
		free(pl->done[i].name);
	free(pl->done);
	pl->done = NULL;
	pl->ndone = pl->capdone = 0;
}
