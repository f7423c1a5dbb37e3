// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* CPU sampler: cpu-clock perf events -> registers + stacks, plus process lifecycle events. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>

char LICENSE[] SEC("license") = "Dual BSD/GPL";

/* CPU and off-CPU stacks taken inside a function with a pending return probe keep their
 * callers (capture.bpf.h: uret_restore) */
#define MLPROF_URET_RESTORE 1
/* pages of the stack copy read one by one where one is not resident (capture.bpf.h) */
#define MLPROF_USTACK_PAGEWISE 1
#include "record.bpf.h"
#include "scope.bpf.h"

/*
 * With hold_cuda_maps (CUDA/NCCL probes on), a profiled process that maps a CUDA runtime,
 * driver or NCCL library executable (file name libcudart*, libcuda.so*, libnccl*) is
 * stopped with SIGSTOP on its way out of mmap, before it can call into the library; user
 * space attaches the probes and sends SIGCONT. Not done to a process that a job-control
 * shell started (it has a terminal and a process group of its own): the shell would report
 * it stopped.
 */
const volatile bool hold_cuda_maps = false;

/*
 * Processes stopped that way: tgid -> bpf_ktime_get_ns() of the stop. User space deletes an
 * entry when it continues the process, continues those left past a deadline, and a guard
 * process continues them all if mlprof dies.
 */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, __u32);
	__type(value, __u64);
} held SEC(".maps");

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

/*
 * For the threads of PyTorch scopes only (an entry in scope_runs): their runtime and the
 * time at each switch-in, so that scope_oncpu_ns is exact between ticks. Attached by user
 * space while scopes are probed (sampler__scope_cpu_start); for every other switch, one
 * failed task-storage lookup.
 */
SEC("tp_btf/sched_switch")
int BPF_PROG(on_scope_switch, bool preempt, struct task_struct *prev, struct task_struct *next)
{
	struct scope_run *r = bpf_task_storage_get(&scope_runs, next, 0, 0);

	if (r) {
		r->sum_in = next->se.sum_exec_runtime;
		r->in_ns = bpf_ktime_get_ns();
	}
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
	bpf_map_delete_elem(&held, &tgid); /* (killed while held: never continue its pid) */
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
 * Threads inside an mmap(PROT_EXEC) of a file, tid -> MMAP_MARK or MMAP_HOLD.
 */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 4096);
	__type(key, __u32);
	__type(value, __u8);
} mmap_exec SEC(".maps");

#define PROT_EXEC 0x4
#define SIGSTOP	  19
#define MMAP_MARK 1 /* an executable file mapping */
#define MMAP_HOLD 2 /* ... of a library whose probes must be in place before it runs */

/* Whether s starts with the NUL-terminated prefix p (at most 12 characters). */
static __always_inline bool has_prefix(const char *s, const char *p)
{
#pragma unroll
	for (int i = 0; i < 12; i++) {
		if (!p[i])
			return true;
		if (s[i] != p[i])
			return false;
	}
	return true;
}

/* Whether fd of the current process is open on a CUDA/NCCL library (by file name). */
static __always_inline bool cuda_library_fd(struct task_struct *task, long fd)
{
	struct file **fds, *f = NULL;
	const unsigned char *name;
	unsigned int max_fds;
	char buf[16] = {};

	max_fds = BPF_CORE_READ(task, files, fdt, max_fds);
	if (fd < 0 || fd >= max_fds)
		return false;
	fds = BPF_CORE_READ(task, files, fdt, fd);
	if (!fds || bpf_probe_read_kernel(&f, sizeof(f), &fds[fd]) || !f)
		return false;
	name = BPF_CORE_READ(f, f_path.dentry, d_name.name);
	if (!name || bpf_probe_read_kernel_str(buf, sizeof(buf), name) < 0)
		return false;
	return has_prefix(buf, "libcudart") || has_prefix(buf, "libcuda.so") ||
	       has_prefix(buf, "libnccl");
}

/* A process a job-control shell started: a terminal, and not its parent's process group. */
static __always_inline bool job_control_child(struct task_struct *task)
{
	if (!BPF_CORE_READ(task, signal, tty))
		return false;
	return BPF_CORE_READ(task, signal, pids[PIDTYPE_PGID]) !=
	       BPF_CORE_READ(task, real_parent, signal, pids[PIDTYPE_PGID]);
}

SEC("tp/syscalls/sys_enter_mmap")
int on_mmap_enter(struct trace_event_raw_sys_enter *ctx)
{
	__u8 mark = MMAP_MARK;

	if (!(ctx->args[2] & PROT_EXEC) || (long)ctx->args[4] < 0 ||
	    !pid_wanted(bpf_get_current_pid_tgid() >> 32))
		return 0;
	if (hold_cuda_maps) {
		struct task_struct *task = (void *)bpf_get_current_task();

		if (cuda_library_fd(task, (long)ctx->args[4]) && !job_control_child(task))
			mark = MMAP_HOLD;
	}
	tid_mark(&mmap_exec, mark);
	return 0;
}

SEC("tp/syscalls/sys_exit_mmap")
int on_mmap_exit(struct trace_event_raw_sys_exit *ctx)
{
	__u32 tgid = bpf_get_current_pid_tgid() >> 32;
	__u8 mark = tid_mark_take(&mmap_exec);
	struct mlprof_proc_event *e;
	__u64 now;

	if (!mark || ctx->ret < 0)
		return 0;
	e = bpf_ringbuf_reserve(&rb, sizeof(*e), 0);
	if (!e) {
		stat_inc(MLPROF_STAT_PROC_RB_FULL);
		return 0; /* (never stopped without the event that continues it) */
	}
	now = bpf_ktime_get_ns();
	e->type = MLPROF_EV_MAP_EXEC;
	e->pid = tgid;
	e->ppid = 0;
	e->pad = 0;
	e->time_ns = now;
	bpf_get_current_comm(e->comm, sizeof(e->comm));
	if (mark == MMAP_HOLD && !bpf_map_update_elem(&held, &tgid, &now, BPF_ANY)) {
		if (bpf_send_signal(SIGSTOP)) {
			bpf_map_delete_elem(&held, &tgid);
		} else {
			e->pad = MLPROF_PROC_HELD;
			stat_inc(MLPROF_STAT_CUDA_HOLDS);
		}
	}
	/* the process is about to run the new code: wake user space now */
	bpf_ringbuf_submit(e, BPF_RB_FORCE_WAKEUP);
	return 0;
}
