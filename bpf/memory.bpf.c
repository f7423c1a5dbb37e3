// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * Memory growth: memory brought in by page faults on private writable anonymous memory
 * (heap, mmap'ed buffers, thread stacks), sampled by bytes (one stack every mem_sample_bytes
 * on average, at random intervals so that it does not alias with allocation patterns,
 * weighted by that mean: the cost does not grow with the allocation rate), and memory given
 * back (munmap, madvise(DONTNEED/FREE/REMOVE), brk shrinking) as ranges that user space
 * removes from the in-use view.
 *
 * No program runs on every fault: user space opens a PERF_COUNT_SW_PAGE_FAULTS software
 * event on every CPU with a sample period of mem_step_pages faults, and on_mem_fault runs
 * on its overflows only, in the faulting thread's context (its user registers, the fault
 * address), where a random countdown of steps picks the faults whose stack is captured. The event
 * counts faults of every kind; the fault's error code (read or write) is not in its context, so the
 * VMA decides: a fault on a private writable anonymous mapping counts, anything else (file pages,
 * shared memory, guard pages) does not (see README: a read fault on untouched anonymous memory
 * counts too).
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>

char LICENSE[] SEC("license") = "Dual BSD/GPL";

#include "capture.bpf.h"

#define PAGE_MASK     (~(__u64)(PAGE_SIZE - 1))
#define MADV_DONTNEED 4
#define MADV_FREE     8
#define MADV_REMOVE   9
#define VM_WRITE      0x00000002 /* include/linux/mm.h */
#define VM_SHARED     0x00000008

/* Mean bytes of faulted-in memory per captured stack: the weight of each capture. */
const volatile __u64 mem_sample_bytes = 512 * 1024;
/*
 * Overflows of the page-fault event (one every mem_step_pages faults of a CPU, the perf
 * event's sample_period, set by user space) per captured stack on average: the gap between
 * two captures is uniform in [1, 2 * mem_steps - 1] steps. User space keeps
 * mem_steps * mem_step_pages * PAGE_SIZE == mem_sample_bytes.
 */
const volatile __u32 mem_steps = 1;

/* Per CPU: event overflows left until the next captured fault (0: not started yet). */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} mem_left SEC(".maps");

/*
 * Thread stacks (tid -> the VMA its sp was last seen in). The program runs with interrupts
 * off, where bpf_find_vma can run once per program run (the mmap lock is released from an
 * irq_work, and a second call finds it busy); a capture needs that one call for the fault
 * address, so the stack copy is bounded by this cache, filled in runs that capture nothing.
 * Entries are checked against sp before use; LRU: an evicted thread is looked up again.
 */
struct stack_vma {
	__u64 start, end;
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, __u32);
	__type(value, struct stack_vma);
} stack_vmas SEC(".maps");

struct vma_info {
	__u64 start, end, flags;
	bool file;
};

static long vma_info_cb(struct task_struct *task, struct vm_area_struct *vma, void *data)
{
	struct vma_info *vi = data;

	vi->start = vma->vm_start;
	vi->end = vma->vm_end;
	vi->flags = vma->vm_flags;
	vi->file = vma->vm_file != NULL;
	return 0;
}

/* A random gap in steps, uniform in [1, 2 * mem_steps - 1]: mean mem_steps. */
static __always_inline __u32 next_gap(void)
{
	if (mem_steps <= 1)
		return 1;
	return bpf_get_prandom_u32() % (2 * mem_steps - 1) + 1;
}

/* In a run that captures nothing: remembers the current thread's stack VMA. */
static __always_inline void learn_stack(__u64 id, __u64 sp)
{
	struct task_struct *task = bpf_get_current_task_btf();
	struct stack_vma *sv, nv;
	struct vma_info vi = {};
	__u32 tid = (__u32)id;

	sv = bpf_map_lookup_elem(&stack_vmas, &tid);
	if (sv && sv->start <= sp && sp < sv->end)
		return;
	if (!pid_wanted(id >> 32))
		return;
	if (bpf_find_vma(task, sp, vma_info_cb, &vi, 0) || vi.end <= sp)
		return;
	nv.start = vi.start;
	nv.end = vi.end;
	bpf_map_update_elem(&stack_vmas, &tid, &nv, BPF_ANY);
}

