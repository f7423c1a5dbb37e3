/* SPDX-License-Identifier: Apache-2.0 */
/* The unwind rule of one pc evaluated from .eh_frame, for the fast path of the unwinder. */
#ifndef MLPROF_UNWIND_CFI_H
#define MLPROF_UNWIND_CFI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct unwind_table;

enum cfi_kind {
	CFI_NONE = 0, /* no FDE covers the pc */
	CFI_RULE,     /* the caller is found by the rule below */
	CFI_END,      /* outermost frame: the return address is undefined (_start, clone) */
	CFI_COMPLEX,  /* a rule the fast path does not follow (expressions, signal frames,
		       * another CFA register, a moved return address): libunwind's job */
};

/*
 * Where a frame's caller is, in the shape gcc and clang emit for x86-64: the CFA is rsp or
 * rbp plus an offset, the return address is at CFA - 8, and rbp is either unchanged or
 * saved at CFA + rbp_off.
 */
struct cfi_rule {
	uint8_t kind;	   /* enum cfi_kind */
	uint8_t cfa_rbp;   /* the CFA is rbp + cfa_off (else rsp + cfa_off) */
	uint8_t rbp_saved; /* the caller's rbp is at CFA + rbp_off (else rbp is unchanged) */
	int32_t cfa_off;
	int32_t rbp_off;
};

/*
 * Evaluates the CFI of link-time address vaddr in t's file: finds its FDE through the
 * .eh_frame_hdr table (or the synthesized one) and runs the CIE's and FDE's instructions up
 * to vaddr. Reads only t's mapped file (untrusted: every read is bounded). Never fails:
 * out->kind says what was found.
 */
void unwind_cfi__rule(const struct unwind_table *t, uint64_t vaddr, struct cfi_rule *out);

#endif
