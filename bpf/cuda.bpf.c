// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * CUDA and NCCL uprobes: kernel launches, graph launches, host<->device copies,
 * synchronize calls, device allocations and frees, NCCL collectives, and the calls that
 * name kernel handles. Attached by user space per library found in profiled processes
 * (cudart by its exported symbols, libcuda.so.1, NCCL), so no library is injected into
 * the process. Each event is counted; stacks are captured for a bounded, weighted sample
 * of launches, copies, synchronizes and NCCL calls, and for every allocation (the in-use
 * view needs all of them). Register layouts: x86-64 SysV (../shared/docs/cuda.md).
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>

char LICENSE[] SEC("license") = "Dual BSD/GPL";

#include "record.bpf.h"

#include "scope.bpf.h"

#include "bytesample.bpf.h"

#include <mlprof/cuda.h>

/* Send every synchronize call as an interval (training-step phases: gpu_wait). */
const volatile bool sync_intervals = false;
static const __u8 sync_scope_name[MLPROF_TORCH_NAME_MAX] = "cuda.synchronize";

/* A stack capture of a CUDA event (see rec_capture), counted. */
static __always_inline int capture(struct pt_regs *ctx, __u32 kind, __u64 value, __u64 aux0,
				   __u64 aux1)
{
	if (!rec_capture(ctx, kind, value, aux0, aux1))
		return 0;
	stat_inc(MLPROF_STAT_CUDA_CAPTURED);
	return 1;
}

/* --- rodata knobs --- */

/* Stack captures of sampled CUDA events per CPU per 100 ms. */
const volatile __u32 cuda_budget = 50;

/* Per CPU sampling state of CUDA events. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct rate_state);
} cuda_rate SEC(".maps");

/*
 * Exact call counts: (pid, function or probe id) -> calls. Launches count per launched
 * function, other calls per API. LRU: a full map forgets the least recent entries.
 */
struct cuda_count_key {
	__u32 pid;
	__u32 kind;   /* enum mlprof_sample_kind */
	__u64 what;   /* launched function / handle, 0 for other kinds */
	__u64 window; /* CLOCK_MONOTONIC / count_window_ns (the agent's window), else 0 */
};

/* Counts are kept per window of this many ns (the agent's upload interval); 0: one window. */
const volatile __u64 count_window_ns = 0;

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, struct cuda_count_key);
	__type(value, __u64);
} cuda_counts SEC(".maps");

/* A call in flight, from entry to return (per thread and probe family). */
/*
 * Runtime calls go through the driver: a driver-level call made while a runtime call of
 * the same family is in flight on the thread is the runtime's own, and not counted again.
 */
enum inflight_kind {
	IF_SYNC_RT = 1,
	IF_SYNC_DRV,
	IF_ALLOC_RT,
	IF_ALLOC_DRV,
	IF_FREE_RT,
	IF_NAME,
	IF_GETKERNEL,
};

struct inflight_key {
	__u32 tid;
	__u32 kind; /* enum inflight_kind */
};

struct inflight {
	__u64 seq; /* aux[0] of the captured sample, 0 when none was captured */
	__u64 out; /* user pointer written by the call (handle, device pointer) */
	__u64 arg; /* name string pointer / host function / size */
	__u64 start_ns;
	__u32 weight;
	__u32 pad;
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 8192);
	__type(key, struct inflight_key);
	__type(value, struct inflight);
} cuda_inflight SEC(".maps");

static __always_inline void count_event(__u32 pid, __u32 kind, __u64 what)
{
	struct cuda_count_key key = {.pid = pid, .kind = kind, .what = what};
	__u64 one = 1, *v;

	if (count_window_ns)
		key.window = bpf_ktime_get_ns() / count_window_ns;
	stat_inc(MLPROF_STAT_CUDA_EVENTS);
	v = bpf_map_lookup_elem(&cuda_counts, &key);
	if (v)
		__sync_fetch_and_add(v, 1);
	else
		bpf_map_update_elem(&cuda_counts, &key, &one, BPF_NOEXIST);
}

static __always_inline __u32 sampled_at(__u64 jiffies)
{
	return rate_sample(&cuda_rate, cuda_budget, jiffies_ns(jiffies), MLPROF_STAT_CUDA_CAPPED);
}

static __always_inline __u32 sampled(void)
{
	return sampled_at(bpf_jiffies64());
}

