// SPDX-License-Identifier: Apache-2.0
/* The heap BPF object: load, per-process allocator probes, live blocks of exited processes. */
#define LOG_MODULE "heap"
#include "util/log.h"

#include "capture/heap_probes.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "capture/sampler_share.h"
#include "capture/uprobe_link.h"
#include "heap.skel.h"

struct heap_probes {
	struct heap_bpf *skel;
	struct bpf_link *tp[4]; /* direct mmap, its return, munmap, exec */
	bool session;		/* uprobe sessions: a return probe only for sampled calls */
	bool multi;		/* uprobe_multi links (else one link per offset) */
};

/*
 * Exponential draws of mean bytes at the midpoints of MLPROF_HEAP_DRAWS equal-probability
 * slices: the countdown between samples, so that sampling is a Poisson process over bytes.
 */
void heap_probes__fill_draws(volatile __u32 *out, uint64_t mean)
{
	for (unsigned int i = 0; i < MLPROF_HEAP_DRAWS; i++) {
		double u = (i + 0.5) / MLPROF_HEAP_DRAWS;
		double v = -log(u) * (double)mean;

		out[i] = v >= 4294967295.0 ? 4294967295u : (__u32)v;
	}
}

/* See heap_probes.h. */
struct heap_probes *heap_probes__new(struct sampler *s, uint64_t mean_bytes)
{
	struct heap_probes *hp = calloc(1, sizeof(*hp));
	struct heap_bpf *o;
	int err;

	if (!hp)
		return NULL;
	o = heap_bpf__open();
	if (!o) {
		err = -errno;
		pr_err("opening the heap BPF object failed: %s", strerror(-err));
		free(hp);
		errno = -err;
		return NULL;
	}
	hp->skel = o;
	hp->session = uprobe_link__session_supported();
	hp->multi = uprobe_link__multi_supported();
	heap_probes__fill_draws(o->rodata->heap_draws, mean_bytes ? mean_bytes : 1);
	if (hp->session) {
		bpf_program__set_autoload(o->progs.heap_entry, false);
		bpf_program__set_autoload(o->progs.heap_return, false);
		err = uprobe_link__prepare_session(o->progs.heap_session);
	} else {
		bpf_program__set_autoload(o->progs.heap_session, false);
		err = hp->multi ? uprobe_link__prepare(o->progs.heap_entry)
					  ?: uprobe_link__prepare(o->progs.heap_return)
				: 0;
	}
	if (!err)
		err = sampler_share_capture(s, o, "heap");
	if (!err)
		err = heap_bpf__load(o);
	if (err) {
		pr_err("loading the heap BPF programs failed: %s (run with log level debug for the "
		       "verifier log)",
		       strerror(-err < 0 ? err : -err));
		heap_probes__free(hp);
		errno = err < 0 ? -err : err;
		return NULL;
	}
	{
		struct bpf_program *tps[sizeof(hp->tp) / sizeof(hp->tp[0])] = {
			o->progs.heap_mmap, o->progs.heap_mmap_exit, o->progs.heap_munmap,
			o->progs.heap_exec};

		for (size_t i = 0; i < sizeof(hp->tp) / sizeof(hp->tp[0]); i++) {
			hp->tp[i] = bpf_program__attach(tps[i]);
			if (!hp->tp[i]) {
				err = -errno;
				pr_err("attaching the heap mmap tracepoints failed: %s",
				       strerror(-err));
				hp->tp[i] = NULL;
				heap_probes__free(hp);
				errno = -err;
				return NULL;
			}
		}
	}
	pr_info("heap probes loaded (%s, one allocation sampled per %llu bytes on average)",
		heap_probes__mode(hp), (unsigned long long)mean_bytes);
	return hp;
}

/* See heap_probes.h. */
void heap_probes__free(struct heap_probes *hp)
{
	if (!hp)
		return;
	for (size_t i = 0; i < sizeof(hp->tp) / sizeof(hp->tp[0]); i++)
		bpf_link__destroy(hp->tp[i]);
	heap_bpf__destroy(hp->skel);
	free(hp);
}

/* See heap_probes.h. */
const char *heap_probes__mode(const struct heap_probes *hp)
{
	return hp->session ? "uprobe session" : "uretprobe";
}

/* Whether fn returns a block (its return is probed). */
static bool fn_returns(enum mlprof_heap_fn fn)
{
	return fn != MLPROF_HEAP_FREE;
}

/* See heap_probes.h. */
struct uprobe_link *heap_probes__attach(struct heap_probes *hp, const char *path,
					const struct heap_target *t, int n, pid_t pid)
{
	struct uprobe_target *ut;
	struct uprobe_link *l;
	int err;

	if (!hp || !path || !t || n <= 0 || pid <= 0) {
		errno = EINVAL;
		return NULL;
	}
	ut = calloc((size_t)n, sizeof(*ut));
	if (!ut)
		return NULL;
	for (int i = 0; i < n; i++) {
		ut[i].off = t[i].off;
		ut[i].cookie = (uint64_t)t[i].fn;
		ut[i].ret = fn_returns(t[i].fn);
	}
	if (hp->session)
		l = uprobe_link__attach_session(hp->skel->progs.heap_session, path, ut, n, pid);
	else
		l = uprobe_link__attach(hp->skel->progs.heap_entry, hp->skel->progs.heap_return,
					hp->multi, path, ut, n, pid);
	err = errno;
	free(ut);
	errno = err;
	return l;
}

static int pid_visit(const void *key, void *ctx)
{
	return ((const struct mlprof_heap_key *)key)->pid == *(const __u32 *)ctx;
}

/* See heap_probes.h. */
void heap_probes__forget_pid(struct heap_probes *hp, pid_t pid)
{
	__u32 want = (__u32)pid;

	if (!hp)
		return;
	bpf_map_delete_elem(bpf_map__fd(hp->skel->maps.heap_procs), &want);
	sampler__map_walk(bpf_map__fd(hp->skel->maps.heap_live), sizeof(struct mlprof_heap_key),
			  pid_visit, &want);
}

/* Value of the heap_procs map (bpf/heap.bpf.c). */
struct heap_proc {
	__u64 lo, hi;
};

/* See heap_probes.h. */
int heap_probes__set_proc(struct heap_probes *hp, pid_t pid, uint64_t lo, uint64_t hi)
{
	struct heap_proc v = {.lo = lo, .hi = hi};
	__u32 key = (__u32)pid;

	if (bpf_map_update_elem(bpf_map__fd(hp->skel->maps.heap_procs), &key, &v, BPF_ANY))
		return -errno;
	return 0;
}
