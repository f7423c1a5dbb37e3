// SPDX-License-Identifier: Apache-2.0
/* CPU-bound workload with known function names for the agent integration test. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static volatile uint64_t sink;

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

__attribute__((noinline)) void agent_wl_hot_alpha(uint64_t n)
{
	uint64_t x = sink;

	for (uint64_t i = 0; i < n; i++)
		x = x * 6364136223846793005ull + 1442695040888963407ull;
	sink = x;
}

__attribute__((noinline)) void agent_wl_hot_beta(uint64_t n)
{
	uint64_t x = sink;

	for (uint64_t i = 0; i < n; i++)
		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
	sink = x;
}

__attribute__((noinline)) void agent_wl_outer(uint64_t n)
{
	agent_wl_hot_alpha(n);
	agent_wl_hot_beta(n / 2);
}

int main(int argc, char **argv)
{
	double seconds = argc > 1 ? atof(argv[1]) : 10.0;
	double end = now_s() + seconds;

	printf("agent_workload running %.1f s\n", seconds);
	fflush(stdout);
	while (now_s() < end)
		agent_wl_outer(2000000);
	return (int)(sink & 0);
}
