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
 * The classification of a mapping is cached per thread until a change of its address
 * space overlaps it (mm_vmas), and a thread's fresh private anonymous mmap is classified
 * when it is made: most captures need no bpf_find_vma (~14 us each here, see stack_vmas in
 * capture.bpf.h). Changes are seen, where the kernel allows, by a BTF raw tracepoint on
 * the release of the mmap write lock (one program run per change, ~0.1 us), not by a pair
 * of syscall tracepoints around every mprotect (measured: ~0.9 us per call, and glibc grows
 * its thread arenas by mprotect, ~15000 times per second in bench/memalloc.c).
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>

char LICENSE[] SEC("license") = "Dual BSD/GPL";

#include "record.bpf.h"

#define PAGE_MASK     (~(__u64)(PAGE_SIZE - 1))
#define MADV_DONTNEED 4
#define MADV_FREE     8
#define MADV_REMOVE   9
#define VM_WRITE      0x00000002 /* include/linux/mm.h */
#define VM_SHARED     0x00000008
#define MAP_FIXED     0x10
#define PF_WRITE      0x2		    /* arch/x86/include/asm/trap_pf.h: X86_PF_WRITE */
#define USER_TOP      0x00007ffffffff000ULL /* x86-64 TASK_SIZE_MAX with 4-level paging */

#define READ_ONCE(x)	 (*(const volatile typeof(x) *)&(x))
#define WRITE_ONCE(x, v) (*(volatile typeof(x) *)&(x) = (v))
#ifndef barrier
#define barrier() asm volatile("" ::: "memory")
#endif

/* Mean pages faulted in per captured stack (>= 1): each capture weighs that many bytes. */
const volatile __u64 mem_sample_pages = 512 * 1024 / PAGE_SIZE;

/*
 * Captures per CPU per 100 ms window before the picked faults are sampled again and
 * weighted (rate_sample): the capture cost is bounded whatever the fault rate.
 */
const volatile __u32 mem_budget = 50;

/*
 * Factor (WEIGHT_ONE = 1) on every capture's weight, set by user space: 1/d while the
 * page-fault programs are attached in only a fraction d of random time slots (above
 * --memory-max-faults, see src/fault_duty.h), else 1.
 */
volatile __u32 mem_duty_weight = WEIGHT_ONE;

/* Mapping changes seen by syscall exits (true where on_mmap_unlock cannot be loaded). */
const volatile bool vma_syscalls = false;

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
 * Which mappings of an address space changed since a thread classified one of them.
 *
 * Each profiled address space (mm) has an epoch and a log of its last VMA_LOG changes of a
 * known address range (mprotect, munmap, MAP_FIXED, mremap, brk shrinking), numbered by a
 * sequence. A change whose range is not known (prctl, shmat, madvise flags, exec...) gives
 * the address space a new epoch instead, and that drops every classification. A mapping
 * classified at (epoch, seq) is still classified right when the epoch is the same and every
 * change logged after seq lies outside it: a change elsewhere (glibc growing another
 * thread's arena by mprotect, another thread's munmap) does not cost the next capture a
 * bpf_find_vma (see stack_vmas in capture.bpf.h for what one costs). A new mapping placed
 * in a hole (mmap without MAP_FIXED, mremap's new range) changes no existing mapping; it is
 * logged when its syscall returns (vmas_placed), for a classification of what an unmap had
 * removed from there that the unmap's own exit has not logged yet. brk growth is not logged:
 * the heap is private writable anonymous memory before and after.
 *
 * A change is logged after it was made, a classification's snapshot is read before its
 * lookup: a lookup that raced with a change is never trusted after it. Writers take their
 * sequence number atomically and tag their slot last (x86 keeps stores in order); a reader
 * that finds a slot untagged, retagged or overwritten by a newer change stops trusting.
 */
#define VMA_LOG 8 /* power of two */

struct vma_change {
	__u64 start, end; /* [start, end) changed */
	__u32 seq;	  /* the change's number; 0 while its slot is written */
	__u32 pad;
};

struct mm_vmas {
	__u32 epoch; /* a value of vma_gen_next; 0 until set */
	__u32 seq;   /* range changes logged so far */
	struct vma_change log[VMA_LOG];
};

/*
 * mm -> its epoch and change log, created by the first capture that classifies a mapping
 * of it (an address space without an entry has no classifications to drop) and deleted at
 * exit_mmap. An entry evicted (LRU) or torn down is created again with a new epoch, never
 * an old one.
 */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 4096);
	__type(key, __u64);
	__type(value, struct mm_vmas);
} mm_vmas SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} vma_gen_next SEC(".maps");

