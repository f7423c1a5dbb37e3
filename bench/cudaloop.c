// SPDX-License-Identifier: Apache-2.0
/*
 * Launch-heavy loop for bench/cuda.sh: calls cudaLaunchKernel of a real cudart (linked
 * against the PyPI wheel's libcudart.so.12) ITERS times from a fixed call chain, with
 * optional fixed CPU work between calls. Without a GPU driver every call returns an error,
 * but only after the entry uprobe has fired: the probe cost is the one a GPU host pays.
 *
 * Usage: cudaloop [-s] [-w SPIN] ITERS
 *   -w  spin SPIN loop iterations before each launch (fixed CPU work: a lower launch rate)
 *   -s  wait for SIGUSR1 before the timed loop (a profiler attaches with -p PID first; the
 *       first call, cudart's lazy initialisation, is made before waiting)
 * Prints one JSON line: calls, wall and CPU seconds (user + sys) of the loop, calls/s.
 *
 * Build: cc -O2 -o cudaloop bench/cudaloop.c -L DIR -l:libcudart.so.12 -Wl,-rpath,DIR
 */
#define _GNU_SOURCE
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

typedef struct {
	unsigned int x, y, z;
} dim3;

int cudaLaunchKernel(const void *func, dim3 grid, dim3 block, void **args, size_t smem,
		     void *stream);

static volatile sig_atomic_t go;
static volatile unsigned long sink;
static long spin_iters;

static void on_usr1(int sig)
{
	(void)sig;
	go = 1;
}

/* stands for a kernel's host stub (nvcc <= 12 names the launch after it) */
__attribute__((noinline)) void bench_kernel(float *x)
{
	sink += (unsigned long)x;
}

static double now(clockid_t c)
{
	struct timespec ts;

	clock_gettime(c, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

__attribute__((noinline)) static int launch_one(void)
{
	dim3 g = {1, 1, 1}, b = {32, 1, 1};
	float *p = NULL;
	void *args[] = {&p};
	long i;

	for (i = 0; i < spin_iters; i++)
		sink += i;
	return cudaLaunchKernel((const void *)bench_kernel, g, b, args, 0, NULL);
}

__attribute__((noinline)) static void launch_loop(long iters)
{
	long i;

	for (i = 0; i < iters; i++)
		launch_one();
}

int main(int argc, char **argv)
{
	double w0, c0, w1, c1;
	int opt, wait_sig = 0;
	long iters;

	while ((opt = getopt(argc, argv, "sw:")) != -1) {
		if (opt == 's')
			wait_sig = 1;
		else if (opt == 'w')
			spin_iters = atol(optarg);
		else
			goto usage;
	}
	if (optind != argc - 1 || (iters = atol(argv[optind])) <= 0)
		goto usage;
	launch_one(); /* cudart's lazy init (fails without a driver), outside the timing */
	if (wait_sig) {
		sigset_t none;

		signal(SIGUSR1, on_usr1);
		fprintf(stderr, "ready\n");
		sigemptyset(&none);
		while (!go)
			sigsuspend(&none);
	}
	w0 = now(CLOCK_MONOTONIC);
	c0 = now(CLOCK_PROCESS_CPUTIME_ID);
	launch_loop(iters);
	w1 = now(CLOCK_MONOTONIC);
	c1 = now(CLOCK_PROCESS_CPUTIME_ID);
	printf("{\"calls\": %ld, \"wall_s\": %.6f, \"cpu_s\": %.6f, \"calls_per_s\": %.1f}\n",
	       iters, w1 - w0, c1 - c0, iters / (w1 - w0));
	return 0;
usage:
	fprintf(stderr, "usage: cudaloop [-s] [-w SPIN] ITERS\n");
	return 2;
}
