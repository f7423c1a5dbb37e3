// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * Off-CPU sampler on sched_switch. When a profiled thread leaves the CPU the program runs
 * in that thread's own context, so its full stack (kernel, user registers and stack copy,
 * Python frames) is captured then, for a sample of switch-outs bounded per CPU. When the
 * thread is switched back in, the blocked time (times the sampling weight) is sent as a
 * small end record that user space pairs with the captured stack.
 *
 * Sampling keeps the profile unbiased: within a 100 ms window each switch-out is captured
 * with probability p = budget / (switch-outs of the previous window), weight 1/p, so every
 * interval contributes its blocked time in expectation whatever the switch rate.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>

char LICENSE[] SEC("license") = "Dual BSD/GPL";

/* CPU and off-CPU stacks taken inside a function with a pending return probe keep their
 * callers (capture.bpf.h: uret_restore) */
#define MLPROF_URET_RESTORE 1
#include "record.bpf.h"

#define TASK_RUNNING   0
#define RATE_WINDOW_NS 100000000ULL
#define WEIGHT_ONE     1024 /* fixed-point 1.0 of the sampling weight */

/* --- rodata knobs (set between open and load) --- */

/* Intervals shorter than this are not reported (their capture is dropped). */
const volatile __u64 offcpu_min_ns = 10000;
/* Captures per CPU per 100 ms window the sampling aims at; twice that is a hard cap. */
const volatile __u32 offcpu_budget = 50;

/* Per task: the open off-CPU interval. Task storage: freed with the task, no pid reuse. */
struct offcpu_task {
	__u64 start_ns; /* switch-out time, 0 when on the CPU */
	__u64 seq;	/* aux[0] of the captured sample (its switch-out time) */
	__u32 weight;	/* sampling weight, WEIGHT_ONE = 1 */
	__u32 captured; /* a stack was sent for this interval */
};

struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct offcpu_task);
} offcpu_tasks SEC(".maps");

/* Per CPU: switch-outs seen in this and the previous window, captures in this one. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct rate_state);
} offcpu_rate SEC(".maps");

/*
 * prev is leaving the CPU; we run in its context. Only sampled switch-outs touch task
 * storage: this runs on every context switch of the host, so the unsampled path is kept
 * to the pid filter, a jiffies read and the sampling draw.
 */
static __always_inline void offcpu_begin(void *ctx, struct task_struct *prev, bool preempt,
					 unsigned int prev_state)
{
	__u32 tgid = prev->tgid, tid = prev->pid;
	struct mlprof_sample *rec;
	struct offcpu_task *st;
	__u32 weight;
	__u64 seq;

	if (!tgid || (prev->flags & PF_KTHREAD) || !pid_wanted(tgid))
		return;
	stat_inc(MLPROF_STAT_OFFCPU_SWITCHES);
	weight = rate_sample(&offcpu_rate, offcpu_budget, coarse_now_ns(),
			     MLPROF_STAT_OFFCPU_CAPPED);
	if (!weight)
		return;
	st = bpf_task_storage_get(&offcpu_tasks, prev, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (!st)
		return;
	seq = bpf_ktime_get_ns();
	rec = rec_begin(MLPROF_SK_OFFCPU, tgid, tid, 0);
	if (!rec)
		return;
	rec->aux[0] = seq;
	rec->flags |= MLPROF_SF_HAS_END;
	rec->aux[1] = preempt || prev_state == TASK_RUNNING ? MLPROF_OFFCPU_PREEMPTED
							    : MLPROF_OFFCPU_BLOCKED;
	rec_kstack(ctx, rec);
	rec_submit(rec, rec_user(rec, NULL), tgid);
	st->seq = seq;
	st->weight = weight;
	st->captured = 1;
	/* the interval starts after the capture: its cost is ours, not the thread's wait */
	st->start_ns = bpf_ktime_get_ns();
	stat_inc(MLPROF_STAT_OFFCPU_CAPTURED);
}

/* next is about to run again: close its interval (only sampled ones have storage set). */
static __always_inline void offcpu_end(struct task_struct *next)
{
	struct mlprof_sample_end *e;
	struct offcpu_task *st;
	__u64 delta;

	st = bpf_task_storage_get(&offcpu_tasks, next, 0, 0);
	if (!st || !st->start_ns)
		return;
	delta = bpf_ktime_get_ns() - st->start_ns;
	st->start_ns = 0;
	if (!st->captured)
		return;
	st->captured = 0;
	e = bpf_ringbuf_reserve(&rb, sizeof(*e), 0);
	if (!e) {
		stat_inc(MLPROF_STAT_OFFCPU_END_LOST);
		return;
	}
	e->type = MLPROF_EV_SAMPLE_END;
	e->aux = 0;
	e->pid = next->tgid;
	e->tid = next->pid;
	e->pad = 0;
	e->seq = st->seq;
	if (delta < offcpu_min_ns) {
		e->value = 0;
		stat_inc(MLPROF_STAT_OFFCPU_SHORT);
	} else {
		e->value = delta * st->weight / WEIGHT_ONE;
	}
	bpf_ringbuf_submit(e, wakeup_bytes ? BPF_RB_NO_WAKEUP : 0);
}

SEC("tp_btf/sched_switch")
int BPF_PROG(on_switch, bool preempt, struct task_struct *prev, struct task_struct *next,
	     unsigned int prev_state)
{
	offcpu_end(next);
	offcpu_begin(ctx, prev, preempt, prev_state);
	return 0;
}
