/* SPDX-License-Identifier: Apache-2.0 */
/* UTF-8 checks and repair for strings from other processes and files (profiles need it). */
#ifndef MLPROF_UTF8_H
#define MLPROF_UTF8_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * Decodes the UTF-8 sequence at s (NUL-terminated) into *cp. Returns its length (1..4), or
 * 0 when invalid (then *cp is not set).
 */
size_t utf8__decode(const unsigned char *s, uint32_t *cp);

/* Characters in the NUL-terminated s, each invalid byte counting as one. */
size_t utf8__count(const char *s);

/*
 * Length of the valid UTF-8 sequence at s (1..4; s NUL-terminated), or 0 when invalid
 * (overlong forms, surrogates and code points past U+10FFFF are invalid).
 */
size_t utf8__seq_len(const unsigned char *s);

/* True when the NUL-terminated s is valid UTF-8. */
bool utf8__valid(const char *s);

/*
 * A copy of s (malloc'd, the caller frees) with each invalid byte replaced by U+FFFD.
 * NULL with errno set on allocation failure.
 */
char *utf8__repair(const char *s);

#endif
