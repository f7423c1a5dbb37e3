// SPDX-License-Identifier: Apache-2.0
/* Unit test: unwinds register + stack snapshots of this process's own threads with libunwind. */
#include <dlfcn.h>
#include <errno.h>
#include <inttypes.h>
#include <elf.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "mlprof/sample.h"
#include "snapshot.h"
#include "symbolize/elf.h"
#include "symbolize/proc.h"
#include "symbolize/proc_files.h"
#include "unwind/unwind.h"
#include "unwind/unwind_table.h"

#define SNAP_STACK (128 * 1024)
#define MAX_PCS	   512

/* ---- capturing a snapshot of the calling thread ---- */

static struct mlprof_sample *snap_new(void)
{
	struct mlprof_sample *s = calloc(1, sizeof(*s) + SNAP_STACK);

	if (!s) {
		perror("calloc");
		exit(2);
	}
	return s;
}

/*
 * Records this function's own registers at one instruction, then the stack above it.
 * The callee-saved registers are what the callers left in them, so the unwinder sees
 * exactly what a perf sample taken at that instruction would carry.
 */
__attribute__((noinline)) void uw_capture(void *arg)
{
	struct mlprof_sample *s = arg;
	__u64 *r = s->regs;

	SNAP_CAPTURE_REGS(r);
	snap_fill(s, stack_end_of(r[MLPROF_REG_SP]), SNAP_STACK);
}

static volatile uint64_t sink;

/* The main-thread chain: main -> uw_run_basic -> uw_f1 -> uw_f2 -> uw_f3 -> uw_leaf. */
__attribute__((noinline)) void uw_leaf(struct mlprof_sample *s, uint64_t x)
{
	uint64_t a = x * 13, b = x + 7;

	uw_capture(s);
	__asm__ volatile("" ::: "memory");
	sink = a ^ b;
}

__attribute__((noinline)) void uw_f3(struct mlprof_sample *s, uint64_t x)
{
	uint64_t a = x * 5;

	uw_leaf(s, a);
	__asm__ volatile("" ::: "memory");
	sink += a;
}

__attribute__((noinline)) void uw_f2(struct mlprof_sample *s, uint64_t x)
{
	uint64_t a = x + 11;

	uw_f3(s, a);
	__asm__ volatile("" ::: "memory");
	sink += a;
}

__attribute__((noinline)) void uw_f1(struct mlprof_sample *s, uint64_t x)
{
	uint64_t a = x ^ 3;

	uw_f2(s, a);
	__asm__ volatile("" ::: "memory");
	sink += a;
}

__attribute__((noinline)) void uw_run_basic(struct mlprof_sample *s)
{
	uw_f1(s, 42);
	__asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) uint64_t uw_recurse(struct mlprof_sample *s, int depth)
{
	uint64_t r;

	if (depth == 0) {
		uw_capture(s);
		return 1;
	}
	r = uw_recurse(s, depth - 1);
	__asm__ volatile("" ::: "memory");
	return r + (uint64_t)depth;
}

__attribute__((noinline)) void uw_run_recursion(struct mlprof_sample *s, int depth)
{
	sink = uw_recurse(s, depth);
}

__attribute__((noinline)) void uw_thread_inner(struct mlprof_sample *s)
{
	uw_capture(s);
	__asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) void *uw_thread_fn(void *arg)
{
	uw_thread_inner(arg);
	__asm__ volatile("" ::: "memory");
	return NULL;
}

typedef uint64_t (*uwlib_entry_fn)(void (*cb)(void *), void *arg, uint64_t x);

__attribute__((noinline)) void uw_run_lib(uwlib_entry_fn entry, struct mlprof_sample *s)
{
	sink = entry(uw_capture, s, 5);
	__asm__ volatile("" ::: "memory");
}

/* ---- symbolizing the result ---- */

/* Checks pcs[0..n) against names[], returns the index after the last matched name. */
static int check_chain(const uint64_t *pcs, int n, const char *const *names, int nnames)
{
	int i;

	for (i = 0; i < nnames && i < n; i++) {
		const char *obj, *name = sym_of(i ? pcs[i] - 1 : pcs[i], &obj);

		CHECK_STR(name, names[i]);
	}
	CHECK(n >= nnames, "only %d frames, want >= %d", n, nnames);
	return i;
}

static bool in_libc(uint64_t pc)
{
	const char *obj;

	sym_of(pc - 1, &obj);
	return strstr(obj, "libc.so") != NULL;
}

