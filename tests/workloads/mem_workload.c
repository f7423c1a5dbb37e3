// SPDX-License-Identifier: Apache-2.0
/*
 * Memory-growth workload for mlprof's integration test it.record_memory, built -O2
 * -fomit-frame-pointer -g0 like production ML binaries. Two known noinline chains bring in
 * anonymous memory with mmap and a write to every page (never through malloc, whose free
 * lists would make the first-touch attribution depend on the allocator's history), with
 * transparent huge pages off for the whole process (one THP fault maps 2 MiB but counts
 * as one 4 KiB fault):
 *
 *   keep:   main -> run_keep -> keep_chain -> touch_pages    KEEP_MIB MiB in 2 MiB mappings
 *           that are never unmapped (the program's memory growth)
 *   churn:  main -> run_churn -> churn_chain -> touch_pages  CHURN_MIB MiB in 4 MiB blocks,
 *           each mapped, written and unmapped at once (transient memory)
 *
 * The two are interleaved (one keep step, then one churn step) over SECONDS, so the churn
 * blocks are mapped and unmapped next to (and often at the addresses of) earlier churn
 * blocks while the kept memory stays. Then one JSON line on stdout: the exact bytes kept
 * and churned, pages written, and the process's minor faults over the run.
 *
 *   mem_workload hold KEEP_MIB CHURN_MIB SECONDS
 *       then waits until stdin reaches EOF (the recording ends while the memory is held),
 *       and exits without unmapping
 *   mem_workload exit KEEP_MIB CHURN_MIB SECONDS
 *       then exits at once without unmapping (the in-use view is the one at process exit)
 *   mem_workload deep MIB MAX_PAD_KIB STEP_KIB
 *       main -> run_deep -> deep_chain -> touch_pages keeps MIB MiB (in 1 MiB mappings)
 *       with each of 0, STEP_KIB, ... MAX_PAD_KIB KiB of the main thread's stack in use by
 *       deep_chain (an alloca written through): main-thread stacks of every depth up to the
 *       stack copy size, whose frames must all be unwound; then exits
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#define MIB	    (1024L * 1024L)
#define KEEP_CHUNK  (2 * MIB)
#define CHURN_BLOCK (4 * MIB)

static long page_size;
static long pages_written;

static int64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void sleep_until(int64_t t)
{
	struct timespec ts = {.tv_sec = t / 1000000000, .tv_nsec = t % 1000000000};

	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) != 0)
		;
}

static void *map_anon(size_t len)
{
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED) {
		perror("mem_workload: mmap");
		exit(1);
	}
	madvise(p, len, MADV_NOHUGEPAGE); /* belt and braces: PR_SET_THP_DISABLE is set too */
	return p;
}

/* The leaf of both chains: the first write to every page is a write fault on anonymous
 * memory (no read first, which would map the zero page). */
__attribute__((noinline)) void touch_pages(volatile char *p, size_t len)
{
	for (size_t off = 0; off < len; off += (size_t)page_size) {
		p[off] = (char)(off >> 12 | 1);
		pages_written++;
	}
	__asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) void keep_chain(size_t len)
{
	touch_pages(map_anon(len), len); /* never unmapped */
	__asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) void run_keep(size_t len)
{
	keep_chain(len);
	__asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) void churn_chain(size_t len)
{
	char *p = map_anon(len);

	touch_pages(p, len);
	if (munmap(p, len) != 0) {
		perror("mem_workload: munmap");
		exit(1);
	}
	__asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) void run_churn(size_t len)
{
	churn_chain(len);
	__asm__ volatile("" ::: "memory");
}

/* Keeps len bytes with pad_kib KiB of the main thread's stack in use below main (the
 * frames of a deep call stack), written first so that those pages are resident. */
