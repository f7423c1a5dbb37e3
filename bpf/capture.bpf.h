/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Stack capture shared by every mlprof BPF program: configuration knobs, the ring buffer,
 * the pid filter, error counters, user registers, the user stack copy and event rate
 * limiting. The runtimes' walkers (python.bpf.h) build on it; record.bpf.h puts a whole
 * sample record together. Include after vmlinux.h and the libbpf headers.
 */
#ifndef MLPROF_CAPTURE_BPF_H
#define MLPROF_CAPTURE_BPF_H

#include <mlprof/python.h>
#include <mlprof/sample.h>

#define PF_KTHREAD 0x00200000 /* include/linux/sched.h */
#define ENOENT	   2
/* Reads tried when the first user stack read faults: page drops, then halvings. */
#define USTACK_TRIES	  8
#define USTACK_PAGE_DROPS 3
#define PAGE_SIZE	  4096
/* Pages a user stack copy spans at most (MLPROF_USTACK_PAGEWISE). */
#define USTACK_PAGES (MLPROF_MAX_USTACK / PAGE_SIZE + 1)
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
 * Generation of the pids map: bumped (pids_changed()) after every change to it, by user
 * space (sampler__add_pid) and by the fork and exit handlers. Shared by every object.
 */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE); /* user space adds atomically through a mapping */
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} pids_gen SEC(".maps");

/*
 * Per CPU: recent pid filter verdicts, direct-mapped by the tgid's low bits (one cache
 * line; processes taking turns on a CPU, as at every context switch, mostly keep their
 * own slot). Each is one word (a program interrupting another on the same CPU reads it
 * whole): bit 0 wanted, bits 1-31 the tgid, bits 32-63 the pids_gen generation it was read
 * at. Events come in runs from a few processes per CPU (a launch loop, a fault storm,
 * threads switching), so most lookups of the hash map are skipped: on the test VM a hash
 * lookup costs ~50 ns, an array lookup a few.
 */
#define PID_VERDICT_SLOTS 8
struct pid_verdicts {
	__u64 v[PID_VERDICT_SLOTS];
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct pid_verdicts);
} pid_verdict SEC(".maps");

/*
 * Per-CPU scratch record, indexed by CPU id. A plain array with one slot per possible
 * CPU (max_entries set by user space) rather than a PERCPU_ARRAY, because per-CPU
 * values are limited to 32 KiB and this one holds the whole record with a 64 KiB stack.
 * Only the perf_event program uses it, and perf_event programs do not nest on a CPU.
 */
