// SPDX-License-Identifier: Apache-2.0
/*
 * TEST DOUBLE of the CUDA driver library, for it.record_cuda only. Built as
 * libcuda.so.1 into a test directory of the build tree (never installed, never on the
 * default library path): it is NOT NVIDIA's driver and runs no GPU code. It exports a few
 * driver API entry points with the real names and x86-64 argument layouts, so that
 * mlprof's driver-level uprobes (found by symbol, as in the real libcuda.so.1) can be
 * tested on a machine without a GPU:
 *
 *   cuInit, cuModuleLoadData, cuModuleGetFunction, cuLibraryLoadData, cuLibraryGetKernel,
 *   cuKernelGetFunction: succeed; function handles are fake, distinct per kernel name
 *   cuLaunchKernel, cuLaunchKernelEx: count the launch, run nothing
 *   cuMemAlloc_v2: fake device pointers (a freed slot is reused, lowest first, as real
 *     allocators reuse addresses); sizes above FAKE_MEM_LIMIT fail with
 *     CUDA_ERROR_OUT_OF_MEMORY (2) and write nothing
 *   cuMemFree_v2: releases the slot
 *   cuStreamSynchronize, cuCtxSynchronize, cuEventSynchronize: sleep the time set with
 *     fake_cuda_set_sync_ns() (default 20 ms), standing in for a wait on the GPU
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

#define EXPORT __attribute__((visibility("default"), noinline))

typedef int CUresult;
typedef uint64_t CUdeviceptr;
typedef struct fake_func *CUfunction;
typedef struct fake_func *CUkernel;
typedef void *CUmodule;
typedef void *CUlibrary;
typedef void *CUstream;

#define CUDA_SUCCESS		 0
#define CUDA_ERROR_INVALID_VALUE 1
#define CUDA_ERROR_OUT_OF_MEMORY 2
#define CUDA_ERROR_NOT_FOUND	 500

#define FAKE_MAX_FUNCS 64
#define FAKE_MEM_SLOTS 64
#define FAKE_MEM_BASE  0x7a0000000000ull
#define FAKE_MEM_SLOT  (256ull << 20)
#define FAKE_MEM_LIMIT (64ull << 20)

struct fake_func {
	char name[128];
	int is_kernel;		/* a CUkernel (library API), not a CUfunction */
	struct fake_func *func; /* CUkernel -> its CUfunction (cuKernelGetFunction) */
	uint64_t launches;
};

static struct fake_func funcs[FAKE_MAX_FUNCS];
static int nfuncs;
static int mem_used[FAKE_MEM_SLOTS];
static long sync_ns = 20 * 1000 * 1000;
static char fake_module, fake_library;

static struct fake_func *get_func(const char *name, int is_kernel)
{
	for (int i = 0; i < nfuncs; i++)
		if (funcs[i].is_kernel == is_kernel && !strcmp(funcs[i].name, name))
			return &funcs[i];
	if (nfuncs == FAKE_MAX_FUNCS)
		return NULL;
	strncpy(funcs[nfuncs].name, name, sizeof(funcs[0].name) - 1);
	funcs[nfuncs].is_kernel = is_kernel;
	return &funcs[nfuncs++];
}

static void fake_wait(void)
{
	struct timespec ts = {sync_ns / 1000000000L, sync_ns % 1000000000L};

	while (nanosleep(&ts, &ts))
		;
}

/* Test control (not a driver API): how long each synchronize call waits. */
EXPORT void fake_cuda_set_sync_ns(long ns)
{
	sync_ns = ns;
}

EXPORT CUresult cuInit(unsigned int flags)
{
	return flags ? CUDA_ERROR_INVALID_VALUE : CUDA_SUCCESS;
}

EXPORT CUresult cuModuleLoadData(CUmodule *module, const void *image)
{
	if (!module || !image)
		return CUDA_ERROR_INVALID_VALUE;
	*module = &fake_module;
	return CUDA_SUCCESS;
}

EXPORT CUresult cuModuleGetFunction(CUfunction *hfunc, CUmodule hmod, const char *name)
{
	struct fake_func *f;

	if (!hfunc || hmod != &fake_module || !name)
		return CUDA_ERROR_INVALID_VALUE;
	if (!strncmp(name, "missing", 7))
		return CUDA_ERROR_NOT_FOUND;
	f = get_func(name, 0);
	if (!f)
		return CUDA_ERROR_OUT_OF_MEMORY;
	*hfunc = f;
	return CUDA_SUCCESS;
}

