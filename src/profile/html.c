// SPDX-License-Identifier: Apache-2.0
/* Escaping for the HTML pages (flame graphs, diffs): text and JSON inside <script>. */
#include "profile/html.h"

#include <stdint.h>

#include "util/utf8.h"

/* See html.h. */
void html__json_str(FILE *f, const char *str)
{
	const unsigned char *s = (const unsigned char *)str;

	fputc('"', f);
	while (*s) {
		uint32_t cp;
		size_t n = utf8__decode(s, &cp);

		if (!n) {
			fputs("\\ufffd", f);
			s++;
			continue;
		}
		if (cp == '"' || cp == '\\')
			fprintf(f, "\\%c", (char)cp);
		else if (cp < 0x20 || cp == '<' || cp == '>' || cp == '&' || cp == 0x2028 ||
			 cp == 0x2029)
			fprintf(f, "\\u%04x", (unsigned int)cp);
		else
			fwrite(s, 1, n, f);
		s += n;
	}
	fputc('"', f);
}

/* See html.h. */
void html__text(FILE *f, const char *str, size_t max_chars)
{
	const unsigned char *s = (const unsigned char *)str;
	size_t chars = 0;

	while (*s && (!max_chars || chars < max_chars)) {
		uint32_t cp;
		size_t n = utf8__decode(s, &cp);

		chars++;
		if (!n) {
			fputs("\xef\xbf\xbd", f);
			s++;
			continue;
		}
		switch (cp) {
		case '<':
			fputs("&lt;", f);
			break;
		case '>':
			fputs("&gt;", f);
			break;
		case '&':
			fputs("&amp;", f);
			break;
		case '"':
			fputs("&quot;", f);
			break;
		case '\'':
			fputs("&#39;", f);
			break;
		default:
			if (cp < 0x20)
				fputc(' ', f); /* XML 1.0 forbids most control characters */
			else
				fwrite(s, 1, n, f);
		}
		s += n;
	}
}
