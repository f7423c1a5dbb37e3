// SPDX-License-Identifier: Apache-2.0
/* Entry uprobe placement on an instruction the kernel emulates (x86-64 prologues). */
#include "capture/uprobe_site.h"

#include <stdbool.h>

/* Longest stretch of prologue looked at. */
#define MAX_SCAN 48

/* Whether the instruction at c is one arch/x86/kernel/uprobes.c emulates. */
static bool emulated(const uint8_t *c, size_t left)
{
	if (left >= 1 && (c[0] & 0xf8) == 0x50)
		return true; /* push %r */
	if (left >= 2 && c[0] == 0x41 && (c[1] & 0xf8) == 0x50)
		return true; /* push %r8..%r15 */
	if (left >= 2 && (c[0] & 0xf0) == 0x70)
		return true; /* jcc rel8 */
	if (left >= 6 && c[0] == 0x0f && (c[1] & 0xf0) == 0x80)
		return true;				    /* jcc rel32 */
	return left >= 5 && (c[0] == 0xe8 || c[0] == 0xe9); /* call / jmp rel32 */
}

/*
 * Length of a known non-emulated straight-line instruction at c, and the registers it
 * writes (*writes); 0 when it is not one of the forms decoded here.
 */
static size_t known(const uint8_t *c, size_t left, uint32_t *writes)
{
	*writes = 0;
	if (left >= 4 && c[0] == 0xf3 && c[1] == 0x0f && c[2] == 0x1e && c[3] == 0xfa)
		return 4; /* endbr64 */
	if (left >= 7 && c[0] == 0x80 && c[1] == 0x3d)
		return 7; /* cmpb $imm8, disp32(%rip) */
	if (left >= 4 && c[0] == 0x80 && (c[1] & 0xf8) == 0x78 && (c[1] & 7) != 4)
		return 4; /* cmpb $imm8, disp8(%reg) (at::RecordFunction::end) */
	if (left >= 4 && c[0] == 0x48 && c[1] == 0x83 && (c[2] == 0xec || c[2] == 0xc4)) {
		*writes = 1u << 4; /* sub/add $imm8, %rsp */
		return 4;
	}
	{
		/* test / mov between registers, or a load or store at disp8(%base) or (%base):
		 * [REX] 85|89|8b modrm [disp8] */
		size_t rex = left >= 1 && (c[0] & 0xf0) == 0x40, mod, n;
		uint32_t reg, rm;

		if (left < rex + 2 || (c[rex] != 0x85 && c[rex] != 0x89 && c[rex] != 0x8b))
			return 0;
		mod = c[rex + 1] >> 6;
		reg = ((c[rex + 1] >> 3) & 7) | (rex && (c[0] & 4) ? 8 : 0);
		rm = (c[rex + 1] & 7) | (rex && (c[0] & 1) ? 8 : 0);
		if (mod == 3)
			n = rex + 2;
		else if (mod == 1 && (rm & 7) != 4)
			n = rex + 3; /* disp8(%base), no SIB */
		else if (mod == 0 && (rm & 7) != 4 && (rm & 7) != 5)
			n = rex + 2; /* (%base) */
		else
			return 0;
		if (left < n)
			return 0;
		if (c[rex] == 0x89 && mod == 3)
			*writes = 1u << rm; /* mov %reg, %rm */
		else if (c[rex] == 0x8b)
			*writes = 1u << reg; /* mov %rm, %reg (a load too) */
		return n;
	}
}

/* See uprobe_site.h. */
uint64_t uprobe_site__emulated(const uint8_t *code, size_t len, uint32_t keep)
{
	size_t off = 0;

	if (len > MAX_SCAN)
		len = MAX_SCAN;
	while (off < len) {
		uint32_t writes;
		size_t n;

		if (emulated(code + off, len - off))
			return off;
		n = known(code + off, len - off, &writes);
		if (!n || (writes & keep))
			return 0;
		off += n;
	}
	return 0;
}
