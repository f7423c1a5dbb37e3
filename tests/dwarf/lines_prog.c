// SPDX-License-Identifier: Apache-2.0
/* Workload for the source-line tests, built with -g: a leaf whose lines the tests know from the
 * marker comments (the tests read this file), called through mid_lines from main.
 * Usage: lines_prog SECONDS */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* MARK leaf_lines begin */
__attribute__((noinline)) unsigned long leaf_lines(unsigned long n)
{
	volatile unsigned long x = n;

	for (unsigned long i = 0; i < n; i++) {
		x = x * 6364136223846793005ul + i; /* MARK leaf_lines hot */
		x ^= x >> 17;
	}
	return x;
}
/* MARK leaf_lines end */

/* MARK mid_lines begin */
__attribute__((noinline)) unsigned long mid_lines(unsigned long n)
{
	unsigned long r = leaf_lines(n); /* MARK mid_lines call */

	return r + 1;
}
/* MARK mid_lines end */

int main(int argc, char **argv)
{
	double secs = argc > 1 ? atof(argv[1]) : 3.0, end = now() + secs;
	unsigned long acc = 0;

	while (now() < end)
		acc += mid_lines(100000);
	printf("{\"acc\": %lu}\n", acc);
	return 0;
}
