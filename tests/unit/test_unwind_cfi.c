// SPDX-License-Identifier: Apache-2.0
/*
 * Unit tests for the unwinder's fast path: CFI rules evaluated from this test's own
 * .eh_frame (functions with hand-written CFI below), and the call-instruction decoder that
 * the stack scan for frames without CFI relies on.
 */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "symbolize/elf.h"
#include "symbolize/elf_lookup.h"
#include "unwind/unwind_cfi.h"
#include "unwind/unwind_fp.h"
#include "unwind/unwind_table.h"

/*
 * cfi_frame: push rbp (1 byte), mov rsp,rbp (3), nop (1), pop rbp (1), ret: the classic
 * frame-pointer prologue, CFA moving from rsp to rbp and back.
 * cfi_stack: sub $40,rsp (4 bytes), nop, add $40,rsp (4), ret: a frameless function.
 * cfi_outer: the return address is undefined (as _start and clone declare).
 * cfi_expr: the CFA is a DWARF expression (as PLT entries have): not for the fast path.
 * cfi_signal: a signal frame CIE ('S'): not for the fast path.
 */
__asm__(".text\n"
	".globl cfi_frame\n.type cfi_frame,@function\ncfi_frame:\n"
	".cfi_startproc\n"
	"pushq %rbp\n.cfi_def_cfa_offset 16\n.cfi_offset %rbp, -16\n"
	"movq %rsp, %rbp\n.cfi_def_cfa_register %rbp\n"
	"nop\n"
	"popq %rbp\n.cfi_def_cfa %rsp, 8\n"
	"ret\n.cfi_endproc\n.size cfi_frame, .-cfi_frame\n"
	".globl cfi_stack\n.type cfi_stack,@function\ncfi_stack:\n"
	".cfi_startproc\n"
	"subq $40, %rsp\n.cfi_def_cfa_offset 48\n"
	"nop\n"
	"addq $40, %rsp\n.cfi_def_cfa_offset 8\n"
	"ret\n.cfi_endproc\n.size cfi_stack, .-cfi_stack\n"
	".globl cfi_outer\n.type cfi_outer,@function\ncfi_outer:\n"
	".cfi_startproc\n.cfi_undefined %rip\n"
	"nop\nret\n.cfi_endproc\n.size cfi_outer, .-cfi_outer\n"
	".globl cfi_expr\n.type cfi_expr,@function\ncfi_expr:\n"
	".cfi_startproc\n"
	/* DW_CFA_def_cfa_expression { DW_OP_breg7 8 } */
	".cfi_escape 0x0f, 0x02, 0x77, 0x08\n"
	"nop\nret\n.cfi_endproc\n.size cfi_expr, .-cfi_expr\n"
	".globl cfi_signal\n.type cfi_signal,@function\ncfi_signal:\n"
	".cfi_startproc\n.cfi_signal_frame\n"
	"nop\nret\n.cfi_endproc\n.size cfi_signal, .-cfi_signal\n");

void cfi_frame(void);
void cfi_stack(void);
void cfi_outer(void);
void cfi_expr(void);
void cfi_signal(void);

/* The rule at byte off of function fn (a vaddr of this executable's file). */
static struct cfi_rule rule_at(const struct unwind_table *t, uint64_t fn, uint64_t off)
{
	struct cfi_rule r;

	unwind_cfi__rule(t, fn + off, &r);
	return r;
}

static void check_rule(struct cfi_rule r, int kind, int cfa_rbp, int cfa_off, int rbp_saved,
		       int rbp_off)
{
	CHECK_INT(r.kind, kind);
	if (kind != CFI_RULE)
		return;
	CHECK_INT(r.cfa_rbp, cfa_rbp);
	CHECK_INT(r.cfa_off, cfa_off);
	CHECK_INT(r.rbp_saved, rbp_saved);
	if (rbp_saved)
		CHECK_INT(r.rbp_off, rbp_off);
}

static void test_rules(void)
{
	struct elf_file *ef = elf_file__open("/proc/self/exe");
	struct unwind_table *t = ef ? unwind_table__new(ef) : NULL;
	uint64_t frame, stack, outer, expr, sig, code;

	CHECK(t && t->ok, "unwind table of the test itself");
	if (!t)
		goto cleanup;
	CHECK_INT(elf_file__find_function(ef, "cfi_frame", &frame), 0);
	CHECK_INT(elf_file__find_function(ef, "cfi_stack", &stack), 0);
	CHECK_INT(elf_file__find_function(ef, "cfi_outer", &outer), 0);
	CHECK_INT(elf_file__find_function(ef, "cfi_expr", &expr), 0);
	CHECK_INT(elf_file__find_function(ef, "cfi_signal", &sig), 0);

	/* entry: CFA = rsp + 8; after push: rsp + 16, rbp at CFA - 16; after mov: rbp + 16 */
	check_rule(rule_at(t, frame, 0), CFI_RULE, 0, 8, 0, 0);
	check_rule(rule_at(t, frame, 1), CFI_RULE, 0, 16, 1, -16);
	check_rule(rule_at(t, frame, 4), CFI_RULE, 1, 16, 1, -16);
	check_rule(rule_at(t, frame, 5), CFI_RULE, 1, 16, 1, -16);
	/* after pop: back to rsp + 8 (rbp's save slot rule stays, as the assembler wrote it) */
	{
		struct cfi_rule r = rule_at(t, frame, 6);

		CHECK_INT(r.kind, CFI_RULE);
		CHECK_INT(r.cfa_rbp, 0);
		CHECK_INT(r.cfa_off, 8);
	}
	check_rule(rule_at(t, stack, 0), CFI_RULE, 0, 8, 0, 0);
	check_rule(rule_at(t, stack, 4), CFI_RULE, 0, 48, 0, 0);
	check_rule(rule_at(t, stack, 5), CFI_RULE, 0, 48, 0, 0);
	check_rule(rule_at(t, stack, 9), CFI_RULE, 0, 8, 0, 0);
	check_rule(rule_at(t, outer, 0), CFI_END, 0, 0, 0, 0);
	check_rule(rule_at(t, expr, 0), CFI_COMPLEX, 0, 0, 0, 0);
	check_rule(rule_at(t, sig, 0), CFI_COMPLEX, 0, 0, 0, 0);
	/* code of this file outside any FDE: the ELF header's address */
	code = t->lo;
	CHECK_INT(rule_at(t, code, 0).kind, CFI_NONE);
	/* an address beyond the file */
	CHECK_INT(rule_at(t, t->hi + (1ull << 32), 0).kind, CFI_NONE);
cleanup:
	unwind_table__free(t);
	elf_file__put(ef);
}

