// SPDX-License-Identifier: Apache-2.0
/* Label names and values made valid for Pyroscope (names as identifiers, values as UTF-8). */
#include "label.h"

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

/* Length of the valid UTF-8 sequence at s (1..4), or 0 when invalid. */
static size_t utf8_len(const unsigned char *s)
{
	size_t n;
	unsigned int cp;

	if (s[0] < 0x80)
		return 1;
	if ((s[0] & 0xe0) == 0xc0) {
		n = 2;
		cp = s[0] & 0x1f;
	} else if ((s[0] & 0xf0) == 0xe0) {
		n = 3;
		cp = s[0] & 0x0f;
	} else if ((s[0] & 0xf8) == 0xf0) {
		n = 4;
		cp = s[0] & 0x07;
	} else {
		return 0;
	}
	for (size_t i = 1; i < n; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		cp = (cp << 6) | (s[i] & 0x3f);
	}
	if ((n == 2 && cp < 0x80) || (n == 3 && cp < 0x800) || (n == 4 && cp < 0x10000) ||
	    cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	return n;
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
		size_t l = utf8_len(s);

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