/*
 * A runtime launch reaches the driver on the same thread within microseconds: cudart looks
 * up cuLaunchKernel, cuLaunchKernel_ptsz, cuLaunchKernelEx and cuGraphLaunch by name
 * (cuGetProcAddress; the names are in libcudart.so.12's strings), i.e. it calls the very
 * exported functions probed here, so without care every runtime launch is counted twice on
 * a GPU host. A uretprobe on every runtime launch (as for synchronize) would double the cost
 * of the hottest probe, so each thread's last runtime launch is noted instead, after its
 * stack capture: the next driver launch of the same kind on that thread within
 * RT_TO_DRV_TICKS is that launch's own (counted in cuda_runtime_nested_launches). A runtime
 * launch failing before it reaches the driver, followed within a few ms by a direct driver
 * launch on the same thread, would leave that one uncounted.
 */
/*
 * 25-100 ms (HZ 1000-250): room for a preemption in between. 3 ticks were too few on a
 * loaded 2-vCPU CI machine (one of 400 runtime launches counted twice); the cost of a long
 * window is only the rare failing runtime launch's case above.
 */
#define RT_TO_DRV_TICKS 25

/* Per thread: jiffies of its last runtime kernel launch [0] and graph launch [1]. */
struct rt_launch_mark {
	__u64 jiffies[2];
};

/* Task storage: a plain load and store per launch (an LRU hash update costs ~150 ns). */
struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct rt_launch_mark);
} cuda_rt_launch SEC(".maps");

/* True for a driver launch made by the thread's runtime launch in flight. */
static __always_inline bool runtime_own_launch(__u32 kind, __u32 api)
{
	__u32 i = kind == MLPROF_SK_CUDA_GRAPH;
	struct rt_launch_mark *m;

	if (api == MLPROF_CUDA_RT)
		return false;
	m = bpf_task_storage_get(&cuda_rt_launch, bpf_get_current_task_btf(), 0, 0);
	if (!m || !m->jiffies[i] || bpf_jiffies64() - m->jiffies[i] > RT_TO_DRV_TICKS)
		return false;
	m->jiffies[i] = 0;
	stat_inc(MLPROF_STAT_CUDA_RT_NESTED);
	return true;
}

/*
 * Notes a runtime launch at jiffies (read once per launch), after its capture: the driver
 * call follows from here.
 */
static __always_inline void runtime_launch_done(__u32 kind, __u32 api, __u64 jiffies)
{
	struct rt_launch_mark *m;

	if (api != MLPROF_CUDA_RT)
		return;
	m = bpf_task_storage_get(&cuda_rt_launch, bpf_get_current_task_btf(), 0,
				 BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (m)
		m->jiffies[kind == MLPROF_SK_CUDA_GRAPH] = jiffies;
}

/*
 * Processes in which an autograd worker thread (MLPROF_AUTOGRAD_COMM) launched a kernel (one
 * whose stack was captured): a backward pass runs on the GPU there, and only there is the
 * caller of backward() worth a capture (on a CPU the pass runs on the calling thread).
 */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, __u32); /* tgid */
	__type(value, __u8);
} cuda_autograd_procs SEC(".maps");

static __always_inline bool autograd_worker(void)
{
	static const char want[] = MLPROF_AUTOGRAD_COMM;
	char comm[16];

	bpf_get_current_comm(comm, sizeof(comm));
	for (int i = 0; i < (int)sizeof(want) - 1; i++)
		if (comm[i] != want[i])
			return false;
	return true;
}

static __always_inline void launch(struct pt_regs *ctx, __u64 fn, __u32 api)
{
	__u32 tgid = wanted(), w;
	__u64 now;

	if (!tgid || runtime_own_launch(MLPROF_SK_CUDA_LAUNCH, api))
		return;
	count_event(tgid, MLPROF_SK_CUDA_LAUNCH, fn);
	now = bpf_jiffies64();
	w = sampled_at(now);
	if (w) {
		capture(ctx, MLPROF_SK_CUDA_LAUNCH, weight_count(w), fn, api);
		/* on the captured launches only, not every launch: a worker's shows up soon */
		if (autograd_worker() && !bpf_map_lookup_elem(&cuda_autograd_procs, &tgid)) {
			__u8 one = 1;

			bpf_map_update_elem(&cuda_autograd_procs, &tgid, &one, BPF_ANY);
		}
	}
	runtime_launch_done(MLPROF_SK_CUDA_LAUNCH, api, now);
}

