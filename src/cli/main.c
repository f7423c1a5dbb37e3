// SPDX-License-Identifier: Apache-2.0
/* mlprof command line: dispatches to the record, agent and diff subcommands. */
#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "agent/agent.h"
#include "capture/privilege.h"
#include "cli/commands.h"

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
		"  diff     compare two pprof profiles: functions whose share changed most, a\n"
		"           regression gate for CI (mlprof diff --help)\n"
		"  version  print the version\n"
		"\n"
		"record and agent need root, or these capabilities:\n"
		"  " PRIVILEGE_CAPS "\n"
		"  (and CAP_SYSLOG for kernel symbol names when kernel.perf_event_paranoid > 1)\n");
}

/* True when argv asks for help (up to a "--" that starts a command to launch). */
static bool wants_help(int argc, char **argv)
{
	for (int i = 1; i < argc && strcmp(argv[i], "--") != 0; i++)
		if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0)
			return true;
	return false;
}

/*
 * One line naming each missing capability, before any option is acted on (a half-started
 * capture that reads nothing of other users' processes would look like an empty profile).
 * Returns 0 to go on, or the exit status.
 */
static int check_privilege(const char *cmd, int argc, char **argv)
{
	char missing[PRIVILEGE_MISSING_MAX];

	if (wants_help(argc, argv) || privilege__missing(missing, sizeof(missing)) != -EPERM)
		return 0;
	fprintf(stderr, "mlprof: %s: need root or %s; missing %s\n", cmd, PRIVILEGE_CAPS, missing);
	return 1;
}

int main(int argc, char **argv)
{
	int ret;

	if (argc < 2) {
		usage(stderr);
		return 2;
	}
	if (strcmp(argv[1], "record") == 0) {
		ret = check_privilege(argv[1], argc - 1, argv + 1);
		return ret ? ret : record__main(argc - 1, argv + 1);
	}
	if (strcmp(argv[1], "agent") == 0) {
		/* a peer closing a TLS or /metrics connection, or the reader of stderr going
		 * away, must cost one write (EPIPE), never the daemon */
		signal(SIGPIPE, SIG_IGN);
		ret = check_privilege(argv[1], argc - 1, argv + 1);
		return ret ? ret : agent__main(argc - 1, argv + 1);
	}
	if (strcmp(argv[1], "diff") == 0)
		return diff__main(argc - 1, argv + 1);
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
