// SPDX-License-Identifier: Apache-2.0
/* `mlprof agent`: continuous profiling daemon (windows of per-service pprof -> exporter). */
#define LOG_MODULE "agent"
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "agent_config.h"
#include "commands.h"
#include "exporter.h"
#include "httpd.h"
#include "labels.h"
#include "log.h"
#include "metrics.h"
#include "output.h"
#include "pipeline.h"
#include "profile.h"
#include "sampler.h"
#include "unwind.h"

extern char **environ;

/* In-flight ring-buffer samples of a window may arrive this long after it ends. */
#define WINDOW_GRACE_NS 500000000ull
/* Memory bound of one series profile, and of all series of one window together. */
#define SERIES_MAX_BYTES (8u << 20)
#define WINDOW_MAX_BYTES (96u << 20)
#define SERIES_BUCKETS	 512
/* Realtime-monotonic offset change that counts as a wall clock step. */
#define CLOCK_STEP_NS 100000000ll

enum drop_reason {
	DROP_FILTERED, /* user-space filters (--process-regex, --cgroup, --ml-only) */
	DROP_LATE,     /* arrived after its window was sent */
	DROP_MEMORY,   /* profile memory bounds */
	DROP_KIND,     /* sample kind this agent does not aggregate */
	DROP_ERROR,    /* profile__add failed otherwise */
	DROP__COUNT,
};

static const char *const drop_names[DROP__COUNT] = {"filtered", "late", "memory",
						    "unsupported_kind", "error"};

/* One label set (service) within one window. */
struct series {
	struct series *next; /* hash chain */
	uint64_t hash;
	char *key;
	char *strings; /* owns label names/values */
	struct label_pair labels[EXPORT_MAX_LABELS];
	int n_labels;
	struct profile *prof;
	size_t bytes;
};

struct window {
	uint64_t idx; /* window number: monotonic ns / interval */
	struct series *buckets[SERIES_BUCKETS];
	struct series **list; /* creation order */
	int n, cap;
	uint64_t samples;
	size_t bytes;
};

/* Counters of the agent itself (main thread writes, httpd thread reads a snapshot). */
struct agent_counters {
	uint64_t drops[DROP__COUNT];
	uint64_t profiled, overflow, profiles_built, encode_errors, submit_errors, windows,
		empty_windows, reload_ok, reload_err, clock_steps;
};

struct agent {
	struct agent_config boot; /* configuration at start (exporter/pipeline use it) */
	struct agent_config live; /* current configuration (after SIGHUP reloads) */
	int argc;
	char **argv;
	struct labeler *labeler;
	struct exporter *exp;
	struct pipeline *pl;
	struct metrics *metrics;
	struct httpd *httpd;
	const char **headers; /* NULL-terminated copy for exporter_config */
	pid_t *pids;
	uint64_t interval_ns;
	int64_t period_ns;
	int64_t mono_to_real; /* realtime - monotonic, ns */
	struct window win[2]; /* win[0] = current, win[1] = next */
	char other_host[256];
	struct agent_counters c;
	/* snapshot for the metrics thread */
	pthread_mutex_t snap_lock;
	struct pipeline_stats pst;
	struct labeler_stats lst;
	struct agent_counters csnap;
	bool have_pst;
	atomic_bool ready;
	atomic_llong heartbeat_ns;
	int metric_ids[64];
};