static __always_inline void graph_launch(struct pt_regs *ctx, __u64 exec, __u32 api)
{
	__u32 tgid = wanted(), w;
	__u64 now;

	if (!tgid || runtime_own_launch(MLPROF_SK_CUDA_GRAPH, api))
		return;
	count_event(tgid, MLPROF_SK_CUDA_GRAPH, 0);
	now = bpf_jiffies64();
	w = sampled_at(now);
	if (w)
		capture(ctx, MLPROF_SK_CUDA_GRAPH, weight_count(w), exec, 0);
	runtime_launch_done(MLPROF_SK_CUDA_GRAPH, api, now);
}

static __always_inline void memcpy_call(struct pt_regs *ctx, __u64 count, __u32 kind)
{
	__u32 tgid = wanted(), w;

	if (!tgid)
		return;
	count_event(tgid, MLPROF_SK_CUDA_MEMCPY, 0);
	w = sampled();
	if (w)
		capture(ctx, MLPROF_SK_CUDA_MEMCPY, count * w / WEIGHT_ONE, 0, kind);
}

/* True when a runtime call of this family is in flight on the thread (see inflight_kind). */
static __always_inline bool inside_runtime(__u32 tid, __u32 rt_kind)
{
	struct inflight_key key = {.tid = tid, .kind = rt_kind};

	return bpf_map_lookup_elem(&cuda_inflight, &key) != NULL;
}

/* Entry of a synchronize call: the stack is captured now, the blocked time at return. */
static __always_inline void sync_enter(struct pt_regs *ctx, __u32 kind)
{
	__u64 id = bpf_get_current_pid_tgid(), now = bpf_ktime_get_ns();
	struct inflight_key key = {.tid = (__u32)id, .kind = kind};
	struct inflight in = {.start_ns = now};
	__u32 tgid = wanted(), w;

	if (!tgid || (kind == IF_SYNC_DRV && inside_runtime((__u32)id, IF_SYNC_RT)))
		return;
	if (sync_intervals) {
		in.arg = scope_oncpu_ns(now);
		scope_send_wait(tgid, (__u32)id, now, sync_scope_name);
	}
	count_event(tgid, MLPROF_SK_CUDA_SYNC, 0);
	w = sampled();
	if (w) {
		in.seq = now;
		in.weight = w;
	}
	/* an entry is kept even when not sampled: it marks the runtime call in flight */
	if (bpf_map_update_elem(&cuda_inflight, &key, &in, BPF_ANY))
		return;
	if (w)
		capture(ctx, MLPROF_SK_CUDA_SYNC | CAPTURE_HAS_END, 0, now, 0);
}

static __always_inline void sync_exit(__u32 kind)
{
	__u64 id = bpf_get_current_pid_tgid(), now = bpf_ktime_get_ns();
	struct inflight_key key = {.tid = (__u32)id, .kind = kind};
	struct inflight *in = bpf_map_lookup_elem(&cuda_inflight, &key);

	if (!in)
		return;
	if (in->seq)
		rec_send_end(id >> 32, (__u32)id, in->seq,
			     (now - in->start_ns) * in->weight / WEIGHT_ONE, 0,
			     MLPROF_STAT_CUDA_LOST);
	if (sync_intervals)
		scope_send_interval(id >> 32, (__u32)id, now, in->start_ns, in->arg,
				    sync_scope_name);
	bpf_map_delete_elem(&cuda_inflight, &key);
}

/*
 * Allocations: every one is captured (the in-use view must match each free); the pointer
 * is read from *out at return.
 */
static __always_inline void alloc_enter(struct pt_regs *ctx, __u64 out, __u64 size, __u32 kind)
{
	__u64 id = bpf_get_current_pid_tgid(), now = bpf_ktime_get_ns();
	struct inflight_key key = {.tid = (__u32)id, .kind = kind};
	struct inflight in = {.seq = now, .out = out, .arg = size, .start_ns = now};
	__u32 tgid = wanted();

	if (!tgid || (kind == IF_ALLOC_DRV && inside_runtime((__u32)id, IF_ALLOC_RT)))
		return;
	count_event(tgid, MLPROF_SK_CUDA_ALLOC, 0);
	if (bpf_map_update_elem(&cuda_inflight, &key, &in, BPF_ANY))
		return;
	capture(ctx, MLPROF_SK_CUDA_ALLOC | CAPTURE_HAS_END, 0, now, size);
}

