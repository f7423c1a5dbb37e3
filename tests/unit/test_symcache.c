// SPDX-License-Identifier: Apache-2.0
/* Unit tests for symcache (symtab/dynsym/MiniDebugInfo/debug files, LRU), demangle, ksyms. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "symbolize/elf.h"
#include "symbolize/symcache.h"

#ifndef SYM_FIXTURE_DIR
#define SYM_FIXTURE_DIR TEST_BIN_DIR "/sym"
#endif
#define FX(name) SYM_FIXTURE_DIR "/" name

/* Address of a symbol in an `nm --defined-only` listing saved at build time; 0 if absent. */
static uint64_t nm_addr(const char *nm_file, const char *sym)
{
	char line[1024], type, name[900];
	unsigned long long addr;
	uint64_t found = 0;
	FILE *f = fopen(nm_file, "r");

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "%llx %c %899s", &addr, &type, name) == 3 && !strcmp(name, sym))
			found = addr;
	fclose(f);
	return found;
}

struct expect {
	const char *mangled;
	const char *name;
};

/* Functions of sym_fixture_cpp.cc; static ones last. */
static const struct expect cpp_funcs[] = {
	{"_ZN2ns6WidgetIiE4spinEi", "ns::Widget<int>::spin(int)"},
	{"_ZN2ns6helperEi", "ns::helper(int)"},
	{"_Z5twiceIdET_S0_", "double twice<double>(double)"},
	{"c_global", "c_global"},
	{"c_weak", "c_weak"},
	{"main", "main"},
	{"_ZL12local_statici", "local_static(int)"},
};
#define CPP_NGLOBAL 6

static struct symcache *new_cache(size_t max_bytes, const char *dirs)
{
	struct symcache_config cfg = {.max_bytes = max_bytes, .debug_dirs = dirs};
	struct symcache *sc = symcache__new(&cfg);

	CHECK(sc != NULL, "symcache__new: %s", strerror(errno));
	return sc;
}

/*
 * Looks up each expected function (at start + 1) in file through a fresh cache; the
 * first `nfound` must resolve from `src_global` (globals) / `src_local` (statics),
 * the rest must not resolve.
 */
static void check_variant(const char *file, const char *dirs, const char *root,
			  const char *src_global, const char *src_local, size_t nfound)
{
	struct symcache *sc = new_cache(0, dirs);
	struct elf_file *ef = elf_file__open(file);

	CHECK(ef != NULL, "open %s: %s", file, strerror(errno));
	if (!sc || !ef)
		goto cleanup;
	for (size_t i = 0; i < sizeof(cpp_funcs) / sizeof(cpp_funcs[0]); i++) {
		uint64_t addr = nm_addr(FX("cpp_full.nm"), cpp_funcs[i].mangled);
		struct sym_result r = {0};
		int err;

		CHECK(addr != 0, "%s not in nm output", cpp_funcs[i].mangled);
		err = symcache__lookup(sc, ef, root, addr + 1, &r);
		if (i < nfound) {
			CHECK(err == 0, "%s: lookup %s: %d", file, cpp_funcs[i].name, err);
			if (err)
				continue;
			CHECK_STR(r.name, cpp_funcs[i].name);
			CHECK_INT(r.offset, 1);
			CHECK_STR(r.source, i < CPP_NGLOBAL ? src_global : src_local);
		} else {
			CHECK(err == -ENOENT, "%s: %s should not resolve, got %d %s", file,
			      cpp_funcs[i].name, err, err ? "" : r.name);
		}
	}
cleanup:
	elf_file__put(ef);
	symcache__free(sc);
}

