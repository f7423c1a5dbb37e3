/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The agent's state, shared by its parts: lifecycle (agent.c), series windows
 * (agent_window.c), self-metrics (agent_metrics.c). Data only: no part's functions.
 */
#ifndef MLPROF_AGENT_STATE_H
#define MLPROF_AGENT_STATE_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#include "agent/agent_config.h"
#include "agent/labels.h"
#include "pipeline/pipeline.h"
#include "util/clock.h"

struct exporter;
struct http_response;
struct httpd;
struct metrics;
struct series;

/* In-flight ring-buffer samples of a window may arrive this long after it ends. */
#define WINDOW_GRACE_NS 500000000ull
/* Memory bound of all series of one window together (two windows are open at a time). */
#define AGENT_WINDOW_MAX_BYTES (32u << 20)
/* The exporter's in-memory queue bound (exporter__queue_hard_max() gives its hard bound). */
#define AGENT_QUEUE_MAX_BYTES (16u << 20)
#define SERIES_BUCKETS	      512

enum drop_reason {
	DROP_FILTERED, /* user-space filters (--process-regex, --cgroup, --ml-only) */
	DROP_LATE,     /* arrived after its window was sent */
	DROP_MEMORY,   /* profile memory bounds */
	DROP_KIND,     /* sample kind this agent does not aggregate */
	DROP_ERROR,    /* profile__add failed otherwise */
	DROP__COUNT,
};

/* Metric label values of enum drop_reason. */
extern const char *const agent_drop_names[DROP__COUNT];

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
	/* CUDA stacks calibrated to the exact counts at each window's end */
	int64_t calib_before, calib_after, calib_unplaced;
	uint64_t calib_errors;
	uint64_t step_services_full; /* processes' steps not counted: AGENT_MAX_STEP_SERVICES */
};

/* Memory in use at the end of the last window, per series (for alerts on steady growth). */
#define AGENT_MAX_INUSE 128
struct agent_inuse {
	char service[128];
	int kind; /* MLPROF_SK_MEMORY or MLPROF_SK_CUDA_ALLOC */
	int64_t bytes;
};

/* PyTorch training steps per service (steps found by the record_function probes). */
#define AGENT_MAX_STEP_SERVICES 64
#define AGENT_MAX_STEP_TIMES	8192 /* step times of one window for the percentiles */
struct agent_steps {
	char service[128];
	uint64_t steps, wall_ns;     /* since the agent started */
	uint64_t p50_ns, p99_ns;     /* step time percentiles of the last window with steps */
	double data_wait_ratio;	     /* data_wait's share of that window's step time */
	uint64_t win_wall, win_data; /* the current window's (reset at each) */
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
	struct agent_inuse inuse[AGENT_MAX_INUSE], inuse_snap[AGENT_MAX_INUSE];
	int n_inuse, n_inuse_snap;
	struct agent_steps steps[AGENT_MAX_STEP_SERVICES], steps_snap[AGENT_MAX_STEP_SERVICES];
	int n_steps, n_steps_snap;
	uint64_t *step_times; /* AGENT_MAX_STEP_TIMES (service index << 48 | ns), on first use */
	size_t n_step_times;
	bool have_pst;
	atomic_bool ready;
	atomic_llong heartbeat_ns;
	uint64_t stop_deadline_ns; /* CLOCK_MONOTONIC: exit by then (0: no stop signal yet) */
	int metric_ids[96];
};

/* realtime - monotonic, read so that the two clocks are as close in time as possible. */
static inline int64_t agent__clock_offset(void)
{
	uint64_t m1 = clock__mono_ns();
	uint64_t r = clock__ns(CLOCK_REALTIME);
	uint64_t m2 = clock__mono_ns();

	return (int64_t)r - (int64_t)(m1 + (m2 - m1) / 2);
}

#endif