static __always_inline void alloc_exit(long ret, __u32 kind)
{
	__u64 id = bpf_get_current_pid_tgid();
	struct inflight_key key = {.tid = (__u32)id, .kind = kind};
	struct inflight *in = bpf_map_lookup_elem(&cuda_inflight, &key);
	__u64 ptr = 0;

	if (!in)
		return;
	if (ret == 0 && in->out && bpf_probe_read_user(&ptr, sizeof(ptr), (const void *)in->out))
		ptr = 0;
	rec_send_end(id >> 32, (__u32)id, in->seq, ret == 0 && ptr ? in->arg : 0, ptr,
		     MLPROF_STAT_CUDA_LOST);
	bpf_map_delete_elem(&cuda_inflight, &key);
}

/* A free (device pointer ptr): the in-use view forgets the allocation. kind: IF_FREE_RT for
 * the runtime's, 0 for the driver's. */
static __always_inline void free_call(__u64 ptr, __u32 kind)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u32 tgid = wanted();

	if (!tgid)
		return;
	if (kind == IF_FREE_RT) {
		/* cudaFree frees through cuMemFree_v2 on the same thread: counted once, here */
		struct inflight_key key = {.tid = (__u32)id, .kind = IF_FREE_RT};
		struct inflight in = {};

		bpf_map_update_elem(&cuda_inflight, &key, &in, BPF_ANY);
	} else if (inside_runtime((__u32)id, IF_FREE_RT)) {
		return;
	}
	if (!ptr)
		return;
	count_event(tgid, MLPROF_SK_CUDA_ALLOC, 1);
	rec_send_free(MLPROF_EV_CUDA_FREE, tgid, ptr, MLPROF_STAT_CUDA_LOST);
}

static __always_inline void free_exit(void)
{
	struct inflight_key key = {.tid = (__u32)bpf_get_current_pid_tgid(), .kind = IF_FREE_RT};

	bpf_map_delete_elem(&cuda_inflight, &key);
}

/*
 * PyTorch's CUDA caching allocator (USDT pytorch:malloc / pytorch:free in libc10_cuda):
 * the memory of tensors, which the allocator carves out of a few large cudaMalloc
 * segments. Sampled by bytes (an allocation of s bytes with probability 1 - e^(-s/mean)),
 * as heap.bpf.c samples malloc; a sampled block is tracked until its free, which then goes
 * to user space (other frees are filtered here).
 */
const volatile __u32 tensor_draws[MLPROF_HEAP_DRAWS]; /* filled by user space */

/* Per CPU: bytes left until the next sampled tensor allocation (0: not drawn yet). */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __s64);
} tensor_left SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 65536);
	__type(key, struct mlprof_tensor_key);
	__type(value, __u8);
} tensor_live SEC(".maps");

/* A USDT argument (MLPROF_USDT_ARG): a register of the probe site, or memory at it + disp. */
static __always_inline __u64 usdt_arg(struct pt_regs *ctx, __u32 spec)
{
	__u64 v = 0;

	if (!(spec & MLPROF_USDT_ARG_VALID) ||
	    bpf_probe_read_kernel(&v, sizeof(v), (void *)ctx + (spec & 0x1f) * 8))
		return 0;
	if ((spec & MLPROF_USDT_ARG_DEREF) &&
	    bpf_probe_read_user(&v, sizeof(v), (const void *)(v + (__s16)(spec >> 8))))
		return 0;
	return v;
}

static __always_inline bool tensor_sampled(__u64 size)
{
	__u32 zero = 0;
	__s64 *left = bpf_map_lookup_elem(&tensor_left, &zero);

	return left && bytes_sampled(left, tensor_draws, size);
}

static __always_inline void tensor_alloc(struct pt_regs *ctx, __u64 ptr, __u64 size)
{
	struct mlprof_tensor_key key = {.ptr = ptr};
	__u8 one = 1;
	__u32 tgid = wanted();

	if (!tgid || !ptr || !size)
		return;
	count_event(tgid, MLPROF_SK_CUDA_TENSOR, 0);
	if (!tensor_sampled(size))
		return;
	key.pid = tgid;
	if (bpf_map_update_elem(&tensor_live, &key, &one, BPF_ANY)) {
		stat_inc(MLPROF_STAT_TENSOR_LIVE_FULL);
		return;
	}
	if (!capture(ctx, MLPROF_SK_CUDA_TENSOR, size, ptr, size))
		bpf_map_delete_elem(&tensor_live, &key);
}

