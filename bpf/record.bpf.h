/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * One sample record, put together by every mlprof BPF program: begin it in this CPU's
 * scratch slot, add the kernel stack, the user part (registers, stack copy and the Python
 * frames of python.bpf.h), submit it to the ring buffer.
 * Include once per BPF object, after vmlinux.h and the libbpf headers.
 */
#ifndef MLPROF_RECORD_BPF_H
#define MLPROF_RECORD_BPF_H

#include "capture.bpf.h"
#include "python.bpf.h"

/*
 * Starts a record of the given kind for the current task in this CPU's scratch slot.
 * Programs that fill the slot must not nest on a CPU (each BPF object has its own).
 */
static __always_inline struct mlprof_sample *rec_begin(__u32 kind, __u32 tgid, __u32 tid,
						       __u64 value)
{
	__u32 slot = bpf_get_smp_processor_id();
	struct mlprof_sample *rec = bpf_map_lookup_elem(&scratch, &slot);

	if (!rec)
		return NULL;
	rec->type = MLPROF_EV_SAMPLE;
	rec->kind = kind;
	rec->pid = tgid;
	rec->tid = tid;
	rec->time_ns = bpf_ktime_get_ns();
	rec->value = value;
	rec->aux[0] = 0;
	rec->aux[1] = 0;
	rec->cpu = slot;
	rec->flags = 0;
	rec->kstack_len = 0;
	rec->ustack_len = 0;
	rec->py_nframes = 0;
	rec->py_status = MLPROF_PY_NONE;
	rec->start_ns = BPF_CORE_READ(bpf_get_current_task_btf(), group_leader, start_boottime);
	bpf_get_current_comm(rec->comm, sizeof(rec->comm));
	return rec;
}

/* The current task's kernel stack (ctx: the program's context), marked as in-kernel. */
static __always_inline void rec_kstack(void *ctx, struct mlprof_sample *rec)
{
	long n;

	rec->flags |= MLPROF_SF_IN_KERNEL;
	n = bpf_get_stack(ctx, rec->kstack, sizeof(rec->kstack), 0);
	if (n < 0) {
		rec->flags |= MLPROF_SF_KSTACK_ERR;
		stat_inc(MLPROF_STAT_KSTACK_ERR);
	} else {
		rec->kstack_len = n / sizeof(__u64);
	}
}

/*
 * The current task's user part: registers (from uregs, the interrupted user context, or
 * when NULL the registers saved at its last kernel entry), the stack copy (stack_end: see
 * copy_ustack) and the Python frames. Returns the bytes that follow the fixed part of the
 * record.
 */
static __always_inline __u64 rec_user_bounded(struct mlprof_sample *rec,
					      const struct x86_regs *uregs, __u64 stack_end)
{
	struct task_struct *task = bpf_get_current_task_btf();
	struct x86_regs regs;
	__u64 ulen, plen;

	if (!task->mm || (task->flags & PF_KTHREAD)) {
		rec->flags |= MLPROF_SF_KTHREAD;
		stat_inc(MLPROF_STAT_NO_REGS);
		__builtin_memset(rec->regs, 0, sizeof(rec->regs));
		return 0;
	}
	/*
	 * Registers go through a stack copy so that one set of loads does not mix ctx and
	 * kernel pointers (the verifier refuses such instructions).
	 */
	if (uregs) {
		regs = *uregs;
	} else {
		void *tregs = (void *)bpf_task_pt_regs(task);

		if (!tregs || bpf_probe_read_kernel(&regs, sizeof(regs), tregs)) {
			stat_inc(MLPROF_STAT_NO_REGS);
			__builtin_memset(rec->regs, 0, sizeof(rec->regs));
			return 0;
		}
	}
	copy_regs(rec->regs, &regs);
	rec->flags |= MLPROF_SF_USER_REGS;
	ulen = copy_ustack(rec, task, rec->regs[MLPROF_REG_SP], stack_end);
	if (ulen > MLPROF_MAX_USTACK)
		ulen = MLPROF_MAX_USTACK;
	rec->ustack_len = ulen;
	plen = py_capture(rec, task, rec->pid, rec->tid, ulen);
	if (plen > 8 + MLPROF_MAX_PYFRAMES * sizeof(struct mlprof_py_frame))
		plen = 0;
	return ulen + plen;
}

