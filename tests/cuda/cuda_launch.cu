// SPDX-License-Identifier: Apache-2.0
/*
 * CUDA runtime workload for it.record_cuda, built twice by nvcc (tests/cuda.cmake):
 * cudart shared (libcudart.so.13) and cudart static (the runtime's symbols only in the
 * executable's .symtab). No GPU is needed: every runtime call returns an error without a
 * driver, but mlprof's entry uprobes have already seen the real arguments.
 *
 * Usage: cuda_launch ITERATIONS [WAIT_MS]
 *   Waits WAIT_MS (default 300: mlprof attaches its probes when it sees the runtime
 *   mapped), then runs ITERATIONS steps of 6 kern_alpha, 2 kern_beta and 1
 *   mlp::kern_gamma<double> launches from fixed noinline call chains with a 2 ms sleep per
 *   step, then known copies and synchronize calls. Prints one JSON line with what it did.
 *
 * The launch helpers do something after each launch so that no call in the chains is a
 * tail call (the chains the test expects are then all on the stack).
 */
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <unistd.h>

#include <cuda_runtime.h>

#define NOINLINE __attribute__((noinline))

static volatile unsigned long g_done; /* work after each call: no tail calls */

__global__ void kern_alpha(float *a, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;

	if (i < n)
		a[i] += 1.0f;
}

__global__ void kern_beta(float *a, float s, int n)
{
	int i = threadIdx.x;

	if (i < n)
		a[i] *= s;
}

namespace mlp {
template <typename T> __global__ void kern_gamma(T *a, int n)
{
	int i = threadIdx.x;

	if (i < n)
		a[i] = a[i] * 2;
}
template __global__ void kern_gamma<double>(double *, int);
} // namespace mlp

extern "C" {
NOINLINE void launch_alpha(float *d, int n)
{
	kern_alpha<<<4, 128>>>(d, n);
	g_done++;
}

NOINLINE void launch_beta(float *d, int n)
{
	kern_beta<<<1, 64>>>(d, 0.5f, n);
	g_done++;
}

NOINLINE void launch_gamma(double *d, int n)
{
	mlp::kern_gamma<double><<<1, 32>>>(d, n);
	g_done++;
}

NOINLINE void phase_alpha(float *d, int n)
{
	for (int i = 0; i < 6; i++)
		launch_alpha(d, n);
	g_done++;
}

NOINLINE void phase_beta(float *d, int n)
{
	for (int i = 0; i < 2; i++)
		launch_beta(d, n);
	g_done++;
}

NOINLINE void phase_gamma(double *d, int n)
{
	launch_gamma(d, n);
	g_done++;
}

NOINLINE void train_step(float *d, double *dd, int n)
{
	phase_alpha(d, n);
	phase_beta(d, n);
	phase_gamma(dd, n);
	g_done++;
}

NOINLINE void run_steps(float *d, double *dd, int iters)
{
	struct timespec ts = {0, 2 * 1000 * 1000};

	for (int i = 0; i < iters; i++) {
		train_step(d, dd, 1024);
		nanosleep(&ts, NULL);
	}
	g_done++;
}

/* Copies of known sizes, one per direction (they fail without a driver). */
NOINLINE int copy_inputs(void *dev, const void *host, size_t n)
{
	int e = cudaMemcpy(dev, host, n, cudaMemcpyHostToDevice);

	g_done++;
	return e;
}

NOINLINE int copy_outputs(void *host, const void *dev, size_t n)
{
	int e = cudaMemcpy(host, dev, n, cudaMemcpyDeviceToHost);

	g_done++;
	return e;
}

NOINLINE int copy_on_device(void *dst, const void *src, size_t n)
{
	int e = cudaMemcpyAsync(dst, src, n, cudaMemcpyDeviceToDevice, 0);

	g_done++;
	return e;
}

NOINLINE int copy_default(void *dst, const void *src, size_t n)
{
	int e = cudaMemcpyAsync(dst, src, n, cudaMemcpyDefault, 0);

	g_done++;
	return e;
}

NOINLINE int finish(void)
{
	int e = cudaStreamSynchronize(0);

	e |= cudaDeviceSynchronize();
	g_done++;
	return e;
}
}

/* Sizes the test asserts on: keep in sync with tests/integration/test_record_cuda.py. */
#define H2D_BYTES   262144
#define H2D_CALLS   3
#define D2H_BYTES   4096
#define D2D_BYTES   65536
#define DFLT_BYTES  100
#define MALLOC_SIZE (1 << 20)

int main(int argc, char **argv)
{
	int iters = argc > 1 ? atoi(argv[1]) : 500;
	int wait_ms = argc > 2 ? atoi(argv[2]) : 300;
	struct timespec w = {wait_ms / 1000, (long)(wait_ms % 1000) * 1000000L};
	static char host[H2D_BYTES];
	float *d = nullptr;
	double *dd = nullptr;
	int e_malloc, e_h2d = 0, e_d2h, e_d2d, e_dflt, e_sync;

	nanosleep(&w, NULL);
	memset(host, 1, sizeof(host));
	e_malloc = cudaMalloc(&d, MALLOC_SIZE);
	dd = (double *)d;
	run_steps(d, dd, iters);
	for (int i = 0; i < H2D_CALLS; i++)
		e_h2d |= copy_inputs(d, host, H2D_BYTES);
	e_d2h = copy_outputs(host, d, D2H_BYTES);
	e_d2d = copy_on_device(d, d, D2D_BYTES);
	e_dflt = copy_default(host, d, DFLT_BYTES);
	e_sync = finish();
	printf("{\"pid\": %d, \"alpha\": %d, \"beta\": %d, \"gamma\": %d, \"h2d_calls\": %d, "
	       "\"h2d_bytes\": %d, \"d2h_bytes\": %d, \"d2d_bytes\": %d, \"default_bytes\": %d, "
	       "\"sync_calls\": 2, \"malloc_err\": %d, \"copy_err\": [%d, %d, %d, %d], "
	       "\"sync_err\": %d}\n",
	       (int)getpid(), 6 * iters, 2 * iters, iters, H2D_CALLS, H2D_BYTES, D2H_BYTES,
	       D2D_BYTES, DFLT_BYTES, e_malloc, e_h2d, e_d2h, e_d2d, e_dflt, e_sync);
	return 0;
}
