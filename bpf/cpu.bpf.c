// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* CPU sampler: cpu-clock perf events -> registers + stacks, plus process lifecycle events. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>

#include <mlprof/sample.h>

char LICENSE[] SEC("license") = "Dual BSD/GPL";

#define PF_KTHREAD 0x00200000 /* include/linux/sched.h */
#define ENOENT	   2
/* Reads tried when the first user stack read faults: page drops, then halvings. */
#define USTACK_TRIES	  8
#define USTACK_PAGE_DROPS 3
#define PAGE_SIZE	  4096
/* Smallest user stack copy worth sending (a few frames). */
#define USTACK_MIN 256

/* --- rodata knobs: set by user space between skeleton open() and load() --- */

/* enum mlprof_filter_mode: ALL samples the whole host, PIDS only tgids in the pids map. */
const volatile __u32 filter_mode = MLPROF_FILTER_ALL;
/* With filter_mode PIDS: processes forked by a filtered process join the pids map. */
const volatile bool follow_children = false;
/* Drop samples of the idle task (tgid 0); they carry no user part anyway. */
const volatile bool skip_idle = true;
/* Never sample this tgid (the profiler itself); 0 = none. */
const volatile __u32 self_pid = 0;
/* User stack bytes copied per sample from regs SP upward; <= MLPROF_MAX_USTACK. */
const volatile __u32 ustack_bytes = MLPROF_DEFAULT_USTACK;
/*
 * Batching: with wakeup_bytes > 0 samples do not wake the consumer (it polls on a timer)
 * until this many bytes are pending, except the first sample of a process not seen yet,
 * which wakes it at once so that its maps are read while it is still alive. 0 wakes the
 * consumer for every record.
 */
const volatile __u32 wakeup_bytes = 0;

/* --- maps --- */

/*
 * Ring buffer shared by samples (variable size: struct mlprof_sample + ustack_len) and
 * process events (struct mlprof_proc_event). Size set by user space (power of two).
 */
struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 16 << 20);
} rb SEC(".maps");

/*
 * Pid filter: tgid -> 1 for every process to sample when filter_mode is PIDS. Filled by
 * user space (sampler__add_pid) and, with follow_children, by the fork handler; entries
 * are removed when the process exits so that a reused pid is not sampled by mistake.
 * max_entries is set by user space before load.
 */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 8192);
	__type(key, __u32);
	__type(value, __u8);
} pids SEC(".maps");

/*
 * Per-CPU scratch record, indexed by CPU id. A plain array with one slot per possible
 * CPU (max_entries set by user space) rather than a PERCPU_ARRAY, because per-CPU
 * values are limited to 32 KiB and this one holds the whole record with a 64 KiB stack.
 * Only the perf_event program uses it, and perf_event programs do not nest on a CPU.
 */
struct scratch_rec {
	__u8 data[sizeof(struct mlprof_sample) + MLPROF_MAX_USTACK];
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct scratch_rec);
} scratch SEC(".maps");

/*
 * Processes that already had a sample delivered (tgid -> 1), so that only the first
 * sample of a new (or newly exec'ed) process forces an immediate wakeup. LRU: old
 * entries just cost one extra wakeup.
 */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, __u32);
	__type(value, __u8);
} seen SEC(".maps");

/* Counters indexed by enum mlprof_bpf_stat, summed over CPUs by user space. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, MLPROF_STAT__COUNT);
	__type(key, __u32);
	__type(value, __u64);
} stats SEC(".maps");

/*
 * x86-64 struct pt_regs as fixed by the user ABI (uapi asm/ptrace.h); both the perf
 * context registers and bpf_task_pt_regs() point at this layout. Not CO-RE on purpose:
 * the offsets are ABI and every load is a full 8-byte word (required for perf ctx).
 */
struct x86_regs {
	__u64 r15, r14, r13, r12, bp, bx, r11, r10, r9, r8;
	__u64 ax, cx, dx, si, di, orig_ax, ip, cs, flags, sp, ss;
};

static __always_inline void stat_inc(__u32 idx)
{
	__u64 *v = bpf_map_lookup_elem(&stats, &idx);

	/* atomic: a perf sample can interrupt a tracepoint program on the same CPU */
	if (v)
		__sync_fetch_and_add(v, 1);
}

