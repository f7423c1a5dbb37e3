// SPDX-License-Identifier: Apache-2.0
/* Page-fault programs attached in random slots above a fault rate (see fault_duty.h). */
#define LOG_MODULE "memory"

#include "capture/fault_duty.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <bpf/libbpf.h>

#include "util/clock.h"
#include "util/duty.h"
#include "util/log.h"

#define DEFAULT_SLOT_MS	 20
#define DEFAULT_MIN_DUTY 0.25

struct fault_duty {
	struct bpf_program *progs[FAULT_DUTY_MAX_PROGS];
	struct bpf_link *links[FAULT_DUTY_MAX_PROGS];
	int n;
	volatile uint32_t *weight;
	uint32_t weight_one;
	struct fault_duty_config cfg;
	long hz; /* USER_HZ, the unit of /proc/stat */
	uint64_t rng;

	int stat_fd;	 /* /proc/stat (-1: not open) */
	char buf[16384]; /* its text, read by the thread */

	pthread_t thread;
	pthread_mutex_t lock; /* guards stop, stats and the idle fields */
	pthread_cond_t wake;
	bool stop;
	struct fault_duty_stats stats;
	bool idle;		 /* waiting out a long slot, far below the cap */
	uint64_t idle_t, idle_n; /* when it began, the fault count then */
	uint64_t next_tick;	 /* fault_duty__tick's next look */
};

/*
 * Reads the whole of a /proc file kept open (fd) into buf from its start: the file is made
 * anew at each read, and the measurement runs ten times a second while the fault rate is
 * high, so the file is neither reopened nor scanned line by line with stdio. Returns the
 * bytes read (NUL-terminated), 0 when unreadable.
 */
static size_t read_proc(int fd, char *buf, size_t size)
{
	ssize_t n = fd >= 0 ? pread(fd, buf, size - 1, 0) : -1;

	if (n <= 0)
		return 0;
	buf[n] = 0;
	return (size_t)n;
}

/* CPU time the machine spent busy so far (/proc/stat: user, nice, system, irq, softirq), s. */
static double read_busy_s(struct fault_duty *d)
{
	unsigned long long v[7];
	char *p = d->buf;

	if (!read_proc(d->stat_fd, d->buf, sizeof(d->buf)) || strncmp(p, "cpu ", 4))
		return 0;
	p += 4;
	for (int i = 0; i < 7; i++) {
		char *end;

		v[i] = strtoull(p, &end, 10);
		if (end == p)
			return 0;
		p = end;
	}
	/* user, nice, system, (idle, iowait,) irq, softirq */
	return (double)(v[0] + v[1] + v[2] + v[5] + v[6]) / (double)d->hz;
}

/*
 * Attaches (on) or detaches every program; a program whose attach fails stays detached
 * until the next slot tries again. Returns the links created or destroyed.
 */
static uint64_t set_attached(struct fault_duty *d, bool on)
{
	uint64_t toggles = 0;

	for (int i = 0; i < d->n; i++) {
		if (!on) {
			toggles += d->links[i] != NULL;
			bpf_link__destroy(d->links[i]);
			d->links[i] = NULL;
			continue;
		}
		if (d->links[i])
			continue;
		d->links[i] = bpf_program__attach(d->progs[i]);
		if (d->links[i]) {
			toggles++;
			continue;
		}
		pthread_mutex_lock(&d->lock);
		if (!d->stats.attach_errs++)
			pr_warn("attaching the page-fault program %s failed: %s (memory growth is "
				"not seen in such slots)",
				bpf_program__name(d->progs[i]), strerror(errno));
		pthread_mutex_unlock(&d->lock);
	}
	return toggles;
}

/*
 * The fault rate is measured every RATE_FAST_NS while it is near or over the cap (the duty
 * follows it within a few slots), every RATE_SLOW_NS when it is far below (and the thread
 * then sleeps between measurements: no slots while the programs stay attached). A rate
 * needs RATE_MIN_ON_NS of attached time since the last one (else the last one stands).
 */
#define RATE_FAST_NS   100000000ULL
#define RATE_SLOW_NS   500000000ULL
#define RATE_MIN_ON_NS 5000000ULL
/*
 * Far below the cap with the programs attached, the thread waits up to RATE_IDLE_NS:
 * fault_duty__tick, called at each poll of the consumer (which wakes anyway), counts the
 * faults and wakes it sooner when they mount. A thread of its own waking twice a second
 * cost ~1.3 us of CPU per CPU sample of a PyTorch loop at 99 Hz on this VM.
 */
