// SPDX-License-Identifier: Apache-2.0
/* Unwinding code without CFI: rbp chains, Go's pcsp, and a stack scan for return addresses. */
#include "unwind/unwind_fp.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "symbolize/elf.h"
#include "symbolize/gopclntab.h"

/* Go tables kept (direct-mapped by file); each slot holds a reference on its file. */
#define GO_SLOTS 32

struct go_slot {
	struct elf_file *ef;
	struct gopclntab *go; /* NULL: not Go, or an unusable table (not retried) */
};

struct unwind_fp {
	struct go_slot slots[GO_SLOTS];
};

/* See unwind_fp.h. */
struct unwind_fp *unwind_fp__new(void)
{
	return calloc(1, sizeof(struct unwind_fp));
}

/* See unwind_fp.h. */
void unwind_fp__free(struct unwind_fp *fp)
{
	if (!fp)
		return;
	for (int i = 0; i < GO_SLOTS; i++) {
		gopclntab__free(fp->slots[i].go);
		elf_file__put(fp->slots[i].ef);
	}
	free(fp);
}

/* The Go table of ef (opened on first need), or NULL. */
static struct gopclntab *go_table(struct unwind_fp *fp, struct elf_file *ef)
{
	struct go_slot *s = &fp->slots[((uintptr_t)ef >> 4) % GO_SLOTS];

	if (s->ef == ef)
		return s->go;
	gopclntab__free(s->go);
	elf_file__put(s->ef);
	s->ef = elf_file__get(ef);
	s->go = gopclntab__open(ef);
	return s->go;
}

/* Follows rbp: [rbp] is the caller's rbp, [rbp + 8] the return address. */
static enum unwind_fp_step bp_step(const struct fp_stack *st, fp_code_ok_cb code_ok, void *ctx,
				   struct fp_regs *r)
{
	uint64_t bp = r->bp, next_bp, ret;

	if (!bp)
		return UNWIND_FP_STEP_END;
	/* above the frame's sp: callers' frames only ever lie higher on the stack */
	if ((bp & 7) || bp < r->sp)
		return UNWIND_FP_STEP_BAD;
	if (!fp_stack__word(st, bp, &next_bp) || !fp_stack__word(st, bp + 8, &ret))
		return UNWIND_FP_STEP_OUTSIDE;
	if (!ret)
		return UNWIND_FP_STEP_END;
	if (!code_ok(ctx, ret))
		return UNWIND_FP_STEP_BAD;
	r->ip = ret;
	r->sp = bp + 16;
	r->bp = next_bp;
	return UNWIND_FP_STEP_BP;
}

/*
 * An interrupted Go frame: pcsp gives the bytes below the return address. Frameless leaves
 * and prologues/epilogues (rbp not, or no longer, this frame's) keep the caller's rbp;
 * a set-up frame (rbp at the saved-rbp slot) is left to bp_step.
 */
static enum unwind_fp_step go_step(struct unwind_fp *fp, const struct fp_stack *st,
				   const struct fp_code *code, fp_code_ok_cb code_ok, void *ctx,
				   struct fp_regs *r)
{
	struct gopclntab *go;
	uint32_t delta;
	uint64_t ret;

	if (!code->ef || !(go = go_table(fp, code->ef)) ||
	    gopclntab__sp_delta(go, r->ip - code->bias, &delta))
		return UNWIND_FP_STEP_BAD;
	if (delta >= 8 && r->bp == r->sp + delta - 8)
		return UNWIND_FP_STEP_BAD;
	if (!fp_stack__word(st, r->sp + delta, &ret) || !ret || !code_ok(ctx, ret))
		return UNWIND_FP_STEP_BAD;
	r->ip = ret;
	r->sp += delta + 8;
	return UNWIND_FP_STEP_GO;
}

/* See unwind_fp.h. */
enum unwind_fp_step unwind_fp__step(struct unwind_fp *fp, const struct fp_stack *st,
				    const struct fp_code *code, bool interrupted,
				    fp_code_ok_cb code_ok, void *ctx, struct fp_regs *r)
{
	if (interrupted && go_step(fp, st, code, code_ok, ctx, r) == UNWIND_FP_STEP_GO)
		return UNWIND_FP_STEP_GO;
	return bp_step(st, code_ok, ctx, r);
}

/* See unwind_fp.h. */
bool unwind_fp__after_call(const uint8_t code[8], bool *direct, int32_t *rel)
{
	uint8_t m;

	*direct = false;
	/* E8 rel32 */
	if (code[3] == 0xe8) {
		uint32_t u = (uint32_t)code[4] | (uint32_t)code[5] << 8 | (uint32_t)code[6] << 16 |
			     (uint32_t)code[7] << 24;

		*direct = true;
		*rel = (int32_t)u;
		return true;
	}
	/* FF /2, the ModRM byte at i: reg field 2; the length follows from mod and rm */
	/* 2 bytes: mod 11 (register) or mod 00 without SIB/disp (rm 4 and 5 excluded) */
	m = code[7];
	if (code[6] == 0xff &&
	    ((m & 0xf8) == 0xd0 || ((m & 0xf8) == 0x10 && (m & 7) != 4 && (m & 7) != 5)))
		return true;
	/* 3 bytes: mod 01 disp8 without SIB; mod 00 with SIB (base not 5) */
	m = code[6];
	if (code[5] == 0xff &&
	    (((m & 0xf8) == 0x50 && (m & 7) != 4) || (m == 0x14 && (code[7] & 7) != 5)))
		return true;
	/* 4 bytes: mod 01 with SIB and disp8 */
	if (code[4] == 0xff && code[5] == 0x54)
		return true;
	/* 6 bytes: mod 10 disp32 without SIB; RIP-relative (mod 00 rm 5) */
	m = code[3];
	if (code[2] == 0xff && (((m & 0xf8) == 0x90 && (m & 7) != 4) || m == 0x15))
		return true;
	/* 7 bytes: mod 10 with SIB and disp32 */
	if (code[1] == 0xff && code[2] == 0x94)
		return true;
	return false;
}

/* See unwind_fp.h. */
bool unwind_fp__scan(const struct fp_stack *st, uint64_t max_bytes, fp_ra_ok_cb ra_ok, void *ctx,
		     struct fp_regs *r)
{
	uint64_t addr = (r->sp + 7) & ~7ull;

	for (; addr - r->sp < max_bytes; addr += 8) {
		uint64_t w;

		if (!fp_stack__word(st, addr, &w))
			return false;
		if (w > 4096 && ra_ok(ctx, w, addr)) {
			r->ip = w;
			r->sp = addr + 8;
			return true;
		}
	}
	return false;
}