/* A value of an entry's epoch never handed out before (0 only if the counter cannot be read). */
static __always_inline __u32 gen_next(void)
{
	__u32 zero = 0, *next = bpf_map_lookup_elem(&vma_gen_next, &zero), gen;

	if (!next)
		return 0;
	gen = __sync_fetch_and_add(next, 1) + 1;
	return gen ? gen : 1;
}

/* What a classification was made against: the mm's epoch and change count before its lookup. */
struct vmas_at {
	__u32 epoch, seq;
};

static __always_inline void vmas_snapshot(const struct mm_vmas *v, struct vmas_at *at)
{
	at->epoch = READ_ONCE(v->epoch);
	barrier();
	at->seq = READ_ONCE(v->seq);
}

/* mm's entry, created (with a new epoch) when it has none; NULL when none could be stored. */
static const struct mm_vmas mm_vmas_empty;

static __always_inline struct mm_vmas *mm_vmas_get(__u64 mm)
{
	struct mm_vmas *v = bpf_map_lookup_elem(&mm_vmas, &mm);

	if (v)
		return v;
	/* BPF_NOEXIST: never replace an entry that another thread created meanwhile */
	bpf_map_update_elem(&mm_vmas, &mm, &mm_vmas_empty, BPF_NOEXIST);
	v = bpf_map_lookup_elem(&mm_vmas, &mm);
	if (v && !READ_ONCE(v->epoch))
		WRITE_ONCE(v->epoch, gen_next());
	return v;
}

/* The entry of mm, NULL when it has none (no classification of its mappings to drop). */
static __always_inline struct mm_vmas *mm_vmas_of(__u64 mm)
{
	return mm ? bpf_map_lookup_elem(&mm_vmas, &mm) : NULL;
}

/* v's mappings changed where it is not known: every classification made before goes. */
static __always_inline void vmas_changed(struct mm_vmas *v)
{
	if (v)
		WRITE_ONCE(v->epoch, gen_next());
}

/*
 * v's mappings changed in [start, start + len) (len rounded up to pages). Returns the
 * change's number, 0 when it was not logged.
 */
static __always_inline __u32 vmas_range_changed(struct mm_vmas *v, __u64 start, __u64 len)
{
	struct vma_change *c;
	__u64 end;
	__u32 seq;

	if (!v)
		return 0;
	end = start + len + PAGE_SIZE - 1;
	end = end > start ? end & PAGE_MASK : ~0ULL;
	seq = __sync_fetch_and_add(&v->seq, 1) + 1;
	if (!seq) {
		/* the count wrapped (2^32 changes): 0 tags a slot being written */
		vmas_changed(v);
		return 0;
	}
	c = &v->log[seq & (VMA_LOG - 1)];
	WRITE_ONCE(c->seq, 0);
	barrier();
	c->start = start & PAGE_MASK;
	c->end = end;
	barrier();
	WRITE_ONCE(c->seq, seq);
	return seq;
}

/*
 * Whether [start, end) classified at *at is still classified right in v: the same epoch,
 * and no change logged since at->seq overlaps it. Then at->seq moves to the changes now
 * logged, so that the next check starts there.
 */
static __always_inline bool vmas_unchanged(struct mm_vmas *v, struct vmas_at *at, __u64 start,
					   __u64 end)
{
	__u32 now, q;
	int i;

	if (!at->epoch || READ_ONCE(v->epoch) != at->epoch)
		return false;
	barrier();
	now = READ_ONCE(v->seq);
	if (now - at->seq > VMA_LOG)
		return false;
	for (i = 1; i <= VMA_LOG; i++) {
		struct vma_change *c;
		__u64 cs, ce;

		q = at->seq + i;
		if ((__s32)(q - now) > 0)
			break;
		c = &v->log[q & (VMA_LOG - 1)];
		if (READ_ONCE(c->seq) != q)
			return false;
		barrier();
		cs = c->start;
		ce = c->end;
		barrier();
		if (READ_ONCE(c->seq) != q || (cs < end && start < ce))
			return false;
	}
	at->seq = now;
	return true;
}

