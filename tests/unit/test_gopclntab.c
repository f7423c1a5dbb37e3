// SPDX-License-Identifier: Apache-2.0
/* Unit tests for gopclntab: real Go binaries built by tests/go.cmake, truncated/corrupt tables. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "symbolize/elf.h"
#include "symbolize/elf_lookup.h"
#include "symbolize/gopclntab.h"

#ifndef GO_FIXTURE_DIR
#define GO_FIXTURE_DIR TEST_BIN_DIR "/go"
#endif

struct gofn {
	uint64_t entry, end;
};

/* Finds a function by name by walking the whole table (also checks its order). */
static int find_func(const struct gopclntab *t, const char *name, struct gofn *out)
{
	struct gopclntab_func f;
	uint64_t prev = 0;
	int found = 0;

	for (uint32_t i = 0; i < gopclntab__count(t); i++) {
		if (gopclntab__func(t, i, &f)) {
			CHECK(0, "function %u unreadable", i);
			return 0;
		}
		CHECK(f.entry >= prev && f.end >= f.entry, "function %u (%s) out of order", i,
		      f.name);
		prev = f.entry;
		if (!strcmp(f.name, name)) {
			out->entry = f.entry;
			out->end = f.end;
			found = 1;
		}
	}
	CHECK(found, "%s not in the table", name);
	return found;
}

/* Line of the first line of spin.go containing needle. */
static uint32_t source_line(const char *needle)
{
	char buf[512];
	uint32_t n = 0, found = 0;
	FILE *f = fopen(TEST_SRC_DIR "/go/spin.go", "r");

	if (!f)
		return 0;
	while (fgets(buf, sizeof(buf), f)) {
		n++;
		if (!found && strstr(buf, needle))
			found = n;
	}
	fclose(f);
	return found;
}

/* True when [lo, hi) of ef holds a `call rel32` to target (proves the text start right). */
static int calls(const struct elf_file *ef, uint64_t lo, uint64_t hi, uint64_t target)
{
	uint8_t code[4096];
	size_t len = hi - lo < sizeof(code) ? hi - lo : sizeof(code);

	if (elf_file__read_vaddr(ef, lo, code, len))
		return 0;
	for (size_t i = 0; i + 5 <= len; i++) {
		int32_t rel;

		memcpy(&rel, code + i + 1, 4);
		if (code[i] == 0xe8 && lo + i + 5 + (uint64_t)(int64_t)rel == target)
			return 1;
	}
	return 0;
}

