/* SPDX-License-Identifier: Apache-2.0 */
/* Minimal assertion helpers for mlprof's unit tests (one executable per module). */
#ifndef MLPROF_TEST_CHECK_H
#define MLPROF_TEST_CHECK_H

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

static int check_failures;
static int check_count;

#define CHECK(cond, ...)                                                                           \
	do {                                                                                       \
		check_count++;                                                                     \
		if (!(cond)) {                                                                     \
			check_failures++;                                                          \
			fprintf(stderr, "%s:%d: CHECK(%s) failed: ", __FILE__, __LINE__, #cond);   \
			fprintf(stderr, __VA_ARGS__);                                              \
			fputc('\n', stderr);                                                       \
		}                                                                                  \
	} while (0)

#define CHECK_STR(a, b)                                                                            \
	do {                                                                                       \
		const char *_a = (a), *_b = (b);                                                   \
		CHECK(_a &&_b &&strcmp(_a, _b) == 0, "\"%s\" != \"%s\"", _a ? _a : "(null)",       \
		      _b ? _b : "(null)");                                                         \
	} while (0)

#define CHECK_INT(a, b)                                                                            \
	do {                                                                                       \
		long long _a = (long long)(a), _b = (long long)(b);                                \
		CHECK(_a == _b, "%lld != %lld", _a, _b);                                           \
	} while (0)

/* Call at the end of main: prints a summary and returns the exit status. */
static inline int check_done(const char *name)
{
	printf("%s: %d checks, %d failed\n", name, check_count, check_failures);
	return check_failures ? 1 : 0;
}

#endif