struct scratch_rec {
	__u8 data[sizeof(struct mlprof_sample) + MLPROF_MAX_USTACK +
		  MLPROF_MAX_PYFRAMES * sizeof(struct mlprof_py_frame) +
		  PAGE_SIZE /* verifier slack: copy_ustack's skip + (len - skip) */];
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

/* After a change to the pids map: the per-CPU verdicts read before it are stale. */
static __always_inline void pids_changed(void)
{
	__u32 zero = 0;
	__u64 *gen = bpf_map_lookup_elem(&pids_gen, &zero);

	if (gen)
		__sync_fetch_and_add(gen, 1);
}

static __always_inline bool pid_wanted(__u32 tgid)
{
	__u32 zero = 0;
	struct pid_verdicts *pv;
	__u64 *gen, *cached, key, v;
	bool wanted;

	if (self_pid && tgid == self_pid)
		return false;
	if (filter_mode == MLPROF_FILTER_ALL)
		return true;
	gen = bpf_map_lookup_elem(&pids_gen, &zero);
	pv = bpf_map_lookup_elem(&pid_verdict, &zero);
	if (!gen || !pv)
		return bpf_map_lookup_elem(&pids, &tgid) != NULL;
	cached = &pv->v[tgid & (PID_VERDICT_SLOTS - 1)];
	/* the generation first: a change after this read invalidates what is cached below */
	key = (__u64)(__u32) * (volatile __u64 *)gen << 32 | (__u64)(tgid & 0x7fffffff) << 1;
	v = *(volatile __u64 *)cached;
	if ((v & ~1ULL) == key)
		return v & 1;
	wanted = bpf_map_lookup_elem(&pids, &tgid) != NULL;
	*(volatile __u64 *)cached = key | wanted;
	return wanted;
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

/* bpf_find_vma for addr into *vi, counted (see stack_vmas for what a call costs). */
static __always_inline long find_vma_info(struct task_struct *task, __u64 addr, struct vma_info *vi)
{
	stat_inc(MLPROF_STAT_VMA_LOOKUPS);
	return bpf_find_vma(task, addr, vma_info_cb, vi, 0);
}

/*
 * Marks of threads between a syscall's entry and its exit (map: an LRU hash tid -> u8, so
 * that a thread killed inside the syscall only leaves an entry to be evicted).
 */
static __always_inline void tid_mark(void *map, __u8 mark)
{
	__u32 tid = (__u32)bpf_get_current_pid_tgid();

	bpf_map_update_elem(map, &tid, &mark, BPF_ANY);
}

/* The current thread's mark in map (0: none); the mark is taken. Marks are not 0. */
static __always_inline __u8 tid_mark_take(void *map)
{
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	__u8 *p = bpf_map_lookup_elem(map, &tid), mark;

	if (!p)
		return 0;
	mark = *p;
	bpf_map_delete_elem(map, &tid);
	return mark;
}

/*
 * Thread stacks: tid -> the VMA its sp was last seen in, and the address space (mm) it
 * belongs to. bpf_find_vma is expensive where most captures run, with interrupts off
 * (perf events, sched_switch, page-fault tracepoints): it releases the mmap lock from an
 * irq_work, a self-interrupt (measured on a 2-vCPU VM: ~14 us of the interrupted thread's
 * time per call, against ~1 us for the rest of a capture), and it can run once per
 * program run (a second call finds that irq_work busy). So copy_ustack looks a thread's
 * stack up once and reads it here after; an entry is used only while sp is inside it and
 * the mm is the same (exec). LRU: an evicted thread is looked up again. Shared by every
 * program that captures user stacks.
 */
struct stack_vma {
	__u64 start, end, mm;
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, __u32);
	__type(value, struct stack_vma);
} stack_vmas SEC(".maps");

/*
 * The current thread's VMA that holds sp (into *out), from stack_vmas when there, else
 * looked up (and remembered) when lookup is true. Returns 0, -ENOENT when sp is in no
 * mapping, another error when the lookup could not run (or was not to be tried: -EAGAIN).
 */
static __always_inline long stack_vma_get(struct task_struct *task, __u64 sp, bool lookup,
					  struct stack_vma *out)
{
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	__u64 mm = (__u64)task->mm;
	struct vma_info vi = {};
	struct stack_vma *sv;
	long err;

