// SPDX-License-Identifier: Apache-2.0
/* Micro-benchmark: cost of unwinder__unwind() on real 30-frame snapshots of this process. */
/*
 * Build (after building mlprof_core in BUILD, e.g. build/) and run:
 *   cc -O2 -g -fomit-frame-pointer -D_GNU_SOURCE -Isrc -Iinclude -Itests/unit -o /tmp/unwind_bench
 * \ bench/unwind_bench.c BUILD/libmlprof_core.a -lunwind-x86_64 -lunwind -lelf -lz
 *   /tmp/unwind_bench [ITERATIONS]
 * Prints microseconds per 30-frame stack for one snapshot unwound repeatedly (warm
 * caches) and for 64 different snapshots (different pcs and stack contents) in turn.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "mlprof/sample.h"
#include "symbolize/proc.h"
#include "unwind/unwind.h"

#include "snapshot.h"

#define SNAP_STACK (64 * 1024)
#define NSNAPS	   64
#define DEPTH	   24 /* + bench_capture, leaf variants, run, main, libc x2, _start = 30 */

static uint64_t stack_top;

__attribute__((noinline)) void bench_capture(struct mlprof_sample *s)
{
	__u64 *r = s->regs;

	SNAP_CAPTURE_REGS(r);
	snap_fill(s, stack_top, SNAP_STACK);
}

static volatile uint64_t sink;

/* Three recursive shapes so the snapshots differ in pcs, not only in depth. */
__attribute__((noinline)) uint64_t rec_a(struct mlprof_sample *s, int d, int v);
__attribute__((noinline)) uint64_t rec_b(struct mlprof_sample *s, int d, int v);

__attribute__((noinline)) uint64_t rec_a(struct mlprof_sample *s, int d, int v)
{
	uint64_t r;

	if (d == 0) {
		bench_capture(s);
		return 1;
	}
	r = ((d + v) & 1) ? rec_b(s, d - 1, v) : rec_a(s, d - 1, v);
	__asm__ volatile("" ::: "memory");
	return r * 3 + (uint64_t)d;
}

__attribute__((noinline)) uint64_t rec_b(struct mlprof_sample *s, int d, int v)
{
	volatile uint64_t pad[4] = {(uint64_t)d, 0, 0, 0};
	uint64_t r;

	if (d == 0) {
		bench_capture(s);
		return pad[0];
	}
	r = ((d * v) % 3 == 0) ? rec_a(s, d - 1, v) : rec_b(s, d - 1, v);
	__asm__ volatile("" ::: "memory");
	return r + pad[0];
}

static uint64_t ns_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

int main(int argc, char **argv)
{
	struct proc_cache_config cfg = {.max_procs = 16, .max_elf_files = 64, .proc_root = "/proc"};
	size_t snap_size = sizeof(struct mlprof_sample) + SNAP_STACK;
	int iters = argc > 1 ? atoi(argv[1]) : 20000, frames = 0;
	uint8_t *snaps = calloc(NSNAPS, snap_size);
	uint64_t pcs[256], t0, dt;
	struct unwind_stats st;
	struct proc_cache *pc;
	struct unwinder *u;
	enum unwind_end end;
	struct proc *p;

	stack_top = stack_end_of((uint64_t)(uintptr_t)__builtin_frame_address(0));
	pc = proc_cache__new(&cfg);
	u = pc ? unwinder__new(pc) : NULL;
	p = u ? proc_cache__get(pc, getpid()) : NULL;
	if (!snaps || !stack_top || !p || iters <= 0) {
		fprintf(stderr, "setup failed\n");
		return 1;
	}
	for (int i = 0; i < NSNAPS; i++)
		sink += rec_a((struct mlprof_sample *)(snaps + (size_t)i * snap_size), DEPTH, i);

	for (int i = 0; i < NSNAPS; i++) {
		int n = unwinder__unwind(u, p,
					 (struct mlprof_sample *)(snaps + (size_t)i * snap_size),
					 pcs, 256, &end);

		if (end != UNWIND_END_COMPLETE) {
			fprintf(stderr, "snapshot %d: %d frames, end %s\n", i, n,
				unwind_end__str(end));
			return 1;
		}
		frames = n;
	}

	t0 = ns_now();
	for (int i = 0; i < iters; i++)
		unwinder__unwind(u, p, (struct mlprof_sample *)snaps, pcs, 256, &end);
	dt = ns_now() - t0;
	printf("same snapshot:  %d frames, %.3f us/stack, %.1f ns/frame\n", frames,
	       (double)dt / iters / 1000.0, (double)dt / iters / frames);

	t0 = ns_now();
	for (int i = 0; i < iters; i++)
		unwinder__unwind(u, p,
				 (struct mlprof_sample *)(snaps + (size_t)(i % NSNAPS) * snap_size),
				 pcs, 256, &end);
	dt = ns_now() - t0;
	printf("64 snapshots:   %d frames, %.3f us/stack, %.1f ns/frame\n", frames,
	       (double)dt / iters / 1000.0, (double)dt / iters / frames);

	unwinder__stats(u, &st);
	printf("complete %" PRIu64 " of %" PRIu64 "\n", st.ends[UNWIND_END_COMPLETE], st.unwinds);
	unwinder__free(u);
	proc_cache__free(pc);
	free(snaps);
	return st.ends[UNWIND_END_COMPLETE] == st.unwinds ? 0 : 1;
}