static uint64_t clock_ns(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* realtime - monotonic, read so that the two clocks are as close in time as possible. */
static int64_t measure_offset(void)
{
	uint64_t m1 = clock_ns(CLOCK_MONOTONIC);
	uint64_t r = clock_ns(CLOCK_REALTIME);
	uint64_t m2 = clock_ns(CLOCK_MONOTONIC);

	return (int64_t)r - (int64_t)(m1 + (m2 - m1) / 2);
}

static uint64_t fnv1a(const char *s)
{
	uint64_t h = 1469598103934665603ull;

	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ull;
	return h;
}

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

static void window_reset(struct window *w, uint64_t idx)
{
	for (int i = 0; i < w->n; i++)
		series_free(w->list[i]);
	free(w->list);
	memset(w, 0, sizeof(*w));
	w->idx = idx;
}

static struct series *series_new(struct agent *a, const struct window *w, const char *key,
				 const struct label_pair *labels, int n)
{
	struct profile_config pc = {
		.n_sample_types = 2,
		.sample_types = {{"samples", "count"}, {"cpu", "nanoseconds"}},
		.period_type = {"cpu", "nanoseconds"},
		.period = a->period_ns,
		.time_nanos = window_wall_start(a, w->idx),
		.duration_nanos = (int64_t)a->interval_ns,
		.max_bytes = SERIES_MAX_BYTES,
	};
	struct series *s = calloc(1, sizeof(*s));
	size_t len = 0;
	char *p;

	if (!s)
		return NULL;
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
	s->labels[s->n_labels++] = (struct label_pair){"__name__", "process_cpu"};
	for (int i = 0; i < n && s->n_labels < EXPORT_MAX_LABELS; i++) {
		size_t nl = strlen(labels[i].name) + 1, vl = strlen(labels[i].value) + 1;

		memcpy(p, labels[i].name, nl);
		memcpy(p + nl, labels[i].value, vl);
		s->labels[s->n_labels++] = (struct label_pair){p, p + nl};
		p += nl + vl;
	}
	s->hash = fnv1a(key);
	return s;
}

/* Finds or creates the series for a label set; past --max-services, the "other" series. */
static struct series *window_series(struct agent *a, struct window *w,
				    const struct series_labels *sl)
{
	static const char other_key[] = "service_name=other\x1f";
	const char *key = sl->key;
	uint64_t h = fnv1a(key);
	struct series *s;
	bool other = false;

	for (;;) {
		for (s = w->buckets[h % SERIES_BUCKETS]; s; s = s->next)
			if (s->hash == h && !strcmp(s->key, key))
				return s;
		if (other || (unsigned int)w->n < a->live.max_services)
			break;
		/* bounded number of series per window: merge the rest */
		other = true;
		key = other_key;
		h = fnv1a(key);
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
		s = series_new(a, w, key, ol, 2);
	} else {
		s = series_new(a, w, key, sl->pairs, sl->n);
	}
	if (!s)
		return NULL;
	s->next = w->buckets[h % SERIES_BUCKETS];
	w->buckets[h % SERIES_BUCKETS] = s;
	w->list[w->n++] = s;
	return s;
}

/* Encodes and submits every series of a window, then empties it for window idx next. */
static void window_flush(struct agent *a, struct window *w, uint64_t next_idx, int64_t dur_ns)
{
	int64_t start = window_wall_start(a, w->idx);
	int sent = 0;

	a->c.windows++;
	if (!w->n) {
		a->c.empty_windows++;
		pr_debug("window %" PRIu64 ": no samples", w->idx);
		window_reset(w, next_idx);
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
	window_reset(w, next_idx);
}

/* Sends window 0 and makes window 1 current; a wall clock step is picked up between. */
static void rotate(struct agent *a)
{
	struct window tmp;
	int64_t off;

	window_flush(a, &a->win[0], 0, (int64_t)a->interval_ns);
	tmp = a->win[0];
	a->win[0] = a->win[1];
	a->win[1] = tmp;
	window_reset(&a->win[1], a->win[0].idx + 1);
	pipeline__gc(a->pl);
	labeler__prune(a->labeler);
	off = measure_offset();
	if (llabs(off - a->mono_to_real) > CLOCK_STEP_NS) {
		/* keep windows contiguous unless the wall clock really stepped */
		pr_info("wall clock stepped by %lld ms",
			(long long)(off - a->mono_to_real) / 1000000);
		a->mono_to_real = off;
		a->c.clock_steps++;
	}
}

static int sink(void *ctx, const struct sample_info *info, const struct frame *frames, int n_frames)
{
	struct agent *a = ctx;
	const struct series_labels *sl;
	struct profile_label pl[2] = {
		{.key = "pid", .num = info->pid},
		{.key = "tid", .num = info->tid},
	};
	int64_t values[2];
	uint64_t idx = info->time_ns / a->interval_ns;
	struct window *w;
	struct series *s;
	size_t before;
	int err;

	if (info->kind != MLPROF_SK_CPU) {
		a->c.drops[DROP_KIND]++;
		return 0;
	}
	if (idx < a->win[0].idx) {
		a->c.drops[DROP_LATE]++;
		return 0;
	}
	if (idx > a->win[0].idx + 1) {
		/* the loop fell behind by more than a window: send what we have */
		window_flush(a, &a->win[0], idx, (int64_t)a->interval_ns);
		window_flush(a, &a->win[1], idx + 1, (int64_t)a->interval_ns);
	}
	w = idx == a->win[0].idx ? &a->win[0] : &a->win[1];
	sl = labeler__lookup(a->labeler, info->pid, info->proc_name, info->proc, a->win[0].idx);
	if (!sl->keep) {
		a->c.drops[DROP_FILTERED]++;
		return 0;
	}
	if (w->bytes > WINDOW_MAX_BYTES) {
		a->c.drops[DROP_MEMORY]++;
		return 0;
	}
	s = window_series(a, w, sl);
	if (!s) {
		a->c.drops[DROP_ERROR]++;
		return 0;
	}
	values[0] = info->value;
	values[1] = info->value * a->period_ns;
	before = profile__bytes(s->prof);
	err = profile__add(s->prof, frames, n_frames, values, pl, 2);
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

/* ------------------------------------------------------------------ metrics */

enum {
	M_UP,
	M_SAMPLES,
	M_PROFILED,
	M_DROPS,
	M_BPF,
	M_UNWIND,
	M_FRAMES,
	M_FRAMES_UNSYM,
	M_SYM_BYTES,
	M_SYM_TABLES,
	M_SYM_EVICT,
	M_PROCS,
	M_PROC_EVICT,
	M_ELF,
	M_LCACHE,
	M_LCACHE_EVICT,
	M_OVERFLOW,
	M_BUILT,
	M_PUSHED,
	M_FAILED,
	M_RETRIES,
	M_REJECTED,
	M_SPOOLED,
	M_DROPPED,
	M_LAT,
	M_LAT_LAST,
	M_SPOOL_BYTES,
	M_SPOOL_FILES,
	M_QUEUE_BYTES,
	M_WINDOWS,
	M_CPU,
	M_RELOADS,
	M_K8S_FETCH,
	M_K8S_ERR,
	M_ENCODE_ERR,
	M_TRIMMED,
	M__COUNT
};

static const struct {
	const char *name;
	enum metric_type type;
	const char *help;
} metric_defs[M__COUNT] = {
	[M_UP] = {"mlprof_up", METRIC_GAUGE, "1 while the agent runs"},
	[M_SAMPLES] = {"mlprof_samples_total", METRIC_COUNTER,
		       "Samples unwound and symbolized by the pipeline"},
	[M_PROFILED] = {"mlprof_samples_profiled_total", METRIC_COUNTER,
			"Samples added to a profile"},
	[M_DROPS] = {"mlprof_samples_dropped_total", METRIC_COUNTER, "Samples dropped, by reason"},
	[M_BPF] = {"mlprof_bpf_events_total", METRIC_COUNTER,
		   "BPF-side counters of the sampler, by event"},
	[M_UNWIND] = {"mlprof_unwind_total", METRIC_COUNTER,
		      "Stack unwinds by how they ended (anything but complete is a failure)"},
	[M_FRAMES] = {"mlprof_frames_total", METRIC_COUNTER, "Native frames symbolized"},
	[M_FRAMES_UNSYM] = {"mlprof_frames_unsymbolized_total", METRIC_COUNTER,
			    "Native frames without a symbol"},
	[M_SYM_BYTES] = {"mlprof_symcache_bytes", METRIC_GAUGE, "Bytes held by symbol tables"},
	[M_SYM_TABLES] = {"mlprof_symcache_tables", METRIC_GAUGE, "Symbol tables cached"},
	[M_SYM_EVICT] = {"mlprof_symcache_evictions_total", METRIC_COUNTER,
			 "Symbol tables evicted by the memory bound"},
	[M_PROCS] = {"mlprof_procs_cached", METRIC_GAUGE, "Processes in the process cache"},
	[M_PROC_EVICT] = {"mlprof_proc_evictions_total", METRIC_COUNTER,
			  "Processes evicted from the process cache"},
	[M_ELF] = {"mlprof_elf_files", METRIC_GAUGE, "Open ELF files"},
	[M_LCACHE] = {"mlprof_label_cache_entries", METRIC_GAUGE, "Processes in the label cache"},
	[M_LCACHE_EVICT] = {"mlprof_label_cache_evictions_total", METRIC_COUNTER,
			    "Label cache LRU evictions"},
	[M_OVERFLOW] = {"mlprof_series_overflow_total", METRIC_COUNTER,
			"Samples merged into service_name=other past --max-services"},
	[M_BUILT] = {"mlprof_profiles_built_total", METRIC_COUNTER,
		     "Profiles handed to the exporter"},
	[M_PUSHED] = {"mlprof_profiles_pushed_total", METRIC_COUNTER,
		      "Profiles delivered (pushed or written)"},
	[M_FAILED] = {"mlprof_profiles_failed_total", METRIC_COUNTER,
		      "Delivery attempts that failed"},
	[M_RETRIES] = {"mlprof_push_retries_total", METRIC_COUNTER, "Push retries"},
	[M_REJECTED] = {"mlprof_profiles_rejected_total", METRIC_COUNTER,
			"Profiles rejected by the server (4xx)"},
	[M_SPOOLED] = {"mlprof_profiles_spooled_total", METRIC_COUNTER,
		       "Profiles written to the disk spool"},
	[M_DROPPED] = {"mlprof_profiles_dropped_total", METRIC_COUNTER,
		       "Profiles dropped by queue or spool bounds"},
	[M_LAT] = {"mlprof_push_latency_seconds", METRIC_SUMMARY, "Push request latency"},
	[M_LAT_LAST] = {"mlprof_push_last_latency_seconds", METRIC_GAUGE,
			"Latency of the last push"},
	[M_SPOOL_BYTES] = {"mlprof_spool_bytes", METRIC_GAUGE, "Bytes in the disk spool"},
	[M_SPOOL_FILES] = {"mlprof_spool_files", METRIC_GAUGE, "Files in the disk spool"},
	[M_QUEUE_BYTES] = {"mlprof_queue_bytes", METRIC_GAUGE,
			   "Bytes in the in-memory export queue"},
	[M_WINDOWS] = {"mlprof_windows_total", METRIC_COUNTER,
		       "Upload windows closed (including empty ones)"},
	[M_CPU] = {"mlprof_processing_cpu_seconds_total", METRIC_COUNTER,
		   "CPU time spent unwinding and symbolizing"},
	[M_RELOADS] = {"mlprof_config_reloads_total", METRIC_COUNTER,
		       "SIGHUP configuration reloads, by result"},
	[M_K8S_FETCH] = {"mlprof_k8s_pod_list_fetches_total", METRIC_COUNTER, "Pod list requests"},
	[M_K8S_ERR] = {"mlprof_k8s_pod_list_errors_total", METRIC_COUNTER,
		       "Pod list requests that failed"},
	[M_ENCODE_ERR] = {"mlprof_profile_errors_total", METRIC_COUNTER,
			  "Profiles that could not be encoded or handed over"},
	[M_TRIMMED] = {"mlprof_labels_trimmed_total", METRIC_COUNTER,
		       "Label sets cut to Pyroscope's 30-label limit"},
};

static void collect(struct metrics *m, void *ctx)
{
	struct agent *a = ctx;
	struct exporter_stats es = {0};
	struct pipeline_stats ps;
	struct labeler_stats ls;
	struct agent_counters c;
	int *id = a->metric_ids;
	bool have;

	pthread_mutex_lock(&a->snap_lock);
	ps = a->pst;
	ls = a->lst;
	c = a->csnap;
	have = a->have_pst;
	pthread_mutex_unlock(&a->snap_lock);
	if (a->exp)
		exporter__stats(a->exp, &es);

	metrics__set(m, id[M_UP], NULL, NULL, 1, 0);
	metrics__set(m, id[M_SAMPLES], NULL, NULL, (double)ps.samples, 0);
	metrics__set(m, id[M_PROFILED], NULL, NULL, (double)c.profiled, 0);
	for (int i = 0; i < DROP__COUNT; i++)
		metrics__set(m, id[M_DROPS], "reason", drop_names[i], (double)c.drops[i], 0);
	metrics__set(m, id[M_DROPS], "reason", "ring_buffer_full",
		     (double)ps.bpf[MLPROF_STAT_RB_FULL], 0);
	if (have) {
		for (int i = 0; i < MLPROF_STAT__COUNT; i++)
			metrics__set(m, id[M_BPF], "event",
				     sampler__stat_name((enum mlprof_bpf_stat)i), (double)ps.bpf[i],
				     0);
		for (int i = 0; i < 6; i++)
			metrics__set(m, id[M_UNWIND], "end", unwind_end__str((enum unwind_end)i),
				     (double)ps.unwind_ends[i], 0);
	}
	metrics__set(m, id[M_FRAMES], NULL, NULL, (double)ps.frames_total, 0);
	metrics__set(m, id[M_FRAMES_UNSYM], NULL, NULL, (double)ps.frames_unsymbolized, 0);
	metrics__set(m, id[M_SYM_BYTES], NULL, NULL, (double)ps.symcache_bytes, 0);
	metrics__set(m, id[M_SYM_TABLES], NULL, NULL, (double)ps.symcache_tables, 0);
	metrics__set(m, id[M_SYM_EVICT], NULL, NULL, (double)ps.symcache_evictions, 0);
	metrics__set(m, id[M_PROCS], NULL, NULL, (double)ps.procs_cached, 0);
	metrics__set(m, id[M_PROC_EVICT], NULL, NULL, (double)ps.proc_evictions, 0);
	metrics__set(m, id[M_ELF], NULL, NULL, (double)ps.elf_files, 0);
	metrics__set(m, id[M_LCACHE], NULL, NULL, (double)ls.cache_entries, 0);
	metrics__set(m, id[M_LCACHE_EVICT], NULL, NULL, (double)ls.cache_evictions, 0);
	metrics__set(m, id[M_OVERFLOW], NULL, NULL, (double)c.overflow, 0);
	metrics__set(m, id[M_BUILT], NULL, NULL, (double)c.profiles_built, 0);
	metrics__set(m, id[M_PUSHED], NULL, NULL, (double)es.pushed, 0);
	metrics__set(m, id[M_FAILED], NULL, NULL, (double)es.failed, 0);
	metrics__set(m, id[M_RETRIES], NULL, NULL, (double)es.retries, 0);
	metrics__set(m, id[M_REJECTED], NULL, NULL, (double)es.rejected_4xx, 0);
	metrics__set(m, id[M_SPOOLED], NULL, NULL, (double)es.spooled, 0);
	metrics__set(m, id[M_DROPPED], "reason", "spool", (double)es.spool_dropped, 0);
	metrics__set(m, id[M_DROPPED], "reason", "queue", (double)es.queue_dropped, 0);
	metrics__set(m, id[M_LAT], NULL, NULL, (double)es.latency_us_sum / 1e6, es.latency_count);
	metrics__set(m, id[M_LAT_LAST], NULL, NULL, (double)es.last_latency_us / 1e6, 0);
	metrics__set(m, id[M_SPOOL_BYTES], NULL, NULL, (double)es.spool_bytes, 0);
	metrics__set(m, id[M_SPOOL_FILES], NULL, NULL, (double)es.spool_files, 0);
	metrics__set(m, id[M_QUEUE_BYTES], NULL, NULL, (double)es.queue_bytes, 0);
	metrics__set(m, id[M_WINDOWS], NULL, NULL, (double)c.windows, 0);
	metrics__set(m, id[M_CPU], NULL, NULL, (double)ps.cpu_ns / 1e9, 0);
	metrics__set(m, id[M_RELOADS], "result", "ok", (double)c.reload_ok, 0);
	metrics__set(m, id[M_RELOADS], "result", "error", (double)c.reload_err, 0);
	metrics__set(m, id[M_K8S_FETCH], NULL, NULL, (double)ls.k8s_fetches, 0);
	metrics__set(m, id[M_K8S_ERR], NULL, NULL, (double)ls.k8s_errors, 0);
	metrics__set(m, id[M_ENCODE_ERR], NULL, NULL, (double)(c.encode_errors + c.submit_errors),
		     0);
	metrics__set(m, id[M_TRIMMED], NULL, NULL, (double)ls.labels_trimmed, 0);
}

static void snapshot(struct agent *a)
{
	struct pipeline_stats ps = {0};
	struct labeler_stats ls;

	if (a->pl)
		pipeline__stats(a->pl, &ps);
	labeler__stats(a->labeler, &ls);
	pthread_mutex_lock(&a->snap_lock);
	a->pst = ps;
	a->have_pst = a->pl != NULL;
	a->lst = ls;
	a->csnap = a->c;
	pthread_mutex_unlock(&a->snap_lock);
	atomic_store(&a->heartbeat_ns, (long long)clock_ns(CLOCK_MONOTONIC));
}

static void http_handler(void *ctx, const char *path, struct http_response *r)
{
	struct agent *a = ctx;

	if (!strcmp(path, "/metrics")) {
		if (metrics__render(a->metrics, &r->body, &r->body_len)) {
			r->status = 503;
			return;
		}
		r->status = 200;
		r->content_type = "text/plain; version=0.0.4; charset=utf-8";
		return;
	}
	if (!strcmp(path, "/healthz")) {
		/* alive while the main loop turns: it refreshes the heartbeat every second */
		uint64_t age = clock_ns(CLOCK_MONOTONIC) - (uint64_t)atomic_load(&a->heartbeat_ns);
		uint64_t limit = 3 * a->interval_ns + 30000000000ull;
		bool ok = age < limit;

		r->status = ok ? 200 : 503;
		r->body = strdup(ok ? "ok\n" : "main loop stalled\n");
		r->body_len = r->body ? strlen(r->body) : 0;
		return;
	}
	if (!strcmp(path, "/readyz")) {
		bool ok = atomic_load(&a->ready);

		r->status = ok ? 200 : 503;
		r->body = strdup(ok ? "ready\n" : "starting\n");
		r->body_len = r->body ? strlen(r->body) : 0;
	}
}

static int metrics_setup(struct agent *a)
{
	a->metrics = metrics__new(collect, a);
	if (!a->metrics)
		return -ENOMEM;
	for (int i = 0; i < M__COUNT; i++) {
		int id = metrics__register(a->metrics, metric_defs[i].name, metric_defs[i].type,
					   metric_defs[i].help);
		if (id < 0)
			return id;
		a->metric_ids[i] = id;
	}
	return 0;
}

/* ------------------------------------------------------------------ config and reload */

static void apply_logging(const struct agent_config *cfg)
{
	enum log_level lvl = LOG_INFO;

	log__parse_level(cfg->log_level, &lvl);
	log__setup(lvl, !strcmp(cfg->log_format, "json"));
}

struct kv_list {
	char **k, **v;
	int n;
};

static void kv_collect(const char *key, const char *value, void *ctx)
{
	struct kv_list *l = ctx;
	char **k = realloc(l->k, sizeof(*k) * (size_t)(l->n + 1));
	char **v;

	if (!k)
		return;
	l->k = k;
	v = realloc(l->v, sizeof(*v) * (size_t)(l->n + 1));
	if (!v)
		return;
	l->v = v;
	l->k[l->n] = strdup(key);
	l->v[l->n] = strdup(value);
	if (!l->k[l->n] || !l->v[l->n]) {
		free(l->k[l->n]);
		free(l->v[l->n]);
		return;
	}
	l->n++;
}

static void kv_free(struct kv_list *l)
{
	for (int i = 0; i < l->n; i++) {
		free(l->k[i]);
		free(l->v[i]);
	}
	free(l->k);
	free(l->v);
}

/* SIGHUP: re-reads flags + environment + config file; applies labels, filters, logging. */
static void reload(struct agent *a)
{
	struct agent_config next;
	struct kv_list before = {0}, after = {0};
	char err[512];
	int changed = 0, ret;

	ret = agent_config__load(&next, a->argc, a->argv, environ, err, sizeof(err));
	if (ret) {
		pr_err("reload: invalid configuration, keeping the current one: %s", err);
		agent_config__free(&next);
		a->c.reload_err++;
		return;
	}
	agent_config__for_each(&a->live, kv_collect, &before);
	agent_config__for_each(&next, kv_collect, &after);
	for (int i = 0; i < before.n && i < after.n; i++) {
		if (!strcmp(before.v[i], after.v[i]))
			continue;
		changed++;
		if (agent_config__reloadable(before.k[i]))
			pr_info("reload: %s: '%s' -> '%s'", before.k[i], before.v[i], after.v[i]);
		else
			pr_warn("reload: %s: '%s' -> '%s' needs a restart; still using '%s'",
				before.k[i], before.v[i], after.v[i], before.v[i]);
	}
	kv_free(&before);
	kv_free(&after);
	ret = labeler__reconfigure(a->labeler, &next);
	if (ret) {
		pr_err("reload: cannot apply the new labels/filters: %s", strerror(-ret));
		/* restore the previous ones */
		labeler__reconfigure(a->labeler, &a->live);
		agent_config__free(&next);
		a->c.reload_err++;
		return;
	}
	agent_config__free(&a->live);
	a->live = next;
	apply_logging(&a->live);
	a->c.reload_ok++;
	pr_info("configuration reloaded (%d change%s)", changed, changed == 1 ? "" : "s");
}

static int exporter_setup(struct agent *a)
{
	const struct agent_config *c = &a->boot;
	struct exporter_config ec = {0};
	bool push = *c->url != '\0';

	a->headers = calloc((size_t)c->headers.n + 1, sizeof(*a->headers));
	if (!a->headers)
		return -ENOMEM;
	for (int i = 0; i < c->headers.n; i++)
		a->headers[i] = c->headers.v[i];
	ec.kind = !push			      ? EXPORTER_FILE
		  : !strcmp(c->api, "ingest") ? EXPORTER_INGEST
					      : EXPORTER_PUSH;
	ec.url = push ? c->url : NULL;
	ec.out_dir = c->output_dir;
	ec.out_max_bytes = c->output_max_bytes;
	ec.ca_file = *c->ca_file ? c->ca_file : NULL;
	ec.insecure_skip_verify = c->insecure_skip_verify;
	ec.basic_user = *c->basic_auth_user ? c->basic_auth_user : NULL;
	ec.basic_password = *c->basic_auth_password ? c->basic_auth_password : NULL;
	ec.bearer_token = *c->bearer_token ? c->bearer_token : NULL;
	ec.tenant = *c->tenant_id ? c->tenant_id : NULL;
	ec.headers = a->headers;
	ec.connect_timeout_ms = c->connect_timeout_ms;
	ec.timeout_ms = c->timeout_ms;
	ec.max_retries = 10;
	ec.backoff_min_ms = 500;
	ec.backoff_max_ms = 60000;
	/* the spool only matters with a backend; local files are their own storage */
	ec.spool_dir = push ? c->spool_dir : NULL;
	ec.spool_max_bytes = c->spool_max_bytes;
	ec.spool_max_age_s = 3600; /* Pyroscope rejects profiles older than 1 h */
	ec.queue_max_bytes = 16u << 20;
	a->exp = exporter__new(&ec);
	if (!a->exp)
		return errno ? -errno : -EINVAL;
	if (push)
		pr_info("pushing to %s (%s API)", c->url, c->api);
	else
		pr_info("writing profiles to %s (bounded to %" PRIu64 " bytes)", c->output_dir,
			c->output_max_bytes);
	return 0;
}

static int pipeline_setup(struct agent *a)
{
	const struct agent_config *c = &a->boot;
	struct pipeline_config pc = {
		.freq_hz = c->freq_hz,
		.ustack_bytes = c->ustack_bytes,
		.kernel_frames = c->kernel_frames,
		.symcache_bytes = c->symcache_bytes,
		.max_procs = c->max_procs,
		.ringbuf_bytes = 0, /* sized by CPU count (sampler.c) */
	};

	if (c->pids.n) {
		a->pids = calloc((size_t)c->pids.n, sizeof(*a->pids));
		if (!a->pids)
			return -ENOMEM;
		for (int i = 0; i < c->pids.n; i++)
			a->pids[i] = (pid_t)strtol(c->pids.v[i], NULL, 10);
		pc.filter_pids = true;
		pc.pids = a->pids;
		pc.n_pids = c->pids.n;
		pc.follow_children = true;
	}
	a->pl = pipeline__new(&pc, sink, a);
	return a->pl ? 0 : (errno ? -errno : -EIO);
}

/* ------------------------------------------------------------------ main loop */

static int run(struct agent *a, const sigset_t *sigs)
{
	const struct timespec zero = {0};
	uint64_t now = clock_ns(CLOCK_MONOTONIC), last_snap = 0;
	uint64_t cur = now / a->interval_ns;
	int ret = 0;

	window_reset(&a->win[0], cur);
	window_reset(&a->win[1], cur + 1);
	atomic_store(&a->ready, true);
	pr_info("profiling at %u Hz, %u s windows", a->boot.freq_hz, a->boot.upload_interval_s);
	for (;;) {
		siginfo_t si;
		int sig, n;

		n = pipeline__poll(a->pl, 100);
		if (n < 0 && n != -EINTR) {
			pr_err("sampling failed: %s", strerror(-n));
			ret = n;
			break;
		}
		sig = sigtimedwait(sigs, &si, &zero);
		if (sig == SIGTERM || sig == SIGINT) {
			pr_info("%s: sending the current window and exiting", strsignal(sig));
			break;
		}
		if (sig == SIGHUP)
			reload(a);
		now = clock_ns(CLOCK_MONOTONIC);
		while (now >= (a->win[0].idx + 1) * a->interval_ns + WINDOW_GRACE_NS)
			rotate(a);
		if (now - last_snap >= 1000000000ull) {
			snapshot(a);
			last_snap = now;
		}
	}
	/* drain what the ring buffer still holds, then send the open windows */
	atomic_store(&a->ready, false);
	for (int i = 0; i < 5 && pipeline__poll(a->pl, 0) > 0; i++)
		;
	now = clock_ns(CLOCK_MONOTONIC);
	for (int i = 0; i < 2; i++) {
		uint64_t start = a->win[i].idx * a->interval_ns;
		int64_t dur = now > start ? (int64_t)(now - start) : 0;

		if (dur > (int64_t)a->interval_ns)
			dur = (int64_t)a->interval_ns;
		if (a->win[i].n && dur > 0)
			window_flush(a, &a->win[i], a->win[i].idx, dur);
		else
			window_reset(&a->win[i], a->win[i].idx);
	}
	return ret;
}

static void agent_free(struct agent *a)
{
	httpd__free(a->httpd);
	pipeline__free(a->pl);
	for (int i = 0; i < 2; i++)
		window_reset(&a->win[i], 0);
	if (a->exp) {
		/* bounded shutdown: what is not delivered by then is spooled by free */
		int left = exporter__flush(a->exp, 2000);
		if (left > 0)
			pr_warn("%d profiles not delivered at exit (spooled when a spool is set)",
				left);
		exporter__free(a->exp);
	}
	metrics__free(a->metrics);
	labeler__free(a->labeler);
	free(a->headers);
	free(a->pids);
	agent_config__free(&a->live);
	agent_config__free(&a->boot);
	pthread_mutex_destroy(&a->snap_lock);
	free(a);
}

int agent__main(int argc, char **argv)
{
	struct agent *a;
	char err[1024];
	sigset_t sigs;
	int ret, status = 1;

	a = calloc(1, sizeof(*a));
	if (!a) {
		fprintf(stderr, "mlprof agent: out of memory\n");
		return 1;
	}
	pthread_mutex_init(&a->snap_lock, NULL);
	a->argc = argc;
	a->argv = argv;
	ret = agent_config__load(&a->boot, argc, argv, environ, err, sizeof(err));
	if (!ret && a->boot.help) {
		agent_config__usage(stdout);
		status = 0;
		goto cleanup;
	}
	if (ret) {
		fprintf(stderr, "mlprof agent: %s\n", err);
		status = 2;
		goto cleanup;
	}
	ret = agent_config__load(&a->live, argc, argv, environ, err, sizeof(err));
	if (ret) {
		fprintf(stderr, "mlprof agent: %s\n", err);
		status = 2;
		goto cleanup;
	}
	apply_logging(&a->live);
	a->interval_ns = (uint64_t)a->boot.upload_interval_s * 1000000000ull;
	a->period_ns = 1000000000ll / a->boot.freq_hz;
	a->mono_to_real = measure_offset();
	atomic_store(&a->heartbeat_ns, (long long)clock_ns(CLOCK_MONOTONIC));

	/* signals are taken synchronously by the main loop; threads started later inherit this */
	sigemptyset(&sigs);
	sigaddset(&sigs, SIGTERM);
	sigaddset(&sigs, SIGINT);
	sigaddset(&sigs, SIGHUP);
	pthread_sigmask(SIG_BLOCK, &sigs, NULL);

	a->labeler = labeler__new(&a->live, "/proc");
	if (!a->labeler) {
		fprintf(stderr, "mlprof agent: cannot set up labels: %s\n", strerror(errno));
		status = errno == EINVAL ? 2 : 1;
		goto cleanup;
	}
	labels__sanitize_value(*a->live.hostname ? a->live.hostname : "", a->other_host,
			       sizeof(a->other_host));
	if (!a->other_host[0] && gethostname(a->other_host, sizeof(a->other_host) - 1))
		snprintf(a->other_host, sizeof(a->other_host), "unknown");
	ret = exporter_setup(a);
	if (ret) {
		fprintf(stderr, "mlprof agent: cannot set up the exporter: %s\n", strerror(-ret));
		status = ret == -EINVAL ? 2 : 1;
		goto cleanup;
	}
	ret = metrics_setup(a);
	if (ret) {
		fprintf(stderr, "mlprof agent: cannot set up metrics: %s\n", strerror(-ret));
		goto cleanup;
	}
	if (*a->boot.metrics_addr && strcmp(a->boot.metrics_addr, "off")) {
		a->httpd = httpd__new(a->boot.metrics_addr, http_handler, a);
		if (!a->httpd) {
			fprintf(stderr, "mlprof agent: cannot serve metrics on %s: %s\n",
				a->boot.metrics_addr, strerror(errno));
			status = 1;
			goto cleanup;
		}
		pr_info("metrics on http://%s/metrics", a->boot.metrics_addr);
	}
	ret = pipeline_setup(a);
	if (ret) {
		fprintf(stderr, "mlprof agent: cannot start sampling: %s%s\n", strerror(-ret),
			ret == -EPERM ? " (needs root or CAP_BPF+CAP_PERFMON)" : "");
		goto cleanup;
	}
	snapshot(a);
	ret = run(a, &sigs);
	status = ret ? 1 : 0;
cleanup:
	agent_free(a);
	return status;
}
