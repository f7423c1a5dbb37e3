// SPDX-License-Identifier: Apache-2.0
/*
 * TEST DOUBLE of PyTorch's autograd engine on a GPU, for it.record_cuda only: it is NOT
 * PyTorch. On a GPU, loss.backward() enters torch::autograd::Engine::execute and waits
 * there while the engine's worker thread for the device ("pt_autograd_0") runs the graph
 * (only the real engine with a real GPU does that; CPU-only PyTorch runs it on the calling
 * thread). This program exports a function under Engine::execute's mangled name (what
 * mlprof probes in libtorch_cpu) whose caller waits while a thread named pt_autograd_0
 * launches a "kernel" (a cuLaunchKernel of its own, as a static driver would have: what
 * tells mlprof that this process's backward passes run on the GPU) and burns CPU in
 * worker_burn(); between passes the worker waits for the next one.
 *
 * With a third argument "cpu", Engine::execute burns the CPU itself on the calling thread
 * (in caller_burn(), as CPU-only PyTorch runs a backward pass): mlprof's return probe on it
 * is pending meanwhile, the caller's return address on the stack replaced by the uprobe
 * trampoline.
 *
 * Usage: autograd_engine [PASSES [MS [cpu]]] (default 40 passes of 25 ms). Waits 300 ms
 * first (mlprof attaches its probes to this executable as it starts). Prints one JSON line.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static int pending, done, quit, on_caller;
static long pass_ms = 25;
static volatile unsigned long sink;

static double now_s(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* The driver's cuLaunchKernel(f, grid, block, smem, stream, params, extra): runs nothing. */
__attribute__((noinline, used, visibility("default"))) int
cuLaunchKernel(void *f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
	       unsigned bz, unsigned smem, void *stream, void **params, void **extra)
{
	__asm__ volatile("" ::"r"(f), "r"(params), "r"(extra) : "memory");
	return (int)(gx + gy + gz + bx + by + bz + smem) + (stream != NULL);
}

static __attribute__((noinline)) void worker_burn(long ms)
{
	double end = now_s() + (double)ms / 1000.0;
	unsigned long x = 1;

	while (now_s() < end)
		for (int i = 0; i < 10000; i++)
			x = x * 6364136223846793005ul + 1442695040888963407ul;
	sink = x;
}

static __attribute__((noinline)) void caller_burn(long ms)
{
	worker_burn(ms);
	__asm__ volatile("" ::: "memory"); /* (no tail call: this frame stays) */
}

static void *worker_main(void *arg)
{
	(void)arg;
	pthread_setname_np(pthread_self(), "pt_autograd_0");
	pthread_mutex_lock(&mu);
	for (;;) {
		while (!pending && !quit)
			pthread_cond_wait(&cv, &mu);
		if (quit)
			break;
		pending = 0;
		pthread_mutex_unlock(&mu);
		cuLaunchKernel((void *)0x1234, 1, 1, 1, 32, 1, 1, 0, NULL, NULL, NULL);
		worker_burn(pass_ms);
		pthread_mutex_lock(&mu);
		done = 1;
		pthread_cond_broadcast(&cv);
	}
	pthread_mutex_unlock(&mu);
	return NULL;
}

/* torch::autograd::Engine::execute(roots, inputs, keep_graph, create_graph,
 * accumulate_grad, outputs): hands the pass to the worker and waits for it. */
__attribute__((noinline, used)) void
engine_execute(void) __asm__("_ZN5torch8autograd6Engine7executeERKSt6vectorINS0_4EdgeESaIS3_"
			     "EERKS2_IN2at6TensorESaIS9_EEbbbS7_");
void engine_execute(void)
{
	if (on_caller) {
		caller_burn(pass_ms);
		__asm__ volatile("" ::: "memory");
		return;
	}
	pthread_mutex_lock(&mu);
	pending = 1;
	done = 0;
	pthread_cond_broadcast(&cv);
	while (!done)
		pthread_cond_wait(&cv, &mu);
	pthread_mutex_unlock(&mu);
}

static __attribute__((noinline)) void run_backward(void)
{
	engine_execute();
}

int main(int argc, char **argv)
{
	int passes = argc > 1 ? atoi(argv[1]) : 40;
	struct timespec w = {0, 300000000};
	pthread_t th;

	if (argc > 2)
		pass_ms = atol(argv[2]);
	on_caller = argc > 3 && argv[3][0] == 'c';
	nanosleep(&w, NULL);
	if (pthread_create(&th, NULL, worker_main, NULL))
		return 1;
	for (int i = 0; i < passes; i++)
		run_backward();
	pthread_mutex_lock(&mu);
	quit = 1;
	pthread_cond_broadcast(&cv);
	pthread_mutex_unlock(&mu);
	pthread_join(th, NULL);
	printf("{\"passes\": %d, \"pass_ms\": %ld, \"on_caller\": %d}\n", passes, pass_ms,
	       on_caller);
	return 0;
}