/* After main: the libc start code, then _start in the executable. */
static void check_main_tail(const uint64_t *pcs, int n, int from)
{
	const char *obj;

	CHECK(n - from >= 2, "tail after main too short: %d", n - from);
	for (int i = from; i < n - 1; i++)
		CHECK(in_libc(pcs[i]), "frame %d after main is not in libc", i);
	CHECK_STR(sym_of(pcs[n - 1] - 1, &obj), "_start");
}

static uint64_t ns_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* ---- tests ---- */

static const char *const basic_chain[] = {"uw_capture", "uw_leaf",	"uw_f3", "uw_f2",
					  "uw_f1",	"uw_run_basic", "main"};
#define NBASIC ((int)(sizeof(basic_chain) / sizeof(basic_chain[0])))

static void test_basic(struct unwinder *u, struct proc *p, struct mlprof_sample *s, uint64_t *full,
		       int *nfull)
{
	uint64_t pcs[MAX_PCS];
	enum unwind_end end = UNWIND_END_BAD_FRAME;
	int n;

	n = unwinder__unwind(u, p, s, pcs, MAX_PCS, &end);
	dump("basic", pcs, n, end);
	CHECK_INT(end, UNWIND_END_COMPLETE);
	CHECK_INT(pcs[0], s->regs[MLPROF_REG_IP]);
	check_main_tail(pcs, n, check_chain(pcs, n, basic_chain, NBASIC));
	memcpy(full, pcs, sizeof(pcs[0]) * (size_t)n);
	*nfull = n;

	/* the same snapshot again goes through libunwind's caches: same answer */
	uint64_t again[MAX_PCS];
	int n2 = unwinder__unwind(u, p, s, again, MAX_PCS, &end);

	CHECK_INT(n2, n);
	CHECK(memcmp(again, pcs, sizeof(pcs[0]) * (size_t)n) == 0, "second unwind differs");
	CHECK_INT(end, UNWIND_END_COMPLETE);
}

static void test_max_depth(struct unwinder *u, struct proc *p, struct mlprof_sample *s,
			   const uint64_t *full)
{
	uint64_t pcs[3];
	enum unwind_end end;
	int n = unwinder__unwind(u, p, s, pcs, 3, &end);

	CHECK_INT(n, 3);
	CHECK_INT(end, UNWIND_END_MAX_DEPTH);
	CHECK(memcmp(pcs, full, sizeof(pcs)) == 0, "max-depth prefix differs");
}

static void test_cut(struct unwinder *u, struct proc *p, const struct mlprof_sample *s,
		     const uint64_t *full, int nfull)
{
	struct mlprof_sample *c = snap_new();
	uint64_t pcs[MAX_PCS];
	enum unwind_end end;
	int cut_seen = 0, last_n = 0;

	for (uint32_t len = 0; len <= s->ustack_len; len += len < 256 ? 8 : 64) {
		int n;

		memcpy(c, s, sizeof(*s) + s->ustack_len);
		c->ustack_len = len;
		c->flags |= MLPROF_SF_USTACK_CUT;
		n = unwinder__unwind(u, p, c, pcs, MAX_PCS, &end);
		CHECK(n >= 1 && n <= nfull, "len %u: %d frames", len, n);
		CHECK(memcmp(pcs, full, sizeof(pcs[0]) * (size_t)n) == 0,
		      "len %u: frames differ from the full unwind", len);
		CHECK(n >= last_n, "len %u: fewer frames (%d) than a shorter copy (%d)", len, n,
		      last_n);
		last_n = n;
		if (n < nfull) {
			CHECK(end == UNWIND_END_STACK_CUT, "len %u: end %s", len,
			      unwind_end__str(end));
			cut_seen++;
		} else {
			CHECK_INT(end, UNWIND_END_COMPLETE);
			break;
		}
		/* without the flag the same failure is a bad frame */
		c->flags &= ~(uint32_t)MLPROF_SF_USTACK_CUT;
		unwinder__unwind(u, p, c, pcs, MAX_PCS, &end);
		CHECK(end == UNWIND_END_BAD_FRAME, "len %u unflagged: end %s", len,
		      unwind_end__str(end));
	}
	CHECK(cut_seen > 5, "only %d cut lengths tried", cut_seen);
	CHECK_INT(last_n, nfull);

	/* a copy of 0 bytes still yields the interrupted pc */
	memcpy(c, s, sizeof(*s));
	c->ustack_len = 0;
	c->flags |= MLPROF_SF_USTACK_CUT;
	CHECK_INT(unwinder__unwind(u, p, c, pcs, MAX_PCS, &end), 1);
	CHECK_INT(end, UNWIND_END_STACK_CUT);
	CHECK_INT(pcs[0], s->regs[MLPROF_REG_IP]);
	free(c);
}

