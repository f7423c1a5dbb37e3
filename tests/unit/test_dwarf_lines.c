// SPDX-License-Identifier: Apache-2.0
/* Unit tests for dwarf_lines (libdw source lines) and the lines symcache hands out. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "symbolize/dwarf_lines.h"
#include "symbolize/elf.h"
#include "symbolize/symcache.h"

#ifndef DW_DIR
#define DW_DIR TEST_BIN_DIR "/dwarf"
#endif
#ifndef DW_SRC
#define DW_SRC TEST_SRC_DIR "/dwarf/lines_prog.c"
#endif
#define FX(name) DW_DIR "/" name

/* dwarf_lines__lookup by path, without an identity check. */
static int lookup(struct dwarf_lines *dl, uint64_t key, const char *path, uint64_t vaddr,
		  struct src_line *out)
{
	return dwarf_lines__lookup(dl, key, path, NULL, vaddr, out);
}

/* Line of the marker comment "MARK <what>" in the test program's source; 0 if absent. */
static unsigned marker(const char *what)
{
	char line[512], want[128];
	unsigned n = 0, found = 0;
	FILE *f = fopen(DW_SRC, "r");

	if (!f)
		return 0;
	snprintf(want, sizeof(want), "MARK %s */", what);
	while (fgets(line, sizeof(line), f)) {
		n++;
		if (strstr(line, want))
			found = n;
	}
	fclose(f);
	return found;
}

/* Address and size of a symbol from `nm -S` saved at build time. */
static int nm_sym(const char *sym, uint64_t *addr, uint64_t *size)
{
	char line[1024], type, name[900];
	unsigned long long a, s;
	int found = -ENOENT;
	FILE *f = fopen(FX("lines_prog.nm"), "r");

	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "%llx %llx %c %899s", &a, &s, &type, name) == 4 &&
		    !strcmp(name, sym)) {
			*addr = a;
			*size = s;
			found = 0;
		}
	fclose(f);
	return found;
}

static bool ends_with(const char *s, const char *suffix)
{
	size_t a = strlen(s), b = strlen(suffix);

	return a >= b && strcmp(s + a - b, suffix) == 0;
}

/* Every address of leaf_lines maps into its marked range, the hot line among them. */
static void test_leaf_lines(void)
{
	unsigned begin = marker("leaf_lines begin"), end = marker("leaf_lines end");
	unsigned hot = marker("leaf_lines hot"), seen_hot = 0, bad = 0, found = 0;
	struct dwarf_lines *dl = dwarf_lines__new(NULL);
	struct dwarf_lines_stats st;
	uint64_t addr = 0, size = 0;
	struct src_line sl;

	CHECK(begin && end > begin && hot > begin && hot < end, "markers %u %u %u", begin, end,
	      hot);
	CHECK(nm_sym("leaf_lines", &addr, &size) == 0 && size > 0, "leaf_lines in nm");
	CHECK(dl != NULL, "dwarf_lines__new: %s", strerror(errno));
	if (!dl || !size)
		return;
	for (uint64_t a = addr; a < addr + size; a++) {
		int err = lookup(dl, 1, FX("lines_prog"), a, &sl);

		if (err) {
			CHECK(err == -ENOENT, "lookup 0x%llx: %d", (unsigned long long)a, err);
			continue;
		}
		found++;
		if (sl.line <= begin || sl.line >= end ||
		    !ends_with(sl.file, "dwarf/lines_prog.c") || sl.start_line != begin + 1) {
			if (!bad++)
				fprintf(stderr, "0x%llx: %s:%u start %u (want %u-%u, start %u)\n",
					(unsigned long long)a, sl.file, sl.line, sl.start_line,
					begin, end, begin + 1);
		}
		seen_hot += sl.line == hot;
	}
	CHECK(found > size / 2, "%u of %llu addresses have lines", found, (unsigned long long)size);
	CHECK(bad == 0, "%u addresses outside leaf_lines' lines", bad);
	CHECK(seen_hot > 0, "no address on the hot line %u", hot);
	/* the same addresses again: all from the cache */
	dwarf_lines__stats(dl, &st);
	CHECK_INT(st.lookups, size);
	CHECK_INT(st.hits, 0);
	lookup(dl, 1, FX("lines_prog"), addr, &sl);
	dwarf_lines__stats(dl, &st);
	CHECK_INT(st.hits, 1);
	CHECK_INT(st.files_open, 1);
	CHECK_INT(st.file_errors, 0);
	/* outside any function: not found, and the answer is cached too */
	CHECK_INT(lookup(dl, 1, FX("lines_prog"), 0x10, &sl), -ENOENT);
	CHECK_INT(lookup(dl, 1, FX("lines_prog"), 0x10, &sl), -ENOENT);
	dwarf_lines__stats(dl, &st);
	CHECK_INT(st.hits, 2);
	dwarf_lines__forget(dl, 1);
	dwarf_lines__stats(dl, &st);
	CHECK_INT(st.files_open, 0);
	dwarf_lines__free(dl);
}

