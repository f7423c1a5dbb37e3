// SPDX-License-Identifier: Apache-2.0
/* Unit tests for the ELF parser: real fixtures, then corrupt and truncated images. */
#include <errno.h>
#include <linux/elf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "read_file.h"
#include "symbolize/elf.h"
#include "symbolize/elf_lookup.h"
#include "symbolize/symcache.h"

#ifndef SYM_FIXTURE_DIR
#define SYM_FIXTURE_DIR TEST_BIN_DIR "/sym"
#endif
#define FX(name) SYM_FIXTURE_DIR "/" name

static char *read_text(const char *path)
{
	static char buf[256];
	FILE *f = fopen(path, "r");

	if (!f)
		return NULL;
	if (!fgets(buf, sizeof(buf), f))
		buf[0] = '\0';
	fclose(f);
	buf[strcspn(buf, "\n")] = '\0';
	return buf;
}

static void test_real_file(void)
{
	struct elf_file *ef = elf_file__open(FX("cpp_full"));
	struct elf_section text, bss, sec;
	const char *want_bid = read_text(FX("cpp_full.buildid"));
	uint8_t buf[16];
	uint64_t v, o;
	size_t len;

	CHECK(ef != NULL, "open cpp_full: %s", strerror(errno));
	if (!ef)
		return;
	CHECK(want_bid && strlen(want_bid) == 40, "build id file");
	CHECK_STR(elf_file__build_id(ef), want_bid);
	CHECK_INT(elf_file__type(ef), ET_DYN);
	CHECK_STR(elf_file__path(ef), FX("cpp_full"));
	CHECK(elf_file__debuglink(ef, NULL) == NULL, "no debuglink");
	CHECK(elf_file__data(ef, &len) != NULL && len > 1000, "data");

	CHECK_INT(elf_file__section(ef, ".text", &text), 0);
	CHECK_STR(text.name, ".text");
	CHECK_INT(text.type, SHT_PROGBITS);
	CHECK(text.flags & SHF_EXECINSTR, "exec");
	CHECK(text.data != NULL && text.size > 0, "text data");
	CHECK_INT(elf_file__section(ef, ".bss", &bss), 0);
	CHECK(bss.data == NULL && bss.type == SHT_NOBITS, "bss nobits");
	CHECK_INT(elf_file__section(ef, ".symtab", &sec), 0);
	CHECK_INT(sec.type, SHT_SYMTAB);
	CHECK_INT(elf_file__section(ef, ".nope", &sec), -ENOENT);
	CHECK_INT(elf_file__section_by_index(ef, 0, &sec), 0);
	CHECK_INT(sec.type, SHT_NULL);
	CHECK_INT(elf_file__section_by_index(ef, 100000, &sec), -ENOENT);

	CHECK_INT(elf_file__offset_to_vaddr(ef, text.offset & ~0xfffULL, text.offset + 5, &v), 0);
	CHECK_INT(v, text.addr + 5);
	CHECK_INT(elf_file__vaddr_to_offset(ef, text.addr + 7, &o), 0);
	CHECK_INT(o, text.offset + 7);
	CHECK_INT(elf_file__read_vaddr(ef, text.addr, buf, sizeof(buf)), 0);
	CHECK(memcmp(buf, text.data, sizeof(buf)) == 0, "read_vaddr bytes");
	CHECK(elf_file__read_vaddr(ef, 0xffffffff00000000ull, buf, 4) < 0, "unmapped vaddr");
	CHECK(elf_file__vaddr_to_offset(ef, 0xffffffff00000000ull, &o) < 0, "unmapped");

	/* refcounting: the object survives until the last put */
	CHECK(elf_file__get(ef) == ef, "get");
	elf_file__put(ef);
	CHECK_STR(elf_file__build_id(ef), want_bid);
	elf_file__put(ef);
}

struct prefix_hits {
	int n;
	bool helper, local_static;
	uint64_t helper_at;
};

static void on_prefix(void *ctx, const char *name, uint64_t value)
{
	struct prefix_hits *h = ctx;

	h->n++;
	if (!strcmp(name, "_ZN2ns6helperEi")) {
		h->helper = true;
		h->helper_at = value;
	}
	h->local_static |= !strcmp(name, "_ZL12local_statici");
}

