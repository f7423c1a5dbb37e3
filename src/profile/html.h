/* SPDX-License-Identifier: Apache-2.0 */
/* Escaping for the HTML pages (flame graphs, diffs): text and JSON inside <script>. */
#ifndef MLPROF_HTML_H
#define MLPROF_HTML_H

#include <stddef.h>
#include <stdio.h>

/*
 * Writes s as a JSON string (quotes included) that is also safe inside <script>: <, >, &
 * and U+2028/9 are \u-escaped so "</script>" or "<!--" never appear; invalid UTF-8 becomes
 * U+FFFD.
 */
void html__json_str(FILE *f, const char *s);

/*
 * Writes s escaped for HTML/XML text and attributes, at most max_chars characters (0: all);
 * invalid UTF-8 becomes U+FFFD, control characters spaces.
 */
void html__text(FILE *f, const char *s, size_t max_chars);

#endif
