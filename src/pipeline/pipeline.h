/* SPDX-License-Identifier: Apache-2.0 */
/* The sampling pipeline: BPF records -> unwinding -> symbolization -> frames to a sink. */
#ifndef MLPROF_PIPELINE_H
#define MLPROF_PIPELINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <mlprof/sample.h>

#include "capture/fault_duty.h"
#include "capture/hold.h"
#include "memory/heap.h"
#include "memory/memtrack.h"
#include "pipeline/backward.h"
#include "pipeline/pipeline_config.h"
#include "runtimes/torch/steps.h"
#include "profile/frame.h"
#include "runtimes/cuda/cuda.h"
#include "runtimes/python/python.h"
#include "symbolize/symcache.h"
#include "unwind/unwind.h"

struct pipeline;

/* Counters the pipeline keeps (plus the BPF counters from the sampler). */
struct pipeline_stats {
	uint64_t bpf[MLPROF_STAT__COUNT];
	uint64_t samples;	 /* samples delivered to the sink */
	uint64_t cpu_samples;	 /* ... of kind MLPROF_SK_CPU */
	uint64_t py_cpu_samples; /* ... of which with at least one Python frame */
	uint64_t unwind_ends[6]; /* by enum unwind_end */
	/* the unwinder's own counters (frame-pointer fallback) */
	struct unwind_stats unwind;
	uint64_t frames_unsymbolized;
	uint64_t frames_total;
	uint64_t proc_events;
	uint64_t cpu_ns;	   /* user-space CPU time spent processing records */
	struct symcache_stats sym; /* the symbol indexes */
	/* samples that waited for a symbol index being built (a file seen the first time) */
	uint64_t symwait_parked;	 /* samples that waited */
	uint64_t symwait_now;		 /* ... waiting now */
	uint64_t symwait_forced;	 /* ... sent before their index was ready (age, bound,
					  * exit, end): some frames carry raw addresses */
	uint64_t symwait_frames_unnamed; /* frames left unnamed in those */
	uint64_t procs_cached, proc_evictions, elf_files;
	uint64_t proc_bytes;	      /* process cache map sets now (bounded) */
	uint64_t proc_maps_truncated; /* maps reads cut by the per-process bounds */
	/* code addresses in no known mapping, maps re-read for them (and found unchanged),
	 * answered by PROCMAP_QUERY without a re-read, in stretches known to hold no code */
	uint64_t proc_lookups_failed, proc_maps_reads, proc_rereads_unchanged;
	uint64_t proc_misses_checked, proc_misses_in_gaps;
	uint64_t proc_trims; /* ... and early re-reads of processes at the bound of replaced maps */
	struct python_stats python;		       /* zero when Python frames are off */
	uint64_t offcpu_pending, offcpu_pending_bytes; /* off-CPU samples waiting for their end */
	uint64_t offcpu_unmatched;	  /* ends without their sample, samples without their end */
	uint64_t offcpu_dropped;	  /* waiting samples dropped by the bound */
	struct memtrack_stats mem;	  /* in-use views (device allocations, memory growth) */
	struct backward_stats backward;	  /* PyTorch backward passes (autograd workers) */
	struct fault_duty_stats mem_duty; /* the page-fault programs' duty cycle */
	struct steps_duty_stats steps_duty; /* the training-step probes' (duty 1 without) */
	struct cuda_stats cuda;
	struct hold_stats hold; /* processes held until their CUDA probes were attached */
	bool heap_on;		/* the heap probes are loaded */
	struct heap_stats heap;
	uint64_t heap_allocs;	  /* sampled allocations emitted */
	int64_t heap_alloc_bytes; /* ... the bytes they stand for */
	uint64_t heap_frees;	  /* frees of sampled blocks */
};

/* Builds and starts the pipeline (loads BPF). NULL with errno on failure (logged). */
struct pipeline *pipeline__new(const struct pipeline_config *cfg, pipeline_sink_cb sink, void *ctx);
void pipeline__free(struct pipeline *pl);
int pipeline__add_pid(struct pipeline *pl, pid_t pid);
/*
 * The period a consumer polls at (timeout_ms of pipeline__poll in its loop). Records are
 * batched (the BPF side wakes the consumer only for a new process, a library mapped, new
 * Python code, or half the ring pending), so the timer and the ring's fill set how often
 * the consumer wakes: each wake costs a switch and a batch that finds the tables cold. On
 * a PyTorch loop at 99 Hz (~22 KB a sample): 100 ms polls cost 29-31 us of CPU a sample,
 * 500 ms 19-24 us (an eighth of the 4 MiB ring still woke it every ~230 ms), 1 s with
 * half the ring 14-17 us.
 */
#define PIPELINE_POLL_MS 1000
/* Processes records for up to timeout_ms. Returns records handled or -errno. */
int pipeline__poll(struct pipeline *pl, int timeout_ms);
/*
 * The capture ends: the polls that drain the ring buffer from now on switch no probes (the
 * step probes' duty cycle stays where it is).
 */
void pipeline__ending(struct pipeline *pl);
/*
 * Emits the in-use views (device allocations, sampled memory growth): one sample per stack
 * still holding memory (sample_info.inuse, value = bytes) with time time_ns (0: the time of
 * the stack's sample). The view at the end of a window or a recording. 0 or the sink's
 * error.
 */
int pipeline__snapshot(struct pipeline *pl, uint64_t time_ns);
/*
 * Exact CUDA/NCCL call counts kept by BPF (and those of processes that exited, named when
 * they did): cb(ctx, pid, kind, what, name, count) per entry (pipeline_config.h). Returns 0
 * or -ENOTSUP (probes off).
 */
int pipeline__cuda_counts(struct pipeline *pl, pipeline_count_cb cb, void *ctx);
/* The PyTorch training steps seen (NULL when steps are off). */
struct steps *pipeline__steps(const struct pipeline *pl);
/*
 * The agent's windows (pipeline_config.cuda_count_window_ns): calls cb for the exact counts
 * of window (CLOCK_MONOTONIC ns / the window length) and takes them, and drops those of
 * older windows (sent already). 0 or -errno.
 */
int pipeline__cuda_counts_take(struct pipeline *pl, uint64_t window, pipeline_count_cb cb,
			       void *ctx);
/* Bytes of memory growth (kind MLPROF_SK_MEMORY) or device memory in use by process pid. */
int64_t pipeline__inuse(struct pipeline *pl, enum mlprof_sample_kind kind, pid_t pid);
/*
 * Waits up to timeout_ms for the symbol indexes that parked samples need, then emits every
 * parked sample (unnamed frames where an index is still not ready). Call before the last
 * snapshot of a recording and before pipeline__free. 0 or the sink's error.
 */
int pipeline__drain(struct pipeline *pl, int timeout_ms);
/*
 * Emits the parked samples taken before time_ns (CLOCK_MONOTONIC) now, unnamed where their
 * index is still not ready: a window that ends at time_ns is complete. 0 or the sink's error.
 */
int pipeline__flush_before(struct pipeline *pl, uint64_t time_ns);
/* Releases dead processes and unused files; call at window boundaries. */
void pipeline__gc(struct pipeline *pl);
void pipeline__stats(struct pipeline *pl, struct pipeline_stats *out);
/*
 * The most memory a pipeline made with cfg holds by its bounds: ring buffer, symbol,
 * Python code, source line and process caches, off-CPU pending stacks, memory tracking.
 */
uint64_t pipeline__bound_bytes(const struct pipeline_config *cfg);

#endif