static void test_full(void)
{
	struct symcache *sc = new_cache(0, FX("emptyroot"));
	struct elf_file *ef = elf_file__open(FX("cpp_full"));
	struct sym_result r = {0};
	uint64_t a, m;

	check_variant(FX("cpp_full"), FX("emptyroot"), NULL, "symtab", "symtab", 7);
	if (!sc || !ef)
		goto cleanup;
	/* size-0 asm symbol covers up to the next symbol */
	a = nm_addr(FX("cpp_full.nm"), "asm_nosize");
	m = nm_addr(FX("cpp_full.nm"), "main");
	CHECK(a && m > a, "asm_nosize %llx main %llx", (unsigned long long)a,
	      (unsigned long long)m);
	CHECK_INT(symcache__lookup(sc, ef, NULL, m - 1, &r), 0);
	CHECK_STR(r.name, "asm_nosize");
	CHECK_INT(r.offset, m - 1 - a);
	CHECK_INT(symcache__lookup(sc, ef, NULL, m, &r), 0);
	CHECK_STR(r.name, "main");
	/* a second pc of a function named lately: from the recent functions, same answer */
	{
		struct symcache_stats st0, st1;

		symcache__stats(sc, &st0);
		CHECK_INT(symcache__lookup(sc, ef, NULL, m + 1, &r), 0);
		CHECK_STR(r.name, "main");
		CHECK_INT(r.offset, 1);
		CHECK_STR(r.source, "symtab");
		CHECK_INT(symcache__lookup(sc, ef, NULL, a + 1, &r), 0);
		CHECK_STR(r.name, "asm_nosize");
		CHECK_INT(r.offset, 1);
		symcache__stats(sc, &st1);
		CHECK_INT(st1.recent_hits - st0.recent_hits, 2);
	}
	/* below every function */
	CHECK_INT(symcache__lookup(sc, ef, NULL, 0x10, &r), -ENOENT);
	CHECK_INT(symcache__lookup(sc, ef, NULL, UINT64_MAX, &r), -ENOENT);
cleanup:
	elf_file__put(ef);
	symcache__free(sc);
}

static void test_c(void)
{
	static const struct expect c_funcs[] = {
		{"global_func", "global_func"},
		{"weak_func", "weak_func"},
		{"main", "main"},
		{"static_func", "static_func"},
	};
	struct symcache *sc = new_cache(0, FX("emptyroot"));
	struct elf_file *full = elf_file__open(FX("c_full"));
	struct elf_file *stripped = elf_file__open(FX("c_stripped"));
	struct sym_result r = {0};

	CHECK(full && stripped, "open c fixtures: %s", strerror(errno));
	if (!sc || !full || !stripped)
		goto cleanup;
	for (size_t i = 0; i < 4; i++) {
		uint64_t addr = nm_addr(FX("c_full.nm"), c_funcs[i].mangled);

		CHECK(addr != 0, "%s not in nm", c_funcs[i].mangled);
		CHECK_INT(symcache__lookup(sc, full, NULL, addr + 2, &r), 0);
		CHECK_STR(r.name, c_funcs[i].name);
		CHECK_INT(r.offset, 2);
		CHECK_STR(r.source, "symtab");
	}
	symcache__free(sc);
	/* stripped shares the build id: needs its own cache to see only .dynsym */
	sc = new_cache(0, FX("emptyroot"));
	if (!sc)
		goto cleanup;
	for (size_t i = 0; i < 4; i++) {
		uint64_t addr = nm_addr(FX("c_full.nm"), c_funcs[i].mangled);
		int err = symcache__lookup(sc, stripped, NULL, addr, &r);

		if (i < 3) {
			CHECK_INT(err, 0);
			CHECK_STR(r.name, c_funcs[i].name);
			CHECK_STR(r.source, "dynsym");
		} else {
			CHECK_INT(err, -ENOENT);
		}
	}
cleanup:
	elf_file__put(full);
	elf_file__put(stripped);
	symcache__free(sc);
}

static void test_variants(void)
{
	/* stripped: only exported functions, from .dynsym */
	check_variant(FX("cpp_stripped"), FX("emptyroot"), NULL, "dynsym", "-", CPP_NGLOBAL);
	/* MiniDebugInfo adds the static function */
	check_variant(FX("cpp_minidebug"), FX("emptyroot"), NULL, "dynsym", "minidebuginfo", 7);
	/* debug file by build id, second root of the list */
	check_variant(FX("cpp_buildid"), "/nonexistent:" FX("debugroot"), NULL, "debuginfo",
		      "debuginfo", 7);
	/*
	 * A debug file planted under a container root is not trusted (it would rename the
	 * frames of every process mapping a file with that build id): dynsym only.
	 */
	check_variant(FX("cpp_buildid"), "/usr/lib/debug", FX("fakeroot"), "dynsym", "-",
		      CPP_NGLOBAL);
	/* nor is a debuglink target next to an object opened through /proc */
	check_variant("/proc/self/root" FX("dl/cpp_debuglink"), FX("emptyroot"), "/proc/self/root",
		      "dynsym", "-", CPP_NGLOBAL);
	/* no debug file anywhere: dynsym only */
	check_variant(FX("cpp_buildid"), FX("emptyroot"), FX("emptyroot"), "dynsym", "-",
		      CPP_NGLOBAL);
	/* debuglink: decoy with a wrong CRC next to the file, the right one in .debug/ */
	check_variant(FX("dl/cpp_debuglink"), FX("emptyroot"), NULL, "debuginfo", "debuginfo", 7);
}

