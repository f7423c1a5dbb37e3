/* SPDX-License-Identifier: Apache-2.0 */
/*
 * When the training-step probes are attached. Each probe hit is a breakpoint trap in the
 * training thread: ~2 us here end to end (the trap, the program, and the thread's own code
 * running colder after it), so a loop of millisecond steps, which opens three scopes a step
 * (six hits), loses 1.5-2% of its speed (bench/steps.sh). Above a rate of scope events per
 * process (--steps-max-scopes), the probes are attached only in random slots, each with
 * probability d = max_rate / rate (util/duty.h; never below STEPS_DUTY_MIN): the hits, and
 * so the cost, follow the cap. Steps are timed in the attached slots: their phases' shares
 * and percentiles stay unbiased (for steps much shorter than a slot, as every step is at
 * such rates), while their count and the steps profile cover the time attached. Below the
 * cap (steps of 4 ms and more at the default: nearly every training job) the probes stay
 * attached and nothing changes. The rate is measured while attached, over a second of it.
 */
#ifndef MLPROF_STEPS_DUTY_H
#define MLPROF_STEPS_DUTY_H

#include <stdbool.h>
#include <stdint.h>

#define STEPS_DUTY_SLOT_NS 500000000ull	 /* a slot: hundreds of steps at such rates */
#define STEPS_DUTY_RATE_NS 1000000000ull /* attached time over which a rate is measured */
#define STEPS_DUTY_MIN	   0.05
/* --steps-max-scopes' default: three scopes a step (six events), steps of ~4 ms */
#define STEPS_MAX_SCOPES_DEFAULT 1500
#define STEPS_DUTY_GAPS		 8 /* times detached remembered */

struct steps_duty_stats {
	double duty;	    /* the fraction of slots attached now (1: always) */
	double rate;	    /* the busiest process's scope events a second, last measured */
	double peak_rate;   /* ... the highest measured */
	uint64_t total_ns;  /* time run since the first tick */
	uint64_t on_ns;	    /* ... with the probes attached */
	uint64_t toggles;   /* attaches and detaches */
	uint64_t cycled_ns; /* time run while the duty was under 1 */
	uint64_t max_rate;  /* the cap (0: none) */
};

/* A time the probes were detached: [t0, t1], t1 0 while it lasts. */
struct steps_duty_gap {
	uint64_t t0, t1;
};

struct steps_duty {
	uint64_t rng;
	bool on;
	uint64_t slot_end;   /* the current slot's end (while the duty is under 1) */
	uint64_t last;	     /* the last tick (0: none yet) */
	uint64_t meas_on_ns; /* attached time since the rate was last measured */
	struct steps_duty_stats st;
	struct steps_duty_gap gaps[STEPS_DUTY_GAPS]; /* the last ones, by ngaps % GAPS */
	uint64_t ngaps;
};

/* Starts attached, with no cap when max_rate is 0. seed: any value. */
void steps_duty__init(struct steps_duty *d, uint64_t max_rate, uint64_t seed);

/*
 * Called at each poll of the consumer, at time now (CLOCK_MONOTONIC), with hits the most
 * scope events one process sent since the last measurement. Returns whether the probes
 * are to be attached from now on; sets *measured when a measurement took those hits (the
 * caller then counts anew from 0).
 */
bool steps_duty__tick(struct steps_duty *d, uint64_t now, uint64_t hits, bool *measured);

/* Milliseconds from now until the current slot ends (-1: no slots, the duty is 1). */
int steps_duty__wait_ms(const struct steps_duty *d, uint64_t now);

/*
 * The times the probes were away, as the caller detached them (gap_begin, at the time it
 * began releasing them) and had them back (gap_end, once events sent from then on are
 * whole again): events and samples of a thread across such a time have lost what was open.
 */
void steps_duty__gap_begin(struct steps_duty *d, uint64_t t);
void steps_duty__gap_end(struct steps_duty *d, uint64_t t);
/*
 * Whether the probes were away at some time in [a, b] (in either order), as far as the last
 * STEPS_DUTY_GAPS times away tell: a time before the oldest of them may precede a forgotten
 * one, and counts as such.
 */
bool steps_duty__away_between(const struct steps_duty *d, uint64_t a, uint64_t b);

#endif
