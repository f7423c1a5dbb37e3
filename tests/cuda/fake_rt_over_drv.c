// SPDX-License-Identifier: Apache-2.0
/*
 * TEST DOUBLE of a CUDA runtime running on a driver (no GPU driver exists here): exports
 * cudaLaunchKernel, cudaMalloc and cudaFree, and like the real cudart on a GPU host it
 * calls the driver API for them, here the libcuda.so.1 test double's cuLaunchKernel,
 * cuMemAlloc_v2 and cuMemFree_v2, on the calling thread. Kernels are registered by host
 * stub with fake_rt_register (standing for __cudaRegisterFunction). it.record_cuda checks
 * that mlprof counts such a launch, allocation and free once (as the runtime's) and not a
 * second time at the driver (a GPU host showed 400 frees for 200 cudaFree calls).
 */
#include <dlfcn.h>
#include <stddef.h>
#include <stdint.h>

#define EXPORT __attribute__((visibility("default")))

typedef int CUresult;
typedef void *CUfunction;
typedef struct {
	unsigned int x, y, z;
} dim3;

#define MAX_KERNELS 8

static struct {
	const void *stub;
	CUfunction f;
} kernels[MAX_KERNELS];
static int nkernels;
static CUresult (*launch)(CUfunction, unsigned int, unsigned int, unsigned int, unsigned int,
			  unsigned int, unsigned int, unsigned int, void *, void **, void **);

EXPORT int fake_rt_register(const void *stub, CUfunction f)
{
	if (!launch) {
		void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);

		if (!h || !(*(void **)&launch = dlsym(h, "cuLaunchKernel")))
			return 1;
	}
	if (nkernels == MAX_KERNELS)
		return 1;
	kernels[nkernels].stub = stub;
	kernels[nkernels++].f = f;
	return 0;
}

/* cudaMalloc / cudaFree through the driver's cuMemAlloc_v2 / cuMemFree_v2, as cudart does. */
EXPORT int cudaMalloc(void **p, size_t size)
{
	static CUresult (*alloc)(unsigned long long *, size_t);
	unsigned long long d = 0;
	CUresult r;

	if (!alloc) {
		void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);

		if (!h || !(*(void **)&alloc = dlsym(h, "cuMemAlloc_v2")))
			return 2;
	}
	r = alloc(&d, size);
	*p = (void *)(uintptr_t)d;
	return r ? 2 : 0;
}

EXPORT int cudaFree(void *p)
{
	static CUresult (*release)(unsigned long long);

	if (!release) {
		void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);

		if (!h || !(*(void **)&release = dlsym(h, "cuMemFree_v2")))
			return 1;
	}
	return release((unsigned long long)(uintptr_t)p) ? 1 : 0;
}

EXPORT int cudaLaunchKernel(const void *func, dim3 grid, dim3 block, void **args, size_t smem,
			    void *stream)
{
	for (int i = 0; i < nkernels; i++)
		if (kernels[i].stub == func)
			return launch(kernels[i].f, grid.x, grid.y, grid.z, block.x, block.y,
				      block.z, (unsigned int)smem, stream, args, NULL);
	return 98; /* cudaErrorInvalidDeviceFunction */
}