/*
 * The VMA of a fault address as last classified for a thread (tid -> range, its mm, the
 * snapshot it was classified at, and whether faults there count), so that captures in the
 * same mapping skip bpf_find_vma while vmas_unchanged says it still holds.
 */
struct fault_vma {
	__u64 start, end, mm;
	struct vmas_at at;
	__u32 counts;
	__u32 pad;
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, __u32);
	__type(value, struct fault_vma);
} fault_vmas SEC(".maps");

/* The current task's address space, as mm_vmas keys it. */
static __always_inline __u64 current_mm(void)
{
	return (__u64)bpf_get_current_task_btf()->mm;
}

#define USER64_CS	 0x33 /* arch/x86/include/asm/segment.h: __USER_CS */
#define NR_mmap		 9
#define NR_mprotect	 10
#define NR_munmap	 11
#define NR_brk		 12
#define NR_mremap	 25
#define NR_clone	 56
#define NR_fork		 57
#define NR_vfork	 58
#define NR_clone3	 435
#define NR_pkey_mprotect 329
#define MREMAP_FIXED	 2

/* task's registers saved at syscall entry when it is in a 64-bit syscall, else NULL. */
static __always_inline struct pt_regs *syscall64_regs(struct task_struct *task)
{
	struct pt_regs *regs = (struct pt_regs *)bpf_task_pt_regs(task);

	return regs && regs->cs == USER64_CS ? regs : NULL;
}

#define PROT_WRITE    0x2
#define MAP_TYPE      0x0f
#define MAP_PRIVATE   0x02
#define MAP_ANONYMOUS 0x20
#define MAP_HUGETLB   0x40000

/* Whether an mmap with these flags is fresh private writable anonymous memory. */
static __always_inline bool fresh_anon(__u64 flags, __u64 prot)
{
	return (flags & (MAP_TYPE | MAP_ANONYMOUS | MAP_HUGETLB)) ==
		       (MAP_PRIVATE | MAP_ANONYMOUS) &&
	       (prot & PROT_WRITE);
}

/* Whether an mmap with these flags may have its length rounded up to a huge page. */
static __always_inline bool may_be_huge(__u64 flags)
{
	return (flags & MAP_HUGETLB) || !(flags & MAP_ANONYMOUS);
}

/*
 * An mmap of the current thread, of mm's own task, with the mmap lock still held for
 * writing after it made the mapping: a private writable anonymous one (memory that faults
 * will bring in, the next faults of this thread most likely) becomes the thread's
 * classified mapping, so that its first capture needs no bpf_find_vma. Its address is
 * only known when the syscall returns: until then the entry has an empty range, which
 * matches no fault, and on_mmap_exit fills it in. The snapshot is taken here: a change of
 * the new mapping by another thread after the lock is released is logged after it.
 */
static __always_inline void fresh_mapping_begins(__u64 mm, struct mm_vmas *v,
						 const struct pt_regs *regs)
{
	struct fault_vma fv = {.mm = mm, .counts = 1};
	__u64 id = bpf_get_current_pid_tgid();
	__u32 tid = (__u32)id;

	if (!fresh_anon(regs->r10, regs->dx) || !pid_wanted(id >> 32))
		return;
	if (!v)
		v = mm_vmas_get(mm);
	if (!v)
		return;
	vmas_snapshot(v, &fv.at);
	bpf_map_update_elem(&fault_vmas, &tid, &fv, BPF_ANY);
}

/*
 * The current thread changed mm's mappings (seen with its mmap lock held for writing, or at
 * the exit of a syscall that changes them): the change is logged by the range its syscall's
 * arguments give, or as a change of everything when that is not known. The arguments are
 * read from the registers saved at syscall entry (still there at exit): a 64-bit syscall of
 * mm's own task, anything else (a 32-bit process, a page fault growing the stack, a kernel
 * thread working on another mm) changes everything. An address space without an entry
 * has nothing to drop: only a fresh mapping of a profiled process is of interest there.
 */