#define RATE_IDLE_NS 5000000000ULL

static bool all_attached(const struct fault_duty *d)
{
	for (int i = 0; i < d->n; i++)
		if (!d->links[i])
			return false;
	return true;
}

static void *duty_thread(void *arg)
{
	struct fault_duty *d = arg;
	uint64_t slot_ns = (uint64_t)d->cfg.slot_ms * 1000000ULL;
	uint64_t t = clock__mono_ns(), busy_t = t, rate_n = d->cfg.count(d->cfg.count_ctx),
		 rate_on = 0, next_rate = t + RATE_FAST_NS;
	double duty = 1.0, rate = 0, busy_s = read_busy_s(d), attach_ns = 0, detach_ns = 0;
	bool woken = false;
	struct timespec ts;

	pthread_setname_np(pthread_self(), "mlprof-faults"); /* top -H, perf */
	for (;;) {
		uint64_t toggles, until, t1, t2;
		bool on, attached, idle;

		t = clock__mono_ns();
		/* (on_ns: written by this thread only) */
		if (t >= next_rate && d->stats.on_ns - rate_on >= RATE_MIN_ON_NS) {
			uint64_t n = d->cfg.count(d->cfg.count_ctx), on = d->stats.on_ns;

			/* the faults the programs saw while attached, over that time */
			rate = n >= rate_n ? (double)(n - rate_n) * 1e9 / (double)(on - rate_on)
					   : 0;
			rate_n = n;
			rate_on = on;
			/*
			 * per busy CPU (at least one): a thread faulting alone on a big machine
			 * pays the programs' cost in its own time; only where that can matter
			 */
			if (rate * 2 > (double)d->cfg.max_rate) {
				double b = read_busy_s(d);
				double cpus = (b - busy_s) * 1e9 / (double)(t - busy_t);

				busy_s = b;
				busy_t = t;
				rate /= cpus >= 1 ? cpus : 1;
			}
			duty = duty__choose(rate, d->cfg.max_rate, d->cfg.min_duty);
		}
		idle = duty >= 1.0 && rate * 4 <= (double)d->cfg.max_rate && !woken;
		if (t >= next_rate)
			next_rate = t + (idle ? RATE_IDLE_NS
					 : woken || duty < 1.0 || rate * 2 > (double)d->cfg.max_rate
						 ? RATE_FAST_NS
						 : RATE_SLOW_NS);
		/* (woken from an idle wait: the rate just measured spans the quiet part too) */
		woken = false;
		/* each slot attached with probability duty, decided before it starts */
		on = duty >= 1.0 || duty__draw(&d->rng) < duty;
		until = duty >= 1.0 || t + slot_ns > next_rate ? next_rate : t + slot_ns;
		/*
		 * Before attaching: the slot's captures stand for 1/p as many, p the chance
		 * that an instant of it is watched: duty, less the part of the slot an attach
		 * takes (~0.1 ms, text patching and RCU), plus the part a detach does.
		 */
		if (on && duty < 1.0) {
			double len = (double)(until - t), eff = (len - attach_ns + detach_ns) / len;

			if (!(eff > 0.5))
				eff = 0.5;
			if (eff > 1)
				eff = 1;
			*d->weight = (uint32_t)((double)d->weight_one / (duty * eff) + 0.5);
		} else if (on) {
			*d->weight = d->weight_one;
		}
		toggles = set_attached(d, on);
		t1 = clock__mono_ns();
		attached = on && all_attached(d);
		if (toggles && on)
			attach_ns = 0.8 * attach_ns + 0.2 * (double)(t1 - t);
		else if (toggles)
			detach_ns = 0.8 * detach_ns + 0.2 * (double)(t1 - t);
		pthread_mutex_lock(&d->lock);
		d->stats.duty = duty;
		d->stats.fault_rate = rate;
		d->stats.toggles += toggles;
		d->idle = idle;
		d->idle_t = t;
		d->idle_n = rate_n;
		ts.tv_sec = (time_t)(until / 1000000000ULL);
		ts.tv_nsec = (long)(until % 1000000000ULL);
		/* (an idle wait ends early when fault_duty__tick clears idle) */
		while (!d->stop && (!idle || d->idle) &&
		       pthread_cond_timedwait(&d->wake, &d->lock, &ts) != ETIMEDOUT)
			;
		/* the slot as it went: an idle one may end early */
		t2 = clock__mono_ns();
		if (t2 < until) {
			until = t2;
			next_rate = t2; /* measure now, and again soon */
			woken = idle;
		}
		d->idle = false;
		d->stats.total_ns += until - t;
		d->stats.on_ns += attached && until > t1 ? until - t1 : 0;
		if (d->stop) {
			pthread_mutex_unlock(&d->lock);
			break;
		}
		pthread_mutex_unlock(&d->lock);
	}
	return NULL;
}

