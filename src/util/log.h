/* SPDX-License-Identifier: Apache-2.0 */
/* Leveled logging shared by every module: text or JSON lines on stderr. */
#ifndef MLPROF_LOG_H
#define MLPROF_LOG_H

#include <stdbool.h>

enum log_level { LOG_ERROR = 0, LOG_WARN, LOG_INFO, LOG_DEBUG };

/* Sets the minimum level printed and the format (JSON lines when json is true). */
void log__setup(enum log_level level, bool json);
/* Parses "error|warn|info|debug"; returns 0 and sets *out, or -EINVAL. */
int log__parse_level(const char *s, enum log_level *out);
/* Prints one line "mlprof: <module>: <message>" (or a JSON object) if level is enabled. */
void log__print(enum log_level level, const char *module, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* Modules define LOG_MODULE before including this header to get short forms. */
#ifdef LOG_MODULE
#define pr_err(...)   log__print(LOG_ERROR, LOG_MODULE, __VA_ARGS__)
#define pr_warn(...)  log__print(LOG_WARN, LOG_MODULE, __VA_ARGS__)
#define pr_info(...)  log__print(LOG_INFO, LOG_MODULE, __VA_ARGS__)
#define pr_debug(...) log__print(LOG_DEBUG, LOG_MODULE, __VA_ARGS__)
#endif

#endif
