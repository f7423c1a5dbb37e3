// SPDX-License-Identifier: Apache-2.0
/* Fixed-work CPU benchmark: N threads each run the same number of iterations through a
 * small call chain (no frame pointers); prints wall seconds. Used by bench/run.sh. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static volatile uint64_t sink;

__attribute__((noinline)) uint64_t bench_leaf(uint64_t n)
{
	uint64_t h = n + 0x9e3779b97f4a7c15ull;

	for (uint64_t i = 0; i < n; i++) {
		h ^= h << 13;
		h ^= h >> 7;
		h ^= h << 17;
		__asm__ volatile("" : "+r"(h));
	}
	return h;
}

__attribute__((noinline)) uint64_t bench_mid(uint64_t n)
{
	return bench_leaf(n) + 1;
}

__attribute__((noinline)) void *worker(void *arg)
{
	uint64_t rounds = *(uint64_t *)arg, acc = 0;

	for (uint64_t r = 0; r < rounds; r++)
		acc += bench_mid(10000);
	sink += acc;
	return NULL;
}

int main(int argc, char **argv)
{
	int threads = argc > 1 ? atoi(argv[1]) : 2;
	uint64_t rounds = argc > 2 ? strtoull(argv[2], NULL, 10) : 100000;
	pthread_t tid[64];
	struct timespec a, b;

	if (threads < 1 || threads > 64)
		return 2;
	clock_gettime(CLOCK_MONOTONIC, &a);
	for (int i = 0; i < threads; i++)
		pthread_create(&tid[i], NULL, worker, &rounds);
	for (int i = 0; i < threads; i++)
		pthread_join(tid[i], NULL);
	clock_gettime(CLOCK_MONOTONIC, &b);
	printf("%.4f\n", (double)(b.tv_sec - a.tv_sec) + (double)(b.tv_nsec - a.tv_nsec) / 1e9);
	return 0;
}