/* code[0..7] are the bytes before a return address; true when they end in a call. */
static bool after_call(const uint8_t *tail, size_t n, bool *direct, int32_t *rel)
{
	uint8_t code[8];

	memset(code, 0xcc, sizeof(code)); /* int3 padding before */
	memcpy(code + 8 - n, tail, n);
	return unwind_fp__after_call(code, direct, rel);
}

static void test_call_decoder(void)
{
	static const struct {
		uint8_t b[8];
		size_t n;
		bool call, direct;
		int32_t rel;
	} cases[] = {
		{{0xe8, 0x10, 0x00, 0x00, 0x00}, 5, true, true, 16},  /* call rel32 */
		{{0xe8, 0xf0, 0xff, 0xff, 0xff}, 5, true, true, -16}, /* call rel32 (back) */
		{{0xff, 0xd0}, 2, true, false, 0},		      /* call *%rax */
		{{0x41, 0xff, 0xd3}, 3, true, false, 0},	      /* call *%r11 */
		{{0xff, 0x10}, 2, true, false, 0},		      /* call *(%rax) */
		{{0xff, 0x50, 0x08}, 3, true, false, 0},	      /* call *8(%rax) */
		{{0xff, 0x14, 0x24}, 3, true, false, 0},	      /* call *(%rsp) */
		{{0xff, 0x54, 0x24, 0x08}, 4, true, false, 0},	      /* call *8(%rsp) */
		{{0xff, 0x90, 0, 1, 0, 0}, 6, true, false, 0},	      /* call *256(%rax) */
		{{0xff, 0x15, 0, 1, 0, 0}, 6, true, false, 0},	      /* call *256(%rip) */
		{{0xff, 0x94, 0x24, 0, 1, 0, 0}, 7, true, false, 0},  /* call *256(%rsp) */
		{{0xc3}, 1, false, false, 0},			      /* ret: a function start */
		{{0x5d, 0xc3}, 2, false, false, 0},		      /* pop %rbp; ret */
		{{0xff, 0xe0}, 2, false, false, 0},		      /* jmp *%rax */
		{{0x48, 0x89, 0xe5}, 3, false, false, 0},	      /* mov %rsp,%rbp */
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		bool direct = false;
		int32_t rel = 0;
		bool got = after_call(cases[i].b, cases[i].n, &direct, &rel);

		CHECK(got == cases[i].call, "case %zu: call %d", i, (int)got);
		if (got && cases[i].call) {
			CHECK(direct == cases[i].direct, "case %zu: direct %d", i, (int)direct);
			if (direct)
				CHECK_INT(rel, cases[i].rel);
		}
	}
}

/* A return address accepted at one offset above sp: the scan stops at the first. */
static uint64_t accept_addr, accept_slot;
static bool accept_one(void *ctx, uint64_t addr, uint64_t slot)
{
	(void)ctx;
	if (addr != accept_addr)
		return false;
	accept_slot = slot;
	return true;
}

static void test_scan(void)
{
	uint64_t words[8] = {0x1234, 0, 0x7f0000001000, 0x7f0000002000, 0x7f0000003000};
	struct fp_stack st = {0x10000, (const uint8_t *)words, sizeof(words)};
	struct fp_regs r = {.ip = 0x7f0000009999, .sp = 0x10000, .bp = 77};

	accept_addr = 0x7f0000002000;
	CHECK(unwind_fp__scan(&st, 4096, accept_one, NULL, &r), "found");
	CHECK_INT(r.ip, 0x7f0000002000);
	CHECK_INT(r.sp, 0x10000 + 4 * 8);
	CHECK_INT(accept_slot, 0x10000 + 3 * 8); /* where the word lies */
	CHECK_INT(r.bp, 77);
	/* not within the bytes allowed */
	r = (struct fp_regs){.ip = 1, .sp = 0x10000, .bp = 0};
	CHECK(!unwind_fp__scan(&st, 16, accept_one, NULL, &r), "beyond the scan bound");
	/* not in the copy */
	accept_addr = 0xdead;
	CHECK(!unwind_fp__scan(&st, 4096, accept_one, NULL, &r), "nothing accepted");
}

int main(void)
{
	test_rules();
	test_call_decoder();
	test_scan();
	return check_done("unwind_cfi");
}
