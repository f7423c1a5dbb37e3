// SPDX-License-Identifier: Apache-2.0
/* Unit test: unwinds asynchronous snapshots taken by a SIGPROF handler at random instructions. */
#include <dlfcn.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/time.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

#include "check.h"
#include "mlprof/sample.h"
#include "snapshot.h"
#include "symbolize/proc.h"
#include "unwind/unwind.h"

/*
 * A SIGPROF handler copies the interrupted user registers (uc_mcontext) and the
 * interrupted stack from its rsp upward: exactly what the BPF sampler records, taken at
 * arbitrary instructions (prologues, epilogues, the vDSO, right after syscalls).
 * This file is compiled -O2 -fomit-frame-pointer (tests/unwind.cmake).
 */

#define SNAP_STACK (32 * 1024)
#define NSNAPS	   256
#define MAX_PCS	   256

struct snap {
	struct mlprof_sample s;
	uint8_t stack[SNAP_STACK];
};

static struct snap *snaps;
static volatile int nsnaps, want_snaps;
static uint64_t stack_top; /* end of the main thread's stack mapping */

static void on_prof(int sig, siginfo_t *si, void *ctx)
{
	const ucontext_t *uc = ctx;
	const greg_t *g = uc->uc_mcontext.gregs;
	static const int map[MLPROF_NREGS] = {
		[MLPROF_REG_IP] = REG_RIP,  [MLPROF_REG_SP] = REG_RSP,	[MLPROF_REG_BP] = REG_RBP,
		[MLPROF_REG_BX] = REG_RBX,  [MLPROF_REG_R12] = REG_R12, [MLPROF_REG_R13] = REG_R13,
		[MLPROF_REG_R14] = REG_R14, [MLPROF_REG_R15] = REG_R15, [MLPROF_REG_AX] = REG_RAX,
		[MLPROF_REG_CX] = REG_RCX,  [MLPROF_REG_DX] = REG_RDX,	[MLPROF_REG_SI] = REG_RSI,
		[MLPROF_REG_DI] = REG_RDI,  [MLPROF_REG_R8] = REG_R8,	[MLPROF_REG_R9] = REG_R9,
		[MLPROF_REG_R10] = REG_R10, [MLPROF_REG_R11] = REG_R11,
	};
	struct mlprof_sample *s;
	int i = nsnaps;

	if (i >= want_snaps)
		return;
	s = &snaps[i].s;
	memset(s, 0, sizeof(*s));
	for (int r = 0; r < MLPROF_NREGS; r++)
		s->regs[r] = (uint64_t)g[map[r]];
	/* the handler runs below the interrupted rsp (and its red zone): this is intact */
	snap_fill(s, stack_top, SNAP_STACK);
	nsnaps = i + 1;
}

static void start_sampling(int want)
{
	struct itimerval it = {{0, 1000}, {0, 1000}};
	struct sigaction sa;

	nsnaps = 0;
	want_snaps = want;
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_prof;
	sa.sa_flags = SA_SIGINFO | SA_RESTART;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGPROF, &sa, NULL);
	setitimer(ITIMER_PROF, &it, NULL);
}

static void stop_sampling(void)
{
	struct itimerval it = {{0, 0}, {0, 0}};

	setitimer(ITIMER_PROF, &it, NULL);
	signal(SIGPROF, SIG_IGN);
}

static int wall_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
	return (int)ts.tv_sec;
}

/* ---- the sampled code: -O2, no frame pointers, stack frames of different shapes ---- */

static volatile uint64_t sink;

/* Own work of each level, inlined so the samples land inside the level itself. */
static inline __attribute__((always_inline)) uint64_t mix(uint64_t h, int rounds)
{
	for (int i = 0; i < rounds; i++)
		h = (h ^ (h >> 29)) * 0xbf58476d1ce4e5b9ull + (uint64_t)i;
	return h;
}

__attribute__((noinline)) uint64_t as_leaf(uint64_t x)
{
	return mix(x, 60);
}

__attribute__((noinline)) uint64_t as_c(uint64_t x)
{
	volatile uint64_t buf[24];
	uint64_t r = 0;

	for (int i = 0; i < 24; i++)
		buf[i] = mix(x + (uint64_t)i, 4);
	for (int i = 0; i < 24; i += 12)
		r += as_leaf(buf[i]);
	return r;
}

