// SPDX-License-Identifier: Apache-2.0
/* Option values from text (parse.h). */
#include "util/parse.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* See parse.h. */
int parse__bool(const char *s, bool *out)
{
	static const char *const t[] = {"1", "true", "yes", "on"};
	static const char *const f[] = {"0", "false", "no", "off"};

	for (int i = 0; i < 4; i++) {
		if (strcasecmp(s, t[i]) == 0) {
			*out = true;
			return 0;
		}
		if (strcasecmp(s, f[i]) == 0) {
			*out = false;
			return 0;
		}
	}
	return -EINVAL;
}

/* See parse.h. */
int parse__u64(const char *s, uint64_t *out, const char **end)
{
	char *e;
	unsigned long long v;

	if (!isdigit((unsigned char)*s))
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &e, 10);
	if (errno)
		return -ERANGE;
	*out = v;
	*end = e;
	return 0;
}

/* See parse.h. */
int parse__bytes(const char *s, uint64_t *out)
{
	static const struct {
		const char *sfx;
		unsigned int shift;
	} units[] = {{"", 0},	  {"b", 0},   {"k", 10},   {"kb", 10}, {"kib", 10},
		     {"m", 20},	  {"mb", 20}, {"mib", 20}, {"g", 30},  {"gb", 30},
		     {"gib", 30}, {"t", 40},  {"tib", 40}};
	const char *end;
	uint64_t v;

	if (parse__u64(s, &v, &end))
		return -EINVAL;
	for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
		if (strcasecmp(end, units[i].sfx) == 0) {
			if (units[i].shift && v > (UINT64_MAX >> units[i].shift))
				return -ERANGE;
			*out = v << units[i].shift;
			return 0;
		}
	}
	return -EINVAL;
}

/* See parse.h. */
int parse__secs_ms(const char *s, uint64_t *out)
{
	char *end;
	double v;
	size_t n = strlen(s);

	if (!n || !(isdigit((unsigned char)s[0]) || s[0] == '.'))
		return -EINVAL;
	errno = 0;
	v = strtod(s, &end);
	if (errno || !isfinite(v) || v < 0)
		return -EINVAL;
	if (strcmp(end, "ms") == 0)
		v /= 1000.0;
	else if (strcmp(end, "s") != 0 && *end)
		return -EINVAL;
	if (v * 1000.0 > (double)UINT32_MAX)
		return -ERANGE;
	*out = (uint64_t)llround(v * 1000.0);
	return 0;
}

/* See parse.h. */
char *parse__trim(char *s)
{
	char *e;

	while (isspace((unsigned char)*s))
		s++;
	e = s + strlen(s);
	while (e > s && isspace((unsigned char)e[-1]))
		*--e = '\0';
	return s;
}
