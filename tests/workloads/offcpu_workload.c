// SPDX-License-Identifier: Apache-2.0
/*
 * Off-CPU workload for mlprof's integration tests (it.record_offcpu, it.agent_offcpu),
 * built -O2 -fomit-frame-pointer -g0 like production ML binaries. Every blocking call sits
 * in a noinline function with a known caller chain, and the program times each one itself:
 * off-CPU time of a call = CLOCK_MONOTONIC delta - CLOCK_THREAD_CPUTIME_ID delta (the wall
 * time the thread spent in the call without running). Per-chain totals are printed as one
 * JSON line on stdout at the end.
 *
 *   offcpu_workload chains SECONDS [TOKEN]
 *     A  main -> run_sleeper -> sleep_chain_a -> nanosleep                 (main thread)
 *     B  reader_main -> read_chain_b -> read        (thread wl-reader, pipe fed by
 *        writer_main -> write_chain, thread wl-writer, after write_delay's nanosleep)
 *     C  waiter_main -> lock_chain_c -> pthread_mutex_lock    (thread wl-waiter), while
 *        holder_main -> hold_chain -> burn_spin keeps the mutex burning CPU (wl-holder)
 *   offcpu_workload pingpong ROUNDS [TOKEN]
 *     ping_main -> ping_chain -> read, pong_main -> pong_chain -> read: two threads
 *     bouncing a byte over two pipes (wl-ping, wl-pong), a few microseconds of CPU a turn.
 *
 * TOKEN is ignored: it makes the command line unique for the agent's --process-regex.
 * With OFFCPU_GATE=1 in the environment, chains first waits for a byte on stdin (so a
 * profiler can be attached to the pid before anything is measured).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define SLEEP_NS   6000000 /* chain A: one nanosleep */
#define WRITE_NS   7000000 /* chain B: the writer's delay before each byte */
#define HOLD_NS	   8000000 /* chain C: how long the holder keeps the mutex */
#define PAUSE_NS   2000000 /* chain C: the holder's pause between two holds */
#define PP_SPIN_NS 10000   /* pingpong: CPU a thread burns before answering */

volatile uint64_t wl_sink;

