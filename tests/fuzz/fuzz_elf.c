// SPDX-License-Identifier: Apache-2.0
/*
 * libFuzzer target for the ELF parser and the symbol table builder (not built by default).
 *
 * Build and run from the repository root:
 *   clang -g -O1 -fsanitize=fuzzer,address,undefined -D_GNU_SOURCE -Isrc -Iinclude \
 *         tests/fuzz/fuzz_elf.c src/elf.c src/symcache.c src/demangle.c src/log.c \
 *         -lz -llzma -lstdc++ -o fuzz_elf
 *   mkdir -p corpus && cp build/tests/sym/cpp_full build/tests/sym/cpp_minidebug corpus/
 *   ./fuzz_elf -max_len=65536 corpus
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "elf.h"
#include "log.h"
#include "symcache.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static bool init;
	struct symcache_config cfg = {.max_bytes = 1 << 20, .debug_dirs = "/nonexistent"};
	struct symcache *sc;
	struct elf_file *ef;
	struct elf_section s;
	struct sym_result r;
	uint8_t buf[16];
	uint64_t x;
	uint32_t crc;
	volatile size_t sink = 0;

	if (!init) {
		log__setup(LOG_ERROR, false);
		init = true;
	}
	ef = elf_file__open_mem(data, size, "fuzz");
	if (!ef)
		return 0;
	/* a fresh cache each time: the same build id must not hit an older table */
	sc = symcache__new(&cfg);
	if (!sc) {
		elf_file__put(ef);
		return 0;
	}
	for (uint32_t i = 0; elf_file__section_by_index(ef, i, &s) == 0; i++) {
		sink += strlen(s.name);
		if (s.data && s.size)
			sink += s.data[0] + s.data[s.size - 1];
	}
	if (elf_file__build_id(ef))
		sink += strlen(elf_file__build_id(ef));
	if (elf_file__debuglink(ef, &crc))
		sink += crc;
	elf_file__offset_to_vaddr(ef, 0x1000, &x);
	elf_file__vaddr_to_offset(ef, 0x1000, &x);
	elf_file__read_vaddr(ef, 0x1000, buf, sizeof(buf));
	for (uint64_t a = 0; a < 0x4000; a += 0x100)
		if (symcache__lookup(sc, ef, NULL, a, &r) == 0)
			sink += strlen(r.name);
	symcache__free(sc);
	elf_file__put(ef);
	(void)sink;
	return 0;
}
