/* SPDX-License-Identifier: Apache-2.0 */
/* In-memory profile: interns functions/locations/mappings and aggregates identical stacks. */
#ifndef MLPROF_PROFILE_H
#define MLPROF_PROFILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "profile/frame.h"

#define PROFILE_MAX_SAMPLE_TYPES 4
#define PROFILE_MAX_LABELS	 8

struct profile;

/* A (type, unit) pair such as ("cpu", "nanoseconds"). Strings are static or outlive the profile. */
struct profile_value_type {
	const char *type;
	const char *unit;
};

struct profile_config {
	int n_sample_types;
	struct profile_value_type sample_types[PROFILE_MAX_SAMPLE_TYPES];
	struct profile_value_type period_type;
	int64_t period;		/* e.g. 1e9/Hz nanoseconds */
	int64_t time_nanos;	/* start of the window, wall clock ns since epoch */
	int64_t duration_nanos; /* set by profile__set_duration() at the end */
	size_t max_bytes;	/* memory bound for interned data (0 = unlimited) */
};

/* A label on a sample: string value (str != NULL) or numeric value with optional unit. */
struct profile_label {
	const char *key;
	const char *str;
	int64_t num;
	const char *num_unit;
};

/* Creates an empty profile. Returns NULL with errno set on failure. Caller owns it. */
struct profile *profile__new(const struct profile_config *cfg);
void profile__free(struct profile *p);

/*
 * Adds one stack (frames[0] = leaf) with values[n_sample_types] and labels.
 * Identical (stack, labels) pairs are merged by summing values. Returns 0, or -ENOMEM
 * (-ENOSPC when max_bytes is reached: the sample is counted in profile__dropped()).
 */
int profile__add(struct profile *p, const struct frame *frames, int n_frames, const int64_t *values,
		 const struct profile_label *labels, int n_labels);

/*
 * Adds to dst (one sample type) every sample of src that has a string label key, with src's
 * value vi, its stack and labels unchanged (a view of src, e.g. the training-steps profile:
 * the CPU samples with an ml_phase, in nanoseconds). Returns 0 or -errno; samples that do
 * not fit dst's bound are counted in its profile__dropped().
 */
int profile__add_selected(struct profile *dst, const struct profile *src, const char *key, int vi);
/* Whether a sample of p has a string label key. */
bool profile__any_labelled(const struct profile *p, const char *key);

void profile__set_duration(struct profile *p, int64_t duration_nanos);
/* Sets the start of the profile (wall clock ns since the epoch). */
void profile__set_time(struct profile *p, int64_t time_nanos);
const struct profile_config *profile__config(const struct profile *p);
/* Number of distinct (stack, labels) samples; total of value index vi over all samples. */
size_t profile__n_samples(const struct profile *p);
int64_t profile__total(const struct profile *p, int vi);
/* Samples refused because of the memory bound. */
uint64_t profile__dropped(const struct profile *p);
/* Approximate bytes held by the profile. */
size_t profile__bytes(const struct profile *p);

/* Read-only iteration over the aggregated data, used by the encoders. */
struct profile_sample_view {
	const uint32_t *location_ids; /* leaf first, ids are 1-based indexes into locations */
	int n_locations;
	const int64_t *values;
	const struct profile_label *labels;
	int n_labels;
};
struct profile_location_view {
	uint64_t id;
	uint64_t address;
	uint64_t mapping_id;  /* 0 when none */
	uint64_t function_id; /* 0 when unknown */
	int64_t line;
	enum frame_kind kind;
};
struct profile_function_view {
	uint64_t id;
	const char *name;
	const char *filename; /* may be "" */
	int64_t start_line;   /* 0 when unknown */
};
struct profile_mapping_view {
	uint64_t id;
	uint64_t start, limit, file_offset;
	const char *file;
	const char *build_id; /* "" when unknown */
	bool has_functions;
};

typedef int (*profile_sample_cb)(const struct profile_sample_view *s, void *ctx);
/* Calls cb for each aggregated sample; stops and returns cb's value if non-zero. */
int profile__for_each_sample(const struct profile *p, profile_sample_cb cb, void *ctx);
/*
 * Lets cb rewrite each aggregated sample's values in place (values is the view's, writable),
 * e.g. sampling weights calibrated to exact counts; the totals follow. Samples keep their
 * identity (stack, labels).
 */
typedef void (*profile_rescale_cb)(const struct profile_sample_view *s, int64_t *values, void *ctx);
void profile__rescale(struct profile *p, profile_rescale_cb cb, void *ctx);
size_t profile__n_locations(const struct profile *p);
size_t profile__n_functions(const struct profile *p);
size_t profile__n_mappings(const struct profile *p);
/* idx is 0-based; the view's id is idx + 1. */
void profile__location(const struct profile *p, size_t idx, struct profile_location_view *out);
void profile__function(const struct profile *p, size_t idx, struct profile_function_view *out);
void profile__mapping(const struct profile *p, size_t idx, struct profile_mapping_view *out);

/*
 * Display name of a location for text outputs (folded, flame graph, summaries):
 * "func" / "func_[k]" (kernel, stackcollapse style) / "func (file.py:line)" (python) /
 * "module+0xoff" for unnamed native frames (off = addr - start + file_offset). Writes into buf.
 */
const char *profile__location_name(const struct profile *p, uint32_t location_id, char *buf,
				   size_t len);

#endif
