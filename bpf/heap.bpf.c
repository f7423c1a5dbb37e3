// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * Heap profiling: uprobes on the allocator a profiled process uses (malloc, calloc,
 * realloc, free, memalign, aligned_alloc, posix_memalign, valloc, pvalloc), attached per
 * process by user space. Allocations are sampled by bytes, as tcmalloc and Go do: each CPU
 * counts down an exponentially distributed number of bytes (mean heap_mean_bytes) and the
 * allocation that crosses zero is sampled, so an allocation of s bytes is sampled with
 * probability 1 - exp(-s / mean) whatever the size mix; user space weighs it back. A
 * sampled allocation's stack is captured at entry, its pointer read at return and kept in
 * heap_live until its free, which is then sent to user space. A free of an unsampled block
 * costs one hash lookup.
 *
 * With uprobe sessions (Linux 6.13) one program runs at entry and return and asks for the
 * return only when it sampled (heap_session); older kernels run heap_entry and a
 * heap_return on every call. Direct anonymous mmaps of a probed process are sampled the
 * same way from the mmap syscall (heap_mmap), and leave at their munmap.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>

char LICENSE[] SEC("license") = "Dual BSD/GPL";

#include "record.bpf.h"

#include <mlprof/heap.h>

#include "bytesample.bpf.h"

/* Exponential draws with mean heap_mean_bytes (filled by user space, see MLPROF_HEAP_DRAWS). */
const volatile __u32 heap_draws[MLPROF_HEAP_DRAWS];

extern bool bpf_session_is_return(void) __ksym __weak;

/* Per CPU: bytes left until the next sampled allocation (0: not drawn yet). */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __s64);
} heap_left SEC(".maps");

/* Sampled blocks not freed yet. A full table leaves new samples untracked (counted). */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 65536);
	__type(key, struct mlprof_heap_key);
	__type(value, __u64);
} heap_live SEC(".maps");

/*
 * Processes whose allocator is probed (set by user space): the allocator's code [lo, hi),
 * to tell its own mmap calls (counted at the malloc that made them) from direct ones.
 */
struct heap_proc {
	__u64 lo, hi;
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__type(key, __u32);
	__type(value, struct heap_proc);
} heap_procs SEC(".maps");

/* A sampled call in flight, entry to return, per thread. */
struct heap_call {
	__u64 seq;  /* aux[0] of the captured sample */
	__u64 size; /* bytes requested */
	__u64 out;  /* posix_memalign's void **, else 0 */
	__u64 mmap; /* a direct mmap (its syscall exit completes it), else 0 */
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 8192);
	__type(key, __u32);
	__type(value, struct heap_call);
} heap_inflight SEC(".maps");

/* A sampled block of tgid at ptr was freed: forget it and tell user space. */
static __always_inline void forget(__u32 tgid, __u64 ptr)
{
	struct mlprof_heap_key key = {.pid = tgid, .ptr = ptr};

	if (ptr && !bpf_map_delete_elem(&heap_live, &key))
		rec_send_free(MLPROF_EV_HEAP_FREE, tgid, ptr, MLPROF_STAT_HEAP_LOST);
}

/* Whether an allocation of size bytes is sampled (the per-CPU countdown crosses zero). */
static __always_inline bool sample_bytes(__u64 size)
{
	__u32 zero = 0;
	__s64 *left = bpf_map_lookup_elem(&heap_left, &zero);

	return left && bytes_sampled(left, heap_draws, size);
}