static void test_garbage(struct unwinder *u, struct proc *p, const struct mlprof_sample *s)
{
	struct mlprof_sample *g = snap_new();
	uint64_t pcs[MAX_PCS];
	enum unwind_end end;
	uint64_t seed = 0x9e3779b97f4a7c15ull;
	int n;

	for (int round = 0; round < 200; round++) {
		memset(g, 0, sizeof(*g));
		g->flags = MLPROF_SF_USER_REGS;
		for (int i = 0; i < MLPROF_NREGS; i++) {
			seed = seed * 6364136223846793005ull + 1442695040888963407ull;
			g->regs[i] = seed;
		}
		if (round & 1) /* a valid pc with a garbage stack */
			g->regs[MLPROF_REG_IP] = s->regs[MLPROF_REG_IP];
		if (round & 2) /* stack pointer and bytes that are random words */
			g->regs[MLPROF_REG_SP] = s->regs[MLPROF_REG_SP];
		g->ustack_len = (uint32_t)(round * 64) % 4096;
		for (uint32_t i = 0; i + 8 <= g->ustack_len; i += 8) {
			seed = seed * 6364136223846793005ull + 1442695040888963407ull;
			if (round & 4) /* words that look like code addresses */
				seed = s->regs[MLPROF_REG_IP] + (seed % 4096);
			memcpy(g->ustack + i, &seed, 8);
		}
		g->regs[MLPROF_REG_IP] |= 1; /* never 0 */
		n = unwinder__unwind(u, p, g, pcs, 64, &end);
		CHECK(n >= 1 && n <= 64, "round %d: %d frames", round, n);
		CHECK_INT(pcs[0], g->regs[MLPROF_REG_IP]);
		if (!(round & 1))
			CHECK(end == UNWIND_END_NO_INFO || end == UNWIND_END_BAD_FRAME,
			      "round %d: end %s", round, unwind_end__str(end));
		else
			CHECK(end != UNWIND_END_NO_REGS, "round %d", round);
	}

	/* no registers at all */
	memset(g, 0, sizeof(*g));
	n = unwinder__unwind(u, p, g, pcs, 64, &end);
	CHECK_INT(n, 0);
	CHECK_INT(end, UNWIND_END_NO_REGS);
	free(g);
}

void test_recursion(struct unwinder *u, struct proc *p)
{
	struct mlprof_sample *s = snap_new();
	uint64_t pcs[MAX_PCS];
	enum unwind_end end;
	const char *obj;
	int n, i, rec = 0;
	const int depth = 150;

	uw_run_recursion(s, depth);
	n = unwinder__unwind(u, p, s, pcs, MAX_PCS, &end);
	CHECK_INT(end, UNWIND_END_COMPLETE);
	CHECK_STR(sym_of(pcs[0], &obj), "uw_capture");
	for (i = 1; i < n && strcmp(sym_of(pcs[i] - 1, &obj), "uw_recurse") == 0; i++)
		rec++;
	CHECK_INT(rec, depth + 1);
	CHECK(i + 2 < n, "chain ends after recursion");
	if (i + 2 < n) {
		CHECK_STR(sym_of(pcs[i] - 1, &obj), "uw_run_recursion");
		CHECK_STR(sym_of(pcs[i + 1] - 1, &obj), "test_recursion");
		CHECK_STR(sym_of(pcs[i + 2] - 1, &obj), "main");
		check_main_tail(pcs, n, i + 3);
	}
	free(s);
}

void test_thread(struct unwinder *u, struct proc *p)
{
	static const char *const chain[] = {"uw_capture", "uw_thread_inner", "uw_thread_fn"};
	struct mlprof_sample *s = snap_new();
	uint64_t pcs[MAX_PCS];
	enum unwind_end end;
	pthread_t th;
	int n, i;

	CHECK_INT(pthread_create(&th, NULL, uw_thread_fn, s), 0);
	pthread_join(th, NULL);
	CHECK(s->tid != s->pid, "snapshot not taken in a second thread");
	/* the thread stack is gone now, but the snapshot holds all the unwinder needs */
	n = unwinder__unwind(u, p, s, pcs, MAX_PCS, &end);
	dump("thread", pcs, n, end);
	CHECK_INT(end, UNWIND_END_COMPLETE);
	i = check_chain(pcs, n, chain, 3);
	/* start_thread, then clone3 (.cfi_undefined rip) */
	CHECK_INT(n - i, 2);
	for (; i < n; i++)
		CHECK(in_libc(pcs[i]), "thread frame %d not in libc", i);
	free(s);
}

