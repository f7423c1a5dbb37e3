/* SPDX-License-Identifier: Apache-2.0 */
/* Command-line helpers shared by the subcommands: one-line usage errors. */
#ifndef MLPROF_CLI_H
#define MLPROF_CLI_H

/*
 * Prints "mlprof: CMD: MESSAGE (see 'mlprof CMD --help')" as one line on stderr, MESSAGE
 * formatted from fmt. Returns -EINVAL, which the subcommands turn into exit status 2.
 */
int cli__usage_error(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/*
 * cli__usage_error() for an option getopt refused (it returned '?'): "invalid or incomplete
 * option '-X'" when opt (getopt's optopt) names a short option, else "WHAT 'WORD'" where word
 * is the refused argument (argv[optind - 1]) and what says why ("invalid option").
 * Returns -EINVAL.
 */
int cli__bad_option(const char *cmd, int opt, const char *word, const char *what);

#endif
