// SPDX-License-Identifier: Apache-2.0
/*
 * Unit tests of the training-step probes' duty cycle (runtimes/torch/steps_duty): a process
 * sending scope events at a known rate is simulated, its events counted only while the
 * probes are attached, as the BPF side would send them; ticks come every 10 ms as the
 * consumer's polls would (it.record_steps runs it on a real PyTorch loop).
 */
#include <stdbool.h>
#include <stdint.h>

#include "runtimes/torch/steps_duty.h"
#include "check.h"

#define MS 1000000ull

struct sim {
	struct steps_duty d;
	uint64_t now, hits;
	double carry; /* fractional events not yet sent */
	bool on;
};

static void sim_init(struct sim *s, uint64_t max_rate)
{
	*s = (struct sim){.now = 1000 * MS, .on = true};
	steps_duty__init(&s->d, max_rate, 42);
}

/* Runs secs seconds of a process sending rate events a second. */
static void sim_run(struct sim *s, double rate, double secs)
{
	for (uint64_t t = 0; t < (uint64_t)(secs * 100); t++) {
		bool measured;
		int w;

		s->now += 10 * MS;
		if (s->on) {
			s->carry += rate / 100;
			s->hits += (uint64_t)s->carry;
			s->carry -= (uint64_t)s->carry;
		}
		s->on = steps_duty__tick(&s->d, s->now, s->hits, &measured);
		if (measured)
			s->hits = 0;
		w = steps_duty__wait_ms(&s->d, s->now);
		/* after a tick, a slot runs (its end ahead, renewed at each end) while cycling */
		if (s->d.st.duty < 1.0)
			CHECK(w >= 1 && w <= (int)(STEPS_DUTY_SLOT_NS / MS), "wait %d ms", w);
		else
			CHECK(w == -1, "slots while the duty is 1 (wait %d ms)", w);
	}
}

/* The times away: what a thread's events and samples across one have lost. */
static void test_gaps(void)
{
	struct steps_duty d;

	steps_duty__init(&d, 1500, 1);
	CHECK(!steps_duty__away_between(&d, 0, ~0ull), "no time away yet");
	steps_duty__gap_begin(&d, 100);
	CHECK(steps_duty__away_between(&d, 150, 150), "inside one that lasts");
	CHECK(steps_duty__away_between(&d, 50, 1000000), "across one that lasts");
	CHECK(!steps_duty__away_between(&d, 50, 99), "before it");
	steps_duty__gap_end(&d, 200);
	CHECK(steps_duty__away_between(&d, 200, 200), "its end");
	CHECK(!steps_duty__away_between(&d, 201, 5000), "after it");
	CHECK(steps_duty__away_between(&d, 5000, 150), "across it, either order");
	CHECK(steps_duty__away_between(&d, 50, 100), "up to its start");
	steps_duty__gap_end(&d, 300);
	CHECK(!steps_duty__away_between(&d, 250, 260), "an end without a beginning ignored");
	/* more than the ring holds: [1000k, 1000k + 100] for k = 1..STEPS_DUTY_GAPS + 2 */
	for (uint64_t k = 1; k <= STEPS_DUTY_GAPS + 2; k++) {
		steps_duty__gap_begin(&d, 1000 * k);
		steps_duty__gap_end(&d, 1000 * k + 100);
	}
	CHECK(!steps_duty__away_between(&d, 9200, 9900), "between two remembered");
	CHECK(steps_duty__away_between(&d, 9200, 10050), "into a remembered one");
	CHECK(steps_duty__away_between(&d, 150, 160), "inside a forgotten one: away");
	CHECK(steps_duty__away_between(&d, 2500, 2600),
	      "before the oldest remembered: may precede a forgotten one");
	CHECK(!steps_duty__away_between(&d, 12200, 13000), "after the last");
}

int main(void)
{
	struct sim s;
	struct steps_duty_stats a;
	double frac;

	/* under the cap: always attached, no slots */
	sim_init(&s, 1500);
	sim_run(&s, 1200, 30);
	CHECK(s.d.st.duty == 1.0, "duty %.3f under the cap", s.d.st.duty);
	CHECK_INT(s.d.st.toggles, 0);
	CHECK_INT(s.d.st.cycled_ns, 0);
	CHECK(s.d.st.on_ns == s.d.st.total_ns, "attached %llu of %llu ns",
	      (unsigned long long)s.d.st.on_ns, (unsigned long long)s.d.st.total_ns);
	CHECK(s.d.st.rate > 1150 && s.d.st.rate < 1250, "rate %.0f measured", s.d.st.rate);

	/* four times the cap: a quarter of the slots, random, so the events a second follow
	 * the cap */
	sim_run(&s, 6000, 2);
	a = s.d.st;
	sim_run(&s, 6000, 600);
	CHECK(s.d.st.duty > 0.24 && s.d.st.duty < 0.26, "duty %.3f at 4x the cap", s.d.st.duty);
	frac = (double)(s.d.st.on_ns - a.on_ns) / (double)(s.d.st.total_ns - a.total_ns);
	CHECK(frac > 0.20 && frac < 0.30, "attached %.3f of the time at 4x the cap", frac);
	CHECK(s.d.st.toggles - a.toggles > 100, "%llu toggles in 600 s",
	      (unsigned long long)(s.d.st.toggles - a.toggles));
	/* at most one toggle a slot */
	CHECK(s.d.st.toggles - a.toggles <= 600 * 1000 / (STEPS_DUTY_SLOT_NS / MS), "%llu toggles",
	      (unsigned long long)(s.d.st.toggles - a.toggles));
	CHECK(s.d.st.rate > 5700 && s.d.st.rate < 6300, "rate %.0f measured while cycling",
	      s.d.st.rate);
	CHECK(s.d.st.cycled_ns > 590 * 1000 * MS, "cycled %llu ns",
	      (unsigned long long)s.d.st.cycled_ns);

	/* far over it: the floor */
	sim_run(&s, 1e6, 600);
	CHECK(s.d.st.duty == STEPS_DUTY_MIN, "duty %.3f far over the cap", s.d.st.duty);

	/* the loop slows down: whole again once a second of attached time measured it */
	sim_run(&s, 100, 120);
	CHECK(s.d.st.duty == 1.0, "duty %.3f after the rate fell", s.d.st.duty);
	CHECK(s.on, "attached after the rate fell");
	a = s.d.st;
	sim_run(&s, 100, 10);
	CHECK(s.d.st.toggles == a.toggles && s.d.st.on_ns - a.on_ns == 10 * 1000 * MS,
	      "stays attached");

	CHECK(s.d.st.peak_rate > 900000, "peak rate %.0f", s.d.st.peak_rate);

	test_gaps();

	/* no cap: attached whatever the rate */
	sim_init(&s, 0);
	sim_run(&s, 1e6, 30);
	CHECK(s.d.st.duty == 1.0 && !s.d.st.toggles && s.on, "no cap: always attached");
	return check_done("steps_duty");
}
