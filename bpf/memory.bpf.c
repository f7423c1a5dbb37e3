// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * Memory growth: memory brought in by write faults on private writable anonymous memory
 * (heap, mmap'ed buffers, thread stacks, copy-on-write copies after fork), sampled by bytes
 * (one stack every mem_sample_bytes on average, at random intervals so that it does not
 * alias with allocation patterns, weighted by that mean: the cost does not grow with the
 * allocation rate), and memory given back (munmap, madvise(DONTNEED/FREE/REMOVE), brk
 * shrinking) as ranges that user space removes from the in-use view.
 *
 * The programs run on the exceptions:page_fault_user/_kernel tracepoints as BTF raw
 * tracepoints: no trace record is built, and a fault that is not picked costs a per-CPU
 * countdown (measured: a counting PERF_COUNT_SW_PAGE_FAULTS event alone costs more per fault
 * than this, see bench/memory.sh). The error code says whether the fault writes: a read of
 * untouched anonymous memory maps the shared zero page and brings nothing in, and is not
 * counted. For a picked fault the VMA decides: a private writable anonymous mapping counts,
 * anything else (file pages, shared memory, guard pages) does not. The tracepoints run with
 * interrupts off, before the fault is handled.
 *
 * The classification of a mapping is cached per thread until its address space changes.
 * Changes are seen, where the kernel allows, by a BTF raw tracepoint on the release of the
 * mmap write lock (one program run per change, ~0.1 us), not by a pair of syscall
 * tracepoints around every mprotect (measured: ~0.9 us per call, and glibc grows its
 * thread arenas by mprotect, ~15000 times per second in bench/memalloc.c).
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
#define MAP_FIXED     0x10
#define PF_WRITE      0x2		    /* arch/x86/include/asm/trap_pf.h: X86_PF_WRITE */
#define USER_TOP      0x00007ffffffff000ULL /* x86-64 TASK_SIZE_MAX with 4-level paging */

/* Mean pages faulted in per captured stack (>= 1): each capture weighs that many bytes. */
const volatile __u64 mem_sample_pages = 512 * 1024 / PAGE_SIZE;

/*
 * Captures per CPU per 100 ms window before the picked faults are sampled again and
 * weighted (rate_sample): the capture cost is bounded whatever the fault rate.
 */
const volatile __u32 mem_budget = 50;

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct rate_state);
} mem_rate SEC(".maps");

/* Per CPU: write faults left until the next picked one, and the draws' state. */
struct fault_countdown {
	__s64 left;
	struct rate_state rs; /* only its rng */
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct fault_countdown);
} mem_left SEC(".maps");

/*
 * The VMA of a fault address as last classified for a thread (tid -> range, its mm, the
 * address space's vma generation then, and whether faults there count), so that captures
 * in the same mapping skip bpf_find_vma (see stack_vmas in capture.bpf.h for its cost).
 * Valid while the generation of its mm (vma_gens) is unchanged: it changes whenever the
 * mappings may have (vmas_changed). The generation is read before the lookup and changes
 * after the mappings did, so a lookup that raced with a change is never trusted after it.
 */
struct fault_vma {
	__u64 start, end, mm;
	__u32 gen;
	__u32 counts;
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, __u32);
	__type(value, struct fault_vma);
} fault_vmas SEC(".maps");

/*
 * mm -> generation of its mappings, a value of vma_gen_next at its last change: an address
 * space whose entry was evicted (LRU) or torn down gets a new value, never an old one
 * again, and one without an entry has no valid fault_vmas.
 */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, __u64);
	__type(value, __u32);
} vma_gens SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} vma_gen_next SEC(".maps");

/* A generation never handed out before (0 only if the counter cannot be read). */
static __always_inline __u32 gen_next(void)
{
	__u32 zero = 0, *next = bpf_map_lookup_elem(&vma_gen_next, &zero), gen;

	if (!next)
		return 0;
	/* (an atomic add whose result is used needs BPF ISA v3: the load after it may see a
	 * concurrent change too, which only makes two changes share a value) */
	__sync_fetch_and_add(next, 1);
	gen = *next;
	return gen ? gen : 1;
}

/*
 * The generation of mm's mappings for a capture about to look a mapping up, created when
 * mm has none; 0 when none could be stored. The entry is only ever created, written in
 * place (vmas_changed) or evicted, never replaced: a change's write cannot be lost to a
 * replacement carrying an older value.
 */
static __always_inline __u32 vmas_new_gen(__u64 mm)
{
	__u32 gen = gen_next(), *cur;

	if (!gen)
		return 0;
	if (!bpf_map_update_elem(&vma_gens, &mm, &gen, BPF_NOEXIST))
		return gen;
	/* created meanwhile by another thread: its value is as new */
	cur = bpf_map_lookup_elem(&vma_gens, &mm);
	return cur ? *cur : 0;
}

/*
 * mm's mappings changed (or may have): the classifications made before go. An address
 * space without a generation has none to drop, so the common case is one lookup; else a
 * new value is written in place (no element is allocated).
 */
