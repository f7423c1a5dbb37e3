// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* CPU sampler: cpu-clock perf events -> registers + stacks, plus process lifecycle events. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>

char LICENSE[] SEC("license") = "Dual BSD/GPL";

#include "record.bpf.h"

SEC("perf_event")
int on_cpu_sample(struct bpf_perf_event_data *ctx)
{
	const struct x86_regs *ctx_regs = (const void *)&ctx->regs;
	__u64 id = bpf_get_current_pid_tgid();
	__u32 tgid = id >> 32;
	struct mlprof_sample *rec;
	bool user;

	/* filter first: nothing is copied for processes we do not want */
	if ((tgid == 0 && skip_idle) || !pid_wanted(tgid)) {
		stat_inc(MLPROF_STAT_FILTERED);
		return 0;
	}
	rec = rec_begin(MLPROF_SK_CPU, tgid, (__u32)id, 1);
	if (!rec)
		return 0;
	user = ctx_regs->cs & 3;
	if (!user)
		rec_kstack(ctx, rec);
	rec_submit(rec, rec_user(rec, user ? ctx_regs : NULL), tgid);
	return 0;
}

static __always_inline void emit_proc_event(__u32 type, __u32 pid, __u32 ppid,
					    struct task_struct *task)
{
	struct mlprof_proc_event *e;

	e = bpf_ringbuf_reserve(&rb, sizeof(*e), 0);
	if (!e) {
		stat_inc(MLPROF_STAT_PROC_RB_FULL);
		return;
	}
	e->type = type;
	e->pid = pid;
	e->ppid = ppid;
	e->pad = 0;
	e->time_ns = bpf_ktime_get_ns();
	bpf_probe_read_kernel_str(e->comm, sizeof(e->comm), task->comm);
	/* lifecycle events ride along with the next batch */
	bpf_ringbuf_submit(e, wakeup_bytes ? BPF_RB_NO_WAKEUP : 0);
	stat_inc(MLPROF_STAT_PROC_EVENTS);
}

SEC("tp_btf/sched_process_fork")
int BPF_PROG(on_fork, struct task_struct *parent, struct task_struct *child)
{
	__u32 ptgid = parent->tgid;
	__u32 ctgid = child->tgid;
	__u8 one = 1;

	/* a new thread is covered by its tgid already */
	if (child->pid != child->tgid)
		return 0;
	if (self_pid && ptgid == self_pid)
		return 0;
	if (filter_mode == MLPROF_FILTER_PIDS) {
		if (!follow_children || !bpf_map_lookup_elem(&pids, &ptgid))
			return 0;
		/* a full map loses the child: it is simply not sampled */
		if (bpf_map_update_elem(&pids, &ctgid, &one, BPF_NOEXIST) &&
		    !bpf_map_lookup_elem(&pids, &ctgid))
			return 0;
		pids_changed();
	}
	py_on_fork(ptgid, ctgid);
	emit_proc_event(MLPROF_EV_FORK, ctgid, ptgid, child);
	return 0;
}

SEC("tp_btf/sched_process_exec")
int BPF_PROG(on_exec, struct task_struct *p, pid_t old_pid, struct linux_binprm *bprm)
{
	__u32 tgid = p->tgid;

	if (!pid_wanted(tgid))
		return 0;
	/* a new image: its first sample must wake the consumer to read the new maps */
	bpf_map_delete_elem(&seen, &tgid);
	py_forget(tgid);
	emit_proc_event(MLPROF_EV_EXEC, tgid, 0, p);
	return 0;
}

SEC("tp_btf/sched_process_exit")
int BPF_PROG(on_exit, struct task_struct *p)
{
	__u32 tgid = p->tgid;
	struct signal_struct *sig = p->signal;
	bool last;

	/* the group's live count is decremented before this tracepoint fires */
	if (sig)
		last = BPF_CORE_READ(sig, live.counter) == 0;
	else
		last = p->pid == p->tgid;
	if (!last)
		return 0;
	if (!pid_wanted(tgid))
		return 0;
	emit_proc_event(MLPROF_EV_EXIT, tgid, 0, p);
	bpf_map_delete_elem(&seen, &tgid);
	py_forget(tgid);
	if (filter_mode == MLPROF_FILTER_PIDS) {
		bpf_map_delete_elem(&pids, &tgid);
		pids_changed();
	}
	return 0;
}

/*
 * Executable file mappings (ld.so loading a library, dlopen): user space re-reads the maps
 * at once to recognize interpreters and attach CUDA/NCCL probes before the library runs.
 * Threads inside an mmap(PROT_EXEC) of a file, tid -> 1.
 */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 4096);
	__type(key, __u32);
	__type(value, __u8);
} mmap_exec SEC(".maps");

#define PROT_EXEC 0x4

SEC("tp/syscalls/sys_enter_mmap")
int on_mmap_enter(struct trace_event_raw_sys_enter *ctx)
{
	if (!(ctx->args[2] & PROT_EXEC) || (long)ctx->args[4] < 0 ||
	    !pid_wanted(bpf_get_current_pid_tgid() >> 32))
		return 0;
	tid_mark(&mmap_exec);
	return 0;
}

SEC("tp/syscalls/sys_exit_mmap")
int on_mmap_exit(struct trace_event_raw_sys_exit *ctx)
{
	__u64 id = bpf_get_current_pid_tgid();
	struct mlprof_proc_event *e;

	if (!tid_mark_take(&mmap_exec))
		return 0;
	if (ctx->ret < 0)
		return 0;
	e = bpf_ringbuf_reserve(&rb, sizeof(*e), 0);
	if (!e) {
		stat_inc(MLPROF_STAT_PROC_RB_FULL);
		return 0;
	}
	e->type = MLPROF_EV_MAP_EXEC;
	e->pid = id >> 32;
	e->ppid = 0;
	e->pad = 0;
	e->time_ns = bpf_ktime_get_ns();
	bpf_get_current_comm(e->comm, sizeof(e->comm));
	/* the process is about to run the new code: wake user space now */
	bpf_ringbuf_submit(e, BPF_RB_FORCE_WAKEUP);
	return 0;
}
