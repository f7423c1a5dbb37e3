/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The pipeline's state, shared by its parts: lifecycle and event dispatch (pipeline.c),
 * naming and emitting samples (name_stage.c), intervals waiting for their end
 * (intervals.c), exact CUDA counts (cuda_counts.c). Data only: no part's functions.
 */
#ifndef MLPROF_PIPELINE_STATE_H
#define MLPROF_PIPELINE_STATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <mlprof/sample.h>

#include "pipeline/pipeline_config.h"
#include "pipeline/stack_queue.h"
#include "profile/frame.h"

struct backward;
struct cuda;
struct done_count;
struct frame_cache;
struct heap;
struct ksyms;
struct memtrack;
struct proc;
struct proc_cache;
struct python;
struct sampler;
struct steps;
struct symcache;
struct unwinder;

/* Exited processes kept until their parked samples and CUDA counts are out. */
#define EXITED_MAX 256
/* Kernel pcs named last (kernel_name's memo). */
#define KMEMO_SLOTS 512

/* Per-sample string scratch: symbol names are copied here so that all frames of one stack
 * stay valid together (symcache results live only until the next lookup). */
#define NAME_ARENA_BYTES (128 * 1024)

struct pipeline {
	struct pipeline_config cfg;
	pipeline_sink_cb sink;
	void *sink_ctx;
	struct sampler *sampler;
	struct proc_cache *procs;
	struct symcache *syms;
	struct frame_cache *fcache; /* named native frames by (maps generation, pc) */
	struct ksyms *ksyms;
	/* kernel pcs named last (the sampled paths repeat: a binary search of ~150k symbols
	 * was ~2% of the consumer), and the frame ident of every kernel frame */
	struct kmemo {
		uint64_t addr;
		const char *name;
	} kmemo[KMEMO_SLOTS];
	uint64_t kident;
	struct unwinder *unwinder;
	struct python *py;    /* NULL when Python frames are off */
	struct backward *bwd; /* PyTorch backward passes in progress (workers' samples) */
	struct cuda *cuda;    /* NULL when CUDA probes are off */
	int sink_err;
	bool ending; /* pipeline__ending: the last polls */

	/* samples parked until their symbol indexes are built */
	struct stack_queue wait;
	uint64_t wait_gen;	/* symcache__ready_gen when the parked samples were last tried */
	bool sym_missing;	/* a frame of the sample being emitted needs an index not built */
	bool force_emit;	/* emit even so (frames of files still indexed stay unnamed) */
	uint64_t parked_now_ns; /* parked_ns of the sample being re-emitted (0: a new one) */
	uint64_t wait_parked, wait_forced, wait_frames_unnamed;
	/*
	 * Exited processes whose parked samples still wait for an index: their maps stay
	 * (dead, until gc) and their Python and CUDA state is dropped only once the last one
	 * went out (forget_exited), so that a process that lived 50 ms is named all the same.
	 */
	pid_t exited[EXITED_MAX];
	size_t nexited;

	uint64_t samples, frames_total, frames_unsym, proc_events, cpu_ns;
	uint64_t cpu_samples, py_cpu_samples;
	struct stack_queue pend; /* samples waiting for their end record (intervals.c) */
	uint64_t offcpu_unmatched, offcpu_dropped;
	struct memtrack *mem; /* memory in use by site (device allocations, growth, heap) */
	struct heap *heap;    /* heap probes per process; NULL when heap profiling is off */
	struct steps *steps;  /* PyTorch training steps; NULL when off */
	uint64_t heap_allocs, heap_frees;
	int64_t heap_alloc_bytes;
	/* exact CUDA counts of exited processes, named when they exited */
	struct done_count *done;
	size_t ndone, capdone;
	uint64_t done_dropped;
	char kname[512];
	struct proc *cur_proc; /* for name_addr() during kernel naming */
	uint64_t unwind_ends[6];

	uint64_t pcs[PIPELINE_MAX_FRAMES];
	struct frame ufr[PIPELINE_MAX_FRAMES + 2]; /* user frames before Python merging */
	struct frame frames[PIPELINE_MAX_FRAMES + MLPROF_MAX_PYFRAMES + 4];
	char names[NAME_ARENA_BYTES];
	size_t names_used;
};

#endif