/* One .symtab pass: exact names (local ones too) and every function of a prefix. */
static void test_scan_prefix(void)
{
	static const char *const names[] = {"_ZL12local_statici", "main", "no_such_function"};
	struct elf_file *ef = elf_file__open(FX("cpp_full"));
	struct prefix_hits h = {0};
	uint64_t vals[3] = {0, 0, 0}, v = 0;

	CHECK(ef != NULL, "open cpp_full: %s", strerror(errno));
	if (!ef)
		return;
	CHECK_INT(elf_file__scan_functions_prefix(ef, names, 3, vals, "_ZN2ns", on_prefix, &h), 2);
	CHECK(vals[0] && vals[1] && !vals[2], "exact names: %llx %llx %llx",
	      (unsigned long long)vals[0], (unsigned long long)vals[1],
	      (unsigned long long)vals[2]);
	CHECK(h.helper && !h.local_static, "prefix: ns::helper, not local_static (%d hits)", h.n);
	CHECK_INT(elf_file__find_function(ef, "_ZN2ns6helperEi", &v), 0);
	CHECK_INT(h.helper_at, v);
	/* the prefix pass reads the whole table even once every exact name is found */
	memset(&h, 0, sizeof(h));
	memset(vals, 0, sizeof(vals));
	CHECK_INT(elf_file__scan_functions_prefix(ef, names, 1, vals, "_Z", on_prefix, &h), 1);
	CHECK(h.helper && h.local_static, "prefix _Z: both (%d hits)", h.n);
	/* no callback: the plain scan (a value already set is not looked for again) */
	CHECK_INT(elf_file__scan_functions(ef, names, 2, vals), 1);
	memset(vals, 0, sizeof(vals));
	CHECK_INT(elf_file__scan_functions(ef, names, 2, vals), 2);
	elf_file__put(ef);
}

/* The process's file-backed resident KiB (/proc/self/status RssFile); -1 if unreadable. */
static long rss_file_kb(void)
{
	char line[128];
	long kb = -1;
	FILE *f = fopen("/proc/self/status", "r");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "RssFile: %ld", &kb) == 1)
			break;
	fclose(f);
	return kb;
}

static void on_count(void *ctx, const char *name, uint64_t value)
{
	(void)name;
	(void)value;
	(*(size_t *)ctx)++;
}

/*
 * A whole-table scan of a libtorch-sized .symtab (libbigsyms.so: 520k functions, ~66 MB of
 * names) reads every name, and gives the pages back as it goes: the process's file RSS
 * grows by far less than the tables it read (it held them all before: ~80 MB of peak RSS
 * on PyPI's libtorch_cpu.so).
 */
static void test_scan_gives_pages_back(void)
{
#ifdef BIGSYMS_LIB
	static const char *const names[] = {"big_entry"};
	struct elf_file *ef = elf_file__open(BIGSYMS_LIB);
	struct elf_section sym, str;
	uint64_t vals[1] = {0};
	size_t hits = 0;
	long before, after;

	CHECK(ef != NULL, "open %s: %s", BIGSYMS_LIB, strerror(errno));
	if (!ef)
		return;
	CHECK_INT(elf_file__section(ef, ".symtab", &sym), 0);
	CHECK_INT(elf_file__section_by_index(ef, sym.link, &str), 0);
	before = rss_file_kb();
	CHECK_INT(elf_file__scan_functions_prefix(ef, names, 1, vals, "_ZN5torch", on_count, &hits),
		  1);
	after = rss_file_kb();
	/* the names were really read: nearly every function is a torch:: one */
	CHECK(hits > 400000, "prefix hits: %zu", hits);
	CHECK(str.size > 60u << 20, ".strtab: %llu bytes", (unsigned long long)str.size);
	CHECK(before >= 0 && after - before < 16 * 1024,
	      "file RSS grew by %ld KiB over a scan of %llu KiB of tables", after - before,
	      (unsigned long long)((sym.size + str.size) >> 10));
	elf_file__put(ef);
#endif
}

static void test_debuglink_and_mem(void)
{
	struct elf_file *ef = elf_file__open(FX("dl/cpp_debuglink"));
	struct elf_file *dbg = elf_file__open(FX("dl/.debug/cpp_debuglink.debug"));
	struct elf_file *mem;
	uint32_t crc = 0;
	size_t len;
	void *img;

	CHECK(ef && dbg, "open: %s", strerror(errno));
	if (!ef || !dbg)
		goto cleanup;
	CHECK_STR(elf_file__debuglink(ef, &crc), "cpp_debuglink.debug");
	/* CRC written by objcopy must equal ours over the debug file */
	CHECK(crc == elf_file__crc32(dbg), "crc %08x vs %08x", crc, elf_file__crc32(dbg));
	CHECK_STR(elf_file__build_id(dbg), elf_file__build_id(ef));

	img = read_file(FX("cpp_minidebug"), &len);
	CHECK(img != NULL, "read");
	mem = img ? elf_file__open_mem(img, len, "mini") : NULL;
	free(img); /* open_mem copies */
	CHECK(mem != NULL, "open_mem: %s", strerror(errno));
	if (mem) {
		struct elf_section s;

		CHECK_STR(elf_file__path(mem), "mini");
		CHECK_STR(elf_file__build_id(mem), elf_file__build_id(ef));
		CHECK_INT(elf_file__section(mem, ".gnu_debugdata", &s), 0);
		CHECK(s.size > 32 && memcmp(s.data,
					    "\xfd"
					    "7zXZ",
					    6) == 0,
		      "xz magic");
		elf_file__put(mem);
	}
cleanup:
	elf_file__put(ef);
	elf_file__put(dbg);
}

