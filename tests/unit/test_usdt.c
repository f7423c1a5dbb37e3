// SPDX-License-Identifier: Apache-2.0
/*
 * USDT probe notes (symbolize/usdt.c): argument specs, the probes of a real executable
 * (tests/cuda/torch_alloc: PyTorch's pytorch:malloc/free declared with sys/sdt.h), and the
 * same file corrupted in its notes, truncated or with random bytes: never a crash, never a
 * probe outside the file.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mlprof/cuda.h>

#include "check.h"
#include "read_file.h"
#include "symbolize/elf.h"
#include "symbolize/usdt.h"

#define EXE TEST_BIN_DIR "/cuda/torch_alloc"

static void test_parse_arg(void)
{
	CHECK(usdt__parse_arg("-8@%rax") == MLPROF_USDT_ARG(10, 0, 0), "rax");
	CHECK(usdt__parse_arg("8@%r14") == MLPROF_USDT_ARG(1, 0, 0), "r14");
	CHECK(usdt__parse_arg("-8@-56(%rbp)") == MLPROF_USDT_ARG(4, 1, -56), "disp(rbp)");
	CHECK(usdt__parse_arg("8@(%rsp)") == MLPROF_USDT_ARG(19, 1, 0), "(rsp)");
	CHECK(usdt__parse_arg("8@40000(%rsp)") == 0, "disp out of range");
	CHECK(usdt__parse_arg("-1@%dl") == 0, "a byte");
	CHECK(usdt__parse_arg("-4@%eax") == 0, "4 bytes");
	CHECK(usdt__parse_arg("8@$7") == 0, "a constant");
	CHECK(usdt__parse_arg("8@%xmm0") == 0, "an xmm register");
	CHECK(usdt__parse_arg("8@8(%rax,%rbx,4)") == 0, "an index");
	CHECK(usdt__parse_arg("8@%rax)") == 0 && usdt__parse_arg("8@-8(%rbp") == 0, "unbalanced");
	CHECK(usdt__parse_arg("") == 0 && usdt__parse_arg("@") == 0 && usdt__parse_arg("8") == 0,
	      "junk");
}

/* Probes found in an image of len bytes lie inside it. */
static int find_all(const void *img, size_t len, const char *what)
{
	struct usdt_probe p[8];
	struct elf_file *ef = elf_file__open_mem(img, len, what);
	int n = 0;

	if (!ef)
		return -1;
	for (int k = 0; k < 2; k++) {
		int m = usdt__find(ef, "pytorch", k ? "free" : "malloc", p, 8);

		for (int i = 0; i < m; i++)
			if (p[i].off >= len || p[i].ref_ctr_off >= len ||
			    p[i].nargs > USDT_MAX_ARGS)
				n = -100;
		n += n >= 0 ? m : 0;
	}
	elf_file__put(ef);
	return n;
}

static void test_real_file(void)
{
	struct usdt_probe p[8];
	struct elf_file *ef = elf_file__open(EXE);
	int n;

	CHECK(ef != NULL, "open %s", EXE);
	if (!ef)
		return;
	n = usdt__find(ef, "pytorch", "malloc", p, 8);
	CHECK(n == 1, "one pytorch:malloc, got %d", n);
	if (n == 1) {
		CHECK(p[0].nargs == 4, "malloc has 4 arguments, got %d", p[0].nargs);
		CHECK(p[0].args[0] && p[0].args[2], "ptr and size readable");
		CHECK(!p[0].args[1] && !p[0].args[3], "the constants are not");
		CHECK(p[0].off && p[0].ref_ctr_off, "a site and a semaphore");
	}
	n = usdt__find(ef, "pytorch", "free", p, 8);
	CHECK(n == 1 && p[0].nargs == 1 && p[0].args[0], "one pytorch:free(ptr)");
	CHECK(usdt__find(ef, "pytorch", "nothing", p, 8) == 0, "no such probe");
	CHECK(usdt__find(ef, "other", "malloc", p, 8) == 0, "no such provider");
	CHECK(usdt__find(ef, "pytorch", "malloc", p, 0) == 0, "no room");
	elf_file__put(ef);
}

static void test_corrupt(void)
{
	struct elf_section s;
	struct elf_file *ef;
	uint8_t *img, *bad;
	size_t len = 0, off, size;
	uint64_t rng = 0x9e3779b97f4a7c15ull;
	unsigned opened = 0;

	img = read_file(EXE, &len);
	CHECK(img != NULL, "read %s", EXE);
	if (!img)
		return;
	ef = elf_file__open_mem(img, len, "exe");
	CHECK(ef && elf_file__section(ef, ".note.stapsdt", &s) == 0, "a note section");
	if (!ef || elf_file__section(ef, ".note.stapsdt", &s)) {
		elf_file__put(ef);
		free(img);
		return;
	}
	off = s.offset;
	size = s.size;
	elf_file__put(ef);
	bad = malloc(len);
	for (int i = 0; bad && i < 4000; i++) {
		memcpy(bad, img, len);
		for (int k = 0; k < 1 + i % 8; k++) {
			rng = rng * 6364136223846793005ull + 1442695040888963407ull;
			bad[off + (rng >> 33) % size] = (uint8_t)(rng >> 17);
		}
		int r = find_all(bad, len, "flip");

		CHECK(r != -100, "flip %d: a probe outside the file", i);
		if (r >= 0)
			opened++;
	}
	/* every 4-byte field of the notes set to extremes */
	for (size_t at = 0; bad && at + 4 <= size; at += 4) {
		static const uint32_t v[] = {0, 1, 0xffffffffu, 0x7fffffffu, 12};

		for (size_t k = 0; k < sizeof(v) / sizeof(v[0]); k++) {
			memcpy(bad, img, len);
			memcpy(bad + off + at, &v[k], 4);
			CHECK(find_all(bad, len, "field") != -100, "field at %zu = %u", at, v[k]);
		}
	}
	/* cut inside the notes */
	for (size_t cut = off; cut < off + size; cut += 7)
		CHECK(find_all(img, cut, "cut") != -100, "cut at %zu", cut);
	CHECK(opened > 0, "corrupt copies opened");
	free(bad);
	free(img);
}

int main(void)
{
	test_parse_arg();
	test_real_file();
	test_corrupt();
	return check_done("usdt");
}