static __always_inline bool pid_wanted(__u32 tgid)
{
	if (self_pid && tgid == self_pid)
		return false;
	if (filter_mode == MLPROF_FILTER_ALL)
		return true;
	return bpf_map_lookup_elem(&pids, &tgid) != NULL;
}

static __always_inline void copy_regs(__u64 *dst, const struct x86_regs *r)
{
	dst[MLPROF_REG_IP] = r->ip;
	dst[MLPROF_REG_SP] = r->sp;
	dst[MLPROF_REG_BP] = r->bp;
	dst[MLPROF_REG_BX] = r->bx;
	dst[MLPROF_REG_R12] = r->r12;
	dst[MLPROF_REG_R13] = r->r13;
	dst[MLPROF_REG_R14] = r->r14;
	dst[MLPROF_REG_R15] = r->r15;
	dst[MLPROF_REG_AX] = r->ax;
	dst[MLPROF_REG_CX] = r->cx;
	dst[MLPROF_REG_DX] = r->dx;
	dst[MLPROF_REG_SI] = r->si;
	dst[MLPROF_REG_DI] = r->di;
	dst[MLPROF_REG_R8] = r->r8;
	dst[MLPROF_REG_R9] = r->r9;
	dst[MLPROF_REG_R10] = r->r10;
	dst[MLPROF_REG_R11] = r->r11;
}

struct vma_ctx {
	__u64 vm_end;
};

static long vma_end_cb(struct task_struct *task, struct vm_area_struct *vma, void *data)
{
	struct vma_ctx *vc = data;

	vc->vm_end = vma->vm_end;
	return 0;
}

/*
 * Copies the user stack from sp into rec->ustack. Returns the bytes copied (0 on
 * failure) and sets MLPROF_SF_USTACK_* flags.
 */
static __always_inline __u32 copy_ustack(struct mlprof_sample *rec, struct task_struct *task,
					 __u64 sp)
{
	struct vma_ctx vc = {};
	__u64 want = ustack_bytes;
	__u64 len;
	bool ok = false;
	long err;
	int i;

	if (want > MLPROF_MAX_USTACK)
		want = MLPROF_MAX_USTACK;
	if (!want || !sp)
		return 0;

	err = bpf_find_vma(task, sp, vma_end_cb, &vc, 0);
	if (err == -ENOENT) {
		/* sp is in no mapping at all: nothing to read */
		rec->flags |= MLPROF_SF_USTACK_ERR;
		stat_inc(MLPROF_STAT_USTACK_ERR);
		return 0;
	}
	len = want;
	if (err || vc.vm_end <= sp) {
		/* mmap lock busy or irq_work in use: guess, halving on faults below */
		stat_inc(MLPROF_STAT_VMA_MISS);
	} else if (vc.vm_end - sp < want) {
		len = vc.vm_end - sp;
	} else if (vc.vm_end - sp > want) {
		rec->flags |= MLPROF_SF_USTACK_CUT;
	}

	for (i = 0; i < USTACK_TRIES; i++) {
		/* keep the bound visible to the verifier whatever clang does with len */
		if (len > MLPROF_MAX_USTACK)
			len = MLPROF_MAX_USTACK;
		if (bpf_probe_read_user(rec->ustack, len, (const void *)sp) == 0) {
			ok = true;
			break;
		}
		/*
		 * Some page is not resident. Usually it is the never-touched random gap that
		 * exec leaves below the argument strings at the top of the main stack, so
		 * first drop whole pages from the top (the frames live below the gap), then
		 * halve (guessed length after a VMA miss).
		 */
		rec->flags |= MLPROF_SF_USTACK_CUT;
		if (i < USTACK_PAGE_DROPS && ((sp + len - 1) & ~(PAGE_SIZE - 1)) > sp)
			len = ((sp + len - 1) & ~(PAGE_SIZE - 1)) - sp;
		else
			len >>= 1;
		if (len < USTACK_MIN)
			break;
	}
	/* a short stack read whole is fine: only failed reads are errors */
	if (!ok) {
		rec->flags &= ~MLPROF_SF_USTACK_CUT;
		rec->flags |= MLPROF_SF_USTACK_ERR;
		stat_inc(MLPROF_STAT_USTACK_ERR);
		return 0;
	}
	if (rec->flags & MLPROF_SF_USTACK_CUT)
		stat_inc(MLPROF_STAT_USTACK_CUT);
	return len;
}

