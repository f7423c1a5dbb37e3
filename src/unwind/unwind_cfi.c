// SPDX-License-Identifier: Apache-2.0
/* The unwind rule of one pc evaluated from .eh_frame, for the fast path of the unwinder. */
#include "unwind/unwind_cfi.h"

#include <stdbool.h>
#include <string.h>

#include "symbolize/elf.h"
#include "unwind/cfi_cie.h"
#include "unwind/dwarf_cursor.h"
#include "unwind/unwind_table.h"

/* x86-64 DWARF register numbers. */
#define REG_RBP 6
#define REG_RSP 7
#define REG_RA	16

/* DW_CFA_* opcodes (the low 6 bits of the first three carry an operand). */
#define CFA_advance_loc		    0x40
#define CFA_offset		    0x80
#define CFA_restore		    0xc0
#define CFA_nop			    0x00
#define CFA_set_loc		    0x01
#define CFA_advance_loc1	    0x02
#define CFA_advance_loc2	    0x03
#define CFA_advance_loc4	    0x04
#define CFA_offset_extended	    0x05
#define CFA_restore_extended	    0x06
#define CFA_undefined		    0x07
#define CFA_same_value		    0x08
#define CFA_register		    0x09
#define CFA_remember_state	    0x0a
#define CFA_restore_state	    0x0b
#define CFA_def_cfa		    0x0c
#define CFA_def_cfa_register	    0x0d
#define CFA_def_cfa_offset	    0x0e
#define CFA_def_cfa_expression	    0x0f
#define CFA_expression		    0x10
#define CFA_offset_extended_sf	    0x11
#define CFA_def_cfa_sf		    0x12
#define CFA_def_cfa_offset_sf	    0x13
#define CFA_val_offset		    0x14
#define CFA_val_offset_sf	    0x15
#define CFA_val_expression	    0x16
#define CFA_GNU_args_size	    0x2e
#define CFA_GNU_negative_offset_ext 0x2f

#define STATE_STACK 8 /* remember_state depth followed */

/* How a register is recovered. */
enum reg_how { REG_SAME = 0, REG_AT_CFA, REG_UNDEF, REG_OTHER };

struct reg_rule {
	uint8_t how;
	int64_t off; /* REG_AT_CFA: at CFA + off */
};

struct row {
	uint64_t cfa_reg;
	int64_t cfa_off;
	bool cfa_expr;
	struct reg_rule rbp, ra;
};

/* A pointer to the file's bytes at vaddr with how many follow, preferring .eh_frame. */
static const uint8_t *image_at(const struct unwind_table *t, uint64_t vaddr, size_t *avail)
{
	const struct elf_section *fs = &t->frame_sec;
	const uint8_t *data;
	uint64_t off;
	size_t len;

	if (fs->data && vaddr >= fs->addr && vaddr - fs->addr < fs->size) {
		*avail = fs->size - (vaddr - fs->addr);
		return fs->data + (vaddr - fs->addr);
	}
	data = elf_file__data(t->ef, &len);
	if (!data || elf_file__vaddr_to_offset(t->ef, vaddr, &off) || off >= len)
		return NULL;
	*avail = len - off;
	return data + off;
}

