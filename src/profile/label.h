/* SPDX-License-Identifier: Apache-2.0 */
/* One series label (name=value) and Pyroscope's rules for label names and values. */
#ifndef MLPROF_LABEL_H
#define MLPROF_LABEL_H

#include <stddef.h>

struct label_pair {
	const char *name;
	const char *value;
};

#define EXPORT_MAX_LABELS 30   /* Pyroscope's per-series limit */
#define LABEL_NAME_MAX	  1024 /* Pyroscope: label name length */
#define LABEL_VALUE_MAX	  2048 /* Pyroscope: label value length */

/*
 * Writes a valid Pyroscope label name for in ([a-zA-Z_][a-zA-Z0-9_]*, at most
 * LABEL_NAME_MAX chars, and what fits in out): other bytes become '_', a leading digit
 * gets a '_' prefix, an empty name becomes "_". Returns out.
 */
char *labels__sanitize_name(const char *in, char *out, size_t outlen);
/*
 * Copies a label value: control characters and invalid UTF-8 become '_', truncated at a
 * character boundary to LABEL_VALUE_MAX bytes (and to what fits in out). Returns out.
 */
char *labels__sanitize_value(const char *in, char *out, size_t outlen);

#endif