EXPORT CUresult cuLibraryLoadData(CUlibrary *library, const void *code, void *jit_options,
				  void **jit_values, unsigned int njit, void *lib_options,
				  void **lib_values, unsigned int nlib)
{
	(void)jit_options, (void)jit_values, (void)njit, (void)lib_options, (void)lib_values,
		(void)nlib;
	if (!library || !code)
		return CUDA_ERROR_INVALID_VALUE;
	*library = &fake_library;
	return CUDA_SUCCESS;
}

EXPORT CUresult cuLibraryGetKernel(CUkernel *kernel, CUlibrary library, const char *name)
{
	struct fake_func *k;

	if (!kernel || library != &fake_library || !name)
		return CUDA_ERROR_INVALID_VALUE;
	k = get_func(name, 1);
	if (!k)
		return CUDA_ERROR_OUT_OF_MEMORY;
	*kernel = k;
	return CUDA_SUCCESS;
}

/* The CUfunction of a CUkernel in the current context: another handle, as in the driver. */
EXPORT CUresult cuKernelGetFunction(CUfunction *func, CUkernel kernel)
{
	if (!func || !kernel || !kernel->is_kernel)
		return CUDA_ERROR_INVALID_VALUE;
	if (!kernel->func) {
		kernel->func = get_func(kernel->name, 0);
		if (!kernel->func)
			return CUDA_ERROR_OUT_OF_MEMORY;
	}
	*func = kernel->func;
	return CUDA_SUCCESS;
}

EXPORT CUresult cuLaunchKernel(CUfunction f, unsigned int gx, unsigned int gy, unsigned int gz,
			       unsigned int bx, unsigned int by, unsigned int bz, unsigned int smem,
			       CUstream stream, void **params, void **extra)
{
	(void)gx, (void)gy, (void)gz, (void)bx, (void)by, (void)bz, (void)smem, (void)stream,
		(void)params, (void)extra;
	if (!f)
		return CUDA_ERROR_INVALID_VALUE;
	f->launches++;
	return CUDA_SUCCESS;
}

EXPORT CUresult cuLaunchKernelEx(const void *config, CUfunction f, void **params, void **extra)
{
	(void)params, (void)extra;
	if (!config || !f)
		return CUDA_ERROR_INVALID_VALUE;
	f->launches++;
	return CUDA_SUCCESS;
}

EXPORT CUresult cuMemAlloc_v2(CUdeviceptr *dptr, size_t bytesize)
{
	if (!dptr || !bytesize)
		return CUDA_ERROR_INVALID_VALUE;
	if (bytesize > FAKE_MEM_LIMIT)
		return CUDA_ERROR_OUT_OF_MEMORY;
	for (int i = 0; i < FAKE_MEM_SLOTS; i++) {
		if (!mem_used[i]) {
			mem_used[i] = 1;
			*dptr = FAKE_MEM_BASE + (uint64_t)i * FAKE_MEM_SLOT;
			return CUDA_SUCCESS;
		}
	}
	return CUDA_ERROR_OUT_OF_MEMORY;
}

EXPORT CUresult cuMemFree_v2(CUdeviceptr dptr)
{
	uint64_t i = (dptr - FAKE_MEM_BASE) / FAKE_MEM_SLOT;

	if (dptr < FAKE_MEM_BASE || i >= FAKE_MEM_SLOTS || !mem_used[i] ||
	    dptr != FAKE_MEM_BASE + i * FAKE_MEM_SLOT)
		return CUDA_ERROR_INVALID_VALUE;
	mem_used[i] = 0;
	return CUDA_SUCCESS;
}

EXPORT CUresult cuStreamSynchronize(CUstream stream)
{
	(void)stream;
	fake_wait();
	return CUDA_SUCCESS;
}

EXPORT CUresult cuCtxSynchronize(void)
{
	fake_wait();
	return CUDA_SUCCESS;
}

EXPORT CUresult cuEventSynchronize(void *event)
{
	(void)event;
	fake_wait();
	return CUDA_SUCCESS;
}
