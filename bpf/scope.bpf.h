/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Training-step scope events (struct mlprof_torch_scope, mlprof/torch.h), sent by the
 * PyTorch scope probes (torch.bpf.c) and, for synchronize calls, by the CUDA probes
 * (cuda.bpf.c). Include after record.bpf.h.
 */
#ifndef MLPROF_SCOPE_BPF_H
#define MLPROF_SCOPE_BPF_H

#include <mlprof/torch.h>

/* Open record_function scopes a thread keeps at most (torch.bpf.c). */
#define SCOPE_OPEN_MAX 8

/*
 * Threads that have sent a scope event: their sum_exec_runtime and the time at their last
 * switch-in, kept by the cpu object's on_scope_switch (attached while PyTorch scopes are
 * probed), and the handles of their open record_function scopes (torch.bpf.c; 0: a free
 * slot): a scope's enter and exit look the thread up once. Task storage: freed with the
 * task, nothing for any other thread.
 */
struct scope_run {
	__u64 in_ns;  /* bpf_ktime_get_ns() at the switch-in, 0 before the first one seen */
	__u64 sum_in; /* the task's sum_exec_runtime then (exact: updated at its switch-out) */
	__u64 open[SCOPE_OPEN_MAX];
	__u64 gen; /* the attach (torch.bpf.c's scope_gen) its open handles are from */
};

struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct scope_run);
} scope_runs SEC(".maps");

/* The current thread's entry (created on its first scope event), NULL without memory. */
static __always_inline struct scope_run *scope_run_get(void)
{
	return bpf_task_storage_get(&scope_runs, bpf_get_current_task_btf(), 0,
				    BPF_LOCAL_STORAGE_GET_F_CREATE);
}

/*
 * The current thread's CPU time at now (r: its scope_run, or NULL): its runtime at its last
 * switch-in plus the time since (the scheduler's own sum_exec_runtime is only brought up to
 * date at ticks and switches: up to a tick, 4 ms, stale, more than a whole step of a fast
 * loop). Before the thread's first switch-in is seen, from its first scope event on: that
 * event's time and sum (stale by up to a tick once: only differences are used). A thread
 * that keeps its CPU (a loop alone on its core) may not switch for the whole run; read
 * stale at every scope boundary, its steps' CPU time came out near 0 (it.record_steps
 * test_fast_steps, 2 of 4 runs on a quiet VM).
 */
static __always_inline __u64 scope_oncpu_at(struct scope_run *r, __u64 now)
{
	if (r && !r->in_ns) {
		r->sum_in = BPF_CORE_READ(bpf_get_current_task_btf(), se.sum_exec_runtime);
		r->in_ns = now;
	}
	if (r && now >= r->in_ns)
		return r->sum_in + (now - r->in_ns);
	return BPF_CORE_READ(bpf_get_current_task_btf(), se.sum_exec_runtime);
}

static __always_inline __u64 scope_oncpu_ns(__u64 now)
{
	return scope_oncpu_at(scope_run_get(), now);
}

/*
 * Reserves a scope event with its name field (enters, waits, intervals) or without it
 * (exits: MLPROF_TORCH_SCOPE_UNNAMED_SIZE, one cache line of the ring); NULL when the ring
 * is full (counted).
 */
static __always_inline struct mlprof_torch_scope *scope_reserve(bool named)
{
	struct mlprof_torch_scope *e =
		bpf_ringbuf_reserve(&rb, named ? sizeof(*e) : MLPROF_TORCH_SCOPE_UNNAMED_SIZE, 0);

	if (!e)
		stat_inc(MLPROF_STAT_TORCH_LOST);
	return e;
}

/* Fills the fields of a reserved event but its name and sends it. */
static __always_inline void scope_commit(struct mlprof_torch_scope *e, __u32 tgid, __u32 tid,
					 __u32 flags, __u64 time_ns, __u64 oncpu, __u64 handle)
{
	e->type = MLPROF_EV_TORCH_SCOPE;
	e->pid = tgid;
	e->tid = tid;
	e->flags = flags;
	e->time_ns = time_ns;
	e->oncpu_ns = oncpu;
	e->handle = handle;
	bpf_ringbuf_submit(e, wakeup_bytes ? BPF_RB_NO_WAKEUP : 0);
}

/* Sends a scope event with name (MLPROF_TORCH_NAME_MAX bytes). */
static __always_inline void scope_send(__u32 tgid, __u32 tid, __u32 flags, __u64 time_ns,
				       __u64 oncpu, __u64 handle, const __u8 *name)
{
	struct mlprof_torch_scope *e = scope_reserve(true);

	if (!e)
		return;
	__builtin_memcpy(e->name, name, MLPROF_TORCH_NAME_MAX);
	scope_commit(e, tgid, tid, flags, time_ns, oncpu, handle);
}

/* Marks the start of a wait (MLPROF_SCOPE_WAIT) that scope_send_interval ends. */
static __always_inline void scope_send_wait(__u32 tgid, __u32 tid, __u64 now, const __u8 *name)
{
	scope_send(tgid, tid, MLPROF_SCOPE_WAIT, now, 0, 0, name);
}

/*
 * Sends a whole interval (MLPROF_SCOPE_INTERVAL) that began at start_ns with the thread's
 * CPU time oncpu0 and ends now: handle = its length, oncpu = the CPU time during it.
 */
static __always_inline void scope_send_interval(__u32 tgid, __u32 tid, __u64 now, __u64 start_ns,
						__u64 oncpu0, const __u8 *name)
{
	__u64 oncpu = scope_oncpu_ns(now);

	scope_send(tgid, tid, MLPROF_SCOPE_INTERVAL, now, oncpu > oncpu0 ? oncpu - oncpu0 : 0,
		   now - start_ns, name);
}

#endif /* MLPROF_SCOPE_BPF_H */
