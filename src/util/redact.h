/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Credentials kept out of log lines: a URL's userinfo and query, an HTTP header's value.
 * Every message that shows a URL or header a user configured goes through these.
 */
#ifndef MLPROF_REDACT_H
#define MLPROF_REDACT_H

#include <stddef.h>

#define REDACTED "<redacted>"

/*
 * Copies s into out (len bytes, always terminated) with each URL in it (s may be a
 * whitespace-separated list, as DEBUGINFOD_URLS is) stripped of what can carry a
 * credential: "user:password@" becomes "<redacted>@" and a query string "?<redacted>".
 * Returns out.
 */
const char *redact__url(const char *s, char *out, size_t len);

/* "Name: value" as "Name: <redacted>" (no colon: "<redacted>"). Returns out. */
const char *redact__header(const char *h, char *out, size_t len);

#endif