__attribute__((noinline)) void deep_chain(size_t len, long pad_kib)
{
	volatile char *pad = __builtin_alloca((size_t)pad_kib * 1024 + 1);

	for (long i = 0; i <= pad_kib * 1024; i += 64)
		pad[i] = (char)i;
	touch_pages(map_anon(len), len);
	__asm__ volatile("" ::"r"(pad) : "memory");
}

__attribute__((noinline)) void run_deep(size_t len, long pad_kib)
{
	deep_chain(len, pad_kib);
	__asm__ volatile("" ::: "memory");
}

/* Reads every page of fresh private anonymous memory: each read maps the shared zero
 * page, which brings no memory in. */
__attribute__((noinline)) void read_chain(size_t len)
{
	volatile char *p = map_anon(len);
	long sum = 0;

	for (size_t off = 0; off < len; off += (size_t)page_size)
		sum += p[off];
	__asm__ volatile("" ::"r"(sum) : "memory");
}

/* Writes every page of shared anonymous memory (shmem pages, not anonymous ones). */
__attribute__((noinline)) void shared_chain(size_t len)
{
	volatile char *p =
		mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED) {
		perror("mem_workload: mmap");
		exit(1);
	}
	for (size_t off = 0; off < len; off += (size_t)page_size)
		p[off] = 1;
	__asm__ volatile("" ::: "memory");
}

/* touch_pages under a function of its own name: the chain the test looks for. */
#define NAMED_TOUCH(name)                                                                          \
	__attribute__((noinline)) void name(volatile char *p, size_t len)                          \
	{                                                                                          \
		touch_pages(p, len);                                                               \
		__asm__ volatile("" ::: "memory");                                                 \
	}

/* Private anonymous memory written, unmapped, and the same addresses mapped again as shared
 * memory and written: the first counts, the second must not (a classification of the
 * address remembered from before the munmap would count it). */
NAMED_TOUCH(reuse_private)
NAMED_TOUCH(reuse_shared)

/*
 * Maps len bytes of private anonymous memory, writes them with before(), maps shared memory
 * at the same addresses (after a munmap when unmap, else over them with MAP_FIXED) and
 * writes that with after().
 */
__attribute__((noinline)) static void remap_shared(size_t len, bool unmap,
						   void (*before)(volatile char *, size_t),
						   void (*after)(volatile char *, size_t))
{
	char *p = map_anon(len), *q;

	before(p, len);
	if (unmap && munmap(p, len) != 0) {
		perror("mem_workload: munmap");
		exit(1);
	}
	q = mmap(p, len, PROT_READ | PROT_WRITE,
		 MAP_SHARED | MAP_ANONYMOUS | (unmap ? MAP_FIXED_NOREPLACE : MAP_FIXED), -1, 0);
	if (q != p) {
		fprintf(stderr, "mem_workload: cannot map shared memory at %p\n", (void *)p);
		exit(1);
	}
	after(q, len);
	__asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) void reuse_chain(size_t len)
{
	remap_shared(len, true, reuse_private, reuse_shared);
	__asm__ volatile("" ::: "memory");
}

/* Private anonymous memory written, then shared memory mapped over it with MAP_FIXED (no
 * munmap: the mmap replaces the mapping) and written: the first counts, the second must
 * not. */
NAMED_TOUCH(fixed_private)
NAMED_TOUCH(fixed_shared)

__attribute__((noinline)) void fixed_chain(size_t len)
{
	remap_shared(len, false, fixed_private, fixed_shared);
	__asm__ volatile("" ::: "memory");
}

/*
 * Private anonymous memory that one thread maps and writes half of, another thread maps
 * shared memory over the other half of (MAP_FIXED), and the first thread then writes: the
 * first half counts, the second must not (a classification that the first thread made
 * before another thread's change must not be trusted after it).
 */
NAMED_TOUCH(cross_private)
NAMED_TOUCH(cross_shared)

static struct {
	char *p;
	size_t len;
	sem_t half_written, remapped;
} cross;

