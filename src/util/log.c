// SPDX-License-Identifier: Apache-2.0
/* Leveled logging: text ("mlprof: module: msg") or JSON lines, on stderr. */
#include "util/log.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

static enum log_level min_level = LOG_WARN;
static bool json_out;

static const char *const level_names[] = {"error", "warn", "info", "debug"};

void log__setup(enum log_level level, bool json)
{
	min_level = level;
	json_out = json;
}

int log__parse_level(const char *s, enum log_level *out)
{
	for (unsigned int i = 0; i < sizeof(level_names) / sizeof(level_names[0]); i++) {
		if (strcmp(s, level_names[i]) == 0) {
			*out = (enum log_level)i;
			return 0;
		}
	}
	return -EINVAL;
}

static void json_escape(FILE *f, const char *s)
{
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;
		if (c == '"' || c == '\\')
			fprintf(f, "\\%c", c);
		else if (c < 0x20)
			fprintf(f, "\\u%04x", c);
		else
			fputc(c, f);
	}
}

void log__print(enum log_level level, const char *module, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;

	if (level > min_level)
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (!json_out) {
		fprintf(stderr, "mlprof: %s: %s\n", module, msg);
		return;
	}
	struct timespec ts;
	struct tm tm;
	char when[32];
	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%S", &tm);
	fprintf(stderr, "{\"ts\":\"%s.%03ldZ\",\"level\":\"%s\",\"module\":\"", when,
		ts.tv_nsec / 1000000, level_names[level]);
	json_escape(stderr, module);
	fputs("\",\"msg\":\"", stderr);
	json_escape(stderr, msg);
	fputs("\"}\n", stderr);
}
