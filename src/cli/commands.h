/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Entry points of the subcommands in cli/ (argv[0] is the subcommand name); the agent's is
 * agent/agent.h.
 */
#ifndef MLPROF_COMMANDS_H
#define MLPROF_COMMANDS_H

/* `mlprof record`: one-shot capture. Returns the process exit status. */
int record__main(int argc, char **argv);
/* `mlprof diff`: compares two pprof profiles. Returns 0, 1 (over --threshold) or 2 (error). */
int diff__main(int argc, char **argv);

#endif
