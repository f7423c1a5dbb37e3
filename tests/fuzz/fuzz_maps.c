// SPDX-License-Identifier: Apache-2.0
/*
 * libFuzzer target: /proc/PID/maps parsing (src/proc.c) through its real entry point, a
 * process cache whose proc root is a scratch directory holding the input as 1/maps; then
 * address look-ups over what was parsed (sorted, non-overlapping, executable only).
 */
#include <stdint.h>
#include <stdio.h>

#include "fuzz_util.h"
#include "symbolize/proc.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static char maps[128];
	struct proc_cache_config cfg = {.max_procs = 4, .max_elf_files = 4};
	struct proc_cache *pc;
	struct proc *p;
	volatile uint64_t sink = 0;

	fuzz__quiet();
	if (!maps[0]) {
		char dir[128];

		snprintf(dir, sizeof(dir), "%s/1", fuzz__tmpdir());
		if (mkdir(dir, 0700)) {
			perror("fuzz: mkdir");
			abort();
		}
		snprintf(maps, sizeof(maps), "%s/maps", dir);
	}
	fuzz__write_file(maps, data, size);
	cfg.proc_root = fuzz__tmpdir();
	pc = proc_cache__new(&cfg);
	if (!pc)
		return 0;
	p = proc_cache__get(pc, 1);
	if (!p)
		goto cleanup;
	for (size_t i = 0; i < p->n_maps; i++) {
		const struct proc_map *m = &p->maps[i];

		/* what the unwinder relies on: sorted, disjoint, non-empty, executable */
		if (m->start >= m->end || (i && m->start < p->maps[i - 1].end) || !m->exec)
			__builtin_trap();
		if (proc_cache__find_map(pc, p, m->start) != m ||
		    proc_cache__find_map(pc, p, m->end - 1) != m)
			__builtin_trap();
		sink += strlen(m->path) + m->inode + m->offset;
	}
	sink += (uintptr_t)proc_cache__find_map(pc, p, 0x400000);
	proc_cache__on_exit(pc, 1);
	proc_cache__gc(pc);
cleanup:
	proc_cache__free(pc);
	(void)sink;
	return 0;
}
