/* SPDX-License-Identifier: Apache-2.0 */
/* `mlprof agent`: the continuous profiling daemon's entry point. */
#ifndef MLPROF_AGENT_H
#define MLPROF_AGENT_H

/* Runs the agent until SIGTERM/SIGINT (argv[0] is "agent"). Returns the process exit status. */
int agent__main(int argc, char **argv);

#endif