static __always_inline __u64 rec_user(struct mlprof_sample *rec, const struct x86_regs *uregs)
{
	return rec_user_bounded(rec, uregs, 0);
}

/* Sends the record with payload bytes after its fixed part. */
static __always_inline void rec_submit(struct mlprof_sample *rec, __u64 payload, __u32 tgid)
{
	__u64 size = sizeof(*rec) + payload;

	/* keep the bound visible to the verifier (barrier: clang may fold the check away) */
	barrier_var(size);
	if (size > sizeof(struct scratch_rec))
		size = sizeof(*rec);
	if (bpf_ringbuf_output(&rb, rec, size,
			       rec->flags & MLPROF_SF_PY_NEW ? BPF_RB_FORCE_WAKEUP
							     : wakeup_flags(tgid)))
		stat_inc(MLPROF_STAT_RB_FULL);
	else
		stat_inc(MLPROF_STAT_SAMPLES);
}

/* The usual prologue of event programs: the process is profiled; returns its tgid or 0. */
static __always_inline __u32 wanted(void)
{
	__u32 tgid = bpf_get_current_pid_tgid() >> 32;

	return pid_wanted(tgid) ? tgid : 0;
}

/* rec_capture() kind flag: aux0 is the sequence of an end record that follows */
#define CAPTURE_HAS_END 0x80000000u

/*
 * Captures the calling thread's stack as a sample of kind (ctx: a uprobe's registers).
 * A global function: the verifier checks it once, not once per probe program (loading an
 * object is then several times faster). Returns 1 when a record was begun.
 */
__noinline int rec_capture(struct pt_regs *ctx, __u32 kind, __u64 value, __u64 aux0, __u64 aux1)
{
	__u64 id = bpf_get_current_pid_tgid();
	struct mlprof_sample *rec;

	if (!ctx)
		return 0;
	rec = rec_begin(kind & ~CAPTURE_HAS_END, id >> 32, (__u32)id, value);
	if (!rec)
		return 0;
	rec->aux[0] = aux0;
	rec->aux[1] = aux1;
	if (kind & CAPTURE_HAS_END)
		rec->flags |= MLPROF_SF_HAS_END;
	rec_submit(rec, rec_user(rec, (const struct x86_regs *)ctx), id >> 32);
	return 1;
}

/*
 * The end of a captured interval or allocation (struct mlprof_sample_end); lost_stat is
 * counted when the ring buffer has no room.
 */
static __always_inline void rec_send_end(__u32 tgid, __u32 tid, __u64 seq, __u64 value, __u64 aux,
					 __u32 lost_stat)
{
	struct mlprof_sample_end *e = bpf_ringbuf_reserve(&rb, sizeof(*e), 0);

	if (!e) {
		stat_inc(lost_stat);
		return;
	}
	e->type = MLPROF_EV_SAMPLE_END;
	e->pid = tgid;
	e->tid = tid;
	e->pad = 0;
	e->seq = seq;
	e->value = value;
	e->aux = aux;
	bpf_ringbuf_submit(e, wakeup_bytes ? BPF_RB_NO_WAKEUP : 0);
}

/* A tracked allocation given back (struct mlprof_free of type, e.g. MLPROF_EV_HEAP_FREE). */
static __always_inline void rec_send_free(__u32 type, __u32 tgid, __u64 ptr, __u32 lost_stat)
{
	struct mlprof_free *e = bpf_ringbuf_reserve(&rb, sizeof(*e), 0);

	if (!e) {
		stat_inc(lost_stat);
		return;
	}
	e->type = type;
	e->pid = tgid;
	e->ptr = ptr;
	e->time_ns = bpf_ktime_get_ns();
	bpf_ringbuf_submit(e, wakeup_bytes ? BPF_RB_NO_WAKEUP : 0);
}

#endif /* MLPROF_RECORD_BPF_H */
