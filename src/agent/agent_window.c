// SPDX-License-Identifier: Apache-2.0
/* Agent windows: samples into one profile per series (label set, event kind) per window. */
#define LOG_MODULE "agent"
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/agent_state.h"
#include "agent/agent_window.h"
#include "export/exporter.h"
#include "pipeline/cuda_calibrate.h"
#include "pipeline/event_kind.h"
#include "runtimes/torch/steps.h"
#include "profile/output.h"
#include "profile/profile.h"
#include "util/hash.h"
#include "util/log.h"
#include "util/quantile.h"

/* Memory bound of one series profile (all series of a window: AGENT_WINDOW_MAX_BYTES). */
#define SERIES_MAX_BYTES (8u << 20)
/* Realtime-monotonic offset change that counts as a wall clock step. */
#define CLOCK_STEP_NS 100000000ll

const char *const agent_drop_names[DROP__COUNT] = {"filtered", "late", "memory", "unsupported_kind",
						   "error"};

/* One label set (service) within one window. */
struct series {
	struct series *next; /* hash chain */
	uint64_t hash;
	char *key;
	char *strings; /* owns label names/values */
	struct label_pair labels[EXPORT_MAX_LABELS];
	int n_labels;
	struct profile *prof;
	const struct event_kind *kind;
	size_t bytes;
};

static int64_t window_wall_start(const struct agent *a, uint64_t idx)
{
	return (int64_t)(idx * a->interval_ns) + a->mono_to_real;
}

static void series_free(struct series *s)
{
	if (!s)
		return;
	profile__free(s->prof);
	free(s->key);
	free(s->strings);
	free(s);
}

/* See agent.h. */
void agent_window__reset(struct window *w, uint64_t idx)
{
	for (int i = 0; i < w->n; i++)
		series_free(w->list[i]);
	free(w->list);
	memset(w, 0, sizeof(*w));
	w->idx = idx;
}

static struct series *series_new(struct agent *a, const struct window *w, const char *key,
				 const struct event_kind *ek, const struct label_pair *labels,
				 int n)
{
	struct profile_config pc = {
		.time_nanos = window_wall_start(a, w->idx),
		.duration_nanos = (int64_t)a->interval_ns,
		.max_bytes = SERIES_MAX_BYTES,
	};
	struct series *s = calloc(1, sizeof(*s));
	size_t len = 0;
	char *p;

	if (!s)
		return NULL;
	event_kind__profile_config(ek, a->boot.freq_hz, &pc);
	s->kind = ek;
	for (int i = 0; i < n; i++)
		len += strlen(labels[i].name) + strlen(labels[i].value) + 2;
	s->strings = malloc(len + 1);
	s->key = strdup(key);
	s->prof = profile__new(&pc);
	if (!s->strings || !s->key || !s->prof) {
		series_free(s);
		return NULL;
	}
	p = s->strings;
	/* __name__ first: the profile family Pyroscope files the series under */
	s->labels[s->n_labels++] = (struct label_pair){"__name__", ek->series_name};
	if (ek->memory)
		s->labels[s->n_labels++] = (struct label_pair){"__delta__", "false"};
	for (int i = 0; i < n && s->n_labels < EXPORT_MAX_LABELS; i++) {
		size_t nl = strlen(labels[i].name) + 1, vl = strlen(labels[i].value) + 1;

		memcpy(p, labels[i].name, nl);
		memcpy(p + nl, labels[i].value, vl);
		s->labels[s->n_labels++] = (struct label_pair){p, p + nl};
		p += nl + vl;
	}
	s->hash = hash__str(key) ^ (uint64_t)ek->kind;
	return s;
}

