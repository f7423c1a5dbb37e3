/* SPDX-License-Identifier: Apache-2.0 */
/* Clock readings in nanoseconds, for every module that times something. */
#ifndef MLPROF_CLOCK_H
#define MLPROF_CLOCK_H

#include <stdint.h>
#include <time.h>

static inline uint64_t clock__ns(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static inline uint64_t clock__mono_ns(void)
{
	return clock__ns(CLOCK_MONOTONIC);
}

#endif
