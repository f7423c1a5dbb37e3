// SPDX-License-Identifier: Apache-2.0
/*
 * Attaches bench/bare_uprobe.bpf.o's empty program as an entry uprobe on FUNC in LIB for
 * process PID, prints "attached", and holds it until SIGINT/SIGTERM (bench/cuda.sh's
 * reference point: the cost of a uprobe with nothing done in it).
 *
 * Usage: bare_uprobe OBJ LIB FUNC PID
 * Build: cc -O2 -o bare_uprobe bench/bare_uprobe.c -lbpf
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include <bpf/libbpf.h>

static volatile sig_atomic_t stop;

static void on_sig(int sig)
{
	(void)sig;
	stop = 1;
}

int main(int argc, char **argv)
{
	LIBBPF_OPTS(bpf_uprobe_opts, uo);
	struct bpf_program *prog;
	struct bpf_object *obj;
	struct bpf_link *link;

	if (argc != 5) {
		fprintf(stderr, "usage: bare_uprobe OBJ LIB FUNC PID\n");
		return 2;
	}
	obj = bpf_object__open_file(argv[1], NULL);
	if (!obj || bpf_object__load(obj)) {
		fprintf(stderr, "bare_uprobe: cannot load %s\n", argv[1]);
		return 1;
	}
	prog = bpf_object__find_program_by_name(obj, "bare");
	uo.func_name = argv[3];
	link = bpf_program__attach_uprobe_opts(prog, atoi(argv[4]), argv[2], 0, &uo);
	if (!link) {
		fprintf(stderr, "bare_uprobe: cannot attach to %s:%s\n", argv[2], argv[3]);
		return 1;
	}
	signal(SIGINT, on_sig);
	signal(SIGTERM, on_sig);
	printf("attached\n");
	fflush(stdout);
	while (!stop)
		pause();
	bpf_link__destroy(link);
	bpf_object__close(obj);
	return 0;
}