static __always_inline void tensor_free(__u64 ptr)
{
	struct mlprof_tensor_key key = {.ptr = ptr};
	__u32 tgid = wanted();

	if (!tgid || !ptr)
		return;
	count_event(tgid, MLPROF_SK_CUDA_TENSOR, 1);
	key.pid = tgid;
	if (bpf_map_delete_elem(&tensor_live, &key))
		return; /* not sampled */
	rec_send_free(MLPROF_EV_TENSOR_FREE, tgid, ptr, MLPROF_STAT_CUDA_LOST);
}

/*
 * A backward pass: the thread that enters torch::autograd::Engine::execute waits there
 * while the engine's worker threads (pt_autograd_N, one per device) run the graph and
 * launch its kernels. Its stack is captured once (MLPROF_SK_BACKWARD, never a profile of
 * its own) and ended at the return: user space shows the workers' samples in between under
 * it, so that backward's kernels sit under the line that called backward(), in processes whose
 * workers launch kernels (cuda_autograd_procs: from the pass after the first). One pass per
 * process at a time (another thread's concurrent pass is not tracked); nested calls on the
 * same thread count depth.
 */
struct backward {
	__u32 tid;
	__u32 depth;
	__u64 seq;
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, __u32); /* tgid */
	__type(value, struct backward);
} cuda_backward SEC(".maps");

static __always_inline void backward_enter(struct pt_regs *ctx)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u32 tgid = wanted();
	struct backward *b, nb = {.tid = (__u32)id, .depth = 1};

	if (!tgid || !bpf_map_lookup_elem(&cuda_autograd_procs, &tgid) || autograd_worker())
		return;
	b = bpf_map_lookup_elem(&cuda_backward, &tgid);
	if (b) {
		if (b->tid == (__u32)id)
			b->depth++;
		return;
	}
	nb.seq = bpf_ktime_get_ns();
	if (!bpf_map_update_elem(&cuda_backward, &tgid, &nb, BPF_NOEXIST) &&
	    !capture(ctx, MLPROF_SK_BACKWARD | CAPTURE_HAS_END, 0, nb.seq, 0))
		bpf_map_delete_elem(&cuda_backward, &tgid);
}

static __always_inline void backward_exit(void)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u32 tgid = id >> 32;
	struct backward *b = bpf_map_lookup_elem(&cuda_backward, &tgid);

	if (!b || b->tid != (__u32)id || --b->depth)
		return;
	rec_send_end(tgid, (__u32)id, b->seq, 0, 0, MLPROF_STAT_CUDA_LOST);
	bpf_map_delete_elem(&cuda_backward, &tgid);
}

/*
 * Handle naming. cuModuleGetFunction(CUfunction *hfunc, CUmodule hmod, const char *name),
 * cuLibraryGetKernel(CUkernel *pKernel, CUlibrary lib, const char *name): out in rdi, name
 * in rdx. __cudaGetKernel(cudaKernel_t *out, const void *hostFun) (CUDA 13) and
 * cuKernelGetFunction(CUfunction *pFunc, CUkernel kernel): out in rdi, what the new handle
 * stands for (host function / kernel handle) in rsi.
 */
static __always_inline void name_enter(__u64 out, __u64 arg, __u32 kind)
{
	__u64 id = bpf_get_current_pid_tgid();
	struct inflight_key key = {.tid = (__u32)id, .kind = kind};
	struct inflight in = {.out = out, .arg = arg};

	if (!wanted())
		return;
	bpf_map_update_elem(&cuda_inflight, &key, &in, BPF_ANY);
}

