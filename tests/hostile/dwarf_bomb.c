// SPDX-License-Identifier: Apache-2.0
/*
 * Library for test_hostile.DwarfBomb: built with compressed debug sections; the test swaps
 * its .debug_info for a zlib stream that inflates to 2 GiB (a ~2 MB file), loads it from
 * Python and burns CPU in bomb_burn, so that mlprof wants its source lines.
 */
#include <time.h>

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

__attribute__((noinline)) unsigned long bomb_burn(double seconds)
{
	volatile unsigned long h = 1;
	double end = now() + seconds;

	while (now() < end)
		for (int i = 0; i < 100000; i++)
			h = h * 6364136223846793005ul + 1;
	return h;
}
