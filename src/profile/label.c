// SPDX-License-Identifier: Apache-2.0
/* Label names and values made valid for Pyroscope (names as identifiers, values as UTF-8). */
#include "profile/label.h"
#include "util/utf8.h"

#include <ctype.h>
#include <stdbool.h>
#include <string.h>

/* See label.h. */
char *labels__sanitize_name(const char *in, char *out, size_t outlen)
{
	size_t n = 0, max = outlen ? outlen - 1 : 0;

	if (!outlen)
		return out;
	if (max > LABEL_NAME_MAX)
		max = LABEL_NAME_MAX;
	if (in[0] >= '0' && in[0] <= '9' && n < max)
		out[n++] = '_';
	for (; *in && n < max; in++) {
		unsigned char c = (unsigned char)*in;
		out[n++] = (isascii(c) && (isalnum(c) || c == '_')) ? (char)c : '_';
	}
	if (!n && max)
		out[n++] = '_';
	out[n] = '\0';
	return out;
}

/* See label.h. */
char *labels__sanitize_value(const char *in, char *out, size_t outlen)
{
	const unsigned char *s = (const unsigned char *)in;
	size_t n = 0, max = outlen ? outlen - 1 : 0;

	if (!outlen)
		return out;
	if (max > LABEL_VALUE_MAX)
		max = LABEL_VALUE_MAX;
	while (*s) {
		size_t l = utf8__seq_len(s);

		if (l <= 1) {
			if (n + 1 > max)
				break;
			out[n++] = (l == 0 || *s < 0x20 || *s == 0x7f) ? '_' : (char)*s;
			s++;
			continue;
		}
		if (n + l > max)
			break;
		memcpy(out + n, s, l);
		n += l;
		s += l;
	}
	out[n] = '\0';
	return out;
}
