/* SPDX-License-Identifier: Apache-2.0 */
/* Live-stack snapshot helpers shared by the unwinder tests and bench/unwind_bench.c. */
#ifndef MLPROF_TEST_SNAPSHOT_H
#define MLPROF_TEST_SNAPSHOT_H

#include <dlfcn.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "unwind.h"

/* Raw copy of live stack memory: sanitizers must not check it (redzones are expected). */
__attribute__((no_sanitize_address, noinline)) static void
copy_stack(uint8_t *dst, const uint8_t *src, size_t len)
{
	for (size_t i = 0; i < len; i++)
		((volatile uint8_t *)dst)[i] = src[i];
}

/* End of the mapping (this process) that contains sp, or 0. */
static uint64_t stack_end_of(uint64_t sp)
{
	FILE *f = fopen("/proc/self/maps", "r");
	char line[512];
	uint64_t end = 0;

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f)) {
		unsigned long lo, hi;

		if (sscanf(line, "%lx-%lx", &lo, &hi) == 2 && sp >= lo && sp < hi) {
			end = hi;
			break;
		}
	}
	fclose(f);
	return end;
}

/* Symbol and object of pc through dladdr ("?" when unknown). */
static const char *sym_of(uint64_t pc, const char **obj)
{
	Dl_info info;

	*obj = "";
	if (!dladdr((void *)(uintptr_t)pc, &info))
		return "?";
	*obj = info.dli_fname ? info.dli_fname : "";
	return info.dli_sname ? info.dli_sname : "?";
}

/* Prints an unwind result with names, for failure diagnostics. */
static void dump(const char *what, const uint64_t *pcs, int n, enum unwind_end end)
{
	fprintf(stderr, "%s: %d frames, end %s\n", what, n, unwind_end__str(end));
	for (int i = 0; i < n; i++) {
		const char *obj, *name = sym_of(i ? pcs[i] - 1 : pcs[i], &obj);

		fprintf(stderr, "  #%d %#" PRIx64 " %s (%s)\n", i, pcs[i], name, obj);
	}
}

#endif
