// SPDX-License-Identifier: Apache-2.0
/*
 * CUDA 12 runtime workload for it.record_cuda, in C: there is no CUDA 12 nvcc on PyPI,
 * so this program does what nvcc's generated code does and links the real
 * libcudart.so.12 (nvidia-cuda-runtime-cu12 wheel). With CUDA <= 12 a kernel launch
 * passes the kernel's host function (whose symbol is the kernel's mangled name) to
 * cudaLaunchKernel from a stub named __device_stub__<mangled>; here plain host functions
 * carry those names (asm labels). No GPU is needed: the calls return errors without a
 * driver, after mlprof's entry uprobes fired.
 *
 * Usage: cu12_launch ITERATIONS [WAIT_MS]
 *   per iteration: 4 cu12_alpha (cudaLaunchKernel), 2 ops::cu12_beta (cudaLaunchKernelExC),
 *   1 cu12_gamma<float> (cudaLaunchKernel_ptsz), from fixed noinline chains; 1 ms sleep.
 *   Prints one JSON line with the counts.
 */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#define NOINLINE __attribute__((noinline))

typedef struct {
	unsigned int x, y, z;
} dim3;

/* cudaLaunchConfig_t (CUDA 12): grid +0, block +12, dynamicSmemBytes +24, stream +32. */
typedef struct {
	dim3 grid, block;
	size_t smem;
	void *stream;
	void *attrs;
	unsigned int nattrs;
} launch_config;

int cudaLaunchKernel(const void *func, dim3 grid, dim3 block, void **args, size_t smem,
		     void *stream);
int cudaLaunchKernel_ptsz(const void *func, dim3 grid, dim3 block, void **args, size_t smem,
			  void *stream);
int cudaLaunchKernelExC(const launch_config *cfg, const void *func, void **args);

static volatile unsigned long g_done; /* work after each call: no tail calls */
static int g_err;

/* Host functions of the "kernels": their symbols are the kernels' mangled names. */
void cu12_alpha(float *a, int n) __asm__("_Z10cu12_alphaPfi");
void cu12_beta(const float *x, float *y, unsigned long n) __asm__("_ZN3ops9cu12_betaEPKfPfm");
void cu12_gamma(float *a, int n) __asm__("_Z10cu12_gammaIfEvPT_i");

/* The stubs, as nvcc writes them: pack the arguments, launch the host function. */
NOINLINE void __device_stub__Z10cu12_alphaPfi(float *a, int n)
{
	void *args[] = {&a, &n};
	dim3 g = {4, 1, 1}, b = {128, 1, 1};

	g_err |= cudaLaunchKernel((const void *)cu12_alpha, g, b, args, 0, NULL);
	g_done++;
}

NOINLINE void __device_stub__ZN3ops9cu12_betaEPKfPfm(const float *x, float *y, unsigned long n)
{
	void *args[] = {&x, &y, &n};
	launch_config cfg = {{2, 1, 1}, {256, 1, 1}, 0, NULL, NULL, 0};

	g_err |= cudaLaunchKernelExC(&cfg, (const void *)cu12_beta, args);
	g_done++;
}

NOINLINE void __device_stub__Z10cu12_gammaIfEvPT_i(float *a, int n)
{
	void *args[] = {&a, &n};
	dim3 g = {1, 1, 1}, b = {32, 1, 1};

	g_err |= cudaLaunchKernel_ptsz((const void *)cu12_gamma, g, b, args, 0, NULL);
	g_done++;
}

NOINLINE void cu12_alpha(float *a, int n)
{
	__device_stub__Z10cu12_alphaPfi(a, n);
	g_done++;
}

NOINLINE void cu12_beta(const float *x, float *y, unsigned long n)
{
	__device_stub__ZN3ops9cu12_betaEPKfPfm(x, y, n);
	g_done++;
}

NOINLINE void cu12_gamma(float *a, int n)
{
	__device_stub__Z10cu12_gammaIfEvPT_i(a, n);
	g_done++;
}

/* The application's call chains. */
NOINLINE void forward_layer(float *a, int n)
{
	for (int i = 0; i < 4; i++)
		cu12_alpha(a, n);
	g_done++;
}

NOINLINE void backward_layer(float *a, int n)
{
	for (int i = 0; i < 2; i++)
		cu12_beta(a, a, (unsigned long)n);
	g_done++;
}

NOINLINE void optimizer_step(float *a, int n)
{
	cu12_gamma(a, n);
	g_done++;
}

NOINLINE void train_iteration(float *a, int n)
{
	forward_layer(a, n);
	backward_layer(a, n);
	optimizer_step(a, n);
	g_done++;
}

int main(int argc, char **argv)
{
	int iters = argc > 1 ? atoi(argv[1]) : 500;
	int wait_ms = argc > 2 ? atoi(argv[2]) : 300;
	struct timespec w = {wait_ms / 1000, (long)(wait_ms % 1000) * 1000000L};
	struct timespec ts = {0, 1000 * 1000};
	static float buf[1024];

	nanosleep(&w, NULL);
	for (int i = 0; i < iters; i++) {
		train_iteration(buf, 1024);
		nanosleep(&ts, NULL);
	}
	printf("{\"pid\": %d, \"alpha\": %d, \"beta\": %d, \"gamma\": %d, \"err\": %d}\n",
	       (int)getpid(), 4 * iters, 2 * iters, iters, g_err);
	return 0;
}