/* Ring-buffer wakeup policy for a sample of tgid (see wakeup_bytes). */
static __always_inline __u64 wakeup_flags(__u32 tgid)
{
	__u8 one = 1;

	if (!wakeup_bytes)
		return 0;
	if (!bpf_map_lookup_elem(&seen, &tgid)) {
		bpf_map_update_elem(&seen, &tgid, &one, BPF_ANY);
		return BPF_RB_FORCE_WAKEUP;
	}
	if (bpf_ringbuf_query(&rb, BPF_RB_AVAIL_DATA) >= wakeup_bytes)
		return BPF_RB_FORCE_WAKEUP;
	return BPF_RB_NO_WAKEUP;
}

SEC("perf_event")
int on_cpu_sample(struct bpf_perf_event_data *ctx)
{
	const struct x86_regs *ctx_regs = (const void *)&ctx->regs;
	const struct x86_regs *uregs;
	struct x86_regs regs;
	__u64 id = bpf_get_current_pid_tgid();
	__u32 tgid = id >> 32;
	struct task_struct *task;
	struct mlprof_sample *rec;
	__u32 slot;
	__u64 ulen = 0;
	long n;

	/* filter first: nothing is copied for processes we do not want */
	if ((tgid == 0 && skip_idle) || !pid_wanted(tgid)) {
		stat_inc(MLPROF_STAT_FILTERED);
		return 0;
	}

	slot = bpf_get_smp_processor_id();
	rec = bpf_map_lookup_elem(&scratch, &slot);
	if (!rec)
		return 0;

	rec->type = MLPROF_EV_SAMPLE;
	rec->kind = MLPROF_SK_CPU;
	rec->pid = tgid;
	rec->tid = (__u32)id;
	rec->time_ns = bpf_ktime_get_ns();
	rec->value = 1;
	rec->aux[0] = 0;
	rec->aux[1] = 0;
	rec->cpu = slot;
	rec->flags = 0;
	rec->kstack_len = 0;
	rec->ustack_len = 0;
	bpf_get_current_comm(rec->comm, sizeof(rec->comm));

	if (ctx_regs->cs & 3) {
		uregs = ctx_regs;
	} else {
		rec->flags |= MLPROF_SF_IN_KERNEL;
		n = bpf_get_stack(ctx, rec->kstack, sizeof(rec->kstack), 0);
		if (n < 0) {
			rec->flags |= MLPROF_SF_KSTACK_ERR;
			stat_inc(MLPROF_STAT_KSTACK_ERR);
		} else {
			rec->kstack_len = n / sizeof(__u64);
		}
		uregs = NULL;
	}

	task = bpf_get_current_task_btf();
	if (!task->mm || (task->flags & PF_KTHREAD)) {
		rec->flags |= MLPROF_SF_KTHREAD;
		stat_inc(MLPROF_STAT_NO_REGS);
		__builtin_memset(rec->regs, 0, sizeof(rec->regs));
		goto submit;
	}

	/*
	 * Registers go through a stack copy so that one set of loads does not mix ctx and
	 * kernel pointers (the verifier refuses such instructions).
	 */
	if (uregs) {
		regs = *uregs;
	} else {
		/* in the kernel on behalf of the task: its user regs saved at kernel entry */
		void *tregs = (void *)bpf_task_pt_regs(task);

		if (!tregs || bpf_probe_read_kernel(&regs, sizeof(regs), tregs)) {
			stat_inc(MLPROF_STAT_NO_REGS);
			__builtin_memset(rec->regs, 0, sizeof(rec->regs));
			goto submit;
		}
	}
	copy_regs(rec->regs, &regs);
	rec->flags |= MLPROF_SF_USER_REGS;
	ulen = copy_ustack(rec, task, rec->regs[MLPROF_REG_SP]);
	if (ulen > MLPROF_MAX_USTACK)
		ulen = MLPROF_MAX_USTACK;
	rec->ustack_len = ulen;

submit:
	if (bpf_ringbuf_output(&rb, rec, sizeof(*rec) + ulen, wakeup_flags(tgid)))
		stat_inc(MLPROF_STAT_RB_FULL);
	else
		stat_inc(MLPROF_STAT_SAMPLES);
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
	}
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
	if (filter_mode == MLPROF_FILTER_PIDS)
		bpf_map_delete_elem(&pids, &tgid);
	return 0;
}