static __always_inline void name_exit(long ret, __u32 kind)
{
	__u64 id = bpf_get_current_pid_tgid();
	struct inflight_key key = {.tid = (__u32)id, .kind = kind};
	struct inflight *in = bpf_map_lookup_elem(&cuda_inflight, &key);
	struct mlprof_cuda_name *e;
	__u64 handle = 0;

	if (!in)
		return;
	if (ret != 0 || bpf_probe_read_user(&handle, sizeof(handle), (const void *)in->out) ||
	    !handle)
		goto out;
	e = bpf_ringbuf_reserve(&rb, sizeof(*e), 0);
	if (!e) {
		stat_inc(MLPROF_STAT_CUDA_LOST);
		goto out;
	}
	e->type = MLPROF_EV_CUDA_NAME;
	e->pid = id >> 32;
	e->handle = handle;
	e->name[0] = 0;
	if (kind == IF_GETKERNEL) {
		e->host_fun = in->arg;
	} else {
		e->host_fun = 0;
		if (bpf_probe_read_user_str(e->name, sizeof(e->name), (const void *)in->arg) < 0)
			e->name[0] = 0;
	}
	bpf_ringbuf_submit(e, 0);
out:
	bpf_map_delete_elem(&cuda_inflight, &key);
}

/* Bytes per element of an ncclDataType_t. */
static __always_inline __u64 nccl_dtype_size(__u32 dt)
{
	switch (dt) {
	case 0:	 /* int8 */
	case 1:	 /* uint8 */
	case 10: /* fp8 e4m3 */
	case 11: /* fp8 e5m2 */
		return 1;
	case 6: /* float16 */
	case 9: /* bfloat16 */
		return 2;
	case 2: /* int32 */
	case 3: /* uint32 */
	case 7: /* float32 */
		return 4;
	default: /* int64, uint64, float64 */
		return 8;
	}
}

static __always_inline void nccl(struct pt_regs *ctx, __u32 coll, __u64 count, __u32 dtype,
				 __u32 op)
{
	__u32 tgid = wanted(), w;

	if (!tgid)
		return;
	count_event(tgid, MLPROF_SK_NCCL, coll);
	w = sampled();
	if (w)
		capture(ctx, MLPROF_SK_NCCL, weight_count(w),
			count * nccl_dtype_size(dtype) * w / WEIGHT_ONE,
			coll | (op & 0xff) << 8 | (dtype & 0xff) << 16);
}

/*
 * One entry and one return program for every CUDA/NCCL entry point: the attach cookie (set
 * by user space, enum mlprof_cuda_probe) says which API fired and where its arguments are,
 * so the object loads with two programs to verify instead of one per API.
 */
