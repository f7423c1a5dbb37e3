/* SPDX-License-Identifier: Apache-2.0 */
/* Option values from text: booleans, integers, byte sizes, durations; whitespace trimming. */
#ifndef MLPROF_PARSE_H
#define MLPROF_PARSE_H

#include <stdbool.h>
#include <stdint.h>

/* 1/true/yes/on or 0/false/no/off, any case: 0 or -EINVAL. */
int parse__bool(const char *s, bool *out);
/* A decimal integer at the start of s (a digit first), *end after it: 0, -EINVAL, -ERANGE. */
int parse__u64(const char *s, uint64_t *out, const char **end);
/* An integer with an optional K/M/G/T (or KB/KiB ...) suffix, powers of 1024. */
int parse__bytes(const char *s, uint64_t *out);
/* Decimal seconds ("2.5", "2.5s") or "500ms", as milliseconds (at most UINT32_MAX). */
int parse__secs_ms(const char *s, uint64_t *out);
/* s without leading and trailing whitespace (the trailing cut in place). */
char *parse__trim(char *s);

#endif
