/* SPDX-License-Identifier: Apache-2.0 */
/* Writers that turn a struct profile into files: pprof, folded stacks, flame graphs. */
#ifndef MLPROF_OUTPUT_H
#define MLPROF_OUTPUT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "profile/profile.h"

enum output_format {
	OUTPUT_PPROF = 0, /* gzip-compressed pprof protobuf (.pb.gz, .pprof) */
	OUTPUT_FOLDED, /* Brendan Gregg's folded stacks: "root;child;leaf count" (.folded, .txt) */
	OUTPUT_HTML,   /* self-contained interactive flame graph page (.html) */
	OUTPUT_SVG,    /* self-contained flame graph image (.svg) */
};

/* "pprof|folded|html|svg" -> format. Returns 0 or -EINVAL. */
int output__parse_format(const char *name, enum output_format *out);
/* Guesses the format from a file name's extension; returns -ENOENT when it cannot. */
int output__format_from_path(const char *path, enum output_format *out);
const char *output__format_name(enum output_format fmt);
/* Default extension for a format, e.g. ".pb.gz". */
const char *output__format_ext(enum output_format fmt);

/*
 * Encodes p as a pprof Profile message (Google's profile.proto). When gzip is set the
 * result is gzip-compressed. On success *out is malloc'd (caller frees) and 0 returned;
 * -ENOMEM/-EIO otherwise.
 */
int pprof__encode(const struct profile *p, bool gzip, uint8_t **out, size_t *len);

/* Folded stacks, root first, value index vi, one line per distinct stack. */
int folded__write(const struct profile *p, int vi, FILE *f);

/* Flame graph of value index vi with a title; HTML page or standalone SVG. */
int flamegraph__write_html(const struct profile *p, int vi, const char *title, FILE *f);
int flamegraph__write_svg(const struct profile *p, int vi, const char *title, FILE *f);

/*
 * Writes p to path in fmt, atomically (temp file + rename). Returns 0 or -errno;
 * the error is also logged with the path.
 */
int output__write_file(const struct profile *p, enum output_format fmt, const char *title,
		       const char *path);
/*
 * Whether output__write_file() could write path: creates and removes the temp file it
 * would start with (a directory, a missing parent, /proc, a read-only file system all
 * fail here). Returns 0 or -errno; never touches path itself.
 */
int output__check_writable(const char *path);
/*
 * Writes p in fmt to a new file $TMPDIR/mlprof-XXXXXX-NAME (/tmp without TMPDIR; NAME is
 * the file name of failed, the path that could not be written). The chosen path is written
 * into out. Returns 0 or -errno.
 */
int output__write_fallback(const struct profile *p, enum output_format fmt, const char *title,
			   const char *failed, char *out, size_t len);

#endif