/* Finds or creates the series for a label set; past --max-services, the "other" series. */
static struct series *window_series(struct agent *a, struct window *w,
				    const struct series_labels *sl, const struct event_kind *ek)
{
	static const char other_key[] = "service_name=other\x1f";
	const char *key = sl->key;
	uint64_t h = hash__str(key) ^ (uint64_t)ek->kind;
	struct series *s;
	bool other = false;

	for (;;) {
		for (s = w->buckets[h % SERIES_BUCKETS]; s; s = s->next)
			if (s->hash == h && s->kind == ek && !strcmp(s->key, key))
				return s;
		if (other || (unsigned int)w->n < a->live.max_services)
			break;
		/* bounded number of series per window: merge the rest */
		other = true;
		key = other_key;
		h = hash__str(key) ^ (uint64_t)ek->kind;
		a->c.overflow++;
	}
	if (w->n == w->cap) {
		int cap = w->cap ? w->cap * 2 : 16;
		struct series **nl = realloc(w->list, sizeof(*nl) * (size_t)cap);
		if (!nl)
			return NULL;
		w->list = nl;
		w->cap = cap;
	}
	if (other) {
		struct label_pair ol[2] = {{"service_name", "other"}, {"hostname", a->other_host}};
		s = series_new(a, w, key, ek, ol, 2);
	} else {
		s = series_new(a, w, key, ek, sl->pairs, sl->n);
	}
	if (!s)
		return NULL;
	s->next = w->buckets[h % SERIES_BUCKETS];
	w->buckets[h % SERIES_BUCKETS] = s;
	w->list[w->n++] = s;
	return s;
}

/* Remembers a memory series' in-use bytes at the end of its window (service metric). */
static void note_inuse(struct agent *a, const struct series *s)
{
	const char *svc = "";
	struct agent_inuse *e = NULL;

	for (int i = 0; i < s->n_labels; i++)
		if (!strcmp(s->labels[i].name, "service_name"))
			svc = s->labels[i].value;
	for (int i = 0; i < a->n_inuse; i++)
		if (a->inuse[i].kind == (int)s->kind->kind && !strcmp(a->inuse[i].service, svc))
			e = &a->inuse[i];
	if (!e) {
		if (a->n_inuse >= AGENT_MAX_INUSE)
			return;
		e = &a->inuse[a->n_inuse++];
		snprintf(e->service, sizeof(e->service), "%s", svc);
		e->kind = (int)s->kind->kind;
	}
	e->bytes = profile__total(s->prof, s->kind->n_values - 1); /* inuse_space: the last */
}

/*
 * The window's sampled CUDA launch, graph and NCCL stacks calibrated to BPF's exact counts
 * of that window (counted per window: calls in the grace period belong to the next one).
 */
static void calibrate_cuda(struct agent *a, struct window *w)
{
	struct profile **prof = malloc((size_t)(w->n ? w->n : 1) * sizeof(*prof));
	enum mlprof_sample_kind *kind = malloc((size_t)(w->n ? w->n : 1) * sizeof(*kind));
	struct calib_stats st = {0};

	if (prof && kind) {
		for (int i = 0; i < w->n; i++) {
			prof[i] = w->list[i]->prof;
			kind[i] = w->list[i]->kind->kind;
		}
		if (cuda_calibrate__window(a->pl, w->idx, prof, kind, (size_t)w->n, &st))
			a->c.calib_errors++;
		a->c.calib_before += st.before;
		a->c.calib_after += st.after;
		a->c.calib_unplaced += st.unplaced;
	} else {
		a->c.calib_errors++;
	}
	free(prof);
	free(kind);
}

/*
 * The CPU part of the window's training-steps series: each CPU series' samples that have an
 * ml_phase, in nanoseconds, added to the steps series of the same labels (which holds the
 * off-CPU part already) once per window, not sample by sample.
 */
static void add_steps_cpu(struct agent *a, struct window *w)
{
	const struct event_kind *ek = event_kind__get(MLPROF_SK_STEPS);
	int n = w->n;

	if (!ek || !pipeline__steps(a->pl))
		return;
	for (int i = 0; i < n; i++) {
		struct series *s = w->list[i], *t;
		struct series_labels sl = {.keep = true, .key = s->key};
		size_t before;

		if (s->kind->kind != MLPROF_SK_CPU || !profile__any_labelled(s->prof, "ml_phase"))
			continue;
		/* (a CPU series' labels: __name__, then the service's) */
		for (int k = 1; k < s->n_labels; k++)
			sl.pairs[sl.n++] = s->labels[k];
		t = window_series(a, w, &sl, ek);
		if (!t) {
			a->c.drops[DROP_ERROR]++;
			continue;
		}
		before = profile__bytes(t->prof);
		if (profile__add_selected(t->prof, s->prof, "ml_phase", 1))
			a->c.drops[DROP_ERROR]++;
		w->bytes += profile__bytes(t->prof) - before;
	}
}

