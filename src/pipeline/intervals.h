/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Samples whose value comes with a later record (MLPROF_SF_HAS_END: off-CPU intervals,
 * CUDA synchronize calls and allocations, sampled heap allocations): kept, bounded, until
 * their MLPROF_EV_SAMPLE_END, then named and emitted (name_stage).
 */
#ifndef MLPROF_INTERVALS_H
#define MLPROF_INTERVALS_H

#include <stdint.h>

struct mlprof_sample_end;
struct pipeline;
struct unwound;

/* Samples waiting for their end (pl->pend): at most this many and bytes (the oldest go). */
#define PENDING_MAX	  8192
#define PENDING_MAX_BYTES (16u << 20)

/*
 * Keeps u (copied) until its interval ends: a thread's older open interval of the same
 * kind lost its end and goes (offcpu_unmatched); the oldest go when the bounds are reached
 * (offcpu_dropped).
 */
void intervals__add(struct pipeline *pl, const struct unwound *u);
/*
 * An interval ended: its kept stack gets its value (blocked time, bytes, ...) and is
 * emitted (a device or heap allocation also enters the in-use view). An end without its
 * sample is counted. 0 or the sink's error.
 */
int intervals__end(struct pipeline *pl, const struct mlprof_sample_end *oe);
/* Forgets the intervals of an exited process (they never end). */
void intervals__drop_pid(struct pipeline *pl, uint32_t pid);

#endif