static void close_files(struct fault_duty *d)
{
	if (d->stat_fd >= 0)
		close(d->stat_fd);
}

/* See fault_duty.h. */
struct fault_duty *fault_duty__start(struct bpf_program *const *progs, struct bpf_link **links,
				     int n, volatile uint32_t *weight, uint32_t weight_one,
				     const struct fault_duty_config *cfg)
{
	struct fault_duty *d;
	pthread_condattr_t ca;
	int err;

	if (n < 1 || n > FAULT_DUTY_MAX_PROGS || !weight || !weight_one || !cfg || !cfg->count) {
		errno = EINVAL;
		return NULL;
	}
	d = calloc(1, sizeof(*d));
	if (!d)
		return NULL;
	for (int i = 0; i < n; i++) {
		if (!links[i])
			continue;
		d->progs[d->n] = progs[i];
		d->links[d->n++] = links[i];
	}
	d->weight = weight;
	d->weight_one = weight_one;
	d->cfg = *cfg;
	if (!d->cfg.slot_ms)
		d->cfg.slot_ms = DEFAULT_SLOT_MS;
	if (d->cfg.min_duty <= 0 || d->cfg.min_duty > 1)
		d->cfg.min_duty = DEFAULT_MIN_DUTY;
	d->hz = sysconf(_SC_CLK_TCK);
	if (d->hz < 1)
		d->hz = 100;
	d->stat_fd = open("/proc/stat", O_RDONLY | O_CLOEXEC);
	d->rng = clock__mono_ns() ^ ((uint64_t)getpid() << 32) ^ 0x9e3779b97f4a7c15ULL;
	d->stats.duty = 1.0;
	pthread_mutex_init(&d->lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&d->wake, &ca);
	pthread_condattr_destroy(&ca);
	err = pthread_create(&d->thread, NULL, duty_thread, d);
	if (err) {
		close_files(d);
		pthread_cond_destroy(&d->wake);
		pthread_mutex_destroy(&d->lock);
		free(d);
		errno = err;
		return NULL;
	}
	for (int i = 0; i < n; i++)
		links[i] = NULL; /* ours now */
	return d;
}

/* See fault_duty.h. */
void fault_duty__stop(struct fault_duty *d)
{
	if (!d)
		return;
	pthread_mutex_lock(&d->lock);
	d->stop = true;
	pthread_cond_signal(&d->wake);
	pthread_mutex_unlock(&d->lock);
	pthread_join(d->thread, NULL);
	set_attached(d, false);
	close_files(d);
	pthread_cond_destroy(&d->wake);
	pthread_mutex_destroy(&d->lock);
	free(d);
}

/* See fault_duty.h. */
void fault_duty__tick(struct fault_duty *d)
{
	uint64_t t, n;

	if (!d)
		return;
	t = clock__mono_ns();
	pthread_mutex_lock(&d->lock);
	if (d->idle && t >= d->next_tick && t > d->idle_t) {
		d->next_tick = t + RATE_FAST_NS;
		n = d->cfg.count(d->cfg.count_ctx);
		/* (attached all along while idle: the faults over the time since it began) */
		if (n > d->idle_n && (double)(n - d->idle_n) * 1e9 / (double)(t - d->idle_t) * 4 >
					     (double)d->cfg.max_rate) {
			d->idle = false;
			pthread_cond_signal(&d->wake);
		}
	}
	pthread_mutex_unlock(&d->lock);
}

/* See fault_duty.h. */
void fault_duty__stats(struct fault_duty *d, struct fault_duty_stats *out)
{
	memset(out, 0, sizeof(*out));
	if (!d) {
		out->duty = 1.0;
		return;
	}
	pthread_mutex_lock(&d->lock);
	*out = d->stats;
	pthread_mutex_unlock(&d->lock);
}