/* The result cache stays under its byte bound; open files under theirs. */
static void test_bounds(void)
{
	struct dwarf_lines_config cfg = {.max_bytes = 2048, .max_open = 2};
	struct dwarf_lines *dl = dwarf_lines__new(&cfg);
	struct dwarf_lines_stats st;
	uint64_t addr = 0, size = 0;
	struct src_line sl;

	CHECK(dl != NULL, "new");
	if (!dl || nm_sym("main", &addr, &size))
		return;
	for (uint64_t k = 1; k <= 5; k++)
		for (uint64_t a = addr; a < addr + size; a++)
			lookup(dl, k, FX("lines_prog"), a, &sl);
	dwarf_lines__stats(dl, &st);
	CHECK(st.bytes <= 2048, "bytes %llu over the bound", (unsigned long long)st.bytes);
	CHECK(st.evictions > 0, "no evictions");
	CHECK(st.files_open <= 2, "%llu files open", (unsigned long long)st.files_open);
	dwarf_lines__free(dl);
}

static int copy_file(const char *from, const char *to, size_t max)
{
	char buf[65536];
	size_t total = 0;
	ssize_t n;
	int in = open(from, O_RDONLY), out = open(to, O_WRONLY | O_CREAT | O_TRUNC, 0644);

	while (in >= 0 && out >= 0 && total < max && (n = read(in, buf, sizeof(buf))) > 0) {
		if ((size_t)n > max - total)
			n = (ssize_t)(max - total);
		if (write(out, buf, (size_t)n) != n)
			break;
		total += (size_t)n;
	}
	if (in >= 0)
		close(in);
	if (out >= 0)
		close(out);
	return in >= 0 && out >= 0 ? 0 : -1;
}

/* Overwrites a section's bytes in the file at path with a pattern. */
static void smash_section(const char *path, const char *name, unsigned seed)
{
	struct elf_file *ef = elf_file__open(path);
	struct elf_section sec;
	int fd;

	CHECK(ef != NULL, "open %s", path);
	if (!ef)
		return;
	if (elf_file__section(ef, name, &sec) == 0 && (fd = open(path, O_WRONLY)) >= 0) {
		uint8_t *junk = malloc(sec.size);

		for (uint64_t i = 0; junk && i < sec.size; i++)
			junk[i] = (uint8_t)(seed * 2654435761u * (i + 1) >> 13);
		if (junk && pwrite(fd, junk, sec.size, (off_t)sec.offset) != (ssize_t)sec.size)
			fprintf(stderr, "short write\n");
		free(junk);
		close(fd);
	}
	elf_file__put(ef);
}

