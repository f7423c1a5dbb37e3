/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The heap BPF object (bpf/heap.bpf.c): loaded once, sharing the sampler's ring buffer and
 * pid filter; its allocator probes are attached per process (memory/heap.c finds where).
 */
#ifndef MLPROF_HEAP_PROBES_H
#define MLPROF_HEAP_PROBES_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include <mlprof/heap.h>

struct heap_probes;
struct sampler;
struct uprobe_link;

/* One allocator entry point of a file: which one, at which file offset. */
struct heap_target {
	enum mlprof_heap_fn fn;
	uint64_t off;
};

/*
 * Fills a table of MLPROF_HEAP_DRAWS exponential draws of mean bytes (a BPF object's
 * rodata, see bpf/bytesample.bpf.h): the countdowns between byte-sampled allocations.
 */
void heap_probes__fill_draws(volatile __u32 *out, uint64_t mean);

/*
 * Loads the heap programs, sampling on average one allocation per mean_bytes allocated
 * (per CPU). NULL with errno set on failure (logged).
 */
struct heap_probes *heap_probes__new(struct sampler *s, uint64_t mean_bytes);
void heap_probes__free(struct heap_probes *hp);

/*
 * Attaches the n entry points of the ELF file at path for process pid only. All or
 * nothing: the links (uprobe_link__release) or NULL with errno set.
 */
struct uprobe_link *heap_probes__attach(struct heap_probes *hp, const char *path,
					const struct heap_target *t, int n, pid_t pid);

/*
 * Tells BPF that process pid's allocator is probed and where its code is ([lo, hi) of
 * the process): its direct mmaps (not its allocator's) are sampled from then on.
 */
int heap_probes__set_proc(struct heap_probes *hp, pid_t pid, uint64_t lo, uint64_t hi);

/* Forgets process pid (it exited or exec'd): its sampled blocks, its allocator's code. */
void heap_probes__forget_pid(struct heap_probes *hp, pid_t pid);

/* How the return of a sampled call is seen: "uprobe session" or "uretprobe". */
const char *heap_probes__mode(const struct heap_probes *hp);

#endif
