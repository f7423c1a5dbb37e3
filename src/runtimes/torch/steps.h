/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Training steps of PyTorch processes and where their time goes, from the record_function
 * scopes PyTorch opens whether or not a profiler runs (bpf/torch.bpf.c): a step is the
 * time between two ends of an Optimizer.step scope on a thread; each nanosecond of it is in
 * one phase, first match wins: gpu_wait (in a CUDA synchronize call, from the CUDA
 * probes), data_wait (in the DataLoader's __next__), optimizer (in Optimizer.step /
 * zero_grad), cpu_compute (on CPU, the rest), other (off CPU, the rest). Above a scope rate
 * the probes are attached in random slots only (steps_duty.h): a thread's open scopes and
 * its step in progress are forgotten across a time detached, and its samples then carry
 * no phase.
 */
#ifndef MLPROF_STEPS_H
#define MLPROF_STEPS_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include <mlprof/torch.h>

#include "runtimes/torch/steps_duty.h"

struct proc;
struct proc_cache;
struct sampler;
struct steps;

/* In priority order: a nanosecond in several phases' scopes goes to the first. */
enum step_phase {
	STEP_GPU_WAIT,
	STEP_DATA_WAIT,
	STEP_COMM, /* waiting for collectives (c10d: gloo, DDP's all-reduces) */
	STEP_OPTIMIZER,
	STEP_CPU_COMPUTE,
	STEP_OTHER,
	STEP_PHASE__COUNT,
};

/* The phase's name (as the ml_phase label would say). */
const char *steps__phase_name(enum step_phase ph);

/* One process's steps so far (also after it exited). */
struct steps_proc {
	pid_t pid;
	char comm[16];
	uint64_t steps;
	uint64_t wall_ns;		      /* all steps together */
	uint64_t phase_ns[STEP_PHASE__COUNT]; /* sums to wall_ns */
	uint64_t p50_ns, p99_ns;	      /* step time percentiles */
	/* where no scope was probed (steps__phase_by_frames): time by phase from the main
	 * thread's samples (CPU, and off-CPU when it was sampled), no step boundaries */
	uint64_t frames_ns[STEP_PHASE__COUNT];
	bool frames_offcpu;
};

/* The time by phase from frames (frames_ns), all phases together. */
static inline uint64_t steps_proc__frames_total(const struct steps_proc *sp)
{
	uint64_t t = 0;

	for (int ph = 0; ph < STEP_PHASE__COUNT; ph++)
		t += sp->frames_ns[ph];
	return t;
}

struct steps_stats {
	uint64_t files_probed, attach_failed, scopes, unmatched_exits, procs_dropped;
	uint64_t detached_events;     /* sent while the probes were being detached or attached */
	uint64_t reattach_failed;     /* attaches again after a time detached that failed */
	struct steps_duty_stats duty; /* the probes' duty cycle above --steps-max-scopes */
	uint64_t files_without_sites; /* libtorch_cpu files with no entry point to probe */
	uint64_t procs_without_steps; /* processes mapping libtorch_cpu that ran no step */
};

/*
 * Loads the scope programs lazily (at the first libtorch_cpu file). max_scopes: the scope
 * events a second of the busiest process above which the probes are attached in random
 * slots only (steps_duty.h; 0: always attached).
 */
struct steps *steps__new(struct proc_cache *pc, struct sampler *s, uint64_t max_scopes);
void steps__free(struct steps *st);
/* Probes p's libtorch_cpu if it maps one not probed yet (cheap when nothing changed). */
void steps__check(struct steps *st, struct proc *p);
void steps__on_scope(struct steps *st, const struct mlprof_torch_scope *e);
/*
 * At each poll of the consumer (now: CLOCK_MONOTONIC): measures the scope rate and attaches
 * or detaches the probes as the duty cycle says.
 */
void steps__tick(struct steps *st, uint64_t now);
/* Milliseconds until steps__tick must run again (-1: no hurry). */
int steps__wait_ms(const struct steps *st, uint64_t now);
/*
 * The phase thread tid of pid is in now (time_ns, CLOCK_MONOTONIC), as 1 + enum step_phase
 * (0: not in a step): inside a DataLoader or optimizer scope, else cpu_compute for an
 * on-CPU sample and other for an off-CPU one, from the thread's first step's end until
 * four times its process's longest step past its last (a job evaluating, saving or
 * shutting down is not in a step).
 */
int steps__phase_of(struct steps *st, pid_t pid, pid_t tid, bool on_cpu, uint64_t time_ns);
/*
 * A phase for a sample of a PyTorch process that has opened no probed scope (Debian's
 * python3-torch 1.13 opens them through _record_function_enter, which its libtorch neither
 * exports nor names), from its Python frames: hint is STEP_OPTIMIZER (in an optimizer's
 * step), STEP_DATA_WAIT (in a DataLoader's __next__) or -1. Only the main thread's samples,
 * from its first such frame on while they keep coming (time after the last one is not
 * counted in frames_ns); ns is the time the sample stands for. Returns 1 + the phase, or 0
 * (not such a sample).
 */
int steps__phase_by_frames(struct steps *st, pid_t pid, pid_t tid, bool on_cpu, int hint,
			   uint64_t ns, uint64_t time_ns);
/* The process exited: its threads' state goes, its steps stay for the summary. */
void steps__exited(struct steps *st, pid_t pid);
/* Calls cb for each process with at least one step, or time by phase from frames. */
void steps__for_each(const struct steps *st, void (*cb)(void *ctx, const struct steps_proc *sp),
		     void *ctx);
/*
 * For an agent's upload window: calls cb for each process with steps ended since the last
 * call: sp holds those steps' count, wall and phase times (p50/p99 unset), dur their times
 * (n of them, oldest first, at most the last 4096; valid during the call).
 */
void steps__window(struct steps *st,
		   void (*cb)(void *ctx, const struct steps_proc *sp, const uint64_t *dur,
			      size_t n),
		   void *ctx);
/* At the end: waits for the symbol scans still running and counts their files (no probes
 * are attached any more). */
void steps__settle(struct steps *st);
void steps__stats(const struct steps *st, struct steps_stats *out);
/* The most memory the steps of all processes hold (bounded; the oldest exited go first). */
uint64_t steps__bound_bytes(void);

#endif