/* Corrupt or truncated DWARF and missing files: answers without a crash, errors counted. */
static void test_corrupt(void)
{
	char dir[] = "/tmp/mlprof-dwarf-XXXXXX", p[4][256];
	struct dwarf_lines *dl = dwarf_lines__new(NULL);
	struct dwarf_lines_stats st;
	uint64_t addr = 0, size = 0;
	struct src_line sl;
	struct stat sb;

	CHECK(mkdtemp(dir) != NULL, "mkdtemp");
	if (!dl || nm_sym("leaf_lines", &addr, &size))
		return;
	snprintf(p[0], sizeof(p[0]), "%s/info", dir);
	snprintf(p[1], sizeof(p[1]), "%s/line", dir);
	snprintf(p[2], sizeof(p[2]), "%s/abbrev", dir);
	snprintf(p[3], sizeof(p[3]), "%s/truncated", dir);
	for (int i = 0; i < 3; i++)
		CHECK(copy_file(FX("lines_prog"), p[i], SIZE_MAX) == 0, "copy");
	smash_section(p[0], ".debug_info", 1);
	smash_section(p[1], ".debug_line", 2);
	smash_section(p[2], ".debug_abbrev", 3);
	/* cut in the middle: the section headers (at the end) are gone */
	CHECK(stat(FX("lines_prog"), &sb) == 0, "stat");
	CHECK(copy_file(FX("lines_prog"), p[3], (size_t)sb.st_size / 2) == 0, "copy");
	for (int i = 0; i < 4; i++)
		for (uint64_t a = addr; a < addr + size; a++) {
			int err = lookup(dl, 10 + (uint64_t)i, p[i], a, &sl);

			CHECK(err == 0 || err == -ENOENT, "%s: %d", p[i], err);
			if (err == 0)
				CHECK(sl.file && sl.line > 0, "%s: bad answer", p[i]);
		}
	CHECK_INT(lookup(dl, 20, "/nonexistent/lines_prog", addr, &sl), -ENOENT);
	dwarf_lines__stats(dl, &st);
	CHECK(st.file_errors >= 2, "file errors %llu", (unsigned long long)st.file_errors);
	dwarf_lines__free(dl);
	for (int i = 0; i < 4; i++)
		unlink(p[i]);
	rmdir(dir);
}

/* symcache hands out the lines: from the binary itself and from a debug file by build id. */
static void test_symcache_lines(void)
{
	unsigned begin = marker("mid_lines begin"), call = marker("mid_lines call");
	const char *bins[] = {FX("lines_prog"), FX("lines_stripped")};
	uint64_t addr = 0, size = 0;

	CHECK(nm_sym("mid_lines", &addr, &size) == 0, "mid_lines in nm");
	for (int i = 0; i < 2; i++) {
		struct symcache_config cfg = {.debug_dirs = FX("debugroot")};
		struct symcache *sc = symcache__new(&cfg);
		struct elf_file *ef = elf_file__open(bins[i]);
		struct symcache_stats st;
		struct sym_result res;
		unsigned on_call = 0, named = 0;

		CHECK(sc && ef, "open %s", bins[i]);
		if (!sc || !ef)
			return;
		for (uint64_t a = addr; a < addr + size; a++) {
			if (symcache__lookup(sc, ef, NULL, a, &res) != 0)
				continue;
			CHECK_STR(res.name, "mid_lines");
			if (!res.file)
				continue;
			named++;
			CHECK(ends_with(res.file, "dwarf/lines_prog.c"), "%s", res.file);
			CHECK_INT(res.start_line, begin + 1);
			on_call += res.line == call;
		}
		CHECK(named > size / 2, "%s: %u of %llu addresses with lines", bins[i], named,
		      (unsigned long long)size);
		CHECK(on_call > 0, "%s: no address on the call line %u", bins[i], call);
		symcache__stats(sc, &st);
		CHECK(st.line_lookups >= size && st.line_hits == 0, "line stats %llu %llu",
		      (unsigned long long)st.line_lookups, (unsigned long long)st.line_hits);
		symcache__lookup(sc, ef, NULL, addr, &res);
		symcache__stats(sc, &st);
		CHECK_INT(st.line_hits, 1);
		elf_file__put(ef);
		symcache__free(sc);
	}
}

int main(void)
{
	if (access(FX("lines_prog"), R_OK) != 0) {
		fprintf(stderr, "fixture %s missing\n", FX("lines_prog"));
		return 1;
	}
	test_leaf_lines();
	test_bounds();
	test_corrupt();
	test_symcache_lines();
	return check_done("dwarf_lines");
}
