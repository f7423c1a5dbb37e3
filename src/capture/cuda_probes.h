/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The CUDA/NCCL BPF object (bpf/cuda.bpf.c): loaded when the first CUDA library is probed,
 * sharing the sampler's ring buffer, pid filter and Python walker; its probes attached per
 * library file; the exact call counts it keeps in BPF.
 */
#ifndef MLPROF_CUDA_PROBES_H
#define MLPROF_CUDA_PROBES_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include <mlprof/cuda.h>

struct cuda_probes;
struct sampler;
struct uprobe_link;

/* One CUDA/NCCL probe of a library file: which entry point, at which file offset. */
struct sampler_probe {
	enum mlprof_cuda_probe probe;
	uint64_t off;
	uint32_t arg1, arg2;  /* USDT probes: where their arguments are (MLPROF_USDT_ARG) */
	uint64_t ref_ctr_off; /* USDT probes: their semaphore's file offset, or 0 */
};

/* What the programs are loaded with (sampler_config's CUDA fields). */
struct cuda_probes_config {
	uint32_t budget;	  /* stack captures per CPU per second (0: the BPF default) */
	uint64_t count_window_ns; /* exact counts kept per window of this length (0: none) */
	bool sync_intervals;	  /* synchronize calls' blocked time as intervals */
	uint64_t tensor_sample;	  /* mean bytes between sampled tensor allocations (0: default) */
};

/* Loads the programs (~0.2 s of verification). NULL with errno set (logged). */
struct cuda_probes *cuda_probes__new(struct sampler *s, const struct cuda_probes_config *cfg);
void cuda_probes__free(struct cuda_probes *cp);
/* "uprobe_multi links, one per program and library", or one link per probe. */
const char *cuda_probes__link_kind(const struct cuda_probes *cp);

/*
 * Attaches the n probes of the ELF file at path (for every process that maps it; BPF
 * filters by pid), each with its return probe when it has one. All or nothing: the links
 * (uprobe_link__release) or NULL with errno set.
 */
struct uprobe_link *cuda_probes__attach(struct cuda_probes *cp, const char *path,
					const struct sampler_probe *probes, int n);

/* Forgets process pid: its sampled PyTorch tensors not freed, its backward pass. */
void cuda_probes__forget_pid(struct cuda_probes *cp, pid_t pid);

/* cb(pid, kind, what, window, count) for each exact count (cuda_probes__counts). */
typedef void (*sampler_count_cb)(void *ctx, uint32_t pid, uint32_t kind, uint64_t what,
				 uint64_t window, uint64_t count);
/*
 * Reads the exact call counts: cb for each entry of a window <= max_window (UINT64_MAX:
 * all; of process pid only when pid > 0); with take, those entries are deleted. 0 or -errno.
 */
int cuda_probes__counts(struct cuda_probes *cp, pid_t pid, bool take, uint64_t max_window,
			sampler_count_cb cb, void *ctx);

#endif
