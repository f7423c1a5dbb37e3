// SPDX-License-Identifier: Apache-2.0
/* USDT probes of an ELF file: .note.stapsdt notes, semaphores and argument specs. */
#include "symbolize/usdt.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mlprof/cuda.h>

#include "symbolize/elf.h"

#define NT_STAPSDT 3

/* struct pt_regs (x86-64) slots, 8 bytes each, by 64-bit register name. */
static const struct {
	const char *name;
	uint8_t slot;
} regs[] = {
	{"r15", 0},  {"r14", 1},  {"r13", 2},  {"r12", 3},  {"rbp", 4},	 {"rbx", 5},
	{"r11", 6},  {"r10", 7},  {"r9", 8},   {"r8", 9},   {"rax", 10}, {"rcx", 11},
	{"rdx", 12}, {"rsi", 13}, {"rdi", 14}, {"rip", 16}, {"rsp", 19},
};

static int reg_slot(const char *s, size_t len)
{
	for (size_t i = 0; i < sizeof(regs) / sizeof(regs[0]); i++)
		if (strlen(regs[i].name) == len && !strncmp(regs[i].name, s, len))
			return regs[i].slot;
	return -1;
}

/* See usdt.h. */
uint32_t usdt__parse_arg(const char *spec)
{
	const char *at = strchr(spec, '@'), *p, *paren;
	long size, disp = 0;
	char *end;
	int slot;

	if (!at)
		return 0;
	size = strtol(spec, &end, 10);
	if (end != at || (size != 8 && size != -8))
		return 0; /* only whole 8-byte values (pointers, sizes) */
	p = at + 1;
	if (*p == '%') { /* %reg */
		slot = reg_slot(p + 1, strlen(p + 1));
		return slot < 0 ? 0 : MLPROF_USDT_ARG(slot, 0, 0);
	}
	/* [disp](%reg) */
	paren = strchr(p, '(');
	if (!paren || paren[1] != '%')
		return 0;
	if (paren != p) {
		disp = strtol(p, &end, 10);
		if (end != paren || disp < -32768 || disp > 32767)
			return 0;
	}
	end = strchr(paren, ')');
	if (!end || end[1])
		return 0;
	slot = reg_slot(paren + 2, (size_t)(end - paren - 2));
	return slot < 0 ? 0 : MLPROF_USDT_ARG(slot, 1, disp);
}

static uint64_t rd64(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

/* Fills one probe from its note's address triple and argument string; 0 or -1. */
static int fill(const struct elf_file *ef, uint64_t pc, uint64_t base, uint64_t sem,
		const char *argstr, struct usdt_probe *out)
{
	struct elf_section sb;
	char buf[256], *save = NULL, *tok;
	size_t len = 0;

	/* prelinked or moved: the .stapsdt.base section says where the note's base went */
	if (base && !elf_file__section(ef, ".stapsdt.base", &sb)) {
		pc += sb.addr - base;
		if (sem)
			sem += sb.addr - base;
	}
	memset(out, 0, sizeof(*out));
	if (elf_file__vaddr_to_offset(ef, pc, &out->off))
		return -1;
	if (sem && elf_file__vaddr_to_offset(ef, sem, &out->ref_ctr_off))
		return -1;
	/* both in the file's bytes (a corrupt note can point into a segment's bss) */
	elf_file__data(ef, &len);
	if (out->off >= len || out->ref_ctr_off >= len)
		return -1;
	snprintf(buf, sizeof(buf), "%s", argstr);
	for (tok = strtok_r(buf, " ", &save); tok && out->nargs < USDT_MAX_ARGS;
	     tok = strtok_r(NULL, " ", &save))
		out->args[out->nargs++] = usdt__parse_arg(tok);
	return 0;
}

/* See usdt.h. */
int usdt__find(const struct elf_file *ef, const char *provider, const char *name,
	       struct usdt_probe *out, int max)
{
	struct elf_section s;
	struct elf_note note;
	uint64_t pos = 0;
	int n = 0;

	if (elf_file__section(ef, ".note.stapsdt", &s) || !s.data)
		return 0;
	while (n < max && elf_note__next(s.data, s.size, 4, &pos, &note)) {
		const uint8_t *desc = note.desc;
		const char *prov, *pname, *args, *lim;

		if (note.type != NT_STAPSDT || note.descsz < 3 * 8 + 3)
			continue;
		lim = (const char *)desc + note.descsz;
		prov = (const char *)desc + 24;
		pname = memchr(prov, 0, (size_t)(lim - prov));
		if (!pname || ++pname >= lim)
			continue;
		args = memchr(pname, 0, (size_t)(lim - pname));
		if (!args || ++args >= lim || !memchr(args, 0, (size_t)(lim - args)))
			continue;
		if (strcmp(prov, provider) || strcmp(pname, name))
			continue;
		if (!fill(ef, rd64(desc), rd64(desc + 8), rd64(desc + 16), args, &out[n]))
			n++;
	}
	return n;
}
