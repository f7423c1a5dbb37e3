// SPDX-License-Identifier: Apache-2.0
/* UTF-8 checks and repair (label values, pprof string tables, Python strings). */
#include "utf8.h"

#include <stdlib.h>
#include <string.h>

/* See utf8.h. */
size_t utf8__seq_len(const unsigned char *s)
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