static void test_bad_files(void)
{
	errno = 0;
	CHECK(elf_file__open("/nonexistent/file") == NULL && errno == ENOENT, "enoent");
	errno = 0;
	CHECK(elf_file__open(FX("cpp_full.nm")) == NULL && errno == ENOEXEC, "text file");
	errno = 0;
	CHECK(elf_file__open(FX("stamp")) == NULL && errno == ENOEXEC, "empty file");
	CHECK(elf_file__open(SYM_FIXTURE_DIR) == NULL, "directory");
	errno = 0;
	CHECK(elf_file__open_mem("x", 1, "tiny") == NULL && errno == ENOEXEC, "tiny");
}

/* Uses every accessor and a symbol lookup: must not crash whatever the image holds. */
static void exercise(struct elf_file *ef, unsigned *opened)
{
	struct symcache_config cfg = {.max_bytes = 1 << 20, .debug_dirs = "/nonexistent"};
	struct symcache *sc;
	struct elf_section s;
	struct sym_result r;
	uint8_t buf[32];
	uint64_t x;
	uint32_t crc;
	volatile size_t sink = 0;

	(*opened)++;
	for (uint32_t i = 0; elf_file__section_by_index(ef, i, &s) == 0; i++) {
		sink += strlen(s.name);
		if (s.data && s.size)
			sink += s.data[s.size - 1];
	}
	if (elf_file__build_id(ef))
		sink += strlen(elf_file__build_id(ef));
	if (elf_file__debuglink(ef, &crc))
		sink += strlen(elf_file__debuglink(ef, &crc));
	elf_file__offset_to_vaddr(ef, 0x1000, 0x1000, &x);
	elf_file__vaddr_to_offset(ef, 0x1100, &x);
	elf_file__read_vaddr(ef, 0x1100, buf, sizeof(buf));
	sink += elf_file__crc32(ef);
	sc = symcache__new(&cfg);
	if (sc) {
		for (uint64_t a = 0x1000; a < 0x1400; a += 0x40)
			if (symcache__lookup(sc, ef, NULL, a, &r) == 0)
				sink += strlen(r.name) + strlen(r.source);
		symcache__free(sc);
	}
	(void)sink;
}

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

static uint64_t rng(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return rng_state;
}

static void expect_fail_or_ok(const void *img, size_t len, unsigned *opened, unsigned *failed)
{
	struct elf_file *ef;

	errno = 0;
	ef = elf_file__open_mem(img, len, "corrupt");
	if (!ef) {
		CHECK(errno == ENOEXEC || errno == ENOMEM, "errno %d", errno);
		(*failed)++;
		return;
	}
	exercise(ef, opened);
	elf_file__put(ef);
}

