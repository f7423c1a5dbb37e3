// SPDX-License-Identifier: Apache-2.0
/*
 * Allocation storm for bench/heap.sh: what one malloc+free pair costs, timed as the
 * fastest of many short rounds (a neighbour on the host slows some rounds, never speeds
 * one up; a profiler's per-call cost is paid by every round).
 *   heapcost ROUNDS CALLS SIZE
 * prints one JSON line: pairs, ns_per_pair (fastest round), wall_s (all rounds)
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static void *volatile sink;

static double now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

__attribute__((noinline)) static void storm(long calls, size_t size)
{
	for (long i = 0; i < calls; i++) {
		void *p = malloc(size);

		sink = p;
		free(p);
	}
}

int main(int argc, char **argv)
{
	long rounds = argc > 1 ? atol(argv[1]) : 200, calls = argc > 2 ? atol(argv[2]) : 20000;
	size_t size = argc > 3 ? (size_t)atol(argv[3]) : 64;
	double best = 1e30, t0 = now_ns();

	for (long r = 0; r < rounds; r++) {
		double t = now_ns();

		storm(calls, size);
		t = now_ns() - t;
		if (t < best)
			best = t;
	}
	printf("{\"pairs\": %ld, \"ns_per_pair\": %.1f, \"wall_s\": %.3f}\n", rounds * calls,
	       best / (double)calls, (now_ns() - t0) / 1e9);
	return 0;
}