void test_lib(struct unwinder *u, struct proc *p, void *lib, const char *what)
{
	static const char *const chain[] = {"uw_capture", "uwlib_leaf", "uwlib_mid", "uwlib_entry",
					    "uw_run_lib", "test_lib",	"main"};
	struct mlprof_sample *s = snap_new();
	uint64_t pcs[MAX_PCS];
	enum unwind_end end;
	uwlib_entry_fn entry;
	int n;

	entry = (uwlib_entry_fn)(uintptr_t)dlsym(lib, "uwlib_entry");
	CHECK(entry != NULL, "%s: no uwlib_entry", what);
	if (!entry)
		goto cleanup;
	uw_run_lib(entry, s);
	n = unwinder__unwind(u, p, s, pcs, MAX_PCS, &end);
	dump(what, pcs, n, end);
	CHECK_INT(end, UNWIND_END_COMPLETE);
	check_main_tail(pcs, n, check_chain(pcs, n, chain, 7));
cleanup:
	free(s);
}

/* Checks that the no-hdr fixture really lacks .eh_frame_hdr (else the test proves nothing). */
static void test_fixture_nohdr_shape(void)
{
	struct elf_file *ef = elf_file__open(UW_FIXTURE_NOHDR);
	struct elf_section sec;

	CHECK(ef != NULL, "cannot open %s", UW_FIXTURE_NOHDR);
	if (!ef)
		return;
	CHECK(elf_file__section(ef, ".eh_frame_hdr", &sec) != 0, "fixture has .eh_frame_hdr");
	CHECK_INT(elf_file__section(ef, ".eh_frame", &sec), 0);
	elf_file__put(ef);
}

/* Count of FDEs (entries with a non-zero CIE pointer) in an .eh_frame section. */
static int eh_frame_fdes(const struct elf_section *sec)
{
	uint64_t off = 0;
	int n = 0;

	while (sec->data && sec->size - off >= 8) {
		uint32_t len, id;

		memcpy(&len, sec->data + off, 4);
		if (len == 0 || len == 0xffffffffu || len > sec->size - off - 4)
			break;
		memcpy(&id, sec->data + off + 4, 4);
		n += id != 0;
		off += 4 + (uint64_t)len;
	}
	return n;
}

/*
 * Checks that the debug-frame fixture has .debug_frame and no FDE in .eh_frame: else the
 * toolchain ignored -fno-asynchronous-unwind-tables and the test proves nothing.
 */
static void test_fixture_dbgframe_shape(void)
{
	struct elf_file *ef = elf_file__open(UW_FIXTURE_DBGFRAME);
	struct elf_section sec;

	CHECK(ef != NULL, "cannot open %s", UW_FIXTURE_DBGFRAME);
	if (!ef)
		return;
	CHECK_INT(elf_file__section(ef, ".debug_frame", &sec), 0);
	CHECK(sec.size >= 64, ".debug_frame of %" PRIu64 " bytes", sec.size);
	if (!elf_file__section(ef, ".eh_frame", &sec))
		CHECK_INT(eh_frame_fdes(&sec), 0);
	if (!elf_file__section(ef, ".eh_frame_hdr", &sec) && sec.data && sec.size >= 12) {
		uint32_t count;

		memcpy(&count, sec.data + 8, 4);
		CHECK_INT(count, 0);
	}
	elf_file__put(ef);
}

static uint32_t rd32(const uint8_t *p)
{
	uint32_t v;

	memcpy(&v, p, 4);
	return v;
}

static uint64_t rd64(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, 8);
	return v;
}

/*
 * Checks a translated image: every index entry names an FDE inside the image whose CIE
 * pointer leads back to a CIE (id 0, version 1 or 3, augmentation "") and whose absolute
 * pc is lo + the index's offset; the index is sorted. Returns the number of bad entries.
 */
static int check_translated(const uint8_t *img, size_t len, const int32_t *idx, int n, uint64_t lo)
{
	int bad = 0;

	for (int i = 0; i < n; i++) {
		uint64_t fde = (uint64_t)(uint32_t)idx[2 * i + 1], cie;
		uint32_t flen, cptr, clen;

		if (i && idx[2 * i] < idx[2 * i - 2])
			bad++;
		if (idx[2 * i + 1] < 0 || fde + 24 > len) {
			bad++;
			continue;
		}
		flen = rd32(img + fde);
		cptr = rd32(img + fde + 4);
		if (flen < 20 || flen > len - fde - 4 || cptr == 0 || cptr > fde + 4) {
			bad++;
			continue;
		}
		cie = fde + 4 - cptr;
		if (cie + 10 > len) {
			bad++;
			continue;
		}
		clen = rd32(img + cie);
		if (clen < 6 || clen > len - cie - 4 || rd32(img + cie + 4) != 0 ||
		    (img[cie + 8] != 1 && img[cie + 8] != 3) || img[cie + 9] != 0)
			bad++;
		if (rd64(img + fde + 8) != lo + (uint64_t)(int64_t)idx[2 * i])
			bad++;
	}
	return bad;
}

