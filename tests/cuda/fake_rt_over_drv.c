// SPDX-License-Identifier: Apache-2.0
/*
 * TEST DOUBLE of a CUDA runtime running on a driver (no GPU driver exists here): exports
 * cudaLaunchKernel, and like the real cudart on a GPU host it launches through the driver
 * API, here the libcuda.so.1 test double's exported cuLaunchKernel, on the calling
 * thread. Kernels are registered by host stub with fake_rt_register (standing for
 * __cudaRegisterFunction). it.record_cuda checks that mlprof counts such a launch once
 * (as the runtime launch) and not a second time at the driver.
 */
#include <dlfcn.h>
#include <stddef.h>

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

EXPORT int cudaLaunchKernel(const void *func, dim3 grid, dim3 block, void **args, size_t smem,
			    void *stream)
{
	for (int i = 0; i < nkernels; i++)
		if (kernels[i].stub == func)
			return launch(kernels[i].f, grid.x, grid.y, grid.z, block.x, block.y,
				      block.z, (unsigned int)smem, stream, args, NULL);
	return 98; /* cudaErrorInvalidDeviceFunction */
}
