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
	MLPROF_CP__COUNT,
};

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
