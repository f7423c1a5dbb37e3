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
 * heap_return on every call.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>

char LICENSE[] SEC("license") = "Dual BSD/GPL";

#include "record.bpf.h"

#include <mlprof/heap.h>

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

/* A sampled call in flight, entry to return, per thread. */
struct heap_call {
	__u64 seq;  /* aux[0] of the captured sample */
	__u64 size; /* bytes requested */
	__u64 out;  /* posix_memalign's void **, else 0 */
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

static __always_inline __s64 draw(void)
{
	__u32 i = bpf_get_prandom_u32() & (MLPROF_HEAP_DRAWS - 1);

	return (__s64)heap_draws[i] + 1;
}

/* Whether an allocation of size bytes is sampled (the per-CPU countdown crosses zero). */
static __always_inline bool sample_bytes(__u64 size)
{
	__u32 zero = 0;
	__s64 *left = bpf_map_lookup_elem(&heap_left, &zero);

	if (!left)
		return false;
	if (!*left)
		*left = draw();
	if (*left > (__s64)size) {
		*left -= (__s64)size;
		return false;
	}
	*left = draw();
	return true;
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

/* Return of a sampled call: the block's address goes to heap_live and user space. */
static __always_inline void heap_exit(struct pt_regs *ctx)
{
	__u64 id = bpf_get_current_pid_tgid(), ptr, one;
	__u32 tgid = id >> 32, tid = (__u32)id;
	struct heap_call *call = bpf_map_lookup_elem(&heap_inflight, &tid);
	struct mlprof_heap_key key = {.pid = tgid};

	if (!call)
		return;
	ptr = PT_REGS_RC(ctx);
	if (call->out) {
		/* posix_memalign returns 0 and stores the block */
		__u64 p = 0;

		if (ptr != 0 || bpf_probe_read_user(&p, sizeof(p), (const void *)call->out))
			p = 0;
		ptr = p;
	}
	if (ptr) {
		key.ptr = ptr;
		one = call->size;
		if (bpf_map_update_elem(&heap_live, &key, &one, BPF_ANY)) {
			/* counted in the allocations, never in use: no free could be matched */
			stat_inc(MLPROF_STAT_HEAP_LIVE_FULL);
			rec_send_end(tgid, tid, call->seq, call->size, 0, MLPROF_STAT_HEAP_LOST);
			goto out;
		}
	}
	/* a failed allocation (NULL) drops its sample */
	rec_send_end(tgid, tid, call->seq, ptr ? call->size : 0, ptr, MLPROF_STAT_HEAP_LOST);
out:
	bpf_map_delete_elem(&heap_inflight, &tid);
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