/* Translates df and checks the result whatever it is; returns the FDE count or -errno. */
static int translate_checked(const uint8_t *df, size_t len, uint64_t lo, uint64_t hi)
{
	uint8_t *img = NULL;
	int32_t *idx = NULL;
	size_t img_len = 0;
	int n = unwind__debug_frame_to_eh(df, len, lo, hi, &img, &img_len, &idx);

	if (n > 0) {
		CHECK(img && idx && img_len > 0, "n %d without output", n);
		if (img && idx)
			CHECK_INT(check_translated(img, img_len, idx, n, lo), 0);
	} else {
		CHECK(!img && !idx, "output on failure %d", n);
	}
	free(img);
	free(idx);
	return n;
}

/* The fixture's real .debug_frame, then corrupted in every way we can think of. */
static void test_debug_frame_translate(void *lib)
{
	struct elf_file *ef = elf_file__open(UW_FIXTURE_DBGFRAME);
	const char *const fns[] = {"uwlib_leaf", "uwlib_mid", "uwlib_entry"};
	const uint64_t lo = 0, hi = 1ull << 30;
	struct elf_section sec;
	uint8_t *img = NULL, *df = NULL;
	int32_t *idx = NULL;
	size_t img_len = 0, len;
	Dl_info info;
	int n, full = 0;

	CHECK(ef != NULL, "cannot open %s", UW_FIXTURE_DBGFRAME);
	if (!ef || elf_file__section(ef, ".debug_frame", &sec) || !sec.data)
		goto cleanup;
	len = sec.size;
	df = malloc(len);
	CHECK(df != NULL, "malloc");
	if (!df)
		goto cleanup;

	/*
	 * The good section: an FDE per function, at the functions' link-time addresses
	 * (3, or more where sanitizer builds add module constructors).
	 */
	n = unwind__debug_frame_to_eh(sec.data, len, lo, hi, &img, &img_len, &idx);
	CHECK(n >= 3, "%d FDEs", n);
	full = n;
	if (n >= 3) {
		CHECK_INT(check_translated(img, img_len, idx, n, lo), 0);
		for (int i = 0; i < 3; i++) {
			void *fn = dlsym(lib, fns[i]);
			bool hit = false;

			CHECK(fn && dladdr(fn, &info), "%s not found", fns[i]);
			if (!fn || !dladdr(fn, &info))
				continue;
			for (int j = 0; j < n; j++)
				hit |= (uint64_t)idx[2 * j] ==
				       (uint64_t)((uintptr_t)fn - (uintptr_t)info.dli_fbase);
			CHECK(hit, "no FDE at %s", fns[i]);
		}
	}
	free(img);
	free(idx);
	img = NULL;
	idx = NULL;

	/* code range excluding everything: no usable FDE */
	CHECK_INT(translate_checked(sec.data, len, hi, hi + 4096), -ENOENT);
	CHECK_INT(translate_checked(sec.data, len, lo, lo), -EINVAL);
	CHECK_INT(translate_checked(NULL, 0, lo, hi), -EINVAL);

	/* truncated at every length: never more FDEs, never a bad one */
	for (size_t cut = 0; cut < len; cut++) {
		memcpy(df, sec.data, cut);
		n = translate_checked(df, cut, lo, hi);
		CHECK(n == -ENOENT || (n > 0 && n < full), "cut %zu: %d", cut, n);
	}
	/* every byte replaced by values that upset lengths, ids and LEBs */
	const uint8_t vals[] = {0x00, 0x01, 0x04, 0x7f, 0x80, 0xfe, 0xff};

	for (size_t i = 0; i < len; i++) {
		for (size_t v = 0; v < sizeof(vals); v++) {
			memcpy(df, sec.data, len);
			df[i] = vals[v];
			n = translate_checked(df, len, lo, hi);
			CHECK(n == -ENOENT || (n > 0 && n <= full), "byte %zu = %#x: %d", i,
			      vals[v], n);
		}
	}
	/* bad lengths: past the end, the 64-bit escape with garbage, zero */
	memcpy(df, sec.data, len);
	memcpy(df, &(uint32_t){0xffffffffu}, 4);
	CHECK_INT(translate_checked(df, len, lo, hi), -ENOENT);
	memcpy(df, &(uint32_t){(uint32_t)len}, 4);
	CHECK_INT(translate_checked(df, len, lo, hi), -ENOENT);
	/* bad CIE pointers in each FDE: past the end, at the FDE itself, into the middle */
	for (uint32_t ptr_case = 0; ptr_case < 4; ptr_case++) {
		uint64_t off = 0;
		int fdes = 0;

		memcpy(df, sec.data, len);
		while (len - off >= 8) {
			uint32_t l = rd32(df + off), id = rd32(df + off + 4);

			if (!l || l > len - off - 4)
				break;
			if (id != 0xffffffffu) {
				uint32_t p = ptr_case == 0   ? (uint32_t)len
					     : ptr_case == 1 ? (uint32_t)off
					     : ptr_case == 2 ? 5
							     : 0x7ffffff0u;

				memcpy(df + off + 4, &p, 4);
				fdes++;
			}
			off += 4 + (uint64_t)l;
		}
		CHECK_INT(fdes, full);
		CHECK_INT(translate_checked(df, len, lo, hi), -ENOENT);
	}

	/*
	 * Hand-made: a 64-bit-format version-4 CIE and a 64-bit FDE, translated to the
	 * 32-bit eh_frame form with version 3 and no address/segment size bytes.
	 */
	static const uint8_t v4[] = {
		/* CIE: len 0xffffffff + 8-byte length 0x14, id ~0 */
		0xff, 0xff, 0xff, 0xff, 0x14, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, 0xff,
		0xff, 0xff, 0xff,
		/* version 4, aug "", address size 8, segment size 0 */
		0x04, 0x00, 0x08, 0x00,
		/* code align 1, data align -8, ra column 16, def_cfa rsp+8, offset rip cfa-8 */
		0x01, 0x78, 0x10, 0x0c, 0x07, 0x08, 0x90, 0x01,
		/* FDE: len 0xffffffff + 8-byte length 0x1b, CIE pointer 0 (section offset) */
		0xff, 0xff, 0xff, 0xff, 0x1b, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
		/* pc 0x401000, range 0x20, advance_loc 1, def_cfa_offset 16 */
		0x00, 0x10, 0x40, 0, 0, 0, 0, 0, 0x20, 0, 0, 0, 0, 0, 0, 0, 0x41, 0x0e, 0x10};
	static const uint8_t want[] = {
		/* CIE: len 14, id 0, version 3, aug "", then the bytes after the sizes */
		0x0e, 0, 0, 0, 0, 0, 0, 0, 0x03, 0x00, 0x01, 0x78, 0x10, 0x0c, 0x07, 0x08, 0x90,
		0x01,
		/* FDE: len 23, CIE pointer 22 (back to offset 0), pc, range, instructions */
		0x17, 0, 0, 0, 0x16, 0, 0, 0, 0x00, 0x10, 0x40, 0, 0, 0, 0, 0, 0x20, 0, 0, 0, 0, 0,
		0, 0, 0x41, 0x0e, 0x10};

	n = unwind__debug_frame_to_eh(v4, sizeof(v4), 0x400000, 0x500000, &img, &img_len, &idx);
	CHECK_INT(n, 1);
	if (n == 1) {
		CHECK_INT(img_len, sizeof(want));
		CHECK(img_len == sizeof(want) && memcmp(img, want, sizeof(want)) == 0,
		      "v4 translation differs");
		CHECK_INT(idx[0], 0x1000);
		CHECK_INT(idx[1], 18);
	}
	/* a version-4 CIE for another address size is refused */
	memcpy(df, v4, sizeof(v4) < len ? sizeof(v4) : len);
	if (len >= sizeof(v4)) {
		df[22] = 4;
		CHECK_INT(translate_checked(df, sizeof(v4), 0x400000, 0x500000), -ENOENT);
	}
cleanup:
	free(img);
	free(idx);
	free(df);
	elf_file__put(ef);
}

