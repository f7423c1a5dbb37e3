// SPDX-License-Identifier: Apache-2.0
/*
 * Context-switch-heavy workload for bench/offcpu.sh: PAIRS pairs of threads ping-pong one
 * byte over two pipes for ROUNDS round trips each; every hand-off blocks the sender in
 * read(2), so each round trip is at least two voluntary switch-outs (one per thread).
 *
 * Usage: pingpong [-s] [-c] [-w ITERS] PAIRS ROUNDS
 *   -w  before each hand-off, spin ITERS loop iterations (fixed CPU work, for a lower
 *       switch rate)
 *   -s  create the threads, then wait for SIGUSR1 before starting (so a profiler can be
 *       attached with -p PID to a process whose threads already exist)
 *   -c  pin both threads of pair i to CPU i % ncpu (same-CPU hand-offs: the highest
 *       switch rate); default: not pinned
 * Prints one JSON line: wall time of the ping-pong phase, round trips, the context
 * switches of the process in that phase (getrusage: voluntary + involuntary, all threads)
 * and switches per second, and the CPU time (user + sys) its threads used in that phase
 * (a profiler's in-kernel work at each switch is charged to the switching threads).
 *
 * Build: cc -O2 -pthread -o pingpong bench/pingpong.c
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

struct pair {
	int ab[2], ba[2]; /* pipes a->b and b->a */
	long rounds;
	int cpu;	  /* -1: not pinned */
};

static long spin_iters;

static pthread_barrier_t start_barrier;

static void die(const char *what)
{
	fprintf(stderr, "pingpong: %s: %s\n", what, strerror(errno));
	exit(1);
}

static void xwrite(int fd)
{
	char c = 1;

	while (write(fd, &c, 1) != 1)
		if (errno != EINTR)
			die("write");
}

static void xread(int fd)
{
	char c;

	for (;;) {
		ssize_t n = read(fd, &c, 1);

		if (n == 1)
			return;
		if (n == 0 || errno != EINTR)
			die("read");
	}
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Fixed CPU work between two hand-offs. */
static void spin_n(long n)
{
	for (volatile long i = 0; i < n; i++)
		;
}

static void spin(void)
{
	spin_n(spin_iters);
}

static void pin(int cpu)
{
	cpu_set_t set;

	if (cpu < 0)
		return;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	if (pthread_setaffinity_np(pthread_self(), sizeof(set), &set))
		fprintf(stderr, "pingpong: cannot pin to CPU %d\n", cpu);
}

/* Side a: sends first, waits for the echo. */
static void *side_a(void *arg)
{
	struct pair *p = arg;

	pin(p->cpu);
	pthread_barrier_wait(&start_barrier);
	for (long i = 0; i < p->rounds; i++) {
		spin();
		xwrite(p->ab[1]);
		xread(p->ba[0]);
	}
	return NULL;
}

/* Side b: echoes. */
static void *side_b(void *arg)
{
	struct pair *p = arg;

	pin(p->cpu);
	pthread_barrier_wait(&start_barrier);
	for (long i = 0; i < p->rounds; i++) {
		xread(p->ab[0]);
		spin();
		xwrite(p->ba[1]);
	}
	return NULL;
}

/* Context switches and CPU time (user + sys) of all threads of the process so far. */
static long process_usage(double *cpu)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	*cpu = (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
	       (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
	return ru.ru_nvcsw + ru.ru_nivcsw;
}

int main(int argc, char **argv)
{
	int opt, wait_signal = 0, pinned = 0, npairs;
	long rounds, ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	struct pair *pairs;
	sigset_t usr1;
	pthread_t *th;
	double t0, t1, c0, c1;
	long s0, s1;

	while ((opt = getopt(argc, argv, "scw:")) != -1) {
		if (opt == 's')
			wait_signal = 1;
		else if (opt == 'c')
			pinned = 1;
		else if (opt == 'w')
			spin_iters = atol(optarg);
		else
			goto usage;
	}
	if (argc - optind != 2)
		goto usage;
	npairs = atoi(argv[optind]);
	rounds = atol(argv[optind + 1]);
	if (npairs < 1 || rounds < 1)
		goto usage;

	pairs = calloc((size_t)npairs, sizeof(*pairs));
	th = calloc(2 * (size_t)npairs, sizeof(*th));
	if (!pairs || !th)
		die("calloc");
	pthread_barrier_init(&start_barrier, NULL, 2 * (unsigned)npairs + 1);
	/* SIGUSR1 blocked before the threads exist, so they inherit the mask and only
	 * sigwait() below takes it */
	sigemptyset(&usr1);
	sigaddset(&usr1, SIGUSR1);
	if (wait_signal)
		sigprocmask(SIG_BLOCK, &usr1, NULL);
	for (int i = 0; i < npairs; i++) {
		if (pipe(pairs[i].ab) || pipe(pairs[i].ba))
			die("pipe");
		pairs[i].rounds = rounds;
		pairs[i].cpu = pinned ? (int)(i % ncpu) : -1;
		if (pthread_create(&th[2 * i], NULL, side_a, &pairs[i]) ||
		    pthread_create(&th[2 * i + 1], NULL, side_b, &pairs[i]))
			die("pthread_create");
	}
	if (wait_signal) {
		int sig;

		fprintf(stderr, "pingpong: ready, pid %d, waiting for SIGUSR1\n", (int)getpid());
		sigwait(&usr1, &sig);
	}
	s0 = process_usage(&c0);
	t0 = now_s();
	pthread_barrier_wait(&start_barrier);
	for (int i = 0; i < 2 * npairs; i++)
		pthread_join(th[i], NULL);
	t1 = now_s();
	s1 = process_usage(&c1);
	printf("{\"wall_s\": %.6f, \"pairs\": %d, \"round_trips\": %ld, \"switches\": %ld, "
	       "\"switches_per_s\": %.0f, \"cpu_s\": %.6f, \"spin_iters\": %ld}\n",
	       t1 - t0, npairs, (long)npairs * rounds, s1 - s0, (double)(s1 - s0) / (t1 - t0),
	       c1 - c0, spin_iters);
	return 0;
usage:
	fprintf(stderr, "usage: pingpong [-s] [-c] [-w ITERS] PAIRS ROUNDS\n");
	return 2;
}
