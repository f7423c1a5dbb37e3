/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Duty cycles: probes that cost their host more than a cap attached only in random time
 * slots, each with a probability d (the memory fault programs, capture/fault_duty; the
 * training-step probes, runtimes/torch/steps_duty). The policy and the draw, shared.
 */
#ifndef MLPROF_DUTY_H
#define MLPROF_DUTY_H

#include <stdint.h>

/*
 * The fraction of slots to attach at rate (events a second, as measured while attached):
 * 1 up to max_rate (0: no cap), then max_rate / rate, never below min_duty.
 */
static inline double duty__choose(double rate, uint64_t max_rate, double min_duty)
{
	double d;

	if (!max_rate || rate <= (double)max_rate)
		return 1.0;
	d = (double)max_rate / rate;
	return d < min_duty ? min_duty : d;
}

/* A uniform draw in [0, 1) from the state *s (xorshift64*; seed it non-zero). */
static inline double duty__draw(uint64_t *s)
{
	uint64_t x = *s;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	*s = x;
	return (double)((x * 0x2545f4914f6cdd1dULL) >> 11) / (double)(1ULL << 53);
}

#endif
