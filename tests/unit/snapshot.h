/* SPDX-License-Identifier: Apache-2.0 */
/* Live-stack snapshot helpers shared by the unwinder tests and bench/unwind_bench.c. */
#ifndef MLPROF_TEST_SNAPSHOT_H
#define MLPROF_TEST_SNAPSHOT_H

#include <dlfcn.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <unistd.h>

#include <mlprof/sample.h>

#include "unwind/unwind.h"

/* Raw copy of live stack memory: sanitizers must not check it (redzones are expected). */
__attribute__((no_sanitize_address, noinline)) static void
copy_stack(uint8_t *dst, const uint8_t *src, size_t len)
{
	for (size_t i = 0; i < len; i++)
		((volatile uint8_t *)dst)[i] = src[i];
}

/*
 * Stores the calling function's rip, rsp, rbp, rbx and r12-r15 into r (a __u64 array in
 * enum mlprof_reg order). A macro, not a function: the values must be the caller's own.
 */
#define SNAP_CAPTURE_REGS(r)                                                                       \
	__asm__ volatile("lea 0(%%rip), %%rax\n\t"                                                 \
			 "mov %%rax, 0(%0)\n\t"                                                    \
			 "mov %%rsp, 8(%0)\n\t"                                                    \
			 "mov %%rbp, 16(%0)\n\t"                                                   \
			 "mov %%rbx, 24(%0)\n\t"                                                   \
			 "mov %%r12, 32(%0)\n\t"                                                   \
			 "mov %%r13, 40(%0)\n\t"                                                   \
			 "mov %%r14, 48(%0)\n\t"                                                   \
			 "mov %%r15, 56(%0)\n\t"                                                   \
			 :                                                                         \
			 : "r"(r)                                                                  \
			 : "rax", "memory")
_Static_assert(MLPROF_REG_IP == 0 && MLPROF_REG_SP == 1 && MLPROF_REG_BP == 2 &&
		       MLPROF_REG_BX == 3 && MLPROF_REG_R12 == 4 && MLPROF_REG_R15 == 7,
	       "SNAP_CAPTURE_REGS stores regs in enum mlprof_reg order");

/*
 * Completes a snapshot whose regs are set: copies the live stack from regs[SP] up to
 * stack_end (at most max bytes, flagging USTACK_CUT beyond) and fills the header.
 */
static void snap_fill(struct mlprof_sample *s, uint64_t stack_end, uint64_t max)
{
	uint64_t sp = s->regs[MLPROF_REG_SP];
	uint64_t len = stack_end > sp ? stack_end - sp : 0;

	if (len > max) {
		len = max;
		s->flags |= MLPROF_SF_USTACK_CUT;
	}
	copy_stack(s->ustack, (const uint8_t *)(uintptr_t)sp, len);
	s->ustack_len = (uint32_t)len;
	s->type = MLPROF_EV_SAMPLE;
	s->pid = (uint32_t)getpid();
	s->tid = (uint32_t)gettid();
	s->flags |= MLPROF_SF_USER_REGS;
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