/* Encodes and submits every series of a window, then empties it for window idx next. */
void agent_window__flush(struct agent *a, struct window *w, uint64_t next_idx, int64_t dur_ns)
{
	int64_t start = window_wall_start(a, w->idx);
	int sent = 0;

	a->c.windows++;
	if (w->n) {
		calibrate_cuda(a, w);
		add_steps_cpu(a, w);
	}
	if (!w->n) {
		a->c.empty_windows++;
		pr_debug("window %" PRIu64 ": no samples", w->idx);
		agent_window__reset(w, next_idx);
		return;
	}
	for (int i = 0; i < w->n; i++) {
		struct series *s = w->list[i];
		struct export_item item = {.labels = s->labels, .n_labels = s->n_labels};
		uint8_t *buf = NULL;
		size_t len = 0;
		int err;

		a->c.drops[DROP_MEMORY] += profile__dropped(s->prof);
		if (!profile__n_samples(s->prof))
			continue; /* never an empty profile */
		if (s->kind->memory)
			note_inuse(a, s);
		profile__set_duration(s->prof, dur_ns);
		err = pprof__encode(s->prof, true, &buf, &len);
		if (err) {
			a->c.encode_errors++;
			pr_warn("cannot encode the profile of %s: %s", s->labels[1].value,
				strerror(-err));
			continue;
		}
		item.pprof = buf;
		item.pprof_len = len;
		item.start_ns = start;
		item.end_ns = start + dur_ns;
		item.seq = w->idx;
		err = exporter__submit(a->exp, &item);
		free(buf);
		if (err) {
			a->c.submit_errors++;
			pr_warn("cannot hand over the profile of %s: %s", s->labels[1].value,
				strerror(-err));
			continue;
		}
		a->c.profiles_built++;
		sent++;
	}
	pr_info("window %" PRIu64 ": %d profiles, %" PRIu64 " samples, start_ns %" PRId64, w->idx,
		sent, w->samples, start);
	agent_window__reset(w, next_idx);
}

/* One process's steps of the window: added to its service's (steps__window callback). */
static void add_steps(void *ctx, const struct steps_proc *sp, const uint64_t *dur, size_t n)
{
	struct agent *a = ctx;
	const struct series_labels *sl =
		labeler__lookup(a->labeler, sp->pid, 0, sp->comm, NULL, a->win[0].idx);
	struct agent_steps *e = NULL;
	int i;

	if (!sl->keep)
		return;
	for (i = 0; i < a->n_steps && !e; i++)
		if (!strcmp(a->steps[i].service, sl->service))
			e = &a->steps[i];
	if (!e) {
		if (a->n_steps >= AGENT_MAX_STEP_SERVICES) {
			a->c.step_services_full++;
			return;
		}
		i = a->n_steps++;
		e = &a->steps[i];
		snprintf(e->service, sizeof(e->service), "%s", sl->service);
	} else {
		i--;
	}
	e->steps += sp->steps;
	e->wall_ns += sp->wall_ns;
	e->win_wall += sp->wall_ns;
	e->win_data += sp->phase_ns[STEP_DATA_WAIT];
	if (!a->step_times)
		a->step_times = malloc(AGENT_MAX_STEP_TIMES * sizeof(*a->step_times));
	/* service index in the top 16 bits: one sort groups them (a step under 78 hours) */
	for (size_t k = 0; k < n && a->step_times && a->n_step_times < AGENT_MAX_STEP_TIMES; k++)
		a->step_times[a->n_step_times++] =
			(uint64_t)i << 48 | (dur[k] < (1ull << 48) ? dur[k] : (1ull << 48) - 1);
}

/*
 * The window's training steps per service: counts and times, step time percentiles and
 * the data wait's share (the agent's metrics).
 */
static void note_steps(struct agent *a)
{
	struct steps *st = pipeline__steps(a->pl);
	size_t lo = 0;

	if (!st)
		return;
	a->n_step_times = 0;
	for (int i = 0; i < a->n_steps; i++)
		a->steps[i].win_wall = a->steps[i].win_data = 0;
	steps__window(st, add_steps, a);
	if (a->n_step_times)
		qsort(a->step_times, a->n_step_times, sizeof(*a->step_times), quantile__cmp_u64);
	while (lo < a->n_step_times) {
		uint64_t svc = a->step_times[lo] >> 48, mask = (1ull << 48) - 1;
		size_t hi = lo, n;

		while (hi < a->n_step_times && a->step_times[hi] >> 48 == svc)
			hi++;
		n = hi - lo;
		a->steps[svc].p50_ns = a->step_times[lo + quantile__index(n, 50)] & mask;
		a->steps[svc].p99_ns = a->step_times[lo + quantile__index(n, 99)] & mask;
		lo = hi;
	}
	for (int i = 0; i < a->n_steps; i++)
		if (a->steps[i].win_wall)
			a->steps[i].data_wait_ratio =
				(double)a->steps[i].win_data / (double)a->steps[i].win_wall;
}