	sv = bpf_map_lookup_elem(&stack_vmas, &tid);
	if (sv && sv->mm == mm && sv->start <= sp && sp < sv->end) {
		*out = *sv;
		return 0;
	}
	if (!lookup)
		return -11; /* EAGAIN */
	err = find_vma_info(task, sp, &vi);
	if (err)
		return err;
	if (vi.end <= sp || vi.start > sp)
		return -ENOENT;
	out->start = vi.start;
	out->end = vi.end;
	out->mm = mm;
	bpf_map_update_elem(&stack_vmas, &tid, out, BPF_ANY);
	return 0;
}

/* Pending return probes of a thread looked at per capture (nested probed calls). */
#define URET_MAX 8

/*
 * A function with a pending uretprobe (ours: Engine::execute, CUDA synchronizes, NCCL
 * calls; or anyone's) has its return address replaced on the stack by the uprobe
 * trampoline (the task's xol area): an unwind of the copy would end there, losing every
 * caller (the Python frames of loss.backward()). The kernel keeps the original addresses
 * in the task's return instances; they are put back into the copy here, as perf does for
 * its callchains since 6.14. Only in the objects that define MLPROF_URET_RESTORE (the CPU
 * and off-CPU samplers): its loop, inlined into every capturing program, costs the
 * verifier ~0.45 s at start in all of them (the probes' own captures are taken at a
 * function's entry, where its caller is still on the stack).
 */
static __always_inline void uret_restore(struct mlprof_sample *rec, struct task_struct *task,
					 __u64 sp, __u64 len)
{
	struct return_instance *ri = NULL;
	struct uprobe_task *ut = NULL;
	__u64 tramp;
	int i;

	/* (every field checked: a relocation that fails in a kernel without one is not run) */
	if (!bpf_core_field_exists(task->utask) || !bpf_core_field_exists(ut->return_instances) ||
	    !bpf_core_field_exists(ri->stack) || !bpf_core_field_exists(ri->orig_ret_vaddr) ||
	    !bpf_core_field_exists(ri->next) ||
	    !bpf_core_field_exists(task->mm->uprobes_state.xol_area->vaddr))
		return;
	ut = BPF_CORE_READ(task, utask);
	if (!ut)
		return;
	ri = BPF_CORE_READ(ut, return_instances);
	tramp = BPF_CORE_READ(task, mm, uprobes_state.xol_area, vaddr);
	for (i = 0; i < URET_MAX && ri; i++) {
		__u64 slot = BPF_CORE_READ(ri, stack), off = slot - sp;
		__u64 orig = BPF_CORE_READ(ri, orig_ret_vaddr);

		ri = BPF_CORE_READ(ri, next);
		if (slot < sp || off + 8 > len || off > MLPROF_MAX_USTACK - 8)
			continue;
		off &= MLPROF_MAX_USTACK - 1;
		if (off > MLPROF_MAX_USTACK - 8 || orig == tramp)
			continue;
		if (*(__u64 *)(rec->ustack + off) == tramp)
			*(__u64 *)(rec->ustack + off) = orig;
	}
}

#ifdef MLPROF_USTACK_PAGEWISE
/*
 * copy_ustack's page-by-page read into this CPU's scratch record, the one being filled (the
 * perf_event program's): a global function, so that the verifier checks its loop once, not
 * in the state of its caller (an inlined loop added ~1.1 s to every start). Returns the
 * bytes up to the end of the last page read, 0 when none was.
 */
__noinline __u64 ustack_pagewise(__u64 sp, __u64 len)
{
	__u32 slot = bpf_get_smp_processor_id();
	struct mlprof_sample *rec = bpf_map_lookup_elem(&scratch, &slot);
	__u64 first = PAGE_SIZE - (sp & (PAGE_SIZE - 1)), read_end = 0;

	if (!rec || len > MLPROF_MAX_USTACK)
		return 0;
	for (int i = 0; i < USTACK_PAGES; i++) {
		__u64 off = i ? first + (__u64)(i - 1) * PAGE_SIZE : 0, n;

		if (off >= len)
			break;
		n = i ? PAGE_SIZE : first;
		if (n > len - off)
			n = len - off;
		barrier_var(off);
		barrier_var(n);
		if (off > MLPROF_MAX_USTACK || !n || n > PAGE_SIZE)
			break;
		if (bpf_probe_read_user(rec->ustack + off, n, (const void *)(sp + off)) == 0)
			read_end = off + n;
	}
	return read_end;
}
#endif

/*
 * Copies the user stack from sp into rec->ustack. Returns the bytes copied (0 on
 * failure) and sets MLPROF_SF_USTACK_* flags. stack_end: the end of sp's VMA when the
 * caller knows it (0: looked up here).
 */
static __always_inline __u32 copy_ustack(struct mlprof_sample *rec, struct task_struct *task,
					 __u64 sp, __u64 stack_end)
{
	__u64 want = ustack_bytes, end = stack_end;
	struct stack_vma sv = {};
	__u64 len;
#ifndef MLPROF_USTACK_PAGEWISE
	__u64 skip, n;
	int i;
#endif
	bool ok = false;
	long err;

	if (want > MLPROF_MAX_USTACK)
		want = MLPROF_MAX_USTACK;
	if (!want || !sp)
		return 0;

	if (stack_end > sp)
		err = 0;
	else if (!(err = stack_vma_get(task, sp, true, &sv)))
		end = sv.end;
	if (err == -ENOENT) {
		/* sp is in no mapping at all: nothing to read */
		rec->flags |= MLPROF_SF_USTACK_ERR;
		stat_inc(MLPROF_STAT_USTACK_ERR);
		return 0;
	}
	len = want;
	if (err || end <= sp) {
		/* mmap lock busy or irq_work in use: guess, halving on faults below */
		stat_inc(MLPROF_STAT_VMA_MISS);
	} else if (end - sp < want) {
		len = end - sp;
	} else if (end - sp > want) {
		rec->flags |= MLPROF_SF_USTACK_CUT;
	}

#ifdef MLPROF_USTACK_PAGEWISE
	if (len > MLPROF_MAX_USTACK)
		len = MLPROF_MAX_USTACK;
	barrier_var(len);
	if (len <= MLPROF_MAX_USTACK && len &&
	    bpf_probe_read_user(rec->ustack, len, (const void *)sp) == 0) {
		ok = true;
	} else {
		/*
		 * Some page is not resident: one never touched, whose content is zeros, which
		 * is what a failed read leaves in the copy. The gap exec leaves below the
		 * argument strings at the top of the main stack; the untouched part of a
		 * kernel's scratch buffer (OpenBLAS's GEMM takes 29 KiB of stack), below the
		 * return addresses the unwind needs; past the stack's end, where its VMA was not
		 * known. Read page by page, keep the pages read (frames are only ever in pages
		 * that were written), and end the copy with the last one. ustack_pagewise
		 * fills this CPU's scratch slot, which rec is (MLPROF_USTACK_PAGEWISE: so far
		 * the CPU sampler alone).
		 */
		len = ustack_pagewise(sp, len);
		ok = len > 0;
	}
#else
	skip = 0;
	for (i = 0; i < USTACK_TRIES; i++) {
		/* keep the bounds visible to the verifier whatever clang does with len */
		if (len > MLPROF_MAX_USTACK)
			len = MLPROF_MAX_USTACK;
		if (skip > PAGE_SIZE || len <= skip)
			break;
		n = len - skip;
		barrier_var(n);
		if (n > MLPROF_MAX_USTACK)
			break;
		if (bpf_probe_read_user(rec->ustack + skip, n, (const void *)(sp + skip)) == 0) {
			ok = true;
			break;
		}
		/*
		 * sp's own page not resident: a stack page being faulted in right now (a
		 * memory event on stack growth). Such a page was never touched, so its content
		 * is zeros, which is what the failed read leaves in the copy; the frames above
		 * it are read from the next page on.
		 */
		if (i == 0) {
			__u64 head = PAGE_SIZE - (sp & (PAGE_SIZE - 1));

			if (head < len &&
			    bpf_probe_read_user(rec->ustack, head, (const void *)sp)) {
				skip = head;
				continue;
			}
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
#endif
	/* a short stack read whole is fine: only failed reads are errors */
	if (!ok) {
		rec->flags &= ~MLPROF_SF_USTACK_CUT;
		rec->flags |= MLPROF_SF_USTACK_ERR;
		stat_inc(MLPROF_STAT_USTACK_ERR);
		return 0;
	}
	if (rec->flags & MLPROF_SF_USTACK_CUT)
		stat_inc(MLPROF_STAT_USTACK_CUT);
#ifdef MLPROF_URET_RESTORE
	uret_restore(rec, task, sp, len);
#endif
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

/*
 * Event sampling bounded per CPU, unbiased: within a 100 ms window the i-th event is taken
 * with probability p = budget / max(budget, events of the previous window, i) and weighted
 * 1/p. At a steady rate that is about `budget` captures per window; a burst in a quiet
 * window grows them only logarithmically (budget x (1 + ln(n / budget))). 20 x budget is
 * a hard cap, counted in capped_stat. State: a per-CPU array of one struct rate_state per
 * event family.
 */
#define RATE_WINDOW_NS 100000000ULL
#define WEIGHT_ONE     1024 /* fixed-point 1.0 of a sampling weight */

struct rate_state {
	__u64 window_start;
	__u32 seen, seen_prev, captured, pad;
	__u64 rng; /* xorshift state of the draws, seeded on first use */
};

extern int CONFIG_HZ __kconfig __weak;

/*
 * Coarse time for rate windows and other millisecond-scale checks on hot paths: jiffies, a
 * plain load, rather than bpf_ktime_get_ns, a clock read (about 70 ns per call on a VM's
 * kvm-clock, a quarter of the off-CPU program's cost per context switch).
 */
static __always_inline __u64 jiffies_ns(__u64 jiffies)
{
	__u64 hz = CONFIG_HZ > 0 ? (__u64)CONFIG_HZ : 250;

	return jiffies * (1000000000ULL / hz);
}

static __always_inline __u64 coarse_now_ns(void)
{
	return jiffies_ns(bpf_jiffies64());
}

/*
 * A uniform 32-bit draw from r's own xorshift64* generator: inline arithmetic where
 * bpf_get_prandom_u32() is a helper call, on the path of every event over the budget. The
 * state is per CPU and per event family; programs of one family do not nest on a CPU.
 */
static __always_inline __u32 rate_rand(struct rate_state *r)
{
	__u64 x = r->rng;

	if (!x)
		x = (__u64)bpf_get_prandom_u32() << 32 | bpf_get_prandom_u32() | 1;
	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	r->rng = x;
	return (__u32)((x * 0x2545f4914f6cdd1dULL) >> 32);
}

/* Returns the event's weight (WEIGHT_ONE = 1), or 0 when it is not sampled. */
static __always_inline __u32 rate_sample(void *rate_map, __u32 budget, __u64 now, __u32 capped_stat)
{
	__u32 zero = 0, expected;
	struct rate_state *r = bpf_map_lookup_elem(rate_map, &zero);

	if (!budget)
		budget = 1;
	if (!r)
		return 0;
	if (now - r->window_start >= RATE_WINDOW_NS) {
		/* a window with no events after a gap says nothing about the rate */
		r->seen_prev = now - r->window_start < 2 * RATE_WINDOW_NS ? r->seen : 0;
		r->seen = 0;
		r->captured = 0;
		r->window_start = now;
	}
	r->seen++;
	expected = r->seen_prev > budget ? r->seen_prev : budget;
	if (r->seen > expected)
		expected = r->seen;
	/* below the budget every event is taken: no draw */
	if (expected > budget && rate_rand(r) % expected >= budget)
		return 0;
	if (r->captured >= 20 * budget) {
		stat_inc(capped_stat);
		return 0;
	}
	r->captured++;
	return (__u32)((__u64)expected * WEIGHT_ONE / budget);
}

/* A weight as a whole count, rounded up or down at random so that sums stay unbiased. */
static __always_inline __u64 weight_count(__u32 w)
{
	__u64 n = w / WEIGHT_ONE;

	if ((bpf_get_prandom_u32() % WEIGHT_ONE) < w % WEIGHT_ONE)
		n++;
	return n;
}

#endif /* MLPROF_CAPTURE_BPF_H */
