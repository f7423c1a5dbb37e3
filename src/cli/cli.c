// SPDX-License-Identifier: Apache-2.0
/* Command-line helpers shared by the subcommands: one-line usage errors. */
#include "cli/cli.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>

/* See cli.h. */
int cli__usage_error(const char *cmd, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "mlprof: %s: ", cmd);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, " (see 'mlprof %s --help')\n", cmd);
	return -EINVAL;
}

/* See cli.h. */
int cli__bad_option(const char *cmd, int opt, const char *word, const char *what)
{
	if (opt && opt < 256)
		return cli__usage_error(cmd, "invalid or incomplete option '-%c'", opt);
	return cli__usage_error(cmd, "%s '%s'", what, word);
}
