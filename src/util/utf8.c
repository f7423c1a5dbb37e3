// SPDX-License-Identifier: Apache-2.0
/* UTF-8 checks and repair (label values, pprof string tables, Python strings). */
#include "util/utf8.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* See utf8.h. */
size_t utf8__decode(const unsigned char *s, uint32_t *cp)
{
	size_t n;
	uint32_t c;

	if (s[0] < 0x80) {
		*cp = s[0];
		return 1;
	}
	if ((s[0] & 0xe0) == 0xc0) {
		n = 2;
		c = s[0] & 0x1f;
	} else if ((s[0] & 0xf0) == 0xe0) {
		n = 3;
		c = s[0] & 0x0f;
	} else if ((s[0] & 0xf8) == 0xf0) {
		n = 4;
		c = s[0] & 0x07;
	} else {
		return 0;
	}
	for (size_t i = 1; i < n; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		c = (c << 6) | (s[i] & 0x3f);
	}
	if ((n == 2 && c < 0x80) || (n == 3 && c < 0x800) || (n == 4 && c < 0x10000) ||
	    c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff))
		return 0;
	*cp = c;
	return n;
}

/* See utf8.h. */
size_t utf8__seq_len(const unsigned char *s)
{
	uint32_t cp;

	return utf8__decode(s, &cp);
}

/* See utf8.h. */
size_t utf8__count(const char *str)
{
	const unsigned char *s = (const unsigned char *)str;
	size_t n = 0;
	uint32_t cp;

	while (*s) {
		size_t k = utf8__decode(s, &cp);

		s += k ? k : 1;
		n++;
	}
	return n;
}

/* See utf8.h. */
bool utf8__valid(const char *s)
{
	const unsigned char *p = (const unsigned char *)s;

	while (*p) {
		size_t l = *p < 0x80 ? 1 : utf8__seq_len(p);

		if (!l)
			return false;
		p += l;
	}
	return true;
}

/* See utf8.h. */
char *utf8__repair(const char *s)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t len = strlen(s), o = 0;
	char *out = malloc(len * 3 + 1); /* each bad byte becomes 3 */

	if (!out)
		return NULL;
	while (*p) {
		size_t l = utf8__seq_len(p);

		if (l) {
			memcpy(out + o, p, l);
			o += l;
			p += l;
		} else {
			memcpy(out + o, "\xef\xbf\xbd", 3);
			o += 3;
			p++;
		}
	}
	out[o] = '\0';
	return out;
}
