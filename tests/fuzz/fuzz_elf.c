// SPDX-License-Identifier: Apache-2.0
/*
 * libFuzzer target: the ELF parser (headers, sections, segments, notes, USDT notes,
 * .gnu_debuglink) and the symbol table builder over it (.symtab/.dynsym, MiniDebugInfo in
 * .gnu_debugdata).
 * Built with -DMLPROF_FUZZ=ON (CC=clang); scripts/fuzz.sh runs it. Seeds: corpus/elf.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "fuzz_util.h"
#include "symbolize/elf.h"
#include "symbolize/elf_lookup.h"
#include "symbolize/symcache.h"
#include "symbolize/usdt.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct symcache_config cfg = {.max_bytes = 1 << 20, .debug_dirs = "/nonexistent"};
	struct symcache *sc = NULL;
	struct elf_file *ef;
	struct elf_section s;
	struct sym_result r;
	char key[128];
	uint8_t buf[16];
	uint64_t x, entry;
	uint32_t crc;
	volatile size_t sink = 0;

	fuzz__quiet();
	ef = elf_file__open_mem(data, size, "fuzz");
	if (!ef)
		return 0;
	for (uint32_t i = 0; elf_file__section_by_index(ef, i, &s) == 0; i++) {
		sink += strlen(s.name);
		if (s.data && s.size)
			sink += s.data[0] + s.data[s.size - 1];
	}
	if (elf_file__section(ef, ".text", &s) == 0)
		sink += s.size;
	if (elf_file__build_id(ef))
		sink += strlen(elf_file__build_id(ef));
	if (elf_file__debuglink(ef, &crc))
		sink += strlen(elf_file__debuglink(ef, &crc)) + crc;
	sink += strlen(elf_file__memo_key(ef, "/fuzz", key, sizeof(key)));
	sink += elf_file__crc32(ef) + elf_file__type(ef);
	entry = elf_file__entry(ef);
	if (elf_file__find_symbol(ef, "main", &x, NULL) == 0)
		sink += x;
	if (elf_file__find_function(ef, "_start", &x) == 0)
		sink += x;
	{
		struct usdt_probe up[4];

		sink += (size_t)usdt__find(ef, "pytorch", "malloc", up, 4);
	}
	for (uint64_t a = 0; a < 0x4000; a += 0x400) {
		if (elf_file__offset_to_vaddr(ef, a & ~0xfffULL, a, &x) == 0)
			sink += x;
		if (elf_file__vaddr_to_offset(ef, entry + a, &x) == 0)
			sink += x;
		if (elf_file__read_vaddr(ef, entry + a, buf, sizeof(buf)) == 0)
			sink += buf[0];
	}
	/* a fresh cache each time: the same build id must not hit an older table */
	sc = symcache__new(&cfg);
	if (!sc)
		goto cleanup;
	for (uint64_t a = 0; a < 0x4000; a += 0x100)
		if (symcache__lookup(sc, ef, NULL, entry + a, &r) == 0)
			sink += strlen(r.name);
cleanup:
	symcache__free(sc);
	elf_file__put(ef);
	(void)sink;
	return 0;
}
