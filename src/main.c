// SPDX-License-Identifier: Apache-2.0
/* mlprof command line: dispatches to the record and agent subcommands. */
#include <stdio.h>
#include <string.h>

#include "commands.h"

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: mlprof <command> [options]\n"
		"\n"
		"eBPF profiler for ML hosts: CPU stacks with native + kernel frames, pprof "
		"output,\n"
		"flame graphs and continuous upload to Grafana Pyroscope.\n"
		"\n"
		"Commands:\n"
		"  record   profile a PID, the whole host or a launched command once, write pprof\n"
		"           and a flame graph (mlprof record --help)\n"
		"  agent    continuous profiling daemon pushing to Pyroscope or local files\n"
		"           (mlprof agent --help)\n"
		"  version  print the version\n"
		"\n"
		"Run as root (or with CAP_BPF, CAP_PERFMON, CAP_SYS_PTRACE, "
		"CAP_DAC_READ_SEARCH).\n");
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		usage(stderr);
		return 2;
	}
	if (strcmp(argv[1], "record") == 0)
		return record__main(argc - 1, argv + 1);
	if (strcmp(argv[1], "agent") == 0)
		return agent__main(argc - 1, argv + 1);
	if (strcmp(argv[1], "version") == 0 || strcmp(argv[1], "--version") == 0) {
		printf("mlprof %s\n", MLPROF_VERSION);
		return 0;
	}
	if (strcmp(argv[1], "help") == 0 || strcmp(argv[1], "--help") == 0 ||
	    strcmp(argv[1], "-h") == 0) {
		usage(stdout);
		return 0;
	}
	fprintf(stderr, "mlprof: unknown command '%s' (try 'mlprof --help')\n", argv[1]);
	return 2;
}