__attribute__((noinline)) uint64_t as_b(uint64_t x, uint64_t y, uint64_t z)
{
	uint64_t a = x * 3, b = y ^ z, c = z + 1, r = 0;

	for (int i = 0; i < 2; i++) {
		r += as_c(a + (uint64_t)i) ^ b;
		a = mix(a, 60) + c;
		b += r;
	}
	__asm__ volatile("" ::: "memory");
	return r + a + b + c;
}

__attribute__((noinline)) uint64_t as_a(uint64_t x)
{
	uint64_t r = as_b(x, x + 1, x + 2);

	__asm__ volatile("" ::: "memory");
	return mix(r, 120);
}

__attribute__((noinline)) void as_run(void)
{
	uint64_t x = 1;
	int deadline = wall_s() + 20;

	while (nsnaps < want_snaps && wall_s() < deadline) {
		for (int i = 0; i < 64; i++)
			x = mix(as_a(x), 60);
	}
	sink = x;
	__asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) void as_clock_loop(void)
{
	struct timespec ts;
	int deadline = wall_s() + 20;
	uint64_t acc = 0;

	while (nsnaps < want_snaps && wall_s() < deadline) {
		clock_gettime(CLOCK_MONOTONIC, &ts);
		acc += (uint64_t)ts.tv_nsec;
		/* not vDSO-accelerated: the snapshot comes right after the fallback syscall */
		clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
		acc += (uint64_t)ts.tv_nsec;
	}
	sink = acc;
	__asm__ volatile("" ::: "memory");
}

/* ---- checking ---- */

static bool is_func_start(uint64_t pc)
{
	Dl_info info;

	return dladdr((void *)(uintptr_t)pc, &info) && (uint64_t)(uintptr_t)info.dli_saddr == pc;
}

/* After main: only libc frames, then _start of the executable. */
static bool tail_ok(const uint64_t *pcs, int n, int from)
{
	const char *obj;

	if (n - from < 2)
		return false;
	for (int i = from; i < n - 1; i++) {
		sym_of(pcs[i] - 1, &obj);
		if (!strstr(obj, "libc.so"))
			return false;
	}
	return strcmp(sym_of(pcs[n - 1] - 1, &obj), "_start") == 0;
}

/* Does pcs[from..] read names[] then the main tail? */
static bool chain_ok(const uint64_t *pcs, int n, int from, const char *const *names, int nnames)
{
	const char *obj;
	int i;

	for (i = 0; i < nnames; i++) {
		if (from + i >= n)
			return false;
		if (strcmp(sym_of(pcs[from + i] - (from + i ? 1 : 0), &obj), names[i]) != 0)
			return false;
	}
	return tail_ok(pcs, n, from + nnames);
}

static const char *const full_chain[] = {"as_leaf", "as_c",	  "as_b", "as_a",
					 "as_run",  "test_chain", "main"};
#define NFULL ((int)(sizeof(full_chain) / sizeof(full_chain[0])))

__attribute__((noinline)) void test_chain(struct unwinder *u, struct proc *p)
{
	int good = 0, where[NFULL] = {0};

	start_sampling(200);
	as_run();
	stop_sampling();
	CHECK(nsnaps == 200, "only %d snapshots", nsnaps);
	for (int k = 0; k < nsnaps; k++) {
		const struct mlprof_sample *s = &snaps[k].s;
		uint64_t pcs[MAX_PCS];
		enum unwind_end end;
		const char *obj, *leaf = sym_of(s->regs[MLPROF_REG_IP], &obj);
		int n = unwinder__unwind(u, p, s, pcs, MAX_PCS, &end), first = -1;

		for (int i = 0; i < NFULL; i++)
			if (strcmp(leaf, full_chain[i]) == 0)
				first = i;
		if (first >= 0)
			where[first]++;
		if (end == UNWIND_END_COMPLETE && first >= 0 &&
		    chain_ok(pcs, n, 0, full_chain + first, NFULL - first))
			good++;
		else
			dump("async chain", pcs, n, end);
	}
	printf("chain: %d/%d complete and exact (leaf %d, c %d, b %d, a %d, run %d)\n", good,
	       nsnaps, where[0], where[1], where[2], where[3], where[4]);
	CHECK(good * 100 >= nsnaps * 99, "only %d of %d snapshots unwound exactly", good, nsnaps);
	/* the snapshots must really hit several functions, else this proves little */
	for (int i = 0; i < 5; i++)
		CHECK(where[i] >= 10, "only %d snapshots in %s", where[i], full_chain[i]);
}

