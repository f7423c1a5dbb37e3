/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* Layouts shared by the CUDA/NCCL uprobes and user space: probe kinds, name and free events. */
#ifndef MLPROF_SHARED_CUDA_H
#define MLPROF_SHARED_CUDA_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

/*
 * API flavour of a launch sample (mlprof_sample.aux[1] of MLPROF_SK_CUDA_LAUNCH): tells
 * user space what aux[0] (the launched function) is.
 */
enum mlprof_cuda_api {
	MLPROF_CUDA_RT = 1,	/* runtime: host stub address (<= 12) or cudaKernel_t (13) */
	MLPROF_CUDA_DRIVER = 2, /* driver: CUfunction handle */
};

/*
 * What a CUDA/NCCL uprobe is attached to: the attach cookie of the one entry and one return
 * program (bpf/cuda.bpf.c), set by user space per entry point.
 */
enum mlprof_cuda_probe {
	MLPROF_CP_LAUNCH_RT = 1, /* cudaLaunchKernel, cudaLaunchCooperativeKernel (+_ptsz) */
	MLPROF_CP_LAUNCH_RT_EX,	 /* cudaLaunchKernelExC */
	MLPROF_CP_LAUNCH_DRV,	 /* cuLaunchKernel, cuLaunchCooperativeKernel */
	MLPROF_CP_LAUNCH_DRV_EX, /* cuLaunchKernelEx */
	MLPROF_CP_GRAPH,	 /* cudaGraphLaunch */
	MLPROF_CP_GRAPH_DRV,	 /* cuGraphLaunch */
	MLPROF_CP_MEMCPY,	 /* cudaMemcpy, cudaMemcpyAsync */
	MLPROF_CP_SYNC_RT,	 /* cudaStreamSynchronize, cudaEventSynchronize, ... (+ return) */
	MLPROF_CP_SYNC_DRV,	 /* cuStreamSynchronize, cuCtxSynchronize, ... (+ return) */
	MLPROF_CP_ALLOC_RT,	 /* cudaMalloc, cudaMallocAsync (+ return) */
	MLPROF_CP_ALLOC_DRV,	 /* cuMemAlloc_v2 (+ return) */
	MLPROF_CP_FREE_RT,	 /* cudaFree, cudaFreeAsync (+ return) */
	MLPROF_CP_FREE_DRV,	 /* cuMemFree_v2 (not counted inside a runtime free) */
	MLPROF_CP_GETFUNC,	 /* cuModuleGetFunction, cuLibraryGetKernel (+ return) */
	MLPROF_CP_GETKERNEL,	 /* __cudaGetKernel, cuKernelGetFunction (+ return) */
	MLPROF_CP_NCCL_ALLREDUCE,
	MLPROF_CP_NCCL_REDUCESCATTER,
	MLPROF_CP_NCCL_ALLGATHER,
	MLPROF_CP_NCCL_ALLTOALL,
	MLPROF_CP_NCCL_BROADCAST,
	MLPROF_CP_NCCL_REDUCE,
	MLPROF_CP_NCCL_SEND,
	MLPROF_CP_NCCL_RECV,
	MLPROF_CP_TORCH_MALLOC, /* USDT pytorch:malloc(ptr, device, size, stream) of the CUDA
				 * caching allocator (libc10_cuda): a tensor's memory */
	MLPROF_CP_TORCH_FREE,	/* USDT pytorch:free(ptr) */
	MLPROF_CP_BACKWARD,	/* torch::autograd::Engine::execute (+ return): a backward
				 * pass, run by the engine's worker threads on GPUs */
	MLPROF_CP__COUNT,
};

/*
 * The attach cookie: the probe (enum mlprof_cuda_probe) in bits 0-7; for USDT probes, where
 * its first and second argument of interest are (MLPROF_USDT_ARG) in bits 8-31 and 32-55:
 * a pt_regs slot (8-byte index), and for a memory operand the displacement to add and load.
 */
#define MLPROF_COOKIE_PROBE(c) ((__u32)((c)&0xff))
#define MLPROF_USDT_ARG_VALID  (1u << 5)
#define MLPROF_USDT_ARG_DEREF  (1u << 6)
#define MLPROF_USDT_ARG(slot, deref, disp)                                                         \
	((__u32)(slot) | MLPROF_USDT_ARG_VALID | ((deref) ? MLPROF_USDT_ARG_DEREF : 0) |           \
	 ((__u32)(__u16)(__s16)(disp) << 8))
#define MLPROF_COOKIE(probe, arg1, arg2) ((__u64)(probe) | (__u64)(arg1) << 8 | (__u64)(arg2) << 32)
#define MLPROF_COOKIE_ARG1(c)		 ((__u32)((c) >> 8) & 0xffffff)
#define MLPROF_COOKIE_ARG2(c)		 ((__u32)((c) >> 32) & 0xffffff)

/* Key of the CUDA programs' table of sampled PyTorch tensors not freed yet (tensor_live). */
struct mlprof_tensor_key {
	__u32 pid;
	__u32 pad;
	__u64 ptr;
};

/* Thread names of PyTorch's autograd worker threads (one per device): "pt_autograd_0". */
#define MLPROF_AUTOGRAD_COMM "pt_autograd_"

/* Mean bytes of PyTorch tensor allocations between two sampled ones (MLPROF_SK_CUDA_TENSOR). */
#define MLPROF_TENSOR_SAMPLE_BYTES (1u << 20)

/* mlprof_sample.aux[1] of MLPROF_SK_CUDA_MEMCPY: cudaMemcpyKind. */
#define MLPROF_CUDA_MEMCPY_HTOD 1
#define MLPROF_CUDA_MEMCPY_DTOH 2
#define MLPROF_CUDA_MEMCPY_DTOD 3

/* mlprof_sample.aux[1] of MLPROF_SK_NCCL: collective | op << 8 | dtype << 16. */
enum mlprof_nccl_coll {
	MLPROF_NCCL_ALLREDUCE = 1,
	MLPROF_NCCL_ALLGATHER,
	MLPROF_NCCL_REDUCESCATTER,
	MLPROF_NCCL_BROADCAST,
	MLPROF_NCCL_REDUCE,
	MLPROF_NCCL_SEND,
	MLPROF_NCCL_RECV,
	MLPROF_NCCL_ALLTOALL,
};

/*
 * A name for a launch handle, learned when the program asked for it: the driver's
 * cuModuleGetFunction / cuLibraryGetKernel (name = the kernel's mangled name), or the CUDA
 * 13 runtime's __cudaGetKernel (host_fun = the host stub; user space names it).
 */
#define MLPROF_CUDA_NAME_MAX 256
struct mlprof_cuda_name {
	__u32 type; /* MLPROF_EV_CUDA_NAME */
	__u32 pid;
	__u64 handle;
	__u64 host_fun; /* 0 when name[] is set */
	__u8 name[MLPROF_CUDA_NAME_MAX];
};

#endif /* MLPROF_SHARED_CUDA_H */