static void *cross_writer(void *arg)
{
	(void)arg;
	cross.p = map_anon(cross.len);
	cross_private(cross.p, cross.len / 2);
	sem_post(&cross.half_written);
	while (sem_wait(&cross.remapped) != 0)
		;
	cross_shared(cross.p + cross.len / 2, cross.len / 2);
	return NULL;
}

__attribute__((noinline)) void cross_chain(size_t len)
{
	pthread_t t;
	void *q;

	cross.len = len;
	if (sem_init(&cross.half_written, 0, 0) || sem_init(&cross.remapped, 0, 0) ||
	    pthread_create(&t, NULL, cross_writer, NULL)) {
		perror("mem_workload: cross_chain");
		exit(1);
	}
	while (sem_wait(&cross.half_written) != 0)
		;
	q = mmap(cross.p + len / 2, len / 2, PROT_READ | PROT_WRITE,
		 MAP_SHARED | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
	if (q != cross.p + len / 2) {
		perror("mem_workload: mmap MAP_FIXED");
		exit(1);
	}
	sem_post(&cross.remapped);
	pthread_join(t, NULL);
	__asm__ volatile("" ::: "memory");
}

/* Private anonymous memory mapped PROT_NONE and made writable page by page, by a SIGSEGV
 * handler, as a write reaches it (as garbage collectors and guard-page allocators do):
 * each page's first write fault is refused and brings nothing in, the retry after the
 * mprotect does. Every page counts once (a classification remembered from before an
 * mprotect would count none or twice). */
static char *protect_base;
static size_t protect_len;

static void protect_handler(int sig, siginfo_t *si, void *uc)
{
	char *a = si->si_addr;

	(void)uc;
	if (a < protect_base || a >= protect_base + protect_len ||
	    mprotect((void *)((uintptr_t)a & ~(uintptr_t)(page_size - 1)), (size_t)page_size,
		     PROT_READ | PROT_WRITE) != 0) {
		signal(sig, SIG_DFL);
		raise(sig);
	}
}

__attribute__((noinline)) void protect_chain(size_t len)
{
	struct sigaction sa = {.sa_sigaction = protect_handler, .sa_flags = SA_SIGINFO};

	protect_base = mmap(NULL, len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (protect_base == MAP_FAILED) {
		perror("mem_workload: mmap");
		exit(1);
	}
	protect_len = len;
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGSEGV, &sa, NULL) != 0) {
		perror("mem_workload: sigaction");
		exit(1);
	}
	touch_pages(protect_base, len);
	signal(SIGSEGV, SIG_DFL);
	__asm__ volatile("" ::: "memory");
}

static long minflt(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return ru.ru_minflt;
}