static void test_binary(const char *name, int has_symtab)
{
	char path[512];
	struct elf_file *ef;
	struct gopclntab *t;
	struct gopclntab_func f;
	struct gofn leaf = {0}, mid = {0}, fn;
	const char *chain[] = {"main.outer", "main.main", "runtime.main", "runtime.goexit"};
	uint32_t body = source_line("x = x*6364136223846793005");
	uint32_t decl = source_line("func leafSpin(");
	uint32_t delta;
	int saw_body = 0;

	snprintf(path, sizeof(path), "%s/%s", GO_FIXTURE_DIR, name);
	ef = elf_file__open(path);
	CHECK(ef != NULL, "%s: %s", path, strerror(errno));
	if (!ef)
		return;
	t = gopclntab__open(ef);
	CHECK(t != NULL, "%s: gopclntab__open: %s", name, strerror(errno));
	if (!t)
		goto cleanup;
	CHECK(gopclntab__count(t) > 500, "%s: only %u functions", name, gopclntab__count(t));
	if (!find_func(t, "main.leafSpin", &leaf) || !find_func(t, "main.middle", &mid))
		goto cleanup;
	for (size_t i = 0; i < sizeof(chain) / sizeof(chain[0]); i++)
		find_func(t, chain[i], &fn);
	if (has_symtab) {
		uint64_t sym = 0;

		CHECK(!elf_file__find_function(ef, "main.leafSpin", &sym), "%s: no symbol", name);
		CHECK_INT(leaf.entry, sym);
	}
	/* text start: main.middle calls main.leafSpin at the address the table gives */
	CHECK(calls(ef, mid.entry, mid.end, leaf.entry), "%s: main.middle does not call %#llx",
	      name, (unsigned long long)leaf.entry);

	/* every pc of the leaf: its name, file spin.go, lines within the function */
	for (uint64_t pc = leaf.entry; pc < leaf.end; pc++) {
		CHECK_INT(gopclntab__lookup(t, pc, true, &f), 0);
		CHECK_STR(f.name, "main.leafSpin");
		if (!f.file && pc > leaf.entry + 16)
			break; /* alignment padding after the last instruction: no line */
		CHECK(f.file && strlen(f.file) > 11 &&
			      !strcmp(f.file + strlen(f.file) - 11, "/go/spin.go"),
		      "%s: file %s", name, f.file ? f.file : "(null)");
		CHECK(f.line >= decl && f.line <= decl + 7, "%s: line %u outside leafSpin (%u)",
		      name, f.line, decl);
		CHECK_INT(f.start_line, decl);
		saw_body |= f.line == body;
		/* frameless leaf: the return address stays at sp */
		CHECK(!gopclntab__sp_delta(t, pc, &delta) && delta == 0,
		      "%s: leafSpin+%llu sp delta %u", name, (unsigned long long)(pc - leaf.entry),
		      delta);
	}
	CHECK(saw_body, "%s: no pc on line %u", name, body);
	/* lines off: no file asked for */
	CHECK_INT(gopclntab__lookup(t, leaf.entry, false, &f), 0);
	CHECK(f.file == NULL && f.line == 0, "lines given unasked");
	/* main.middle: nothing pushed at entry, a frame (saved rbp + locals) at its calls */
	CHECK(!gopclntab__sp_delta(t, mid.entry, &delta) && delta == 0, "middle entry delta %u",
	      delta);
	for (uint64_t pc = mid.entry; pc + 5 <= mid.end; pc++) {
		if (calls(ef, pc, pc + 5, leaf.entry)) {
			CHECK(!gopclntab__sp_delta(t, pc, &delta) && delta > 8 && delta % 8 == 0,
			      "middle call site delta %u", delta);
			break;
		}
	}
	/* outside every function */
	CHECK_INT(gopclntab__lookup(t, 0x1000, true, &f), -ENOENT);
	CHECK_INT(gopclntab__sp_delta(t, ~0ull - 1, &delta), -ENOENT);
cleanup:
	gopclntab__free(t);
	elf_file__put(ef);
}

/* Runs every query over a (possibly broken) table: must fail cleanly, never crash. */
static int exercise(const uint8_t *data, size_t len, uint64_t text, uint64_t lo, uint64_t hi)
{
	uint8_t *copy = malloc(len ? len : 1); /* exact size: ASan catches any overread */
	struct gopclntab *t;
	struct gopclntab_func f;
	uint32_t delta;
	int ok = 0;

	memcpy(copy, data, len);
	t = gopclntab__open_mem(copy, len, text);
	if (!t) {
		CHECK(errno == ENOEXEC || errno == ENOTSUP, "open error %d", errno);
		free(copy);
		return -1;
	}
	for (uint32_t i = 0; i < gopclntab__count(t); i += 1 + gopclntab__count(t) / 300)
		ok += gopclntab__func(t, i, &f) == 0;
	for (uint64_t pc = lo; pc < hi; pc += 1 + (hi - lo) / 3000) {
		if (gopclntab__lookup(t, pc, true, &f) == 0) {
			ok++;
			CHECK(f.name && pc >= f.entry && pc < f.end, "bad lookup result");
		}
		ok += gopclntab__sp_delta(t, pc, &delta) == 0;
	}
	gopclntab__free(t);
	free(copy);
	return ok;
}