/* Snapshots inside clock_gettime: the vDSO (mid-function, after its syscall) and libc. */
__attribute__((noinline)) void test_clock(struct unwinder *u, struct proc *p)
{
	static const char *const tail[] = {"as_clock_loop", "test_clock", "main"};
	uint64_t vbase = getauxval(AT_SYSINFO_EHDR), vend = 0;
	int in_vdso = 0, in_libc = 0, good = 0, mid = 0;

	for (size_t i = 0; i < p->n_maps; i++)
		if (strcmp(p->maps[i].path, "[vdso]") == 0)
			vend = p->maps[i].end;
	CHECK(vbase && vend > vbase, "no [vdso] mapping");
	start_sampling(200);
	as_clock_loop();
	stop_sampling();
	CHECK(nsnaps == 200, "only %d snapshots", nsnaps);
	for (int k = 0; k < nsnaps; k++) {
		const struct mlprof_sample *s = &snaps[k].s;
		uint64_t ip = s->regs[MLPROF_REG_IP], pcs[MAX_PCS];
		enum unwind_end end;
		const char *obj, *name = sym_of(ip, &obj);
		bool vdso = ip >= vbase && ip < vend;
		bool ok;
		int n;

		if (!vdso && !(strstr(obj, "libc.so") && strstr(name, "clock_gettime")))
			continue;
		n = unwinder__unwind(u, p, s, pcs, MAX_PCS, &end);
		/* vdso frame (if any), libc's clock_gettime, then the test's chain */
		ok = end == UNWIND_END_COMPLETE && n > 2;
		/* under ASan, libasan's clock_gettime interceptor sits between libc and us */
		int first = vdso ? 2 : 1;
		if (ok && first < n) {
			sym_of(pcs[first] - 1, &obj);
			if (strstr(obj, "libasan") || strstr(obj, "libubsan"))
				first++;
		}
		if (ok && vdso) {
			ok = strstr(sym_of(pcs[1] - 1, &obj), "clock_gettime") &&
			     strstr(obj, "libc.so") && chain_ok(pcs, n, first, tail, 3);
			mid += !is_func_start(ip);
		} else if (ok) {
			ok = chain_ok(pcs, n, first, tail, 3);
		}
		in_vdso += vdso;
		in_libc += !vdso;
		good += ok;
		if (!ok)
			dump(vdso ? "async vdso" : "async libc clock_gettime", pcs, n, end);
	}
	printf("clock: %d/%d complete (vdso %d, %d of them mid-function, libc %d)\n", good,
	       in_vdso + in_libc, in_vdso, mid, in_libc);
	CHECK(in_vdso >= 20 && mid >= 20, "only %d snapshots in the vDSO (%d mid-function)",
	      in_vdso, mid);
	CHECK_INT(good, in_vdso + in_libc);
}

int main(void)
{
	struct proc_cache_config cfg = {.max_procs = 16, .max_elf_files = 64, .proc_root = "/proc"};
	struct proc_cache *pc;
	struct unwinder *u;
	struct proc *p;
	uint64_t here = (uint64_t)(uintptr_t)__builtin_frame_address(0);

	snaps = calloc(NSNAPS, sizeof(*snaps));
	stack_top = stack_end_of(here);
	CHECK(snaps && stack_top, "setup");
	pc = proc_cache__new(&cfg);
	u = pc ? unwinder__new(pc) : NULL;
	p = u ? proc_cache__get(pc, getpid()) : NULL;
	CHECK(p != NULL, "unwinder setup");
	if (!snaps || !stack_top || !p)
		return check_done("unwind_async");

	test_chain(u, p);
	test_clock(u, p);

	unwinder__free(u);
	proc_cache__free(pc);
	free(snaps);
	return check_done("unwind_async");
}
