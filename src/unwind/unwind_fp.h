/* SPDX-License-Identifier: Apache-2.0 */
/* Unwinding code without CFI: rbp chains, Go's pcsp, and a stack scan for return addresses. */
#ifndef MLPROF_UNWIND_FP_H
#define MLPROF_UNWIND_FP_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

struct elf_file;
struct unwind_fp;

/* The registers a frame-pointer step reads and moves to the caller. */
struct fp_regs {
	uint64_t ip, sp, bp;
};

/* The copied user stack: len bytes read from address lo. */
struct fp_stack {
	uint64_t lo;
	const uint8_t *data;
	uint64_t len;
};

/* The 8-byte word at addr of the copied stack; false outside it. */
static inline bool fp_stack__word(const struct fp_stack *st, uint64_t addr, uint64_t *v)
{
	if (addr < st->lo || addr - st->lo > st->len || st->len - (addr - st->lo) < 8)
		return false;
	memcpy(v, st->data + (addr - st->lo), 8);
	return true;
}

/* The code a frame runs: its ELF file and load bias (runtime = vaddr + bias), or ef NULL. */
struct fp_code {
	struct elf_file *ef;
	uint64_t bias;
};

/*
 * Says whether addr is plausible code (a return address into an executable mapping);
 * every return address read from the stack is checked with it.
 */
typedef bool (*fp_code_ok_cb)(void *ctx, uint64_t addr);

/* How unwind_fp__step ended. */
enum unwind_fp_step {
	UNWIND_FP_STEP_BP = 0,	/* stepped through the rbp chain */
	UNWIND_FP_STEP_GO,	/* stepped with the Go function's stack-pointer delta (pcsp) */
	UNWIND_FP_STEP_END,	/* outermost frame: frame pointer 0 */
	UNWIND_FP_STEP_BAD,	/* broken chain: not above the frame, misaligned, not code */
	UNWIND_FP_STEP_OUTSIDE, /* the frame record lies outside the copied stack */
};

/*
 * Returns a stepper with an empty cache of Go tables (at most a few dozen, each holding a
 * reference on its ELF file). NULL with errno on failure.
 */
struct unwind_fp *unwind_fp__new(void);
void unwind_fp__free(struct unwind_fp *fp);

/*
 * Moves r from a frame to its caller. The caller's frame pointer must lie above the
 * current one, 8-byte aligned, with its record (saved rbp, return address) inside st.
 * interrupted: r is the sampled frame, which may be a frameless leaf or inside a prologue;
 * where code is Go (a .gopclntab) its stack-pointer delta at r->ip places the return
 * address instead, when code_ok accepts it. Never fails for bad input: says how it ended
 * (r is changed only on UNWIND_FP_STEP_BP / _GO).
 */
enum unwind_fp_step unwind_fp__step(struct unwind_fp *fp, const struct fp_stack *st,
				    const struct fp_code *code, bool interrupted,
				    fp_code_ok_cb code_ok, void *ctx, struct fp_regs *r);

/*
 * Says whether the bytes before a return address (code[0..7] end where it points) are a
 * call instruction: a direct call (E8 rel32: *rel gets the displacement, *direct true) or
 * an indirect one through a register or memory (FF /2, any addressing form, with or
 * without REX). Pure decoding, no other check.
 */
bool unwind_fp__after_call(const uint8_t code[8], bool *direct, int32_t *rel);

/*
 * Says whether a stack word is the return address of the frame being scanned: it must
 * point just after a call in code that CFI covers (the caller can be unwound normally).
 */
typedef bool (*fp_ra_ok_cb)(void *ctx, uint64_t addr, uint64_t slot); /* slot: where it lies */

/*
 * Recovers the caller of a frame that has neither CFI nor a frame pointer (hand-written
 * assembly such as MKL's GEMM kernels inside libtorch_cpu.so): scans up to max_bytes of
 * the copied stack from r->sp for the first word ra_ok accepts and moves r to the caller
 * (ip = that word, sp = just above it; bp unchanged). False when none is found.
 */
bool unwind_fp__scan(const struct fp_stack *st, uint64_t max_bytes, fp_ra_ok_cb ra_ok, void *ctx,
		     struct fp_regs *r);

#endif
