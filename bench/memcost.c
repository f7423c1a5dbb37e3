// SPDX-License-Identifier: Apache-2.0
/*
 * Per-event costs for bench/memory.sh: what one write fault and one mprotect cost, each
 * timed as the fastest of many short rounds, so that a neighbour on the host (which slows
 * some rounds, never speeds one up) drops out and a profiler's cost (which every round
 * pays) stays. Run under each profiler configuration; the differences are that
 * configuration's cost per event, which bench/memory.sh multiplies by memalloc's event
 * rates.
 *
 *   memcost ROUNDS
 * prints one line: fault_ns mprotect_ns
 *   fault_ns: one write fault on fresh private anonymous memory (THP off), from a round that
 *     maps 4 MiB (as memalloc's blocks), writes every page and unmaps it (not timed)
 *   mprotect_ns: one mprotect of one page of a private anonymous mapping that is already
 *     present (alternately read-only and read-write), from a round of 2000
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

#define FAULT_BYTES	(4L << 20)
#define MPROTECT_CALLS	2000

static double now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static double fault_round(long page)
{
	volatile char *p = mmap(NULL, FAULT_BYTES, PROT_READ | PROT_WRITE,
				MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	double t0, t;

	if (p == MAP_FAILED) {
		perror("memcost: mmap");
		exit(1);
	}
	t0 = now_ns();
	for (long off = 0; off < FAULT_BYTES; off += page)
		p[off] = 1;
	t = (now_ns() - t0) / (double)(FAULT_BYTES / page);
	munmap((void *)p, FAULT_BYTES);
	return t;
}

static double mprotect_round(char *p, long page)
{
	double t0 = now_ns();

	for (int i = 0; i < MPROTECT_CALLS; i++)
		if (mprotect(p, (size_t)page, i & 1 ? PROT_READ | PROT_WRITE : PROT_READ) != 0) {
			perror("memcost: mprotect");
			exit(1);
		}
	return (now_ns() - t0) / MPROTECT_CALLS;
}

int main(int argc, char **argv)
{
	long rounds = argc > 1 ? atol(argv[1]) : 0, page = sysconf(_SC_PAGESIZE);
	double best_fault = 1e18, best_mprotect = 1e18;
	char *p;

	if (argc != 2 || rounds < 1) {
		fprintf(stderr, "usage: memcost ROUNDS (>= 1)\n");
		return 2;
	}
	if (prctl(PR_SET_THP_DISABLE, 1, 0, 0, 0) != 0)
		perror("memcost: PR_SET_THP_DISABLE");
	p = mmap(NULL, (size_t)page * 2, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1,
		 0);
	if (p == MAP_FAILED) {
		perror("memcost: mmap");
		return 1;
	}
	p[0] = p[page] = 1;
	for (long r = 0; r < rounds; r++) {
		double f = fault_round(page), m = mprotect_round(p, page);

		if (f < best_fault)
			best_fault = f;
		if (m < best_mprotect)
			best_mprotect = m;
	}
	printf("%.1f %.1f\n", best_fault, best_mprotect);
	return 0;
}