static int64_t clock_ns(clockid_t c)
{
	struct timespec ts;

	clock_gettime(c, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* Off-CPU time of one call: wall time minus the thread's CPU time over it. */
struct timing {
	int64_t wall, cpu;
};

static struct timing t_start(void)
{
	struct timing t = {clock_ns(CLOCK_MONOTONIC), clock_ns(CLOCK_THREAD_CPUTIME_ID)};

	return t;
}

static int64_t t_off(struct timing t0)
{
	int64_t wall = clock_ns(CLOCK_MONOTONIC) - t0.wall;
	int64_t cpu = clock_ns(CLOCK_THREAD_CPUTIME_ID) - t0.cpu;

	return wall > cpu ? wall - cpu : 0;
}

static void sleep_ns(long ns)
{
	struct timespec ts = {ns / 1000000000, ns % 1000000000};

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

/* Per-chain totals (ns off the CPU, calls); each written by one thread, read after join. */
struct chain_total {
	int64_t off_ns;
	int64_t wall_ns;
	int64_t max_wall_ns; /* the longest single call */
	long calls;
};

static struct chain_total tot_a, tot_b, tot_c, tot_ping, tot_pong;
static int64_t cpu_burn_ns;

static void account(struct chain_total *t, struct timing t0)
{
	int64_t wall = clock_ns(CLOCK_MONOTONIC) - t0.wall;

	t->wall_ns += wall;
	if (wall > t->max_wall_ns)
		t->max_wall_ns = wall;
	t->off_ns += t_off(t0);
	t->calls++;
}

/* Spins for about ns of thread CPU time. */
__attribute__((noinline)) uint64_t burn_spin(int64_t ns)
{
	int64_t end = clock_ns(CLOCK_THREAD_CPUTIME_ID) + ns;
	uint64_t h = (uint64_t)ns * 0x9e3779b97f4a7c15ull + 1;

	do {
		for (int i = 0; i < 2000; i++) {
			h ^= h << 13;
			h ^= h >> 7;
			h ^= h << 17;
			__asm__ volatile("" : "+r"(h));
		}
	} while (clock_ns(CLOCK_THREAD_CPUTIME_ID) < end);
	wl_sink += h;
	return h;
}

/* --- chain A: main -> run_sleeper -> sleep_chain_a -> nanosleep ------------------------ */

__attribute__((noinline)) int sleep_chain_a(long ns)
{
	struct timing t0 = t_start();
	struct timespec ts = {0, ns};
	int r = nanosleep(&ts, NULL);

	account(&tot_a, t0);
	return r;
}

__attribute__((noinline)) int run_sleeper(int64_t end)
{
	int r = 0;

	while (clock_ns(CLOCK_MONOTONIC) < end)
		r |= sleep_chain_a(SLEEP_NS);
	__asm__ volatile("" ::: "memory");
	return r;
}

/* --- chain B: reader_main -> read_chain_b -> read, fed by the writer -------------------- */

static int pipe_b[2];
static atomic_int stop_all;

__attribute__((noinline)) ssize_t read_chain_b(int fd, char *buf)
{
	struct timing t0 = t_start();
	ssize_t n = read(fd, buf, 1);

	account(&tot_b, t0);
	return n;
}

__attribute__((noinline)) void *reader_main(void *arg)
{
	char c = 0;

	(void)arg;
	pthread_setname_np(pthread_self(), "wl-reader");
	while (read_chain_b(pipe_b[0], &c) == 1 && c == 'x')
		;
	__asm__ volatile("" ::: "memory");
	return NULL;
}

__attribute__((noinline)) void write_delay(long ns)
{
	sleep_ns(ns);
	__asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) int write_chain(int fd, char c)
{
	write_delay(WRITE_NS);
	return (int)write(fd, &c, 1);
}

__attribute__((noinline)) void *writer_main(void *arg)
{
	int64_t end = *(int64_t *)arg;

	pthread_setname_np(pthread_self(), "wl-writer");
	while (clock_ns(CLOCK_MONOTONIC) < end)
		if (write_chain(pipe_b[1], 'x') != 1)
			break;
	write_chain(pipe_b[1], 'q'); /* the reader stops */
	__asm__ volatile("" ::: "memory");
	return NULL;
}

/* --- chain C: waiter_main -> lock_chain_c -> pthread_mutex_lock -------------------------- */

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static sem_t held; /* posted by the holder each time it has taken the mutex */

__attribute__((noinline)) int lock_chain_c(pthread_mutex_t *m)
{
	struct timing t0 = t_start();
	int r = pthread_mutex_lock(m);

	account(&tot_c, t0);
	return r;
}

__attribute__((noinline)) int waiter_wait(sem_t *s)
{
	int r;

	while ((r = sem_wait(s)) && errno == EINTR)
		;
	return r;
}

__attribute__((noinline)) void *waiter_main(void *arg)
{
	(void)arg;
	pthread_setname_np(pthread_self(), "wl-waiter");
	for (;;) {
		if (waiter_wait(&held))
			break;
		if (atomic_load(&stop_all))
			break;
		if (lock_chain_c(&mu))
			break;
		pthread_mutex_unlock(&mu);
	}
	__asm__ volatile("" ::: "memory");
	return NULL;
}

__attribute__((noinline)) uint64_t hold_chain(pthread_mutex_t *m)
{
	uint64_t h;
	int64_t c0;

	pthread_mutex_lock(m);
	sem_post(&held);
	c0 = clock_ns(CLOCK_THREAD_CPUTIME_ID);
	h = burn_spin(HOLD_NS);
	cpu_burn_ns += clock_ns(CLOCK_THREAD_CPUTIME_ID) - c0;
	pthread_mutex_unlock(m);
	return h + 1;
}

__attribute__((noinline)) void holder_pause(long ns)
{
	sleep_ns(ns);
	__asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) void *holder_main(void *arg)
{
	int64_t end = *(int64_t *)arg;

	pthread_setname_np(pthread_self(), "wl-holder");
	while (clock_ns(CLOCK_MONOTONIC) < end) {
		wl_sink += hold_chain(&mu);
		holder_pause(PAUSE_NS);
	}
	atomic_store(&stop_all, 1);
	sem_post(&held);
	__asm__ volatile("" ::: "memory");
	return NULL;
}

static void print_chain(const char *name, const struct chain_total *t, int last)
{
	printf("\"%s\":{\"off_ns\":%lld,\"wall_ns\":%lld,\"max_wall_ns\":%lld,\"calls\":%ld}%s",
	       name, (long long)t->off_ns, (long long)t->wall_ns, (long long)t->max_wall_ns,
	       t->calls, last ? "" : ",");
}

__attribute__((noinline)) int run_chains(double secs)
{
	int64_t start = clock_ns(CLOCK_MONOTONIC), end = start + (int64_t)(secs * 1e9);
	pthread_t tr, tw, tc, th;

	if (pipe(pipe_b) || sem_init(&held, 0, 0))
		return 1;
	if (pthread_create(&tr, NULL, reader_main, NULL) ||
	    pthread_create(&tw, NULL, writer_main, &end) ||
	    pthread_create(&tc, NULL, waiter_main, NULL) ||
	    pthread_create(&th, NULL, holder_main, &end))
		return 1;
	if (run_sleeper(end))
		return 1;
	pthread_join(tw, NULL);
	pthread_join(tr, NULL);
	pthread_join(th, NULL);
	pthread_join(tc, NULL);
	printf("{\"mode\":\"chains\",\"seconds\":%.3f,",
	       (double)(clock_ns(CLOCK_MONOTONIC) - start) / 1e9);
	print_chain("sleep_chain_a", &tot_a, 0);
	print_chain("read_chain_b", &tot_b, 0);
	print_chain("lock_chain_c", &tot_c, 0);
	printf("\"burn_spin_cpu_ns\":%lld}\n", (long long)cpu_burn_ns);
	return 0;
}

/* --- pingpong ---------------------------------------------------------------------------- */

static int ping_fd[2], pong_fd[2];
static long pp_rounds;

__attribute__((noinline)) ssize_t ping_chain(int fd, char *c)
{
	struct timing t0 = t_start();
	ssize_t n = read(fd, c, 1);

	account(&tot_ping, t0);
	return n;
}

__attribute__((noinline)) ssize_t pong_chain(int fd, char *c)
{
	struct timing t0 = t_start();
	ssize_t n = read(fd, c, 1);

	account(&tot_pong, t0);
	return n;
}

__attribute__((noinline)) void *ping_main(void *arg)
{
	char c = 'p';

	(void)arg;
	pthread_setname_np(pthread_self(), "wl-ping");
	for (long i = 0; i < pp_rounds; i++) {
		burn_spin(PP_SPIN_NS);
		if (write(ping_fd[1], &c, 1) != 1 || ping_chain(pong_fd[0], &c) != 1)
			break;
	}
	c = 'q';
	if (write(ping_fd[1], &c, 1) != 1)
		return NULL;
	__asm__ volatile("" ::: "memory");
	return NULL;
}

__attribute__((noinline)) void *pong_main(void *arg)
{
	char c;

	(void)arg;
	pthread_setname_np(pthread_self(), "wl-pong");
	while (pong_chain(ping_fd[0], &c) == 1 && c == 'p') {
		burn_spin(PP_SPIN_NS);
		if (write(pong_fd[1], &c, 1) != 1)
			break;
	}
	__asm__ volatile("" ::: "memory");
	return NULL;
}

__attribute__((noinline)) int run_pingpong(long rounds)
{
	pthread_t a, b;
	int64_t t0 = clock_ns(CLOCK_MONOTONIC);

	pp_rounds = rounds;
	if (pipe(ping_fd) || pipe(pong_fd))
		return 1;
	if (pthread_create(&b, NULL, pong_main, NULL) || pthread_create(&a, NULL, ping_main, NULL))
		return 1;
	pthread_join(a, NULL);
	pthread_join(b, NULL);
	printf("{\"mode\":\"pingpong\",\"rounds\":%ld,\"seconds\":%.3f,", rounds,
	       (double)(clock_ns(CLOCK_MONOTONIC) - t0) / 1e9);
	print_chain("ping_chain", &tot_ping, 0);
	print_chain("pong_chain", &tot_pong, 1);
	printf("}\n");
	return 0;
}

/* Waits for one byte on stdin when OFFCPU_GATE=1. */
__attribute__((noinline)) int wait_gate(void)
{
	const char *g = getenv("OFFCPU_GATE");
	char c;

	if (!g || strcmp(g, "1") != 0)
		return 0;
	return read(0, &c, 1) == 1 ? 0 : 1;
}

int main(int argc, char **argv)
{
	int r = 2;

	/* not tail calls: main stays on the stack under the chains */
	if (argc >= 3 && strcmp(argv[1], "chains") == 0)
		r = wait_gate() ? 1 : run_chains(atof(argv[2]));
	else if (argc >= 3 && strcmp(argv[1], "pingpong") == 0)
		r = run_pingpong(atol(argv[2]));
	else
		fprintf(stderr, "usage: %s chains SECONDS [TOKEN] | pingpong ROUNDS [TOKEN]\n",
			argv[0]);
	fflush(stdout);
	return r;
}