static __always_inline void vmas_changed(__u64 mm)
{
	__u32 *cur = mm ? bpf_map_lookup_elem(&vma_gens, &mm) : NULL;

	if (cur)
		*cur = gen_next();
}

/*
 * Threads inside a syscall that changes their mappings with the mmap lock downgraded
 * (shrinking brk) or, where mmap_lock_released cannot be used, any mapping-changing
 * syscall: marked on entry (tid_mark), taken on exit (tid_mark_take).
 */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 4096);
	__type(key, __u32);
	__type(value, __u8);
} vma_pending SEC(".maps");

/* The current task's address space, as vma_gens keys it. */
static __always_inline __u64 current_mm(void)
{
	return (__u64)bpf_get_current_task_btf()->mm;
}

/* On entry to a syscall that changes the current process's mappings. */
static __always_inline void vmas_change_begins(void)
{
	__u32 tgid = bpf_get_current_pid_tgid() >> 32;

	if (tgid && pid_wanted(tgid))
		tid_mark(&vma_pending);
}

/* On exit from a marked syscall: the mappings changed. */
static __always_inline void vmas_change_ends(void)
{
	if (tid_mark_take(&vma_pending))
		vmas_changed(current_mm());
}

/* A random gap in write faults, uniform in [1, 2 * mem_sample_pages - 1]: mean mem_sample_pages. */
static __always_inline __s64 next_gap(struct fault_countdown *fc)
{
	if (mem_sample_pages <= 1)
		return 1;
	return rate_rand(&fc->rs) % (2 * mem_sample_pages - 1) + 1;
}

/* In a run that captures nothing: looks up the current thread's stack VMA if not known. */
static __always_inline void learn_stack(__u64 sp)
{
	__u32 tgid = bpf_get_current_pid_tgid() >> 32;
	struct stack_vma sv;

	if (!tgid || !pid_wanted(tgid))
		return;
	stack_vma_get(bpf_get_current_task_btf(), sp, true, &sv);
}

/*
 * Counts one write fault; true when it is the one to capture. uregs: the user registers of
 * a fault in user mode (NULL for a fault in the kernel), whose sp learn_stack reads only on
 * the fault before a pick.
 */
static __always_inline bool fault_picked(const struct pt_regs *uregs)
{
	struct fault_countdown *fc;
	__u32 zero = 0;

	fc = bpf_map_lookup_elem(&mem_left, &zero);
	if (!fc)
		return false;
	/* a fresh CPU starts at a random point of its first gap */
	if (fc->left <= 0)
		fc->left = next_gap(fc);
	if (--fc->left) {
		/* the fault before a pick: most often the same thread's */
		if (fc->left == 1 && uregs)
			learn_stack(uregs->sp);
		return false;
	}
	fc->left = next_gap(fc);
	return true;
}

/*
 * Captures the stack of the current thread's fault at addr when the mapping there is
 * private, writable and anonymous. ctx: the program's context (for the kernel stack);
 * uregs: the user registers of a fault in user mode, NULL for a fault in the kernel.
 */
static __always_inline void capture_fault(void *ctx, __u64 addr, const struct x86_regs *uregs)
{
	__u64 id = bpf_get_current_pid_tgid(), sp = uregs ? uregs->sp : 0, stack_end = 0;
	struct task_struct *task = bpf_get_current_task_btf();
	__u32 tgid = id >> 32, tid = (__u32)id, *gen;
	struct fault_vma *fv, nfv = {};
	struct stack_vma sv = {};
	struct vma_info vi = {};
	struct mlprof_sample *rec;
	__u32 weight;
	long err;

	if (!tgid || !pid_wanted(tgid))
		return;
	/* before the VMA check: a pick that is not taken costs no lookup */
	weight = rate_sample(&mem_rate, mem_budget, coarse_now_ns(), MLPROF_STAT_MEM_CAPPED);
	if (!weight)
		return;
	if (uregs && !stack_vma_get(task, sp, false, &sv))
		stack_end = sv.end;
	nfv.mm = (__u64)task->mm;
	fv = bpf_map_lookup_elem(&fault_vmas, &tid);
	gen = bpf_map_lookup_elem(&vma_gens, &nfv.mm);
	/* read before the lookup below (see fault_vma) */
	nfv.gen = gen ? *gen : 0;
	if (fv && nfv.gen && fv->gen == nfv.gen && fv->mm == nfv.mm && fv->start <= addr &&
	    addr < fv->end) {
		if (!fv->counts)
			return;
		goto capture;
	}
	/* a fault on the thread's own stack (it grew): anonymous, writable */
	if (stack_end && sv.start <= addr && addr < sv.end)
		goto capture;
	if (!nfv.gen)
		nfv.gen = vmas_new_gen(nfv.mm);
	err = find_vma_info(task, addr, &vi);
	if (err == -ENOENT)
		return; /* no mapping there: the fault raises SIGSEGV (or grows the stack) */
	if (err) {
		/* mmap lock held by a writer (mmap, munmap in another thread): counted */
		stat_inc(MLPROF_STAT_VMA_MISS);
		goto capture;
	}
	nfv.start = vi.start;
	nfv.end = vi.end;
	nfv.counts = !vi.file && (vi.flags & (VM_WRITE | VM_SHARED)) == VM_WRITE;
	if (nfv.gen)
		bpf_map_update_elem(&fault_vmas, &tid, &nfv, BPF_ANY);
	if (!nfv.counts)
		return;
	if (!stack_end && vi.start <= sp && sp < vi.end)
		stack_end = vi.end;
capture:
	stat_inc(MLPROF_STAT_MEM_SAMPLES);
	rec = rec_begin(MLPROF_SK_MEMORY, tgid, tid,
			mem_sample_pages * PAGE_SIZE * weight / WEIGHT_ONE);
	if (!rec)
		return;
	rec->aux[0] = addr & PAGE_MASK;
	/* a fault in the kernel (copy_to_user into a fresh buffer): its syscall's user stack */
	if (!uregs)
		rec_kstack(ctx, rec);
	rec_submit(rec, rec_user_bounded(rec, uregs, stack_end), tgid);
}

