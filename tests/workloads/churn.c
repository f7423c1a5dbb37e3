// SPDX-License-Identifier: Apache-2.0
/*
 * Fork/exec and thread storm for the agent's churn soak (tests/integration/test_churn.py,
 * bench/churn.sh):
 *   churn SECONDS CHURN_A CHURN_B [SHORT_US [PAIR_US [BURST]]]
 * for SECONDS: BURST short-lived children (churn_a/churn_b alternately, SHORT_US of CPU
 * each, default 300 and 100), then one pid-reuse pair: churn_a runs PAIR_US (default 40000)
 * at pid P, exits and is reaped, and churn_b is started at the same pid P with clone3's
 * set_tid (CAP_SYS_ADMIN or CAP_CHECKPOINT_RESTORE; nothing global changes), then again.
 * Meanwhile a thread creates and joins threads ("churn_thr", 500 us each). At the end one
 * JSON line: {"spawned":N,"threads":T,"pairs":M,"reuse_failed":F,"reused":[P,...]}.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <linux/sched.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

static atomic_bool stop;
static atomic_ulong threads;
static volatile uint64_t sink;

static double now(clockid_t clk)
{
	struct timespec ts;

	clock_gettime(clk, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

__attribute__((noinline)) static void *churn_thread_work(void *arg)
{
	double end = now(CLOCK_THREAD_CPUTIME_ID) + 0.0005;
	uint64_t h = (uintptr_t)arg;

	(void)arg;
	while (now(CLOCK_THREAD_CPUTIME_ID) < end)
		h = h * 6364136223846793005ull + 1;
	sink += h;
	return NULL;
}

static void *thread_storm(void *arg)
{
	(void)arg;
	while (!atomic_load(&stop)) {
		pthread_t t[4];
		int n = 0;

		for (int i = 0; i < 4; i++)
			if (!pthread_create(&t[n], NULL, churn_thread_work, NULL)) {
				pthread_setname_np(t[n], "churn_thr");
				n++;
			}
		for (int i = 0; i < n; i++)
			pthread_join(t[i], NULL);
		atomic_fetch_add(&threads, (unsigned long)n);
	}
	return NULL;
}

/* Starts path with argument arg; at pid want when want > 0 (clone3 set_tid). */
static pid_t start(const char *path, const char *arg, pid_t want)
{
	char *argv[] = {(char *)path, (char *)arg, NULL};
	struct clone_args ca = {.exit_signal = SIGCHLD};
	pid_t pid;

	if (!want)
		return posix_spawn(&pid, path, NULL, NULL, argv, environ) ? -1 : pid;
	ca.set_tid = (uintptr_t)&want;
	ca.set_tid_size = 1;
	pid = (pid_t)syscall(SYS_clone3, &ca, sizeof(ca));
	if (pid == 0) {
		execve(path, argv, environ);
		_exit(127);
	}
	return pid;
}

static int reap(pid_t pid)
{
	int st;

	while (waitpid(pid, &st, 0) < 0)
		if (errno != EINTR)
			return -1;
	return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : -1;
}

int main(int argc, char **argv)
{
	unsigned long spawned = 0, pairs = 0, failed = 0, nreused = 0, cap = 1 << 16;
	const char *short_us, *pair_us;
	pid_t *reused;
	pthread_t storm;
	int burst;
	double end;

	if (argc < 4) {
		fprintf(stderr,
			"usage: churn SECONDS CHURN_A CHURN_B [SHORT_US [PAIR_US [BURST]]]\n");
		return 2;
	}
	end = now(CLOCK_MONOTONIC) + atof(argv[1]);
	short_us = argc > 4 ? argv[4] : "300";
	pair_us = argc > 5 ? argv[5] : "40000";
	burst = argc > 6 ? atoi(argv[6]) : 100;
	reused = calloc(cap, sizeof(*reused));
	if (!reused || pthread_create(&storm, NULL, thread_storm, NULL))
		return 1;
	while (now(CLOCK_MONOTONIC) < end) {
		pid_t a, b;

		for (int i = 0; i < burst; i++) {
			pid_t p = start(argv[2 + (i & 1)], short_us, 0);

			if (p > 0 && !reap(p))
				spawned++;
		}
		a = start(argv[2], pair_us, 0);
		if (a <= 0 || reap(a))
			continue;
		spawned++;
		b = start(argv[3], pair_us, a);
		if (b != a || reap(b)) {
			failed++;
			continue;
		}
		spawned++;
		pairs++;
		if (nreused < cap)
			reused[nreused++] = a;
	}
	atomic_store(&stop, true);
	pthread_join(storm, NULL);
	printf("{\"spawned\":%lu,\"threads\":%lu,\"pairs\":%lu,\"reuse_failed\":%lu,\"reused\":[",
	       spawned, atomic_load(&threads), pairs, failed);
	for (unsigned long i = 0; i < nreused; i++)
		printf("%s%d", i ? "," : "", (int)reused[i]);
	printf("]}\n");
	free(reused);
	return 0;
}