static void test_sharing_and_lru(void)
{
	struct symcache_stats st;
	struct elf_file *a = elf_file__open(FX("cpp_full"));
	struct elf_file *b = elf_file__open(FX("cpp_full"));
	struct elf_file *c = elf_file__open(FX("c_full"));
	struct symcache *sc = new_cache(0, FX("emptyroot"));
	uint64_t addr = nm_addr(FX("cpp_full.nm"), "c_global");
	uint64_t caddr = nm_addr(FX("c_full.nm"), "global_func");
	struct sym_result r = {0};

	if (!a || !b || !c || !sc) {
		CHECK(0, "setup failed");
		goto cleanup;
	}
	CHECK(a != b, "two objects");
	CHECK_INT(symcache__lookup(sc, a, NULL, addr, &r), 0);
	CHECK_INT(symcache__lookup(sc, b, "/proc/1/root", addr, &r), 0);
	CHECK_STR(r.name, "c_global");
	symcache__stats(sc, &st);
	CHECK_INT(st.tables, 1);
	CHECK_INT(st.lookups, 2);
	CHECK_INT(st.hits, 1);
	CHECK(st.bytes > 0 && st.bytes < 64 * 1024, "bytes %llu", (unsigned long long)st.bytes);
	CHECK_INT(symcache__lookup(sc, c, NULL, caddr, &r), 0);
	symcache__stats(sc, &st);
	CHECK_INT(st.tables, 2);
	CHECK_INT(st.evictions, 0);
	symcache__free(sc);

	/* bound smaller than one table: each new table evicts the previous, never itself */
	sc = new_cache(1, FX("emptyroot"));
	if (!sc)
		goto cleanup;
	CHECK_INT(symcache__lookup(sc, a, NULL, addr, &r), 0);
	CHECK_INT(symcache__lookup(sc, c, NULL, caddr, &r), 0);
	CHECK_STR(r.name, "global_func");
	symcache__stats(sc, &st);
	CHECK_INT(st.tables, 1);
	CHECK_INT(st.evictions, 1);
	CHECK_INT(symcache__lookup(sc, b, NULL, addr, &r), 0);
	CHECK_STR(r.name, "c_global");
	CHECK_INT(symcache__lookup(sc, b, NULL, addr, &r), 0);
	symcache__stats(sc, &st);
	CHECK_INT(st.tables, 1);
	CHECK_INT(st.evictions, 2);
	CHECK_INT(st.hits, 1);
cleanup:
	elf_file__put(a);
	elf_file__put(b);
	elf_file__put(c);
	symcache__free(sc);
}

/* Without a build id the key is path + size + header hash: still shared, still correct. */
static void test_no_build_id(void)
{
	struct elf_file *a = elf_file__open(FX("c_nobid"));
	struct elf_file *b = elf_file__open(FX("c_nobid"));
	struct symcache *sc = new_cache(0, FX("emptyroot"));
	uint64_t addr = nm_addr(FX("c_nobid.nm"), "static_func");
	struct symcache_stats st;
	struct sym_result r = {0};

	if (!a || !b || !sc || !addr) {
		CHECK(0, "setup failed: %s", strerror(errno));
		goto cleanup;
	}
	CHECK(elf_file__build_id(a) == NULL, "no build id");
	CHECK_INT(symcache__lookup(sc, a, NULL, addr + 3, &r), 0);
	CHECK_STR(r.name, "static_func");
	CHECK_INT(r.offset, 3);
	CHECK_INT(symcache__lookup(sc, b, NULL, addr, &r), 0);
	CHECK_STR(r.name, "static_func");
	symcache__stats(sc, &st);
	CHECK_INT(st.tables, 1);
	CHECK_INT(st.hits, 1);
cleanup:
	elf_file__put(a);
	elf_file__put(b);
	symcache__free(sc);
}

