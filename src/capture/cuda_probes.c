// SPDX-License-Identifier: Apache-2.0
/* The CUDA/NCCL BPF object: load, per-library probes, exact counts, exited processes. */
#define LOG_MODULE "sampler"
#include "util/log.h"

#include "capture/cuda_probes.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "capture/heap_probes.h"
#include "capture/sampler_share.h"
#include "capture/uprobe_link.h"
#include "cuda.skel.h"

struct cuda_probes {
	struct cuda_bpf *skel;
	bool multi; /* uprobe_multi links (else one link per probe) */
};

/* Key of the cuda_counts map (bpf/cuda.bpf.c). */
struct cuda_count_key {
	__u32 pid;
	__u32 kind;
	__u64 what;
	__u64 window;
};

/* See cuda_probes.h. */
struct cuda_probes *cuda_probes__new(struct sampler *s, const struct cuda_probes_config *cfg)
{
	struct cuda_probes *cp = calloc(1, sizeof(*cp));
	struct cuda_bpf *o;
	int err;

	if (!cp)
		return NULL;
	o = cuda_bpf__open();
	if (!o) {
		err = -errno;
		pr_err("opening the CUDA BPF object failed: %s", strerror(-err));
		goto fail;
	}
	cp->skel = o;
	cp->multi = uprobe_link__multi_supported();
	if (cp->multi && (uprobe_link__prepare(o->progs.cuda_entry) ||
			  uprobe_link__prepare(o->progs.cuda_return))) {
		err = -errno;
		pr_err("preparing the CUDA programs for uprobe_multi links failed: %s",
		       strerror(-err));
		goto fail;
	}
	if (cfg->budget)
		o->rodata->cuda_budget = cfg->budget;
	o->rodata->count_window_ns = cfg->count_window_ns;
	o->rodata->sync_intervals = cfg->sync_intervals;
	heap_probes__fill_draws(o->rodata->tensor_draws, cfg->tensor_sample
								 ? cfg->tensor_sample
								 : MLPROF_TENSOR_SAMPLE_BYTES);
	err = sampler_share_capture(s, o, "CUDA")
		      ?: sampler__share_scope_runs(s, o->maps.scope_runs);
	if (err)
		goto fail;
	err = cuda_bpf__load(o);
	if (err) {
		pr_err("loading the CUDA BPF programs failed: %s (run with log level debug for the "
		       "verifier log)",
		       strerror(-err));
		goto fail;
	}
	return cp;
fail:
	cuda_probes__free(cp);
	errno = -err;
	return NULL;
}

/* See cuda_probes.h. */
void cuda_probes__free(struct cuda_probes *cp)
{
	if (!cp)
		return;
	cuda_bpf__destroy(cp->skel);
	free(cp);
}

/* See cuda_probes.h. */
const char *cuda_probes__link_kind(const struct cuda_probes *cp)
{
	return cp->multi ? "uprobe_multi links, one per program and library"
			 : "one link per probe: this kernel has no uprobe_multi";
}

/* Probes that also need the return program (to read what the call wrote, or its time). */
static bool probe_has_return(enum mlprof_cuda_probe p)
{
	return p == MLPROF_CP_SYNC_RT || p == MLPROF_CP_SYNC_DRV || p == MLPROF_CP_ALLOC_RT ||
	       p == MLPROF_CP_ALLOC_DRV || p == MLPROF_CP_FREE_RT || p == MLPROF_CP_GETFUNC ||
	       p == MLPROF_CP_GETKERNEL || p == MLPROF_CP_BACKWARD;
}

/* See cuda_probes.h. */
struct uprobe_link *cuda_probes__attach(struct cuda_probes *cp, const char *path,
					const struct sampler_probe *probes, int n)
{
	struct uprobe_target *t;
	struct uprobe_link *l;
	int err;

	if (!cp || !probes || n <= 0) {
		errno = EINVAL;
		return NULL;
	}
	t = calloc((size_t)n, sizeof(*t));
	if (!t)
		return NULL;
	for (int i = 0; i < n; i++) {
		if (probes[i].probe <= 0 || probes[i].probe >= MLPROF_CP__COUNT) {
			free(t);
			errno = EINVAL;
			return NULL;
		}
		t[i].off = probes[i].off;
		t[i].cookie = MLPROF_COOKIE(probes[i].probe, probes[i].arg1, probes[i].arg2);
		t[i].ref_ctr_off = probes[i].ref_ctr_off;
		t[i].ret = probe_has_return(probes[i].probe);
	}
	l = uprobe_link__attach(cp->skel->progs.cuda_entry, cp->skel->progs.cuda_return, cp->multi,
				path, t, n, 0);
	err = errno;
	free(t);
	errno = err;
	return l;
}

static int tensor_of_pid(const void *key, void *ctx)
{
	return ((const struct mlprof_tensor_key *)key)->pid == *(const __u32 *)ctx;
}

/* See cuda_probes.h. */
void cuda_probes__forget_pid(struct cuda_probes *cp, pid_t pid)
{
	__u32 want = (__u32)pid;

	if (!cp)
		return;
	bpf_map_delete_elem(bpf_map__fd(cp->skel->maps.cuda_backward), &want);
	bpf_map_delete_elem(bpf_map__fd(cp->skel->maps.cuda_autograd_procs), &want);
	sampler__map_walk(bpf_map__fd(cp->skel->maps.tensor_live), sizeof(struct mlprof_tensor_key),
			  tensor_of_pid, &want);
}

struct counts_walk {
	int fd;
	pid_t pid;
	bool take;
	uint64_t max_window;
	sampler_count_cb cb;
	void *ctx;
};

static int count_visit(const void *k, void *ctx)
{
	const struct cuda_count_key *key = k;
	struct counts_walk *w = ctx;
	__u64 v;

	if ((w->pid > 0 && key->pid != (__u32)w->pid) || key->window > w->max_window)
		return 0;
	if (!bpf_map_lookup_elem(w->fd, key, &v))
		w->cb(w->ctx, key->pid, key->kind, key->what, key->window, v);
	return w->take;
}

/* See cuda_probes.h. */
int cuda_probes__counts(struct cuda_probes *cp, pid_t pid, bool take, uint64_t max_window,
			sampler_count_cb cb, void *ctx)
{
	struct counts_walk w = {
		.pid = pid, .take = take, .max_window = max_window, .cb = cb, .ctx = ctx};

	if (!cp)
		return -EINVAL;
	w.fd = bpf_map__fd(cp->skel->maps.cuda_counts);
	return sampler__map_walk(w.fd, sizeof(struct cuda_count_key), count_visit, &w);
}