SEC("tp_btf/page_fault_user")
int BPF_PROG(on_fault_user, unsigned long address, struct pt_regs *regs, unsigned long error_code)
{
	struct x86_regs uregs;

	if (!(error_code & PF_WRITE) || !fault_picked(regs))
		return 0;
	if (bpf_probe_read_kernel(&uregs, sizeof(uregs), regs))
		return 0;
	capture_fault(ctx, address, &uregs);
	return 0;
}

/* A fault in the kernel on a user address: copy_to_user into memory not touched yet. */
SEC("tp_btf/page_fault_kernel")
int BPF_PROG(on_fault_kernel, unsigned long address, struct pt_regs *regs, unsigned long error_code)
{
	if (!(error_code & PF_WRITE) || address >= USER_TOP || !fault_picked(NULL))
		return 0;
	capture_fault(ctx, address, NULL);
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

/*
 * Every change of an address space's mappings holds its mmap lock for writing and
 * releases it after the change (mmap, mprotect, mremap, MAP_FIXED, brk growth, prctl,
 * shmat, ...), still holding it here: a bpf_find_vma racing with the change fails its
 * trylock until then. munmap and shrinking brk/mremap downgrade the lock instead and
 * release it for reading: their syscall exits below count as the change. Loaded where
 * the tracepoint passes (mm, write), as on 6.18: older kernels (5.11 to at least 6.8)
 * passed a memory cgroup path that they formatted on every lock release, which was every
 * page fault before per-VMA locks (6.4); there the on_*_fallback programs below take its
 * place.
 */
SEC("tp_btf/mmap_lock_released")
int BPF_PROG(on_mmap_unlock, struct mm_struct *mm, bool write)
{
	if (write)
		vmas_changed((__u64)mm);
	return 0;
}

/* Where on_mmap_unlock is not loaded: the syscalls that change mappings most often. */
SEC("tp/syscalls/sys_enter_mprotect")
int on_mprotect_fallback(struct trace_event_raw_sys_enter *ctx)
{
	vmas_change_begins();
	return 0;
}

SEC("tp/syscalls/sys_exit_mprotect")
int on_mprotect_exit_fallback(void *ctx)
{
	vmas_change_ends();
	return 0;
}

SEC("tp/syscalls/sys_enter_mmap")
int on_mmap_fallback(struct trace_event_raw_sys_enter *ctx)
{
	if (ctx->args[3] & MAP_FIXED)
		vmas_change_begins();
	return 0;
}

SEC("tp/syscalls/sys_exit_mmap")
int on_mmap_exit_fallback(void *ctx)
{
	vmas_change_ends();
	return 0;
}

/*
 * An address space torn down: its generation goes, and a new one at the same address gets
 * a new value on its first capture (the threads' classifications never match it).
 */
SEC("tp_btf/exit_mmap")
int BPF_PROG(on_exit_mmap, struct mm_struct *mm)
{
	__u64 key = (__u64)mm;

	bpf_map_delete_elem(&vma_gens, &key);
	return 0;
}

SEC("tp/syscalls/sys_enter_munmap")
int on_munmap(struct trace_event_raw_sys_enter *ctx)
{
	release(ctx->args[0], ctx->args[1]);
	return 0;
}

/* The exits of the syscalls that unmap with the mmap lock downgraded. */
SEC("tp/syscalls/sys_exit_munmap")
int on_munmap_exit(void *ctx)
{
	vmas_changed(current_mm());
	return 0;
}

SEC("tp/syscalls/sys_exit_mremap")
int on_mremap_exit(void *ctx)
{
	vmas_changed(current_mm());
	return 0;
}

SEC("tp/syscalls/sys_exit_brk")
int on_brk_exit(void *ctx)
{
	vmas_change_ends();
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
	if (want && want < cur) {
		vmas_change_begins();
		release(want, cur - want);
	}
	return 0;
}