static void check_demangle(const char *in, const char *want)
{
	char *out = demangle(in);

	CHECK_STR(out, want);
	free(out);
}

static void test_demangle(void)
{
	check_demangle("_ZN2ns6WidgetIiE4spinEi", "ns::Widget<int>::spin(int)");
	check_demangle("_ZL12local_statici", "local_static(int)");
	check_demangle("_Z3fooi.cold", "foo(int) [clone .cold]");
	check_demangle("_Z3fooi.constprop.0", "foo(int) [clone .constprop.0]");
	check_demangle("main", "main");
	check_demangle("_Zinvalid", "_Zinvalid");
	check_demangle("_ZN4core3fmt5write17h0123456789abcdefE", "core::fmt::write");
	check_demangle("_ZN60_$LT$alloc..string..String$u20$as$u20$core..fmt..Display$GT$"
		       "3fmt17h5a0b5c8e9f1d2a3bE",
		       "<alloc::string::String as core::fmt::Display>::fmt");
	check_demangle("_ZN3std2rt10lang_start28_$u7b$$u7b$closure$u7d$$u7d$17hfe2b1c2d3e4f5a6bE"
		       ".llvm.1234",
		       "std::rt::lang_start::{{closure}}");
	/* not a Rust hash: plain C++ */
	check_demangle("_ZN3foo3barEv", "foo::bar()");
	CHECK(demangle(NULL) == NULL, "NULL in");
}

static void test_ksyms_file(void)
{
	char path[] = "/tmp/test_ksyms_XXXXXX";
	const char *name;
	struct ksyms *ks;
	uint64_t off = 0;
	FILE *f;
	int fd;

	fd = mkstemp(path);
	CHECK(fd >= 0, "mkstemp");
	if (fd < 0)
		return;
	f = fdopen(fd, "w");
	fprintf(f, "ffffffff81000200 T second_func\n"
		   "ffffffff81000100 t first_func\n"
		   "ffffffff81000100 W first_alias\n"
		   "ffffffff81000180 d some_data\n"
		   "ffffffff81000300 T third_func\t[mymod]\n"
		   "garbage line\n"
		   "ffffffff81000400 T last_func\n");
	fclose(f);
	ks = ksyms__load(path);
	CHECK(ks != NULL, "load: %s", strerror(errno));
	if (ks) {
		name = ksyms__lookup(ks, 0xffffffff81000101, &off);
		CHECK_STR(name, "first_func");
		CHECK_INT(off, 1);
		/* data symbols are ignored: first_func extends to second_func */
		CHECK_STR(ksyms__lookup(ks, 0xffffffff81000190, &off), "first_func");
		CHECK_STR(ksyms__lookup(ks, 0xffffffff81000200, &off), "second_func");
		CHECK_INT(off, 0);
		CHECK_STR(ksyms__lookup(ks, 0xffffffff81000350, NULL), "third_func");
		CHECK_STR(ksyms__lookup(ks, 0xffffffff81000410, NULL), "last_func");
		CHECK(ksyms__lookup(ks, 0xffffffff81000400 + (1 << 20), NULL) == NULL, "beyond");
		CHECK(ksyms__lookup(ks, 0xffffffff81000000, NULL) == NULL, "below");
		CHECK(ksyms__lookup(ks, 0, NULL) == NULL, "zero");
		ksyms__free(ks);
	}
	/* what an unprivileged reader sees */
	f = fopen(path, "w");
	fprintf(f, "0000000000000000 T schedule\n0000000000000000 t foo\n");
	fclose(f);
	ks = ksyms__load(path);
	CHECK(ks == NULL && errno == EPERM, "zeros => EPERM (errno %d)", errno);
	ksyms__free(ks);
	unlink(path);
	CHECK(ksyms__load("/nonexistent/kallsyms") == NULL && errno == ENOENT, "missing");
}

