// SPDX-License-Identifier: Apache-2.0
/*
 * Unit tests of the page-fault duty cycle: its policy, and its thread run over this
 * process's own fault count (getrusage, in place of the programs' counter) and the real
 * /proc/stat with no program to attach (the integration test it.record_memory runs it with
 * the real BPF programs and their counter).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <time.h>

#include "capture/fault_duty.h"
#include "util/duty.h"
#include "check.h"

static void touch_fresh_memory(size_t len)
{
	char *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	CHECK(p != MAP_FAILED, "mmap: %s", strerror(errno));
	if (p == MAP_FAILED)
		return;
	for (size_t off = 0; off < len; off += 4096)
		p[off] = 1;
	munmap(p, len);
}

/* The faults of this process so far: what the BPF programs' counter would see of it. */
static uint64_t own_faults(void *ctx)
{
	struct rusage ru;

	(void)ctx;
	return getrusage(RUSAGE_SELF, &ru) ? 0 : (uint64_t)ru.ru_minflt + (uint64_t)ru.ru_majflt;
}

int main(void)
{
	struct fault_duty_config cfg = {.max_rate = 1, .slot_ms = 5, .count = own_faults};
	struct bpf_program *progs[1] = {NULL};
	struct bpf_link *links[1] = {NULL};
	volatile uint32_t weight = 1024;
	struct fault_duty_stats st;
	struct fault_duty *d;

	/* the policy: whole up to the cap, then cap / rate, never below the floor */
	CHECK(duty__choose(50000, 100000, 0.25) == 1.0, "under the cap");
	CHECK(duty__choose(100000, 100000, 0.25) == 1.0, "at the cap");
	CHECK(duty__choose(200000, 100000, 0.25) == 0.5, "twice the cap");
	CHECK(duty__choose(1e7, 100000, 0.25) == 0.25, "the floor");
	CHECK(duty__choose(1e9, 0, 0.25) == 1.0, "no cap");

	CHECK(fault_duty__start(progs, links, 0, &weight, 1024, &cfg) == NULL && errno == EINVAL,
	      "no programs accepted");
	CHECK(fault_duty__start(progs, links, 1, NULL, 1024, &cfg) == NULL && errno == EINVAL,
	      "no weight accepted");
	cfg.count = NULL;
	CHECK(fault_duty__start(progs, links, 1, &weight, 1024, &cfg) == NULL && errno == EINVAL,
	      "no fault counter accepted");
	cfg.count = own_faults;

	/*
	 * A cap of 1 fault per second: any machine faults faster (this test writes fresh
	 * memory meanwhile), so after the first rate measurement (0.1 s) the duty is the
	 * floor, 1/4, and a slot that is on sets the weight to 4.
	 */
	fault_duty__stats(NULL, &st);
	CHECK(st.duty == 1.0, "no duty cycle: always attached");
	d = fault_duty__start(progs, links, 1, &weight, 1024, &cfg);
	CHECK(d != NULL, "fault_duty__start: %s", strerror(errno));
	if (!d)
		return check_done("fault_duty");
	for (int i = 0; i < 60; i++) {
		struct timespec ts = {0, 10 * 1000 * 1000};

		touch_fresh_memory(1 << 20);
		nanosleep(&ts, NULL);
	}
	fault_duty__stats(d, &st);
	fault_duty__stop(d);
	CHECK(st.duty == 0.25, "duty %g, fault rate %g", st.duty, st.fault_rate);
	CHECK(st.fault_rate > 1, "fault rate %g", st.fault_rate);
	CHECK(st.total_ns >= 500000000ULL, "ran %llu ns", (unsigned long long)st.total_ns);
	/* ~0.1 s whole, then ~100 slots at 1/4: about 30% of the time */
	CHECK(st.on_ns > st.total_ns / 20 && st.on_ns < st.total_ns * 3 / 4,
	      "attached %llu of %llu ns", (unsigned long long)st.on_ns,
	      (unsigned long long)st.total_ns);
	CHECK(weight == 4096, "weight %u", (unsigned)weight);
	CHECK_INT(st.toggles, 0); /* nothing to attach */

	/*
	 * Far below the cap (quiet: a few faults a second against 20000) the thread sleeps
	 * up to 5 s; then the faults mount and fault_duty__tick, called as a consumer's poll
	 * would, wakes it: the duty is down to the floor within a few tenths of a second.
	 */
	cfg.max_rate = 20000;
	weight = 1024;
	d = fault_duty__start(progs, links, 1, &weight, 1024, &cfg);
	CHECK(d != NULL, "fault_duty__start: %s", strerror(errno));
	if (!d)
		return check_done("fault_duty");
	nanosleep(&(struct timespec){0, 300 * 1000 * 1000}, NULL);
	fault_duty__stats(d, &st);
	CHECK(st.duty == 1.0 && st.fault_rate < 5000, "quiet: duty %g, rate %g", st.duty,
	      st.fault_rate);
	for (int i = 0; i < 40; i++) {
		touch_fresh_memory(4 << 20);
		fault_duty__tick(d);
		nanosleep(&(struct timespec){0, 10 * 1000 * 1000}, NULL);
	}
	fault_duty__stats(d, &st);
	fault_duty__stop(d);
	CHECK(st.duty == 0.25, "woken by the tick: duty %g, fault rate %g", st.duty, st.fault_rate);
	return check_done("fault_duty");
}