static int32_t load_i32(const uint8_t *p)
{
	int32_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

/* The vaddr of the FDE whose range may cover vaddr (the last one starting at or below it). */
static bool find_fde(const struct unwind_table *t, uint64_t vaddr, uint64_t *fde)
{
	const uint8_t *tab;
	uint64_t lo = 0, hi = t->count;
	int64_t rel = (int64_t)(vaddr - t->segbase);

	if (!t->ok || !t->count || rel != (int32_t)rel)
		return false;
	if (t->synth) {
		tab = (const uint8_t *)t->synth;
	} else {
		const struct elf_section *hs = &t->hdr_sec;

		if (!hs->data || t->table < hs->addr || t->table - hs->addr > hs->size ||
		    (hs->size - (t->table - hs->addr)) / 8 < t->count)
			return false;
		tab = hs->data + (t->table - hs->addr);
	}
	if (load_i32(tab) > rel)
		return false;
	while (hi - lo > 1) {
		uint64_t mid = lo + (hi - lo) / 2;

		if (load_i32(tab + mid * 8) <= rel)
			lo = mid;
		else
			hi = mid;
	}
	*fde = t->segbase + (uint64_t)(int64_t)load_i32(tab + lo * 8 + 4);
	return true;
}

/* Opens the length-prefixed entry at vaddr: c covers its body. False when malformed. */
static bool open_entry(const struct unwind_table *t, uint64_t vaddr, struct cur *c)
{
	size_t avail;
	const uint8_t *p = image_at(t, vaddr, &avail);
	uint64_t len;

	if (!p)
		return false;
	*c = (struct cur){p, p + avail, vaddr, false};
	len = cur_uint(c, 4);
	if (len == 0xffffffffu)
		len = cur_uint(c, 8);
	if (c->bad || len == 0 || len > (uint64_t)(c->end - c->p))
		return false;
	c->end = c->p + len;
	return true;
}

/* v * align with wrap-around (untrusted operands; results are range-checked later). */
static int64_t scaled(uint64_t v, int64_t align)
{
	return (int64_t)(v * (uint64_t)align);
}

static void set_reg(struct row *r, uint64_t reg, uint8_t how, int64_t off)
{
	struct reg_rule rr = {how, off};

	if (reg == REG_RBP)
		r->rbp = rr;
	else if (reg == REG_RA)
		r->ra = rr;
}

static void restore_reg(struct row *r, const struct row *init, uint64_t reg)
{
	if (reg == REG_RBP)
		r->rbp = init->rbp;
	else if (reg == REG_RA)
		r->ra = init->ra;
}

/*
 * Runs CFA instructions [c) with the row r, stopping before the first advance past target
 * (init: the CIE's row, for restore). False on malformed input.
 */
static bool run(struct cur *c, const struct cfi_cie *cie, uint64_t loc, uint64_t target,
		struct row *r, const struct row *init)
{
	struct row stack[STATE_STACK];
	int depth = 0;

	while (c->p < c->end && !c->bad) {
		uint8_t op = (uint8_t)cur_uint(c, 1), low = op & 0x3f;
		uint64_t reg, delta = 0;
		bool advance = false;

		switch (op & 0xc0) {
		case CFA_advance_loc:
			delta = low;
			advance = true;
			break;
		case CFA_offset:
			set_reg(r, low, REG_AT_CFA, scaled(cur_uleb(c), cie->data_align));
			continue;
		case CFA_restore:
			restore_reg(r, init, low);
			continue;
		default:
			break;
		}
		if (!advance) {
			switch (op) {
			case CFA_nop:
				continue;
			case CFA_set_loc: {
				uint64_t nl;

				if (!cur_encoded(c, cie->fde_enc, 0, &nl))
					return false;
				if (nl > target)
					return true;
				loc = nl;
				continue;
			}
			case CFA_advance_loc1:
				delta = cur_uint(c, 1);
				break;
			case CFA_advance_loc2:
				delta = cur_uint(c, 2);
				break;
			case CFA_advance_loc4:
				delta = cur_uint(c, 4);
				break;
			case CFA_offset_extended:
				reg = cur_uleb(c);
				set_reg(r, reg, REG_AT_CFA, scaled(cur_uleb(c), cie->data_align));
				continue;
			case CFA_offset_extended_sf:
				reg = cur_uleb(c);
				set_reg(r, reg, REG_AT_CFA,
					scaled((uint64_t)cur_sleb(c), cie->data_align));
				continue;
			case CFA_GNU_negative_offset_ext:
				reg = cur_uleb(c);
				set_reg(r, reg, REG_AT_CFA,
					scaled(0 - cur_uleb(c), cie->data_align));
				continue;
			case CFA_restore_extended:
				restore_reg(r, init, cur_uleb(c));
				continue;
			case CFA_undefined:
				set_reg(r, cur_uleb(c), REG_UNDEF, 0);
				continue;
			case CFA_same_value:
				set_reg(r, cur_uleb(c), REG_SAME, 0);
				continue;
			case CFA_register:
				reg = cur_uleb(c);
				cur_uleb(c);
				set_reg(r, reg, REG_OTHER, 0);
				continue;
			case CFA_remember_state:
				if (depth == STATE_STACK)
					return false;
				stack[depth++] = *r;
				continue;
			case CFA_restore_state:
				if (!depth)
					return false;
				*r = stack[--depth];
				continue;
			case CFA_def_cfa:
				r->cfa_reg = cur_uleb(c);
				r->cfa_off = (int64_t)cur_uleb(c);
				r->cfa_expr = false;
				continue;
			case CFA_def_cfa_sf:
				r->cfa_reg = cur_uleb(c);
				r->cfa_off = scaled((uint64_t)cur_sleb(c), cie->data_align);
				r->cfa_expr = false;
				continue;
			case CFA_def_cfa_register:
				r->cfa_reg = cur_uleb(c);
				continue;
			case CFA_def_cfa_offset:
				r->cfa_off = (int64_t)cur_uleb(c);
				continue;
			case CFA_def_cfa_offset_sf:
				r->cfa_off = scaled((uint64_t)cur_sleb(c), cie->data_align);
				continue;
			case CFA_def_cfa_expression:
				r->cfa_expr = true;
				cur_skip(c, cur_uleb(c));
				continue;
			case CFA_expression:
			case CFA_val_expression:
				reg = cur_uleb(c);
				set_reg(r, reg, REG_OTHER, 0);
				cur_skip(c, cur_uleb(c));
				continue;
			case CFA_val_offset:
			case CFA_val_offset_sf:
				reg = cur_uleb(c);
				set_reg(r, reg, REG_OTHER, 0);
				cur_uleb(c);
				continue;
			case CFA_GNU_args_size:
				cur_uleb(c);
				continue;
			default:
				return false;
			}
		}
		/* an advance: the row so far holds for [loc, loc + delta) */
		if (loc + delta * cie->code_align > target)
			return true;
		loc += delta * cie->code_align;
	}
	return !c->bad;
}

/* See unwind_cfi.h. */
void unwind_cfi__rule(const struct unwind_table *t, uint64_t vaddr, struct cfi_rule *out)
{
	uint64_t fde, cie_ptr, pc_begin, pc_range;
	const uint8_t *cie_p;
	size_t avail;
	struct row init = {0}, row;
	struct cfi_cie cie;
	struct cur c, ic;

	memset(out, 0, sizeof(*out));
	if (!find_fde(t, vaddr, &fde) || !open_entry(t, fde, &c))
		return;
	cie_ptr = cur_uint(&c, 4);
	if (c.bad || cie_ptr == 0 || cie_ptr > c.vaddr - 4)
		return;
	out->kind = CFI_COMPLEX;
	cie_p = image_at(t, c.vaddr - 4 - cie_ptr, &avail);
	if (!cie_p || !cfi_cie__parse(cie_p, avail, c.vaddr - 4 - cie_ptr, &cie) || cie.unusual ||
	    !cie.code_align)
		return;
	if (!cur_encoded(&c, cie.fde_enc, 0, &pc_begin) ||
	    !cur_encoded(&c, cie.fde_enc & 0x0f, 0, &pc_range))
		return;
	if (vaddr < pc_begin || vaddr - pc_begin >= pc_range) {
		out->kind = CFI_NONE;
		return;
	}
	if (cie.has_aug_data)
		cur_skip(&c, cur_uleb(&c));
	if (c.bad || cie.signal || cie.ra_reg != REG_RA)
		return;
	ic = (struct cur){cie.insn, cie.insn_end, cie.insn_vaddr, false};
	if (!run(&ic, &cie, 0, UINT64_MAX, &init, &init))
		return;
	row = init;
	if (!run(&c, &cie, pc_begin, vaddr, &row, &init))
		return;
	if (row.ra.how == REG_UNDEF) {
		out->kind = CFI_END;
		return;
	}
	if (row.cfa_expr || (row.cfa_reg != REG_RSP && row.cfa_reg != REG_RBP) ||
	    row.ra.how != REG_AT_CFA || row.ra.off != -8 || row.rbp.how == REG_OTHER ||
	    row.cfa_off != (int32_t)row.cfa_off || row.rbp.off != (int32_t)row.rbp.off)
		return;
	out->kind = CFI_RULE;
	out->cfa_rbp = row.cfa_reg == REG_RBP;
	out->cfa_off = (int32_t)row.cfa_off;
	out->rbp_saved = row.rbp.how == REG_AT_CFA;
	out->rbp_off = (int32_t)row.rbp.off;
}
