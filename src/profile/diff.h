/* SPDX-License-Identifier: Apache-2.0 */
/* mlprof diff: compares two pprof profiles by each function's share of its profile's total. */
#ifndef MLPROF_DIFF_H
#define MLPROF_DIFF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * A profile is read as pprof consumers read it: each location expands to its lines
 * (inlined callee first), each line names a function; functions are keyed by name and
 * source file. Self time of a sample goes to its leaf function, cumulative time to every
 * function on its stack, once per sample even when recursive (as `pprof -top` counts).
 */

/* One decoded pprof profile, reduced to stacks of functions. */
struct diff_side;

/*
 * Decodes a pprof profile, gzip-compressed or not. On success *out is the caller's (free
 * with diff__side_free) and 0 is returned. Otherwise -EBADMSG (not a pprof profile: *why,
 * when why is not NULL, says what is wrong, a static string), -E2BIG (over 1 GiB
 * decompressed) or -ENOMEM.
 */
int diff__parse(const uint8_t *data, size_t len, struct diff_side **out, const char **why);
/* diff__parse() of a file's contents; -errno of open/read besides diff__parse()'s errors. */
int diff__load(const char *path, struct diff_side **out, const char **why);
void diff__side_free(struct diff_side *s);

/* The profile's sample types ("cpu", "nanoseconds"), 0 <= i < diff__n_types(). */
int diff__n_types(const struct diff_side *s);
const char *diff__type(const struct diff_side *s, int i);
const char *diff__unit(const struct diff_side *s, int i);
/* Sum of sample type i over all samples. */
int64_t diff__total(const struct diff_side *s, int i);
/* duration_nanos of the profile, 0 when it does not say. */
int64_t diff__duration(const struct diff_side *s);

/*
 * Resolves a --sample-index value: a sample type name or a 0-based index; NULL for
 * pprof's default (the profile's default_sample_type, else its last sample type).
 * Returns the index, -ENOENT (no such name) or -ERANGE (index out of range).
 */
int diff__sample_index(const struct diff_side *s, const char *spec);

/* One function of either profile: its values and shares (in %, of its profile's total). */
struct diff_row {
	const char *name; /* display name, unique in the result; owned by the result */
	int64_t self[2];  /* [0] base, [1] new */
	int64_t cum[2];
	double self_pct[2];
	double cum_pct[2];
};

/* Share change of a row in points (new % - base %). */
static inline double diff_row__delta(const struct diff_row *r, bool cum)
{
	return cum ? r->cum_pct[1] - r->cum_pct[0] : r->self_pct[1] - r->self_pct[0];
}

/* Functions of both profiles for one sample type; borrows the sides, which must outlive it. */
struct diff_result;

/*
 * Compares sample type vi[0] of base with vi[1] of new (the caller checks that they
 * name the same type). Both totals must be positive (-EINVAL otherwise). Rows start in
 * name order. On success *out is the caller's (diff__result_free); -ENOMEM otherwise.
 */
int diff__compare(const struct diff_side *base, const struct diff_side *new, const int vi[2],
		  struct diff_result **out);
void diff__result_free(struct diff_result *r);
/* Totals of the compared sample type: [0] base, [1] new. */
int64_t diff__result_total(const struct diff_result *r, int side);
size_t diff__n_rows(const struct diff_result *r);
const struct diff_row *diff__row(const struct diff_result *r, size_t i);
/*
 * Orders the rows by the size of their self (or cum) share change, largest first; ties by
 * the other change, then by name.
 */
void diff__sort(struct diff_result *r, bool by_cum);

/* Called with one sample's stack (row ids, leaf first) and its value. */
typedef int (*diff_stack_cb)(const uint32_t *rows, int n, int64_t value, void *ctx);
/*
 * Calls cb for every sample of one side (0 base, 1 new) with a non-zero value; stack
 * entries are row ids, the same function in both sides, named by diff__row_name().
 * Stops and returns cb's value when non-zero; 0 otherwise (-ENOMEM).
 */
int diff__for_each_stack(const struct diff_result *r, int side, diff_stack_cb cb, void *ctx);
/* Display name of a row id given by diff__for_each_stack(). */
const char *diff__row_name(const struct diff_result *r, uint32_t id);

/*
 * Formats v for people: nanoseconds (and micro/milliseconds, seconds) as ns/us/ms/s,
 * bytes as B/KiB/MiB/GiB/TiB, anything else as the number and its unit ("count" left
 * out). Writes into buf and returns it.
 */
const char *diff__format_value(int64_t v, const char *unit, char *buf, size_t len);

/* The profile's default_sample_type index, or -1 when it names none. */
int diff__default_type(const struct diff_side *s);

#endif
