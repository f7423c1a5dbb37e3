// SPDX-License-Identifier: Apache-2.0
/* Symbol demangling: C++ Itanium via libstdc++, Rust legacy (_ZN...17h<hash>E) by hand. */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "symcache.h"

/* libstdc++'s abi::__cxa_demangle, declared with C linkage. */
char *__cxa_demangle(const char *mangled, char *buf, size_t *len, int *status);

#define DEMANGLE_MAX_IN 8192 /* longer names are returned as they are */

struct sbuf {
	char *p;
	size_t len, cap;
	bool oom;
};

static void sbuf_add(struct sbuf *b, const char *s, size_t n)
{
	if (b->oom)
		return;
	if (b->len + n + 1 > b->cap) {
		size_t cap = (b->len + n + 1) * 2;
		char *p = realloc(b->p, cap);

		if (!p) {
			b->oom = true;
			return;
		}
		b->p = p;
		b->cap = cap;
	}
	memcpy(b->p + b->len, s, n);
	b->len += n;
	b->p[b->len] = '\0';
}

static bool is_hex(char c)
{
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
}

/* Decodes one Rust legacy path component ("$LT$", "$u20$", ".." ...) into b. */
static void rust_component(struct sbuf *b, const char *s, size_t n)
{
	static const struct {
		const char *esc;
		const char *out;
	} escapes[] = {
		{"$SP$", "@"}, {"$BP$", "*"}, {"$RF$", "&"}, {"$LT$", "<"},
		{"$GT$", ">"}, {"$LP$", "("}, {"$RP$", ")"}, {"$C$", ","},
	};
	size_t i = 0;

	/* a leading '_' only protects a '$' escape at the start */
	if (n >= 2 && s[0] == '_' && s[1] == '$')
		i = 1;
	while (i < n) {
		bool done = false;

		if (s[i] == '$') {
			for (size_t e = 0; e < sizeof(escapes) / sizeof(escapes[0]); e++) {
				size_t el = strlen(escapes[e].esc);

				if (n - i >= el && memcmp(s + i, escapes[e].esc, el) == 0) {
					sbuf_add(b, escapes[e].out, 1);
					i += el;
					done = true;
					break;
				}
			}
			/* $uXX$: a unicode code point in hex (ASCII only here) */
			if (!done && n - i >= 5 && s[i + 1] == 'u') {
				size_t j = i + 2;
				unsigned v = 0;

				while (j < n && j - i < 8 && is_hex(s[j])) {
					v = v * 16 +
					    (unsigned)(s[j] <= '9' ? s[j] - '0' : s[j] - 'a' + 10);
					j++;
				}
				if (j < n && s[j] == '$' && j > i + 2 && v >= 0x20 && v < 0x7f) {
					char c = (char)v;

					sbuf_add(b, &c, 1);
					i = j + 1;
					done = true;
				}
			}
		} else if (s[i] == '.' && i + 1 < n && s[i + 1] == '.') {
			sbuf_add(b, "::", 2);
			i += 2;
			done = true;
		}
		if (!done) {
			sbuf_add(b, s + i, 1);
			i++;
		}
	}
}

/*
 * Rust legacy mangling: _ZN <len><ident>... 17h<16 hex> E [suffix]. Returns the demangled
 * path without the hash, NULL when the name is not of that form (or on ENOMEM).
 */
static char *rust_legacy(const char *m)
{
	const char *p, *comp[64];
	size_t clen[64], n = 0;
	struct sbuf b = {0};

	if (strncmp(m, "_ZN", 3) != 0)
		return NULL;
	p = m + 3;
	while (*p != 'E') {
		size_t len = 0;

		if (*p < '0' || *p > '9')
			return NULL;
		while (*p >= '0' && *p <= '9') {
			len = len * 10 + (size_t)(*p - '0');
			if (len > DEMANGLE_MAX_IN)
				return NULL;
			p++;
		}
		if (len == 0 || strnlen(p, len) < len || n == 64)
			return NULL;
		comp[n] = p;
		clen[n++] = len;
		p += len;
	}
	/* the last component must be the hash: h + 16 lowercase hex digits */
	if (n < 2 || clen[n - 1] != 17 || comp[n - 1][0] != 'h')
		return NULL;
	for (size_t i = 1; i < 17; i++)
		if (!is_hex(comp[n - 1][i]))
			return NULL;
	for (size_t i = 0; i + 1 < n; i++) {
		if (i)
			sbuf_add(&b, "::", 2);
		rust_component(&b, comp[i], clen[i]);
	}
	p++; /* 'E' */
	/* keep suffixes like ".cold" but drop LLVM's ".llvm.<hash>" */
	if (*p && strncmp(p, ".llvm.", 6) != 0)
		sbuf_add(&b, p, strlen(p));
	if (b.oom) {
		free(b.p);
		errno = ENOMEM;
		return NULL;
	}
	return b.p;
}

/* See symcache.h. Not-mangled names come back as a copy; NULL only with errno set. */
char *demangle(const char *mangled)
{
	char *out;
	int status = 0;

	if (!mangled) {
		errno = EINVAL;
		return NULL;
	}
	if (strncmp(mangled, "_Z", 2) != 0 || strlen(mangled) > DEMANGLE_MAX_IN)
		return strdup(mangled);
	out = rust_legacy(mangled);
	if (out)
		return out;
	out = __cxa_demangle(mangled, NULL, NULL, &status);
	if (out && status == 0)
		return out;
	free(out);
	return strdup(mangled);
}
