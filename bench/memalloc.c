// SPDX-License-Identifier: Apache-2.0
/*
 * Allocation-heavy fixed-work workload for bench/memory.sh: THREADS threads each run
 * ROUNDS rounds of
 *   - SMALL small allocations (16..512 bytes, each written, freed in a shuffled order:
 *     allocator churn that never reaches the kernel once the arenas are warm), and
 *   - one BLOCK_KIB KiB buffer from malloc, written page by page and freed: the mmap
 *     threshold is fixed at 128 KiB (M_MMAP_THRESHOLD, as large-tensor allocators do by
 *     returning big buffers to the OS), so every block is a fresh mmap whose every page
 *     is a write fault on anonymous memory, then munmap.
 * Transparent huge pages are off (PR_SET_THP_DISABLE) so every 4 KiB page is one fault:
 * the most faults per byte, the worst case for a page-fault profiler.
 * Built -O2 without frame pointers, like production binaries. Prints one line:
 *   wall_s cpu_s small_allocs faulted_bytes minor_faults parent_cpu_s round_p25_us round_med_us
 * (cpu_s: user+sys of this process, all threads; minor_faults: from getrusage;
 * parent_cpu_s: CPU the parent process (the profiler that launched this, `-- CMD`) used
 * while the workload ran, from /proc/PPID/stat: the profiler's cost without its start-up
 * and its final write-out; round_p25_us, round_med_us: the first quartile and the median
 * of the thread CPU time of one round, over all rounds of all threads: a time that a
 * neighbour on the host slows down only in the rounds it hits, so the quartile keeps the
 * profiler's cost, which every round pays, and sheds most of the neighbours').
 *
 *   memalloc THREADS ROUNDS [SMALL [BLOCK_KIB]]
 */
#define _GNU_SOURCE
#include <malloc.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

static long rounds, nsmall, block_bytes, page_size;
static double *round_cpu_us; /* [thread * rounds + round]: CPU time of each round */

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* utime + stime of process pid (all threads), seconds; -1 when unreadable. */
static double proc_cpu_s(pid_t pid)
{
	char path[64], buf[1024], *p;
	unsigned long long ut, st;
	FILE *f;
	size_t n;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	f = fopen(path, "r");
	if (!f)
		return -1;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = 0;
	p = strrchr(buf, ')'); /* the command name may hold spaces */
	if (!p ||
	    sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &ut, &st) != 2)
		return -1;
	return (double)(ut + st) / (double)sysconf(_SC_CLK_TCK);
}

static inline uint64_t xorshift(uint64_t *s)
{
	uint64_t x = *s;

	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	return *s = x;
}

__attribute__((noinline)) static void small_churn(void **slots, uint64_t *rng)
{
	for (long i = 0; i < nsmall; i++) {
		size_t sz = 16 + (size_t)(xorshift(rng) % 497);
		char *p = malloc(sz);

		if (!p)
			abort();
		p[0] = (char)i;
		p[sz - 1] = (char)sz;
		slots[i] = p;
	}
	/* free in a shuffled order, as a program's objects die */
	for (long i = nsmall - 1; i > 0; i--) {
		long j = (long)(xorshift(rng) % (uint64_t)(i + 1));
		void *t = slots[i];

		slots[i] = slots[j];
		slots[j] = t;
	}
	for (long i = 0; i < nsmall; i++)
		free(slots[i]);
}

__attribute__((noinline)) static void block_churn(void)
{
	volatile char *b = malloc((size_t)block_bytes);

	if (!b)
		abort();
	for (long off = 0; off < block_bytes; off += page_size)
		b[off] = (char)off;
	free((void *)b);
}

static void *worker(void *arg)
{
	uint64_t rng = 0x9e3779b97f4a7c15ull ^ (uintptr_t)arg;
	void **slots = calloc((size_t)nsmall + 1, sizeof(*slots));

	if (!slots)
		abort();
	for (long r = 0; r < rounds; r++) {
		struct timespec t0, t1;

		clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t0);
		small_churn(slots, &rng);
		block_churn();
		clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t1);
		round_cpu_us[((long)(uintptr_t)arg - 1) * rounds + r] =
			(double)(t1.tv_sec - t0.tv_sec) * 1e6 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e3;
	}
	free(slots);
	return NULL;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
	struct rusage ru;
	pthread_t *th;
	long nthreads;
	double t0, wall, pcpu0;

	if (argc < 3) {
		fprintf(stderr, "usage: %s THREADS ROUNDS [SMALL [BLOCK_KIB]]\n", argv[0]);
		return 2;
	}
	nthreads = atol(argv[1]);
	rounds = atol(argv[2]);
	nsmall = argc > 3 ? atol(argv[3]) : 2048;
	block_bytes = (argc > 4 ? atol(argv[4]) : 4096) * 1024;
	page_size = sysconf(_SC_PAGESIZE);
	if (nthreads < 1 || rounds < 1 || nsmall < 1 || block_bytes < 256 * 1024) {
		fprintf(stderr, "memalloc: THREADS, ROUNDS, SMALL >= 1, BLOCK_KIB >= 256\n");
		return 2;
	}
	if (prctl(PR_SET_THP_DISABLE, 1, 0, 0, 0) != 0)
		perror("memalloc: PR_SET_THP_DISABLE");
	mallopt(M_MMAP_THRESHOLD, 128 * 1024);
	th = calloc((size_t)nthreads, sizeof(*th));
	round_cpu_us = calloc((size_t)(nthreads * rounds), sizeof(*round_cpu_us));
	if (!th || !round_cpu_us)
		return 1;
	pcpu0 = proc_cpu_s(getppid());
	t0 = now_s();
	for (long i = 0; i < nthreads; i++)
		if (pthread_create(&th[i], NULL, worker, (void *)(i + 1)) != 0) {
			perror("memalloc: pthread_create");
			return 1;
		}
	for (long i = 0; i < nthreads; i++)
		pthread_join(th[i], NULL);
	wall = now_s() - t0;
	getrusage(RUSAGE_SELF, &ru);
	qsort(round_cpu_us, (size_t)(nthreads * rounds), sizeof(*round_cpu_us), cmp_double);
	printf("%.4f %.4f %ld %ld %ld %.3f %.1f %.1f\n", wall,
	       (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 + (double)ru.ru_stime.tv_sec +
		       ru.ru_stime.tv_usec / 1e6,
	       nthreads * rounds * nsmall, nthreads * rounds * block_bytes, ru.ru_minflt,
	       proc_cpu_s(getppid()) - pcpu0, round_cpu_us[nthreads * rounds / 4],
	       round_cpu_us[nthreads * rounds / 2]);
	free(round_cpu_us);
	free(th);
	return 0;
}
