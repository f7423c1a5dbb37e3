/* SPDX-License-Identifier: Apache-2.0 */
/* The sampling pipeline: BPF records -> unwinding -> symbolization -> frames to a sink. */
#ifndef MLPROF_PIPELINE_H
#define MLPROF_PIPELINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <mlprof/sample.h>

#include "frame.h"

struct pipeline;
struct proc;

#define PIPELINE_MAX_FRAMES 512

struct pipeline_config {
	unsigned int freq_hz;  /* sampling frequency (Hz per CPU) */
	uint32_t ustack_bytes; /* user stack copy per sample */
	bool filter_pids;      /* only the pids given (and added later) */
	const pid_t *pids;
	int n_pids;
	bool follow_children;  /* include processes forked by filtered ones */
	bool kernel_frames;    /* include kernel frames in stacks */
	size_t symcache_bytes; /* bound on symbol tables */
	size_t max_procs;      /* bound on cached processes */
	size_t ringbuf_bytes;  /* BPF ring buffer size */
};

/* What the sink learns about a sample besides its frames. */
struct sample_info {
	pid_t pid, tid;
	enum mlprof_sample_kind kind;
	uint64_t time_ns;	 /* CLOCK_MONOTONIC */
	int64_t value;		 /* weight in the kind's unit (1 per cpu sample) */
	const char *thread_name; /* comm of the thread */
	const char *proc_name;	 /* comm of the process (main thread), or thread_name */
	struct proc *proc;	 /* cached process (maps, root), NULL if unknown */
};

/*
 * Receives each symbolized sample: frames[0] is the leaf. Strings in frames and info are
 * valid only during the call. Return 0 to continue, negative to stop polling with error.
 */
typedef int (*pipeline_sink_cb)(void *ctx, const struct sample_info *info,
				const struct frame *frames, int n_frames);

/* Counters the pipeline keeps (plus the BPF counters from the sampler). */
struct pipeline_stats {
	uint64_t bpf[MLPROF_STAT__COUNT];
	uint64_t samples;	 /* samples delivered to the sink */
	uint64_t unwind_ends[6]; /* by enum unwind_end */
	uint64_t frames_unsymbolized;
	uint64_t frames_total;
	uint64_t proc_events;
	uint64_t cpu_ns; /* user-space CPU time spent processing records */
	uint64_t symcache_bytes, symcache_tables, symcache_evictions;
	uint64_t procs_cached, proc_evictions, elf_files;
};

/* Builds and starts the pipeline (loads BPF). NULL with errno on failure (logged). */
struct pipeline *pipeline__new(const struct pipeline_config *cfg, pipeline_sink_cb sink, void *ctx);
void pipeline__free(struct pipeline *pl);
int pipeline__add_pid(struct pipeline *pl, pid_t pid);
/* Processes records for up to timeout_ms. Returns records handled or -errno. */
int pipeline__poll(struct pipeline *pl, int timeout_ms);
/* Releases dead processes and unused files; call at window boundaries. */
void pipeline__gc(struct pipeline *pl);
void pipeline__stats(struct pipeline *pl, struct pipeline_stats *out);

#endif
