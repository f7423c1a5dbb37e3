/* SPDX-License-Identifier: Apache-2.0 */
/* Frame-pointer unwinding for code without CFI: rbp chains, Go's pcsp for interrupted frames. */
#ifndef MLPROF_UNWIND_FP_H
#define MLPROF_UNWIND_FP_H

#include <stdbool.h>
#include <stdint.h>

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

#endif
