// SPDX-License-Identifier: Apache-2.0
/* The training-step probes' slots above a scope rate (see steps_duty.h). */
#include "runtimes/torch/steps_duty.h"

#include "util/duty.h"

/* See steps_duty.h. */
void steps_duty__init(struct steps_duty *d, uint64_t max_rate, uint64_t seed)
{
	*d = (struct steps_duty){.on = true};
	d->rng = seed ^ 0x9e3779b97f4a7c15ULL;
	if (!d->rng)
		d->rng = 1;
	d->st.duty = 1.0;
	d->st.max_rate = max_rate;
}

/* See steps_duty.h. */
bool steps_duty__tick(struct steps_duty *d, uint64_t now, uint64_t hits, bool *measured)
{
	uint64_t dt = d->last && now > d->last ? now - d->last : 0;
	bool on;

	*measured = false;
	d->last = now;
	d->st.total_ns += dt;
	if (d->st.duty < 1.0)
		d->st.cycled_ns += dt;
	if (d->on) {
		d->st.on_ns += dt;
		d->meas_on_ns += dt;
	}
	if (d->meas_on_ns >= STEPS_DUTY_RATE_NS) {
		d->st.rate = (double)hits * 1e9 / (double)d->meas_on_ns;
		d->st.peak_rate = d->st.rate > d->st.peak_rate ? d->st.rate : d->st.peak_rate;
		d->st.duty = duty__choose(d->st.rate, d->st.max_rate, STEPS_DUTY_MIN);
		d->meas_on_ns = 0;
		*measured = true;
	}
	if (d->st.duty >= 1.0) {
		on = true;
		d->slot_end = 0;
	} else if (now >= d->slot_end) {
		/* a new slot, attached with probability duty, whatever the last one was */
		on = duty__draw(&d->rng) < d->st.duty;
		d->slot_end = now + STEPS_DUTY_SLOT_NS;
	} else {
		on = d->on;
	}
	d->st.toggles += on != d->on;
	d->on = on;
	return on;
}

/* See steps_duty.h. */
int steps_duty__wait_ms(const struct steps_duty *d, uint64_t now)
{
	if (d->st.duty >= 1.0 || !d->slot_end)
		return -1;
	return d->slot_end > now ? (int)((d->slot_end - now + 999999) / 1000000) : 0;
}

/* See steps_duty.h. */
void steps_duty__gap_begin(struct steps_duty *d, uint64_t t)
{
	d->gaps[d->ngaps++ % STEPS_DUTY_GAPS] = (struct steps_duty_gap){.t0 = t};
}

/* See steps_duty.h. */
void steps_duty__gap_end(struct steps_duty *d, uint64_t t)
{
	if (d->ngaps && !d->gaps[(d->ngaps - 1) % STEPS_DUTY_GAPS].t1)
		d->gaps[(d->ngaps - 1) % STEPS_DUTY_GAPS].t1 = t;
}

/* See steps_duty.h. */
bool steps_duty__away_between(const struct steps_duty *d, uint64_t a, uint64_t b)
{
	uint64_t n = d->ngaps < STEPS_DUTY_GAPS ? d->ngaps : STEPS_DUTY_GAPS;

	if (a > b) {
		uint64_t t = a;

		a = b;
		b = t;
	}
	for (uint64_t i = 0; i < n; i++) {
		const struct steps_duty_gap *g = &d->gaps[(d->ngaps - 1 - i) % STEPS_DUTY_GAPS];

		if (g->t0 <= b && (!g->t1 || g->t1 >= a))
			return true;
	}
	return d->ngaps > STEPS_DUTY_GAPS && a < d->gaps[d->ngaps % STEPS_DUTY_GAPS].t0;
}
