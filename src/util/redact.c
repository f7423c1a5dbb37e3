// SPDX-License-Identifier: Apache-2.0
/* Credentials kept out of log lines (see redact.h). */
#include <stdbool.h>
#include <string.h>

#include "util/redact.h"

struct out {
	char *p;
	size_t len, n;
};

static void put(struct out *o, const char *s, size_t n)
{
	for (size_t i = 0; i < n && o->n + 1 < o->len; i++)
		o->p[o->n++] = s[i];
	o->p[o->n] = '\0';
}

static bool is_space(char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

/* One URL (no whitespace in it), n bytes at u. */
static void one_url(struct out *o, const char *u, size_t n)
{
	const char *end = u + n, *auth = u, *q, *at = NULL;
	const char *scheme = memchr(u, ':', n);

	if (scheme && scheme + 2 < end && scheme[1] == '/' && scheme[2] == '/')
		auth = scheme + 3;
	/*
	 * userinfo: up to the last '@' of the URL. A password may hold '@', '/', '?' or '#'
	 * (unescaped, as users type them): where the authority ends cannot be told, so an '@'
	 * in a path also hides what precedes it (a log line loses detail, never a secret).
	 */
	for (q = auth; q < end; q++)
		if (*q == '@')
			at = q;
	if (at) {
		put(o, u, (size_t)(auth - u));
		put(o, REDACTED, strlen(REDACTED));
		u = at;
	}
	q = memchr(u, '?', (size_t)(end - u));
	if (q) {
		put(o, u, (size_t)(q - u + 1));
		put(o, REDACTED, strlen(REDACTED));
		return;
	}
	put(o, u, (size_t)(end - u));
}

/* See redact.h. */
const char *redact__url(const char *s, char *out, size_t len)
{
	struct out o = {out, len, 0};

	if (!len)
		return out;
	out[0] = '\0';
	while (s && *s) {
		size_t n = 0;

		while (s[n] && is_space(s[n]))
			n++;
		put(&o, s, n);
		s += n;
		for (n = 0; s[n] && !is_space(s[n]); n++)
			;
		one_url(&o, s, n);
		s += n;
	}
	return out;
}

/* See redact.h. */
const char *redact__header(const char *h, char *out, size_t len)
{
	struct out o = {out, len, 0};
	const char *colon = h ? strchr(h, ':') : NULL;

	if (!len)
		return out;
	out[0] = '\0';
	if (colon)
		put(&o, h, (size_t)(colon - h + 1));
	put(&o, colon ? " " REDACTED : REDACTED, strlen(REDACTED) + (colon ? 1 : 0));
	return out;
}