static __always_inline void vmas_syscall_changed(__u64 mm)
{
	struct task_struct *task = bpf_get_current_task_btf();
	struct mm_vmas *v = mm_vmas_of(mm);
	struct pt_regs *regs;

	if (!v && (!mm || !pid_wanted(bpf_get_current_pid_tgid() >> 32)))
		return;
	if ((__u64)task->mm != mm || (task->flags & PF_KTHREAD))
		goto all;
	regs = syscall64_regs(task);
	if (!regs)
		goto all;
	switch (regs->orig_ax) {
	case NR_mmap:
		/*
		 * without MAP_FIXED a new mapping goes into a hole (logged at its exit: see
		 * on_mmap_exit); with it, the range it replaces, unless its length may have
		 * been rounded up to huge pages (MAP_HUGETLB, or a file on hugetlbfs)
		 */
		if (regs->r10 & MAP_FIXED) {
			if (may_be_huge(regs->r10))
				goto all;
			vmas_range_changed(v, regs->di, regs->si);
		}
		fresh_mapping_begins(mm, v, regs);
		return;
	case NR_mremap:
		/* the old range; a move without MREMAP_FIXED goes into a hole */
		if (regs->r10 & MREMAP_FIXED)
			goto all;
		break;
	case NR_brk:
		/* growing into a hole; shrinking is logged at its exit (on_brk_exit) */
		return;
	case NR_clone:
	case NR_fork:
	case NR_vfork:
	case NR_clone3:
		/* copying the parent's mappings to a child leaves them as they were */
		return;
	case NR_mprotect:
	case NR_munmap:
	case NR_pkey_mprotect:
		break;
	default:
		goto all;
	}
	vmas_range_changed(v, regs->di, regs->si);
	return;
all:
	vmas_changed(v);
}

/*
 * Threads inside a brk that shrinks the heap: tid -> [new end, old end), from entry (whose
 * arguments are right for 32-bit processes too) to exit (an LRU hash, so that a thread
 * killed inside the syscall only leaves an entry to be evicted).
 */
struct brk_shrink {
	__u64 start, end;
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 4096);
	__type(key, __u32);
	__type(value, struct brk_shrink);
} brk_shrinks SEC(".maps");

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
	__u32 tgid = id >> 32, tid = (__u32)id;
	struct fault_vma *fv, nfv = {};
	struct stack_vma sv = {};
	struct vma_info vi = {};
	struct mlprof_sample *rec;
	struct mm_vmas *v;
	__u32 weight, duty;
	__u64 value;
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
	v = mm_vmas_get(nfv.mm);
	fv = bpf_map_lookup_elem(&fault_vmas, &tid);
	if (v && fv && fv->mm == nfv.mm && fv->start <= addr && addr < fv->end &&
	    vmas_unchanged(v, &fv->at, fv->start, fv->end)) {
		if (!fv->counts)
			return;
		goto capture;
	}
	/* a fault on the thread's own stack (it grew): anonymous, writable */
	if (stack_end && sv.start <= addr && addr < sv.end)
		goto capture;
	/* read before the lookup below (see mm_vmas) */
	if (v)
		vmas_snapshot(v, &nfv.at);
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
	if (nfv.at.epoch)
		bpf_map_update_elem(&fault_vmas, &tid, &nfv, BPF_ANY);
	if (!nfv.counts)
		return;
	if (!stack_end && vi.start <= sp && sp < vi.end)
		stack_end = vi.end;
capture:
	stat_inc(MLPROF_STAT_MEM_SAMPLES);
	value = mem_sample_pages * PAGE_SIZE * weight / WEIGHT_ONE;
	duty = mem_duty_weight;
	value = value / WEIGHT_ONE * duty + value % WEIGHT_ONE * duty / WEIGHT_ONE;
	rec = rec_begin(MLPROF_SK_MEMORY, tgid, tid, value);
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

	stat_inc(MLPROF_STAT_FAULTS_SEEN); /* the fault rate (fault_duty.c) */
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
	stat_inc(MLPROF_STAT_FAULTS_SEEN);
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
 * release it for reading: their syscall exits below log them. Loaded where the tracepoint
 * passes (mm, write), as on 6.18: older kernels (5.11 to at least 6.8) passed a memory
 * cgroup path that they formatted on every lock release, which was every page fault before
 * per-VMA locks (6.4); there the on_*_fallback programs below take its place.
 */
SEC("tp_btf/mmap_lock_released")
int BPF_PROG(on_mmap_unlock, struct mm_struct *mm, bool write)
{
	if (write)
		vmas_syscall_changed((__u64)mm);
	return 0;
}

