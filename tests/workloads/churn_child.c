// SPDX-License-Identifier: Apache-2.0
/*
 * Short-lived child of the churn driver, built twice (churn_a, churn_b) from this file with
 * only the hot function's name changed, so both binaries have the same layout: a stale
 * per-pid cache after pid reuse would name churn_b's samples churn_a_work.
 *   churn_X MICROSECONDS     spins in CHURN_WORK for that long of CPU time, then exits
 */
#include <stdint.h>
#include <stdlib.h>
#include <time.h>

#ifndef CHURN_WORK
#error "build with -DCHURN_WORK=churn_a_work or churn_b_work"
#endif

static volatile uint64_t sink;

static double cpu_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

__attribute__((noinline)) void CHURN_WORK(double us)
{
	double end = cpu_us() + us;
	uint64_t h = sink + 1;

	while (cpu_us() < end)
		for (int i = 0; i < 4096; i++)
			h = h * 6364136223846793005ull + 1442695040888963407ull;
	sink = h;
}

int main(int argc, char **argv)
{
	CHURN_WORK(argc > 1 ? atof(argv[1]) : 1000.0);
	return 0;
}