int main(int argc, char **argv)
{
	long keep_mib, churn_mib, kept = 0, churned = 0, flt0;
	int hold, steps;
	double seconds;
	int64_t t0, step_ns;

	if (argc == 5 && strcmp(argv[1], "deep") == 0) {
		long mib = atol(argv[2]), max_kib = atol(argv[3]), step_kib = atol(argv[4]), flt;
		long kept = 0;

		if (mib < 1 || max_kib < 0 || step_kib < 1) {
			fprintf(stderr,
				"mem_workload: deep MIB >= 1, MAX_PAD_KIB >= 0, STEP_KIB >= 1\n");
			return 2;
		}
		page_size = sysconf(_SC_PAGESIZE);
		if (prctl(PR_SET_THP_DISABLE, 1, 0, 0, 0) != 0)
			perror("mem_workload: PR_SET_THP_DISABLE");
		flt = minflt();
		for (long pad = 0; pad <= max_kib; pad += step_kib)
			for (long i = 0; i < mib; i++) {
				run_deep(MIB, pad);
				kept += MIB;
			}
		printf("{\"mode\":\"deep\",\"kept_bytes\":%ld,\"pages_written\":%ld,"
		       "\"minor_faults\":%ld}\n",
		       kept, pages_written, minflt() - flt);
		return 0;
	}
	if (argc == 4 && strcmp(argv[1], "other") == 0) {
		/* faults that bring no anonymous memory in, around a known kept amount */
		long mib = atol(argv[2]), keep = atol(argv[3]), flt;

		if (mib < 1 || keep < 1) {
			fprintf(stderr, "mem_workload: other MIB >= 1 KEEP_MIB >= 1\n");
			return 2;
		}
		page_size = sysconf(_SC_PAGESIZE);
		if (prctl(PR_SET_THP_DISABLE, 1, 0, 0, 0) != 0)
			perror("mem_workload: PR_SET_THP_DISABLE");
		flt = minflt();
		read_chain((size_t)mib * MIB);
		shared_chain((size_t)mib * MIB);
		reuse_chain((size_t)mib * MIB);
		fixed_chain((size_t)mib * MIB);
		protect_chain((size_t)mib * MIB);
		cross_chain((size_t)mib * MIB);
		run_keep((size_t)keep * MIB);
		printf("{\"mode\":\"other\",\"kept_bytes\":%ld,\"other_bytes\":%ld,"
		       "\"reused_private_bytes\":%ld,\"fixed_private_bytes\":%ld,"
		       "\"protected_bytes\":%ld,\"cross_private_bytes\":%ld,"
		       "\"minor_faults\":%ld}\n",
		       keep * MIB, 4 * mib * MIB + mib * MIB / 2, mib * MIB, mib * MIB, mib * MIB,
		       mib * MIB / 2, minflt() - flt);
		return 0;
	}
	if (argc != 5 || (strcmp(argv[1], "hold") && strcmp(argv[1], "exit"))) {
		fprintf(stderr,
			"usage: %s hold|exit KEEP_MIB CHURN_MIB SECONDS | deep MIB MAX_PAD_KIB "
			"STEP_KIB | other MIB KEEP_MIB\n",
			argv[0]);
		return 2;
	}
	hold = strcmp(argv[1], "hold") == 0;
	keep_mib = atol(argv[2]);
	churn_mib = atol(argv[3]);
	seconds = atof(argv[4]);
	if (keep_mib < 2 || keep_mib % 2 || churn_mib < 4 || churn_mib % 4 || !(seconds > 0)) {
		fprintf(stderr,
			"mem_workload: KEEP_MIB a multiple of 2, CHURN_MIB a multiple of 4, "
			"SECONDS > 0\n");
		return 2;
	}
	page_size = sysconf(_SC_PAGESIZE);
	if (prctl(PR_SET_THP_DISABLE, 1, 0, 0, 0) != 0)
		perror("mem_workload: PR_SET_THP_DISABLE");

	steps = (int)(keep_mib / 2 > churn_mib / 4 ? keep_mib / 2 : churn_mib / 4);
	step_ns = (int64_t)(seconds * 1e9 / steps);
	flt0 = minflt();
	t0 = mono_ns();
	for (int i = 0; i < steps; i++) {
		/* not tail calls: main stays on the stack under the chains */
		if (kept < keep_mib * MIB) {
			run_keep(KEEP_CHUNK);
			kept += KEEP_CHUNK;
		}
		if (churned < churn_mib * MIB) {
			run_churn(CHURN_BLOCK);
			churned += CHURN_BLOCK;
		}
		sleep_until(t0 + (i + 1) * step_ns);
	}
	printf("{\"mode\":\"%s\",\"kept_bytes\":%ld,\"churned_bytes\":%ld,\"pages_written\":%ld,"
	       "\"minor_faults\":%ld,\"page_size\":%ld,\"seconds\":%.3f}\n",
	       argv[1], kept, churned, pages_written, minflt() - flt0, page_size,
	       (double)(mono_ns() - t0) / 1e9);
	fflush(stdout);
	if (hold) {
		char buf[256];

		while (read(0, buf, sizeof(buf)) > 0)
			;
	}
	return 0;
}