/* Entry of an allocator call. Returns true when the call was sampled (its return matters). */
static __always_inline bool heap_enter(struct pt_regs *ctx)
{
	__u64 id = bpf_get_current_pid_tgid(), now, size, out = 0;
	__u64 a1 = PT_REGS_PARM1(ctx), a2 = PT_REGS_PARM2(ctx);
	__u32 tgid = id >> 32, tid = (__u32)id;
	struct heap_call call;

	if (!pid_wanted(tgid))
		return false;
	switch (bpf_get_attach_cookie(ctx)) {
	case MLPROF_HEAP_FREE:
		forget(tgid, a1);
		return false;
	case MLPROF_HEAP_MALLOC:
		size = a1;
		break;
	case MLPROF_HEAP_CALLOC:
		size = a1 * a2;
		break;
	case MLPROF_HEAP_REALLOC:
		/* glibc: realloc(NULL, n) is a call of malloc (probed there), realloc(p, 0) of
		 * free; a moved or resized block is a free of the old one and a new one */
		if (!a1)
			return false;
		forget(tgid, a1);
		size = a2;
		break;
	case MLPROF_HEAP_MEMALIGN:
		size = a2;
		break;
	case MLPROF_HEAP_POSIX_MEMALIGN:
		out = a1;
		size = PT_REGS_PARM3(ctx);
		break;
	default:
		return false;
	}
	if (!size || !sample_bytes(size))
		return false;
	now = bpf_ktime_get_ns();
	call = (struct heap_call){.seq = now, .size = size, .out = out};
	if (bpf_map_update_elem(&heap_inflight, &tid, &call, BPF_ANY))
		return false;
	if (!rec_capture(ctx, MLPROF_SK_HEAP | CAPTURE_HAS_END, 0, now, size)) {
		bpf_map_delete_elem(&heap_inflight, &tid);
		return false;
	}
	stat_inc(MLPROF_STAT_HEAP_SAMPLED);
	return true;
}

/* A sampled call returned block ptr (0: it failed): heap_live and user space learn it. */
static __always_inline void complete(__u32 tgid, __u32 tid, const struct heap_call *call, __u64 ptr)
{
	struct mlprof_heap_key key = {.pid = tgid, .ptr = ptr};
	__u64 size = call->size;

	if (ptr && bpf_map_update_elem(&heap_live, &key, &size, BPF_ANY)) {
		/* counted in the allocations, never in use: no free could be matched */
		stat_inc(MLPROF_STAT_HEAP_LIVE_FULL);
		rec_send_end(tgid, tid, call->seq, size, 0, MLPROF_STAT_HEAP_LOST);
		return;
	}
	/* a failed allocation (NULL) drops its sample */
	rec_send_end(tgid, tid, call->seq, ptr ? size : 0, ptr, MLPROF_STAT_HEAP_LOST);
}

/* Return of a sampled call: the block's address goes to heap_live and user space. */
static __always_inline void heap_exit(struct pt_regs *ctx)
{
	__u64 id = bpf_get_current_pid_tgid(), ptr;
	__u32 tgid = id >> 32, tid = (__u32)id;
	struct heap_call *call = bpf_map_lookup_elem(&heap_inflight, &tid);

	if (!call || call->mmap)
		return;
	ptr = PT_REGS_RC(ctx);
	if (call->out) {
		/* posix_memalign returns 0 and stores the block */
		__u64 p = 0;

		if (ptr != 0 || bpf_probe_read_user(&p, sizeof(p), (const void *)call->out))
			p = 0;
		ptr = p;
	}
	complete(tgid, tid, call, ptr);
	bpf_map_delete_elem(&heap_inflight, &tid);
}

/* mmap(2) flags (uapi/asm-generic/mman-common.h, linux/mman.h) */
#define HEAP_MAP_PRIVATE   0x02
#define HEAP_MAP_ANONYMOUS 0x20

/*
 * A direct anonymous private mmap of a probed process (Python's pymalloc arenas, a
 * program's own buffers), not one its allocator makes for a malloc (its caller, the
 * return address on top of the user stack in glibc's leaf mmap wrapper, is in the
 * allocator's code): sampled by bytes like an allocation, the mapping's start kept until
 * its munmap.
 */
