/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Heap profiling by allocation site: finds the allocator each profiled process calls
 * (jemalloc, tcmalloc or mimalloc when mapped, else an allocator linked into the
 * executable, else glibc), attaches the heap probes to it for that process only, and
 * weighs sampled allocations back to the bytes and objects they stand for.
 */
#ifndef MLPROF_HEAP_H
#define MLPROF_HEAP_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

struct heap;
struct proc;
struct proc_cache;
struct sampler;

struct heap_config {
	uint64_t sample_bytes; /* mean allocated bytes per sampled allocation (0: 512 KiB) */
	uint32_t max_procs;    /* processes probed at once (0: 1024); more are counted */
	const char *comms;     /* comma list of process names to probe; NULL: every one */
};

struct heap_stats {
	uint64_t procs;		/* processes whose allocator is probed now */
	uint64_t procs_total;	/* ... since the start */
	uint64_t no_allocator;	/* processes in which no allocator was found */
	uint64_t attach_failed; /* attaching failed (the next maps change retries) */
	uint64_t procs_limit;	/* processes left unprobed: max_procs reached */
	uint64_t not_selected;	/* processes looked at and not selected (heap_config.comms) */
	uint64_t sample_bytes;
	const char *mode; /* "uprobe session" or "uretprobe" */
};

/* Loads the heap programs; NULL with errno set (logged) when they cannot be loaded. */
struct heap *heap__new(const struct heap_config *cfg, struct proc_cache *pc, struct sampler *s);
void heap__free(struct heap *h);

/* Probes p's allocator if it is not probed yet (cheap when nothing changed). */
void heap__check(struct heap *h, struct proc *p);
/* The process exited: its probes and its sampled blocks go. */
void heap__forget(struct heap *h, pid_t pid);
/*
 * The process exec'd: its sampled blocks went with the old image; its probes stay (in place
 * from the new image's first instruction) unless the next heap__check finds that it uses
 * another allocator file.
 */
void heap__on_exec(struct heap *h, pid_t pid);

/*
 * What one sampled allocation of size bytes stands for, sampling one per mean bytes on
 * average (a Poisson process over bytes): size / (1 - exp(-size / mean)) bytes.
 */
int64_t heap__weight(uint64_t size, uint64_t mean);
uint64_t heap__sample_bytes(const struct heap *h);

void heap__stats(const struct heap *h, struct heap_stats *out);

#endif
