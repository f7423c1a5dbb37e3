/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The table of event kinds: for each kind of sample the BPF side produces, its pprof sample
 * types, period, Pyroscope profile name and labels. record and the agent both read it, so a
 * new kind is added here once.
 */
#ifndef MLPROF_EVENT_KIND_H
#define MLPROF_EVENT_KIND_H

#include <stdbool.h>
#include <stdint.h>

#include <mlprof/sample.h>

#include "pipeline/pipeline.h"
#include "profile/profile.h"

/* Sample labels a kind adds at most (besides pid/tid/names). */
#define EVENT_KIND_MAX_LABELS 2

struct event_kind {
	enum mlprof_sample_kind kind;
	const char *name;	 /* short name: CLI, logs, output file suffix ("cpu", "offcpu") */
	const char *series_name; /* Pyroscope __name__ of its series ("process_cpu", "offcpu") */
	const char *title;	 /* what a flame graph of it shows */
	int n_values;
	struct profile_value_type values[4]; /* pprof sample types */
	struct profile_value_type period_type;
	bool scaled_by_period; /* values[1] = value x period (sampling: period = 1e9 / Hz) */
	/* memory data (alloc_ and inuse_ types): values are already per window or snapshots, so
	 * Pyroscope must not take deltas of them (__delta__="false") */
	bool memory;
	/* fills the kind's own labels from the sample; returns how many (may be NULL) */
	int (*labels)(const struct sample_info *info, struct profile_label *out);
	/* computes the values (may be NULL: value, then value x period or value) */
	void (*compute)(const struct sample_info *info, int64_t *out);
};

/* Returns the kind's table entry, or NULL for an unknown kind. */
const struct event_kind *event_kind__get(enum mlprof_sample_kind kind);
/* Finds a kind by its short name; NULL when there is none. */
const struct event_kind *event_kind__by_name(const char *name);

/* Fills the sample types and period of a profile of this kind (sampling at freq_hz). */
void event_kind__profile_config(const struct event_kind *ek, unsigned int freq_hz,
				struct profile_config *out);

/*
 * Computes the pprof values of one sample (period: the profile's period) and appends the
 * kind's labels to labels[*n_labels...] (room for EVENT_KIND_MAX_LABELS more).
 */
void event_kind__sample(const struct event_kind *ek, const struct sample_info *info, int64_t period,
			int64_t *values, struct profile_label *labels, int *n_labels);

#endif