/* Sends window 0 and makes window 1 current; a wall clock step is picked up between. */
void agent_window__rotate(struct agent *a)
{
	struct window tmp;
	int64_t off;

	/* the in-use views (GPU memory, memory growth) at the end of the window being sent */
	pipeline__snapshot(a->pl, (a->win[0].idx + 1) * a->interval_ns - 1);
	/* samples of the window still waiting for a symbol index go in it, unnamed there */
	pipeline__flush_before(a->pl, (a->win[0].idx + 1) * a->interval_ns);
	note_steps(a);
	agent_window__flush(a, &a->win[0], 0, (int64_t)a->interval_ns);
	tmp = a->win[0];
	a->win[0] = a->win[1];
	a->win[1] = tmp;
	agent_window__reset(&a->win[1], a->win[0].idx + 1);
	pipeline__gc(a->pl);
	labeler__prune(a->labeler);
	off = agent__clock_offset();
	if (llabs(off - a->mono_to_real) > CLOCK_STEP_NS) {
		/* keep windows contiguous unless the wall clock really stepped */
		pr_info("wall clock stepped by %lld ms",
			(long long)(off - a->mono_to_real) / 1000000);
		a->mono_to_real = off;
		a->c.clock_steps++;
	}
}

/* See agent.h. */
int agent_window__sink(void *ctx, const struct sample_info *info, const struct frame *frames,
		       int n_frames)
{
	struct agent *a = ctx;
	const struct series_labels *sl;
	const struct event_kind *ek = event_kind__get(info->kind);
	struct profile_label pl[4 + EVENT_KIND_MAX_LABELS] = {
		{.key = "pid", .num = info->pid},
		{.key = "tid", .num = info->tid},
		{.key = "thread_name", .str = info->thread_name}, /* as `record` writes */
	};
	int64_t values[PROFILE_MAX_SAMPLE_TYPES];
	int n_pl = info->thread_name && *info->thread_name ? 3 : 2;

	if (info->ml_phase)
		pl[n_pl++] = (struct profile_label){.key = "ml_phase", .str = info->ml_phase};
	uint64_t idx = info->time_ns / a->interval_ns;
	struct window *w;
	struct series *s;
	size_t before;
	int err;

	if (!ek) {
		a->c.drops[DROP_KIND]++;
		return 0;
	}
	if (idx < a->win[0].idx) {
		a->c.drops[DROP_LATE]++;
		return 0;
	}
	if (idx > a->win[0].idx + 1) {
		/* the loop fell behind by more than a window: send what we have */
		agent_window__flush(a, &a->win[0], idx, (int64_t)a->interval_ns);
		agent_window__flush(a, &a->win[1], idx + 1, (int64_t)a->interval_ns);
	}
	w = idx == a->win[0].idx ? &a->win[0] : &a->win[1];
	sl = labeler__lookup(a->labeler, info->pid, info->start_ns, info->proc_name, info->proc,
			     a->win[0].idx);
	if (!sl->keep) {
		a->c.drops[DROP_FILTERED]++;
		return 0;
	}
	if (w->bytes > AGENT_WINDOW_MAX_BYTES) {
		a->c.drops[DROP_MEMORY]++;
		return 0;
	}
	s = window_series(a, w, sl, ek);
	if (!s) {
		a->c.drops[DROP_ERROR]++;
		return 0;
	}
	event_kind__sample(ek, info, profile__config(s->prof)->period, values, pl, &n_pl);
	before = profile__bytes(s->prof);
	err = profile__add(s->prof, frames, n_frames, values, pl, n_pl);
	if (err == -ENOSPC)
		return 0; /* counted by the profile, collected at flush */
	if (err) {
		a->c.drops[DROP_ERROR]++;
		return 0;
	}
	w->bytes += profile__bytes(s->prof) - before;
	w->samples++;
	a->c.profiled++;
	return 0;
}