/*
 * A frame inside the vDSO: pretend the snapshot's thread was interrupted at the first
 * instruction of a vDSO function called from uw_capture. At a function's first
 * instruction the return address is at [rsp], so the stack copy is the real one with the
 * captured pc pushed on top. The unwinder can only get out of the vDSO through the
 * [vdso] image it reads from the process.
 */
static void test_vdso(struct proc_cache *pc, struct unwinder *u, struct proc *p,
		      const struct mlprof_sample *s, const uint64_t *full, int nfull)
{
	uint64_t base = getauxval(AT_SYSINFO_EHDR), fn = 0;
	const struct proc_map *m;
	struct elf_file *ef;
	struct elf_section hdr;
	struct mlprof_sample *v;
	uint64_t pcs[MAX_PCS];
	enum unwind_end end;
	int n;

	CHECK(base != 0, "no vDSO");
	if (!base)
		return;
	m = NULL;
	for (size_t i = 0; i < p->n_maps; i++)
		if (strcmp(p->maps[i].path, "[vdso]") == 0)
			m = &p->maps[i];
	CHECK(m != NULL, "no [vdso] mapping");
	if (!m)
		return;
	CHECK_INT(m->start, base);
	ef = proc_cache__map_elf(pc, p, m);
	CHECK(ef != NULL, "cannot load [vdso]");
	if (!ef)
		return;
	size_t len = 0;
	const uint8_t *img = elf_file__data(ef, &len);

	CHECK(img && len == m->end - m->start &&
		      memcmp(img, (const void *)(uintptr_t)base, len) == 0,
	      "vdso image differs from memory");
	CHECK_INT(elf_file__section(ef, ".eh_frame_hdr", &hdr), 0);
	/* first FDE's initial location from the hdr table: entries are datarel sdata4 */
	if (hdr.data && hdr.size >= 20 && hdr.data[3] == 0x3b) {
		int32_t init;

		memcpy(&init, hdr.data + 12, 4);
		fn = base + hdr.addr + (uint64_t)(int64_t)init;
	}
	CHECK(fn > base && fn < m->end, "no FDE in [vdso]");
	if (!fn)
		return;

	v = snap_new();
	memcpy(v, s, sizeof(*s));
	v->regs[MLPROF_REG_IP] = fn;
	v->regs[MLPROF_REG_SP] = s->regs[MLPROF_REG_SP] - 8;
	memcpy(v->ustack, &s->regs[MLPROF_REG_IP], 8);
	memcpy(v->ustack + 8, s->ustack, s->ustack_len);
	v->ustack_len = s->ustack_len + 8;
	n = unwinder__unwind(u, p, v, pcs, MAX_PCS, &end);
	dump("vdso", pcs, n, end);
	CHECK_INT(end, UNWIND_END_COMPLETE);
	CHECK_INT(n, nfull + 1);
	CHECK_INT(pcs[0], fn);
	CHECK(n == nfull + 1 && memcmp(pcs + 1, full, sizeof(pcs[0]) * (size_t)nfull) == 0,
	      "frames below the vdso frame differ");
	free(v);
}