static void test_ksyms_real(void)
{
	char line[512], name[256], type;
	unsigned long long addr, sched = 0;
	struct ksyms *ks;
	uint64_t off = 0;
	FILE *f;

	if (geteuid() != 0) {
		printf("test_symcache: not root, skipping real kallsyms\n");
		return;
	}
	f = fopen("/proc/kallsyms", "r");
	if (!f) {
		printf("test_symcache: no /proc/kallsyms, skipping\n");
		return;
	}
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "%llx %c %255s", &addr, &type, name) == 3 &&
		    !strcmp(name, "schedule") && (type == 'T' || type == 't'))
			sched = addr;
	fclose(f);
	if (!sched) {
		printf("test_symcache: kallsyms hides addresses, skipping\n");
		return;
	}
	ks = ksyms__load(NULL);
	CHECK(ks != NULL, "ksyms__load: %s", strerror(errno));
	if (!ks)
		return;
	CHECK_STR(ksyms__lookup(ks, sched + 1, &off), "schedule");
	CHECK_INT(off, 1);
	CHECK_STR(ksyms__lookup(ks, sched, &off), "schedule");
	CHECK(ksyms__lookup(ks, 0, NULL) == NULL, "zero");
	ksyms__free(ks);
}

/* A big real library: the table builds quickly and every .dynsym function resolves. */
static void test_big_library(void)
{
	static const char *const libs[] = {
		"/usr/lib/x86_64-linux-gnu/libstdc++.so.6",
		"/lib/x86_64-linux-gnu/libc.so.6",
	};
	for (size_t i = 0; i < sizeof(libs) / sizeof(libs[0]); i++) {
		struct elf_file *ef = elf_file__open(libs[i]);
		struct symcache *sc;
		struct elf_section dynsym;
		struct sym_result r;
		struct timespec t0, t1;
		unsigned resolved = 0;

		if (!ef)
			continue;
		sc = new_cache(0, FX("emptyroot"));
		if (!sc || elf_file__section(ef, ".dynsym", &dynsym)) {
			elf_file__put(ef);
			symcache__free(sc);
			continue;
		}
		clock_gettime(CLOCK_MONOTONIC, &t0);
		CHECK(symcache__lookup(sc, ef, NULL, 0, &r) == -ENOENT, "addr 0");
		clock_gettime(CLOCK_MONOTONIC, &t1);
		printf("test_symcache: %s table built in %.1f ms\n", libs[i],
		       (t1.tv_sec - t0.tv_sec) * 1e3 + (t1.tv_nsec - t0.tv_nsec) / 1e6);
		/*
		 * every sized global function resolves to an alias at the same address, at
		 * both ends (the lookup searches the bucket of the address only): the ends in
		 * one pass and the starts in another, so that the functions named lately
		 * (which answer a second pc of the same function) answer neither
		 */
		for (int pass = 0; pass < 2; pass++) {
			for (uint64_t off = 24; off + 24 <= dynsym.size; off += 24) {
				uint64_t value, size;
				uint8_t info;
				uint16_t shndx;

				memcpy(&info, dynsym.data + off + 4, 1);
				memcpy(&shndx, dynsym.data + off + 6, 2);
				memcpy(&value, dynsym.data + off + 8, 8);
				memcpy(&size, dynsym.data + off + 16, 8);
				if ((info & 15) != 2 || !shndx || !size)
					continue;
				if (symcache__lookup(sc, ef, NULL, pass ? value : value + size - 1,
						     &r) == 0 &&
				    r.offset == (pass ? 0 : size - 1))
					resolved += pass;
				else
					CHECK(0, "%s: %llx unresolved", libs[i],
					      (unsigned long long)value);
			}
		}
		CHECK(resolved > 100, "%s: %u resolved", libs[i], resolved);
		CHECK(symcache__lookup(sc, ef, NULL, 1ull << 40, &r) == -ENOENT, "%s: far above",
		      libs[i]);
		elf_file__put(ef);
		symcache__free(sc);
	}
}

int main(void)
{
	test_full();
	test_c();
	test_variants();
	test_sharing_and_lru();
	test_no_build_id();
	test_demangle();
	test_ksyms_file();
	test_ksyms_real();
	test_big_library();
	return check_done("symcache");
}
