// SPDX-License-Identifier: Apache-2.0
/* Symbol demangling: C++ via libstdc++, Rust legacy and v0 via libiberty (Debian's libiberty-dev).
 */
#include <errno.h>
#include <libiberty/demangle.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "symbolize/demangle.h"

/* libstdc++'s abi::__cxa_demangle, declared with C linkage. */
char *__cxa_demangle(const char *mangled, char *buf, size_t *len, int *status);

#define DEMANGLE_MAX_IN 8192 /* longer names are returned as they are */

static bool is_hex(char c)
{
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
}

/*
 * The suffix LLVM or GCC appended to a Rust symbol (".cold", ".llvm.<hash>"), or "".
 * v0 names never contain '.'; legacy names do ("..", "$u2e$"), so there the suffix is what
 * follows the "h<16 hex>E" hash component.
 */
static const char *rust_suffix(const char *m)
{
	const char *dot, *p;

	if (m[1] == 'R') {
		dot = strchr(m, '.');
		return dot ? dot : "";
	}
	for (p = m + strlen(m); p - m >= 18; p--) {
		bool hash = p[-1] == 'E' && p[-18] == 'h';

		for (int i = 2; hash && i < 18; i++)
			hash = is_hex(p[-i]);
		if (hash)
			return p;
	}
	return "";
}

/* Rust (legacy or v0): the demangled name with its kept suffix, NULL when not Rust. */
static char *rust(const char *m)
{
	const char *suffix;
	char *out, *full;

	/* options 0: no DMGL_VERBOSE, so no hash and no crate disambiguators */
	out = rust_demangle(m, 0);
	if (!out)
		return NULL;
	suffix = rust_suffix(m);
	if (!*suffix || strncmp(suffix, ".llvm.", 6) == 0)
		return out;
	if (asprintf(&full, "%s%s", out, suffix) < 0)
		full = NULL;
	free(out);
	return full;
}

/* See demangle.h. */
char *demangle(const char *mangled)
{
	char *out;
	int status = 0;

	if (!mangled) {
		errno = EINVAL;
		return NULL;
	}
	if (strlen(mangled) > DEMANGLE_MAX_IN ||
	    (strncmp(mangled, "_Z", 2) != 0 && strncmp(mangled, "_R", 2) != 0))
		return strdup(mangled);
	out = rust(mangled);
	if (out || mangled[1] == 'R')
		return out ? out : strdup(mangled);
	out = __cxa_demangle(mangled, NULL, NULL, &status);
	if (out && status == 0)
		return out;
	free(out);
	return strdup(mangled);
}