static void test_corrupt(const char *file)
{
	unsigned opened = 0, failed = 0;
	Elf64_Ehdr eh;
	uint8_t *img, *bad;
	size_t len;

	img = read_file(file, &len);
	CHECK(img != NULL && len > sizeof(eh), "read %s", file);
	if (!img)
		return;
	bad = malloc(len);
	if (!bad) {
		free(img);
		return;
	}
	memcpy(&eh, img, sizeof(eh));

	/* truncated anywhere: the section header table sits at the end, so all fail */
	for (size_t n = 0; n < len; n += n < 4096 ? 1 : 97) {
		struct elf_file *ef = elf_file__open_mem(img, n, "trunc");

		CHECK(ef == NULL && (n < sizeof(eh) || errno == ENOEXEC), "truncated at %zu", n);
		elf_file__put(ef);
	}

#define MUTATE(field, value)                                                                       \
	do {                                                                                       \
		Elf64_Ehdr m = eh;                                                                 \
		m.field = (value);                                                                 \
		memcpy(bad, img, len);                                                             \
		memcpy(bad, &m, sizeof(m));                                                        \
		errno = 0;                                                                         \
		CHECK(elf_file__open_mem(bad, len, "bad") == NULL && errno == ENOEXEC,             \
		      #field " = " #value);                                                        \
	} while (0)
	MUTATE(e_shoff, len - 10);
	MUTATE(e_shoff, UINT64_MAX - 8);
	MUTATE(e_shnum, 0xfff0);
	MUTATE(e_shentsize, 8);
	MUTATE(e_shstrndx, eh.e_shnum + 5);
	MUTATE(e_phoff, UINT64_MAX - 100);
	MUTATE(e_phnum, 0xfffe);
	MUTATE(e_ident[EI_CLASS], ELFCLASS32);
	MUTATE(e_ident[EI_DATA], ELFDATA2MSB);
	MUTATE(e_ident[0], 0);
#undef MUTATE

	/* extended numbering with a huge count in section header 0 */
	{
		Elf64_Ehdr m = eh;
		Elf64_Shdr sh0;

		memcpy(bad, img, len);
		m.e_shnum = 0;
		memcpy(bad, &m, sizeof(m));
		memcpy(&sh0, bad + eh.e_shoff, sizeof(sh0));
		sh0.sh_size = 1ull << 40;
		memcpy(bad + eh.e_shoff, &sh0, sizeof(sh0));
		CHECK(elf_file__open_mem(bad, len, "xnum") == NULL && errno == ENOEXEC, "xnum");
	}
	/* each section in turn: name, offset and size out of range */
	for (uint32_t i = 1; i < eh.e_shnum; i++) {
		Elf64_Shdr sh;
		uint64_t at = eh.e_shoff + (uint64_t)i * eh.e_shentsize;

		memcpy(&sh, img + at, sizeof(sh));
		if (sh.sh_type == SHT_NOBITS)
			continue;
		memcpy(bad, img, len);
		((Elf64_Shdr *)(void *)(bad + at))->sh_name = 0xfffffff0u;
		CHECK(elf_file__open_mem(bad, len, "name") == NULL && errno == ENOEXEC, "name %u",
		      i);
		memcpy(bad, img, len);
		((Elf64_Shdr *)(void *)(bad + at))->sh_offset = len - 1;
		((Elf64_Shdr *)(void *)(bad + at))->sh_size = 2;
		CHECK(elf_file__open_mem(bad, len, "off") == NULL && errno == ENOEXEC, "off %u", i);
		memcpy(bad, img, len);
		((Elf64_Shdr *)(void *)(bad + at))->sh_size = UINT64_MAX - 4;
		CHECK(elf_file__open_mem(bad, len, "size") == NULL && errno == ENOEXEC, "size %u",
		      i);
		/* bogus link / entsize must be survivable */
		memcpy(bad, img, len);
		((Elf64_Shdr *)(void *)(bad + at))->sh_link = 0xffffffu;
		((Elf64_Shdr *)(void *)(bad + at))->sh_entsize = 1;
		expect_fail_or_ok(bad, len, &opened, &failed);
	}

	/* random byte flips, biased to the headers and tables; deterministic seed */
	for (int iter = 0; iter < 3000; iter++) {
		int flips = 1 + (int)(rng() % 8);

		memcpy(bad, img, len);
		for (int f = 0; f < flips; f++) {
			uint64_t r = rng(), pos;

			switch (r % 4) {
			case 0: /* ELF + program headers */
				pos = (r >> 8) %
				      (eh.e_phoff + (uint64_t)eh.e_phnum * eh.e_phentsize);
				break;
			case 1: /* section headers */
				pos = eh.e_shoff +
				      (r >> 8) % ((uint64_t)eh.e_shnum * eh.e_shentsize);
				break;
			default: /* anywhere: notes, symbol tables, strings, xz data */
				pos = (r >> 8) % len;
				break;
			}
			bad[pos] ^= (uint8_t)(1u << ((r >> 40) % 8)) | (uint8_t)((r >> 48) & 0xff);
		}
		expect_fail_or_ok(bad, len, &opened, &failed);
	}
	printf("test_elf: %s: %u corrupt images opened, %u rejected\n", file, opened, failed);
	CHECK(opened > 0 && failed > 0, "both outcomes seen");
	free(bad);
	free(img);
}

int main(void)
{
	test_real_file();
	test_scan_prefix();
	test_scan_gives_pages_back();
	test_debuglink_and_mem();
	test_bad_files();
	test_corrupt(FX("cpp_full"));
	test_corrupt(FX("cpp_minidebug"));
	test_corrupt(FX("dl/cpp_debuglink"));
	return check_done("elf");
}