/* Where on_mmap_unlock is not loaded: the exits of the syscalls that change mappings most. */
SEC("tp/syscalls/sys_exit_mprotect")
int on_mprotect_exit_fallback(void *ctx)
{
	vmas_syscall_changed(current_mm());
	return 0;
}

#define HUGE_MAX (1ULL << 30) /* the largest huge page (x86-64: 1 GiB) */

/*
 * A mapping placed in a hole: logged as a change when its syscall returns, so that a
 * classification of what was there before it (unmapped by a munmap that released the mmap
 * lock before its own exit logged it) is not trusted after it. Only a dangling pointer
 * could fault there before the address is returned. Returns the change's number (0: none).
 */
static __always_inline __u32 vmas_placed(__u64 mm, __u64 addr, __u64 len, bool huge)
{
	if (!mm || addr >= USER_TOP || (addr & ~PAGE_MASK) || !len)
		return 0;
	if (huge)
		len = (len + HUGE_MAX - 1) & ~(HUGE_MAX - 1);
	return vmas_range_changed(mm_vmas_of(mm), addr, len);
}

/*
 * An mmap returns: its new mapping is logged (vmas_placed), and a fresh mapping that
 * fresh_mapping_begins made the thread's classified one gets its address (where
 * on_mmap_unlock is not loaded, the change is logged and the mapping classified here,
 * after the change). The classification skips its own mapping's log entry when no other
 * change came between.
 */
SEC("tp/syscalls/sys_exit_mmap")
int on_mmap_exit(struct trace_event_raw_sys_exit *ctx)
{
	__u32 tid = (__u32)bpf_get_current_pid_tgid(), placed;
	__u64 mm = current_mm(), addr = ctx->ret;
	struct fault_vma *fv;
	struct pt_regs *regs;

	if (vma_syscalls)
		vmas_syscall_changed(mm);
	regs = syscall64_regs(bpf_get_current_task_btf());
	if (!regs)
		return 0;
	placed = vmas_placed(mm, addr, regs->si, may_be_huge(regs->r10));
	fv = bpf_map_lookup_elem(&fault_vmas, &tid);
	if (!fv || fv->start != fv->end || fv->mm != mm)
		return 0;
	/* failed, or a pending entry of an mmap whose exit was missed */
	if (!placed || !fresh_anon(regs->r10, regs->dx)) {
		bpf_map_delete_elem(&fault_vmas, &tid);
		return 0;
	}
	if (placed == fv->at.seq + 1)
		fv->at.seq = placed;
	fv->end = addr + ((regs->si + PAGE_SIZE - 1) & PAGE_MASK);
	fv->start = addr;
	return 0;
}

/*
 * An address space torn down: its entry goes, and a new one at the same address gets a
 * new epoch on its first capture (the threads' classifications never match it).
 */
SEC("tp_btf/exit_mmap")
int BPF_PROG(on_exit_mmap, struct mm_struct *mm)
{
	__u64 key = (__u64)mm;

	bpf_map_delete_elem(&mm_vmas, &key);
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
	vmas_syscall_changed(current_mm());
	return 0;
}

/* The old range (vmas_syscall_changed), and the new one, which may have been a hole. */
SEC("tp/syscalls/sys_exit_mremap")
int on_mremap_exit(struct trace_event_raw_sys_exit *ctx)
{
	__u64 mm = current_mm();
	struct pt_regs *regs;

	vmas_syscall_changed(mm);
	regs = syscall64_regs(bpf_get_current_task_btf());
	if (regs)
		vmas_placed(mm, ctx->ret, regs->dx, false);
	return 0;
}

SEC("tp/syscalls/sys_exit_brk")
int on_brk_exit(void *ctx)
{
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	struct brk_shrink *b = bpf_map_lookup_elem(&brk_shrinks, &tid), r;

	if (!b)
		return 0;
	r = *b;
	bpf_map_delete_elem(&brk_shrinks, &tid);
	vmas_range_changed(mm_vmas_of(current_mm()), r.start, r.end - r.start);
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
		struct brk_shrink b = {.start = want, .end = cur};
		__u32 tid = (__u32)bpf_get_current_pid_tgid();

		if (pid_wanted(bpf_get_current_pid_tgid() >> 32))
			bpf_map_update_elem(&brk_shrinks, &tid, &b, BPF_ANY);
		release(want, cur - want);
	}
	return 0;
}