/*
 * The first frames of a process: ld.so's _start has no FDE and the program's _start
 * ends the chain with .cfi_undefined rip. A pc inside either, or a return address into
 * ld.so's _start (its call to _dl_start), ends the unwind as complete.
 */
static void test_entry(struct proc_cache *pc, struct unwinder *u, struct proc *p,
		       const struct mlprof_sample *s)
{
	uint64_t ld_base = getauxval(AT_BASE), exe_entry = getauxval(AT_ENTRY), ld_entry = 0;
	uint64_t leaf = (uint64_t)(uintptr_t)uw_leaf, pcs[MAX_PCS];
	struct mlprof_sample *v = snap_new();
	const struct proc_map *m = NULL;
	struct elf_file *ef;
	enum unwind_end end;
	int n;

	for (size_t i = 0; i < p->n_maps; i++)
		if (p->maps[i].start <= ld_base && ld_base < p->maps[i].end && p->maps[i].exec)
			m = &p->maps[i];
	for (size_t i = 0; !m && i < p->n_maps; i++)
		if (p->maps[i].exec && strstr(p->maps[i].path, "/ld-linux"))
			m = &p->maps[i];
	ef = m ? proc_cache__map_elf(pc, p, m) : NULL;
	CHECK(ef != NULL, "no ld.so mapping");
	if (ef)
		ld_entry = ld_base + elf_file__entry(ef);
	CHECK(ef && elf_file__entry(ef) != 0, "ld.so has no e_entry");
	CHECK(exe_entry != 0, "no AT_ENTRY");
	if (!ld_entry || !exe_entry)
		goto cleanup;

	/* pc at ld.so's _start and at the call to _dl_start in it */
	memcpy(v, s, sizeof(*s) + s->ustack_len);
	for (uint64_t off = 0; off <= 3; off += 3) {
		v->regs[MLPROF_REG_IP] = ld_entry + off;
		n = unwinder__unwind(u, p, v, pcs, MAX_PCS, &end);
		CHECK_INT(n, 1);
		CHECK_INT(end, UNWIND_END_COMPLETE);
	}
	/* a function called from ld.so's _start (as _dl_start is), stopped at its first insn */
	v->regs[MLPROF_REG_IP] = leaf;
	memcpy(v->ustack, &(uint64_t){ld_entry + 8}, 8);
	v->ustack_len = 64;
	n = unwinder__unwind(u, p, v, pcs, MAX_PCS, &end);
	dump("ld.so entry", pcs, n, end);
	CHECK_INT(n, 2);
	CHECK_INT(end, UNWIND_END_COMPLETE);
	CHECK_INT(pcs[1], ld_entry + 8);

	/* the program's own entry point: first instruction of _start */
	v->regs[MLPROF_REG_IP] = exe_entry;
	n = unwinder__unwind(u, p, v, pcs, MAX_PCS, &end);
	CHECK_INT(n, 1);
	CHECK_INT(end, UNWIND_END_COMPLETE);
cleanup:
	free(v);
}

