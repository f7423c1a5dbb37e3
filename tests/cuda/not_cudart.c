// SPDX-License-Identifier: Apache-2.0
/*
 * Hostile input for it.record_cuda: a library built under the file name libcudart.so.13
 * that is NOT a CUDA runtime. It exports no CUDA entry point; one exported function's name
 * only begins with one (cudaLaunchKernelHelper), so the library passes a cheap "does the
 * string table mention CUDA" check and must still get no probes. Built a second time with
 * -DNOT_CUDART_DATA: then it also exports a data object (not a function) named cudaMalloc,
 * which must not be probed either.
 */
#define EXPORT __attribute__((visibility("default"), noinline))

static volatile unsigned long sink;

#ifdef NOT_CUDART_DATA
__attribute__((visibility("default"))) unsigned long cudaMalloc[64] = {1, 2, 3};
#endif

EXPORT void cudaLaunchKernelHelper(void)
{
	sink++;
}

/* The work dlopen_call runs: a little CPU time per call. */
EXPORT void not_cuda_work(void)
{
	for (int i = 0; i < 20000; i++)
		sink += (unsigned long)i;
	cudaLaunchKernelHelper();
}