static void test_corrupt(void)
{
	struct elf_file *ef = elf_file__open(GO_FIXTURE_DIR "/spin_stripped");
	struct elf_section sec, txt;
	uint8_t *buf;
	uint64_t seed = 0x9e3779b97f4a7c15ull, v;
	int opened = 0;

	CHECK(ef != NULL, "spin_stripped: %s", strerror(errno));
	if (!ef)
		return;
	if (elf_file__section(ef, ".gopclntab", &sec) || elf_file__section(ef, ".text", &txt)) {
		CHECK(0, "no .gopclntab/.text");
		elf_file__put(ef);
		return;
	}
	/* intact: everything works */
	CHECK(exercise(sec.data, sec.size, txt.addr, txt.addr, txt.addr + txt.size) > 3000,
	      "intact table");
	/* truncated anywhere */
	CHECK_INT(exercise(sec.data, 0, txt.addr, txt.addr, txt.addr + 100), -1);
	CHECK_INT(exercise(sec.data, 40, txt.addr, txt.addr, txt.addr + 100), -1);
	for (size_t cut = 1; cut < sec.size; cut += sec.size / 97 + 13)
		opened += exercise(sec.data, cut, txt.addr, txt.addr, txt.addr + txt.size) >= 0;
	CHECK(opened > 0, "no truncated table opened");
	exercise(sec.data, sec.size - 1, txt.addr, txt.addr, txt.addr + txt.size);

	/* header fields */
	buf = malloc(sec.size);
	memcpy(buf, sec.data, sec.size);
	memcpy(buf, "\xfb\xff\xff\xff", 4); /* Go 1.2-1.15 */
	CHECK(!gopclntab__open_mem(buf, sec.size, txt.addr) && errno == ENOTSUP, "old magic");
	memcpy(buf, "\x12\x34\x56\x78", 4);
	CHECK(!gopclntab__open_mem(buf, sec.size, txt.addr) && errno == ENOEXEC, "bad magic");
	memcpy(buf, sec.data, 8);
	buf[7] = 4; /* 32-bit pointers */
	CHECK(!gopclntab__open_mem(buf, sec.size, txt.addr) && errno == ENOTSUP, "ptrsize");
	memcpy(buf, sec.data, 16);
	v = ~0ull >> 4; /* nfunc */
	memcpy(buf + 8, &v, 8);
	CHECK(!gopclntab__open_mem(buf, sec.size, txt.addr) && errno == ENOEXEC, "nfunc");
	memcpy(buf, sec.data, sec.size);
	v = sec.size + 1; /* pclntab offset past the end */
	memcpy(buf + 8 + 7 * 8, &v, 8);
	CHECK(!gopclntab__open_mem(buf, sec.size, txt.addr) && errno == ENOEXEC, "offset");
	memcpy(buf, sec.data, sec.size);
	v = 8; /* funcname table before the header's end and after cutab: out of order */
	memcpy(buf + 8 + 4 * 8, &v, 8);
	CHECK(!gopclntab__open_mem(buf, sec.size, txt.addr) && errno == ENOEXEC, "order");

	/* random byte flips everywhere (deterministic) */
	for (int round = 0; round < 300; round++) {
		memcpy(buf, sec.data, sec.size);
		for (int k = 0; k < 1 + round % 32; k++) {
			seed = seed * 6364136223846793005ull + 1442695040888963407ull;
			uint64_t pos = (seed >> 17) % sec.size;

			if (k % 4 == 0) { /* the header */
				pos = (seed >> 17) % 128;
			} else if (k % 4 == 1) { /* the function table and _func records */
				memcpy(&v, sec.data + 8 + 7 * 8, 8);
				pos = (v + (seed >> 23) % 65536) % sec.size;
			}
			buf[pos] ^= (uint8_t)(seed >> 56) | 1;
		}
		exercise(buf, sec.size, txt.addr, txt.addr, txt.addr + txt.size);
	}
	free(buf);
	elf_file__put(ef);
}

/* A C executable (this test) has no Go table: ENOENT, nothing held. */
static void test_not_go(void)
{
	struct elf_file *ef = elf_file__open("/proc/self/exe");

	CHECK(ef != NULL, "/proc/self/exe: %s", strerror(errno));
	if (!ef)
		return;
	errno = 0;
	CHECK(gopclntab__open(ef) == NULL && errno == ENOENT, "C binary: errno %d", errno);
	elf_file__put(ef);
}

int main(void)
{
	if (access(GO_FIXTURE_DIR "/spin_stripped", R_OK) != 0) {
		printf("SKIP: %s/spin_stripped not built (go not installed)\n", GO_FIXTURE_DIR);
		return 77;
	}
	test_not_go();
	test_binary("spin_full", 1);
	test_binary("spin_stripped", 0);
	if (access(GO_FIXTURE_DIR "/spin_cgo", R_OK) == 0)
		test_binary("spin_cgo", 0);
	test_corrupt();
	return check_done("gopclntab");
}