static void test_perf(struct unwinder *u, struct proc *p, const struct mlprof_sample *s, int nfull)
{
	uint64_t pcs[MAX_PCS], t0, dt;
	enum unwind_end end;
	const int iters = 2000;
	int ok = 0;

	t0 = ns_now();
	for (int i = 0; i < iters; i++)
		ok += unwinder__unwind(u, p, s, pcs, MAX_PCS, &end) == nfull;
	dt = ns_now() - t0;
	CHECK_INT(ok, iters);
	printf("unwind: %d frames in %.2f us per sample\n", nfull, (double)dt / iters / 1000.0);
	/*
	 * 6-14 us measured (release, Debug and ASan builds alike: libunwind dominates);
	 * 100 us leaves 7x for a loaded 2-core CI machine and fails on a 10x slowdown.
	 */
	CHECK(dt / iters < 100000, "unwinding takes %" PRIu64 " ns", dt / iters);
}

int main(void)
{
	struct proc_cache_config cfg = {.max_procs = 16, .max_elf_files = 64, .proc_root = "/proc"};
	struct mlprof_sample *s = snap_new();
	uint64_t full[MAX_PCS];
	struct unwind_stats st;
	struct proc_cache *pc;
	struct unwinder *u;
	struct proc *p;
	void *lib, *nohdr, *dbgframe;
	int nfull = 0;

	/* load fixtures first so the maps read below already has them */
	lib = dlopen(UW_FIXTURE_LIB, RTLD_NOW);
	nohdr = dlopen(UW_FIXTURE_NOHDR, RTLD_NOW);
	dbgframe = dlopen(UW_FIXTURE_DBGFRAME, RTLD_NOW);
	CHECK(lib && nohdr && dbgframe, "dlopen: %s", dlerror());
	pc = proc_cache__new(&cfg);
	CHECK(pc != NULL, "proc_cache__new");
	u = pc ? unwinder__new(pc) : NULL;
	CHECK(u != NULL, "unwinder__new");
	if (!pc || !u)
		return check_done("unwind");
	p = proc_cache__get(pc, getpid());
	CHECK(p != NULL, "proc_cache__get(self)");
	if (!p)
		return check_done("unwind");

	uw_run_basic(s);
	test_basic(u, p, s, full, &nfull);
	test_max_depth(u, p, s, full);
	test_cut(u, p, s, full, nfull);
	test_garbage(u, p, s);
	test_recursion(u, p);
	test_thread(u, p);
	if (lib)
		test_lib(u, p, lib, "lib");
	test_fixture_nohdr_shape();
	if (nohdr)
		test_lib(u, p, nohdr, "lib-nohdr");
	test_fixture_dbgframe_shape();
	if (dbgframe) {
		test_lib(u, p, dbgframe, "lib-debug-frame");
		test_debug_frame_translate(dbgframe);
	}
	test_vdso(pc, u, p, s, full, nfull);
	test_entry(pc, u, p, s);
	test_perf(u, p, s, nfull);

	unwinder__stats(u, &st);
	CHECK(st.unwinds > 2000, "unwinds %" PRIu64, st.unwinds);
	CHECK(st.ends[UNWIND_END_COMPLETE] >= 2000, "complete %" PRIu64,
	      st.ends[UNWIND_END_COMPLETE]);
	CHECK(st.ends[UNWIND_END_STACK_CUT] > 0, "no stack_cut counted");
	CHECK_INT(st.debug_frame_tables, 1);
	CHECK_INT(st.debug_frame_skipped, 0);
	CHECK(st.ends[UNWIND_END_NO_REGS] == 1, "no_regs %" PRIu64, st.ends[UNWIND_END_NO_REGS]);
	CHECK(st.ends[UNWIND_END_MAX_DEPTH] == 1, "max_depth %" PRIu64,
	      st.ends[UNWIND_END_MAX_DEPTH]);

	unwinder__free(u);
	proc_cache__free(pc);
	free(s);
	return check_done("unwind");
}