SEC("uprobe")
int cuda_entry(struct pt_regs *ctx)
{
	__u64 a1 = PT_REGS_PARM1(ctx), a2 = PT_REGS_PARM2(ctx), a3 = PT_REGS_PARM3(ctx);
	__u32 a4 = (__u32)PT_REGS_PARM4(ctx), a5 = (__u32)PT_REGS_PARM5(ctx);
	__u64 cookie = bpf_get_attach_cookie(ctx);

	switch (MLPROF_COOKIE_PROBE(cookie)) {
	case MLPROF_CP_LAUNCH_RT: /* cudaLaunchKernel(func, grid, block, args, smem, stream) */
		launch(ctx, a1, MLPROF_CUDA_RT);
		break;
	case MLPROF_CP_LAUNCH_RT_EX:
		launch(ctx, a2, MLPROF_CUDA_RT);
		break;
	case MLPROF_CP_LAUNCH_DRV: /* cuLaunchKernel(CUfunction f, ...) */
		launch(ctx, a1, MLPROF_CUDA_DRIVER);
		break;
	case MLPROF_CP_LAUNCH_DRV_EX: /* cuLaunchKernelEx(const CUlaunchConfig *, CUfunction) */
		launch(ctx, a2, MLPROF_CUDA_DRIVER);
		break;
	case MLPROF_CP_GRAPH:
		graph_launch(ctx, a1, MLPROF_CUDA_RT);
		break;
	case MLPROF_CP_GRAPH_DRV:
		graph_launch(ctx, a1, MLPROF_CUDA_DRIVER);
		break;
	case MLPROF_CP_MEMCPY: /* cudaMemcpy(dst, src, count, kind[, stream]) */
		memcpy_call(ctx, a3, a4);
		break;
	case MLPROF_CP_SYNC_RT: /* cudaStreamSynchronize / Event / Device */
		sync_enter(ctx, IF_SYNC_RT);
		break;
	case MLPROF_CP_SYNC_DRV:
		sync_enter(ctx, IF_SYNC_DRV);
		break;
	case MLPROF_CP_ALLOC_RT: /* cudaMalloc(void **out, size) / cudaMallocAsync */
		alloc_enter(ctx, a1, a2, IF_ALLOC_RT);
		break;
	case MLPROF_CP_ALLOC_DRV: /* cuMemAlloc_v2(CUdeviceptr *out, size) */
		alloc_enter(ctx, a1, a2, IF_ALLOC_DRV);
		break;
	case MLPROF_CP_FREE_RT: /* cudaFree(ptr) / cudaFreeAsync(ptr, stream) */
		free_call(a1, IF_FREE_RT);
		break;
	case MLPROF_CP_FREE_DRV: /* cuMemFree_v2(ptr) */
		free_call(a1, 0);
		break;
	case MLPROF_CP_GETFUNC: /* cuModuleGetFunction / cuLibraryGetKernel(out, mod, name) */
		name_enter(a1, a3, IF_NAME);
		break;
	case MLPROF_CP_GETKERNEL: /* __cudaGetKernel(out, hostFun) / cuKernelGetFunction */
		name_enter(a1, a2, IF_GETKERNEL);
		break;
	/* NCCL: (send, recv, count, dtype, op, ...) or (send, recv, count, dtype, comm) */
	case MLPROF_CP_NCCL_ALLREDUCE:
		nccl(ctx, MLPROF_NCCL_ALLREDUCE, a3, a4, a5);
		break;
	case MLPROF_CP_NCCL_REDUCESCATTER:
		nccl(ctx, MLPROF_NCCL_REDUCESCATTER, a3, a4, a5);
		break;
	case MLPROF_CP_NCCL_ALLGATHER:
		nccl(ctx, MLPROF_NCCL_ALLGATHER, a3, a4, 0xff);
		break;
	case MLPROF_CP_NCCL_ALLTOALL:
		nccl(ctx, MLPROF_NCCL_ALLTOALL, a3, a4, 0xff);
		break;
	case MLPROF_CP_NCCL_BROADCAST:
		nccl(ctx, MLPROF_NCCL_BROADCAST, a3, a4, 0xff);
		break;
	case MLPROF_CP_NCCL_REDUCE:
		nccl(ctx, MLPROF_NCCL_REDUCE, a3, a4, a5);
		break;
	case MLPROF_CP_NCCL_SEND: /* ncclSend / ncclRecv(buf, count, dtype, peer, ...) */
		nccl(ctx, MLPROF_NCCL_SEND, a2, (__u32)a3, 0xff);
		break;
	case MLPROF_CP_NCCL_RECV:
		nccl(ctx, MLPROF_NCCL_RECV, a2, (__u32)a3, 0xff);
		break;
	case MLPROF_CP_TORCH_MALLOC: /* (ptr, device, size, stream) */
		tensor_alloc(ctx, usdt_arg(ctx, MLPROF_COOKIE_ARG1(cookie)),
			     usdt_arg(ctx, MLPROF_COOKIE_ARG2(cookie)));
		break;
	case MLPROF_CP_TORCH_FREE: /* (ptr) */
		tensor_free(usdt_arg(ctx, MLPROF_COOKIE_ARG1(cookie)));
		break;
	case MLPROF_CP_BACKWARD:
		backward_enter(ctx);
		break;
	}
	return 0;
}

SEC("uretprobe")
int cuda_return(struct pt_regs *ctx)
{
	long ret = PT_REGS_RC(ctx);

	switch (bpf_get_attach_cookie(ctx)) {
	case MLPROF_CP_SYNC_RT:
		sync_exit(IF_SYNC_RT);
		break;
	case MLPROF_CP_SYNC_DRV:
		sync_exit(IF_SYNC_DRV);
		break;
	case MLPROF_CP_ALLOC_RT:
		alloc_exit(ret, IF_ALLOC_RT);
		break;
	case MLPROF_CP_ALLOC_DRV:
		alloc_exit(ret, IF_ALLOC_DRV);
		break;
	case MLPROF_CP_FREE_RT:
		free_exit();
		break;
	case MLPROF_CP_GETFUNC:
		name_exit(ret, IF_NAME);
		break;
	case MLPROF_CP_GETKERNEL:
		name_exit(ret, IF_GETKERNEL);
		break;
	case MLPROF_CP_BACKWARD:
		backward_exit();
		break;
	}
	return 0;
}
