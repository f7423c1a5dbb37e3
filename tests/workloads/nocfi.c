// SPDX-License-Identifier: Apache-2.0
/*
 * For it.record_go: C code built without unwind tables but with frame pointers
 * (-fno-asynchronous-unwind-tables -fno-omit-frame-pointer), so that no CFI covers
 * main -> nocfi_outer -> nocfi_mid -> nocfi_leaf while libc's start code below main has it.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static volatile uint64_t sink;

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/*
 * With a stack slot, so that it has a frame: gcc gives a leaf that uses no stack no frame
 * even with -fno-omit-frame-pointer, and a frame-pointer walk then misses its caller (as
 * perf's does); Go's frameless leaves are placed by their stack deltas instead.
 */
__attribute__((noinline)) uint64_t nocfi_leaf(uint64_t x, long n)
{
	volatile uint64_t acc = 0;

	for (long i = 0; i < n; i++) {
		x = x * 6364136223846793005ull + 1442695040888963407ull;
		x ^= x >> 29;
		acc += x;
	}
	return x + acc;
}

__attribute__((noinline)) uint64_t nocfi_mid(double secs)
{
	double end = now() + secs;
	uint64_t x = 1;

	while (now() < end)
		x = nocfi_leaf(x, 2000000);
	return x;
}

__attribute__((noinline)) uint64_t nocfi_outer(double secs)
{
	return nocfi_mid(secs) + 1;
}

int main(int argc, char **argv)
{
	double secs = argc > 1 ? atof(argv[1]) : 2.0;

	if (secs <= 0) {
		fprintf(stderr, "usage: %s SECONDS\n", argv[0]);
		return 2;
	}
	sink = nocfi_outer(secs);
	printf("{\"pid\": %d}\n", (int)getpid());
	return 0;
}