SEC("tp/syscalls/sys_enter_mmap")
int heap_mmap(struct trace_event_raw_sys_enter *ctx)
{
	__u64 id = bpf_get_current_pid_tgid(), len = ctx->args[1], ret_addr = 0, now;
	__u32 tgid = id >> 32, tid = (__u32)id;
	struct heap_proc *hpr = bpf_map_lookup_elem(&heap_procs, &tgid);
	struct task_struct *task;
	struct mlprof_sample *rec;
	struct heap_call call;
	struct pt_regs *regs;

	if (!hpr ||
	    (ctx->args[3] & (HEAP_MAP_PRIVATE | HEAP_MAP_ANONYMOUS)) !=
		    (HEAP_MAP_PRIVATE | HEAP_MAP_ANONYMOUS) ||
	    !len)
		return 0;
	task = bpf_get_current_task_btf();
	regs = (struct pt_regs *)bpf_task_pt_regs(task);
	if (!regs ||
	    bpf_probe_read_user(&ret_addr, sizeof(ret_addr), (const void *)BPF_CORE_READ(regs, sp)))
		return 0;
	if (ret_addr >= hpr->lo && ret_addr < hpr->hi)
		return 0;
	if (!sample_bytes(len))
		return 0;
	now = bpf_ktime_get_ns();
	call = (struct heap_call){.seq = now, .size = len, .mmap = 1};
	if (bpf_map_update_elem(&heap_inflight, &tid, &call, BPF_ANY))
		return 0;
	rec = rec_begin(MLPROF_SK_HEAP, tgid, tid, 0);
	if (!rec) {
		bpf_map_delete_elem(&heap_inflight, &tid);
		return 0;
	}
	rec->aux[0] = now;
	rec->aux[1] = len;
	rec->flags |= MLPROF_SF_HAS_END;
	rec_submit(rec, rec_user(rec, NULL), tgid);
	stat_inc(MLPROF_STAT_HEAP_SAMPLED);
	return 0;
}

SEC("tp/syscalls/sys_exit_mmap")
int heap_mmap_exit(struct trace_event_raw_sys_exit *ctx)
{
	__u64 id = bpf_get_current_pid_tgid(), ptr = (__u64)ctx->ret;
	__u32 tgid = id >> 32, tid = (__u32)id;
	struct heap_call *call = bpf_map_lookup_elem(&heap_inflight, &tid);

	if (!call || !call->mmap)
		return 0;
	if (ptr >= (__u64)-4095)
		ptr = 0; /* -errno */
	complete(tgid, tid, call, ptr);
	bpf_map_delete_elem(&heap_inflight, &tid);
	return 0;
}

/* munmap of a sampled direct mapping (by its start: pymalloc gives arenas back whole). */
SEC("tp/syscalls/sys_enter_munmap")
int heap_munmap(struct trace_event_raw_sys_enter *ctx)
{
	__u32 tgid = bpf_get_current_pid_tgid() >> 32;

	if (bpf_map_lookup_elem(&heap_procs, &tgid))
		forget(tgid, ctx->args[0]);
	return 0;
}

/*
 * An exec: the process's allocator code range was the old image's. Dropped here, before the
 * new image runs, not when user space reads the exec event: a preloaded allocator's own
 * mmap calls in its constructor (mimalloc's first segment) were taken for the program's
 * while the old range stood. User space sets the new image's range once it has found its
 * allocator.
 */
SEC("tp/sched/sched_process_exec")
int heap_exec(void *ctx)
{
	__u32 tgid = bpf_get_current_pid_tgid() >> 32;

	bpf_map_delete_elem(&heap_procs, &tgid);
	return 0;
}

SEC("uprobe")
int heap_entry(struct pt_regs *ctx)
{
	heap_enter(ctx);
	return 0;
}

SEC("uretprobe")
int heap_return(struct pt_regs *ctx)
{
	heap_exit(ctx);
	return 0;
}

/* Loaded as a uprobe session (expected attach type set by user space). */
SEC("uprobe")
int heap_session(struct pt_regs *ctx)
{
	if (bpf_session_is_return()) {
		heap_exit(ctx);
		return 0;
	}
	/* 1: no return probe for this call */
	return heap_enter(ctx) ? 0 : 1;
}
