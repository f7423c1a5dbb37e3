/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The pipeline's types: its configuration and what it hands its sink (pipeline.h has the
 * pipeline's functions and counters; its parts share these through pipeline_state.h).
 */
#ifndef MLPROF_PIPELINE_CONFIG_H
#define MLPROF_PIPELINE_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <mlprof/sample.h>

#include "memory/heap.h"
#include "profile/frame.h"
#include "runtimes/cuda/cuda.h"

struct proc;

#define PIPELINE_MAX_FRAMES 512

/* Which files native source lines are read from (their DWARF, through libdw). */
enum pipeline_lines {
	PIPELINE_LINES_OFF = 0,
	/*
	 * Files with at most 1 MiB of .debug_* sections: opening a large debug file
	 * decompresses it on the consumer thread (libc's: ~0.1 s, libpython's: ~0.4 s), long
	 * enough for the ring buffer to fill in a burst and for a library's first CUDA calls to
	 * pass before its probes are attached.
	 */
	PIPELINE_LINES_SMALL,
	PIPELINE_LINES_ALL, /* every file (up to 1 GiB of .debug_*), at that cost */
};

struct pipeline_config {
	unsigned int freq_hz;  /* sampling frequency (Hz per CPU) */
	uint32_t ustack_bytes; /* user stack copy per sample */
	bool filter_pids;      /* only the pids given (and added later) */
	const pid_t *pids;
	int n_pids;
	bool follow_children;		  /* include processes forked by filtered ones */
	bool kernel_frames;		  /* include kernel frames in stacks */
	size_t symcache_bytes;		  /* bound on symbol tables */
	size_t max_procs;		  /* bound on cached processes */
	size_t ringbuf_bytes;		  /* BPF ring buffer size */
	bool python;			  /* read Python frames of CPython 3.10+ processes */
	enum pipeline_lines source_lines; /* native source file and line from DWARF (libdw) */
	size_t python_cache_bytes;	  /* bound on decoded Python code objects (0 = 8 MiB) */
	bool offcpu;		       /* also sample threads leaving the CPU (MLPROF_SK_OFFCPU) */
	uint64_t offcpu_min_ns;	       /* shortest off-CPU interval reported (0: all) */
	uint32_t offcpu_budget;	       /* off-CPU captures per CPU per 100 ms (0 = 50) */
	bool cuda_on;		       /* attach CUDA/NCCL probes to the libraries processes map */
	struct cuda_config cuda;       /* ... which families */
	uint32_t cuda_budget;	       /* CUDA stack captures per CPU per 100 ms (0 = 50) */
	uint64_t cuda_tensor_sample;   /* mean bytes between sampled PyTorch tensor allocations
					* (0: MLPROF_TENSOR_SAMPLE_BYTES) */
	uint64_t cuda_count_window_ns; /* exact CUDA counts kept per window this long (the
					* agent's interval; 0: one window, record) */
	bool cuda_preload;	       /* load the CUDA/NCCL programs at start (the agent: the
					* first hold then takes ms, not the verifier's ~0.2 s) */
	bool cuda_no_hold;	       /* do not stop a process mapping a CUDA/NCCL library until
					* its probes are attached (they may then miss its first
					* calls) */
	bool memory;		       /* memory growth (MLPROF_SK_MEMORY) */
	uint64_t memory_sample_bytes;  /* mean faulted bytes per captured stack (0 = 512 KiB) */
	uint32_t memory_budget;	       /* memory stack captures per CPU per 100 ms (0 = 50) */
	uint64_t memory_max_faults;    /* see sampler_config (0: fault programs always attached) */
	bool steps;		       /* PyTorch training steps (runtimes/torch/steps.h) */
	uint64_t steps_max_scopes;     /* scope events a second per process above which the
					* step probes run in random slots (0: always) */
	bool heap; /* heap allocations by site (MLPROF_SK_HEAP, memory/heap.h) */
	struct heap_config heap_cfg;
};

/* What the sink learns about a sample besides its frames. */
struct sample_info {
	pid_t pid, tid;
	enum mlprof_sample_kind kind;
	uint64_t time_ns;	 /* CLOCK_MONOTONIC */
	int64_t value;		 /* weight in the kind's unit (1 per cpu sample, ns off-CPU) */
	uint64_t aux0, aux1;	 /* kind-specific (mlprof_sample.aux, see mlprof/sample.h) */
	bool inuse;		 /* a snapshot of memory still in use (pipeline__snapshot) */
	const char *thread_name; /* comm of the thread */
	const char *proc_name;	 /* comm of the process (main thread), or thread_name */
	struct proc *proc;	 /* cached process (maps, root), NULL if unknown */
	uint64_t start_ns;	 /* the process's start (ns since boot), 0 if unknown */
	const char *ml_phase;	 /* the training-step phase of the thread (steps.h), or NULL */
};

/*
 * Receives each symbolized sample: frames[0] is the leaf. Strings in frames and info are
 * valid only during the call. Return 0 to continue, negative to stop polling with error.
 */
typedef int (*pipeline_sink_cb)(void *ctx, const struct sample_info *info,
				const struct frame *frames, int n_frames);

/*
 * Receives one exact CUDA/NCCL call count (pipeline__cuda_counts): name is the launched
 * kernel's (launches) or NULL; for MLPROF_SK_CUDA_ALLOC, what is 0 for allocations and 1
 * for frees.
 */
typedef void (*pipeline_count_cb)(void *ctx, pid_t pid, enum mlprof_sample_kind kind, uint64_t what,
				  const char *name, uint64_t count);

#endif