SEC("perf_event")
int on_mem_fault(struct bpf_perf_event_data *ctx)
{
	const struct x86_regs *ctx_regs = (const void *)&ctx->regs;
	__u64 id = bpf_get_current_pid_tgid(), addr = ctx->addr, sp, stack_end = 0;
	bool user = ctx_regs->cs & 3;
	struct vma_info vi = {};
	struct mlprof_sample *rec;
	__u32 tgid = id >> 32, tid = (__u32)id, zero = 0;
	struct stack_vma *sv;
	__u32 *left;
	long err;

	if (!tgid)
		return 0;
	left = bpf_map_lookup_elem(&mem_left, &zero);
	if (!left)
		return 0;
	/* a fresh CPU starts at a random point of its first gap */
	if (*left == 0)
		*left = next_gap();
	if (--*left) {
		if (user)
			learn_stack(id, ctx_regs->sp);
		return 0;
	}
	*left = next_gap();
	if (!pid_wanted(tgid))
		return 0;

	sp = user ? ctx_regs->sp : 0;
	sv = user ? bpf_map_lookup_elem(&stack_vmas, &tid) : NULL;
	if (sv && sv->start <= sp && sp < sv->end) {
		stack_end = sv->end;
		/* a fault on the thread's own stack (it grew): anonymous, writable */
		if (sv->start <= addr && addr < sv->end)
			goto capture;
	}
	err = bpf_find_vma(bpf_get_current_task_btf(), addr, vma_info_cb, &vi, 0);
	if (err == -ENOENT)
		return 0; /* no mapping there: the fault raises SIGSEGV (or grows the stack) */
	if (err) {
		/* mmap lock held by a writer (mmap, munmap in another thread): counted */
		stat_inc(MLPROF_STAT_VMA_MISS);
	} else if (vi.file || (vi.flags & (VM_WRITE | VM_SHARED)) != VM_WRITE) {
		return 0;
	} else if (!stack_end && vi.start <= sp && sp < vi.end) {
		stack_end = vi.end;
	}
capture:
	stat_inc(MLPROF_STAT_MEM_SAMPLES);
	rec = rec_begin(MLPROF_SK_MEMORY, tgid, tid, mem_sample_bytes);
	if (!rec)
		return 0;
	rec->aux[0] = addr & PAGE_MASK;
	/* a fault in the kernel (copy_to_user into a fresh buffer): its syscall's user stack */
	if (!user)
		rec_kstack(ctx, rec);
	rec_submit(rec, rec_user_bounded(rec, user ? ctx_regs : NULL, stack_end), tgid);
	return 0;
}

static __always_inline void release(__u64 start, __u64 len)
{
	__u32 tgid = bpf_get_current_pid_tgid() >> 32;
	struct mlprof_mem_release *e;

	if (!len || !tgid || !pid_wanted(tgid))
		return;
	e = bpf_ringbuf_reserve(&rb, sizeof(*e), 0);
	if (!e) {
		stat_inc(MLPROF_STAT_MEM_LOST);
		return;
	}
	e->type = MLPROF_EV_MEM_RELEASE;
	e->pid = tgid;
	e->start = start;
	e->len = len;
	bpf_ringbuf_submit(e, wakeup_bytes ? BPF_RB_NO_WAKEUP : 0);
}

SEC("tp/syscalls/sys_enter_munmap")
int on_munmap(struct trace_event_raw_sys_enter *ctx)
{
	release(ctx->args[0], ctx->args[1]);
	return 0;
}

SEC("tp/syscalls/sys_enter_madvise")
int on_madvise(struct trace_event_raw_sys_enter *ctx)
{
	int behavior = (int)ctx->args[2];

	if (behavior == MADV_DONTNEED || behavior == MADV_FREE || behavior == MADV_REMOVE)
		release(ctx->args[0], ctx->args[1]);
	return 0;
}

SEC("tp/syscalls/sys_enter_brk")
int on_brk(struct trace_event_raw_sys_enter *ctx)
{
	struct task_struct *task = bpf_get_current_task_btf();
	__u64 want = ctx->args[0], cur;

	if (!task->mm)
		return 0;
	cur = BPF_CORE_READ(task, mm, brk);
	if (want && want < cur)
		release(want, cur - want);
	return 0;
}
