// SPDX-License-Identifier: Apache-2.0
/* The CIE of .eh_frame / .debug_frame parsed: what the unwind table and the CFI rules share. */
#include "unwind/cfi_cie.h"

#include <string.h>

#include "unwind/dwarf_cursor.h"

/* See cfi_cie.h. */
bool cfi_cie__parse(const uint8_t *p, size_t avail, uint64_t vaddr, struct cfi_cie *cie)
{
	struct cur c = {p, p + avail, vaddr, false};
	uint64_t len;
	const char *aug;
	size_t auglen;
	uint8_t version;

	memset(cie, 0, sizeof(*cie));
	len = cur_uint(&c, 4);
	if (len == 0xffffffffu)
		len = cur_uint(&c, 8);
	if (c.bad || len == 0 || len > (uint64_t)(c.end - c.p))
		return false;
	c.end = c.p + len;
	if (cur_uint(&c, 4) != 0)
		return false;
	version = (uint8_t)cur_uint(&c, 1);
	if (c.bad || (version != 1 && version != 3))
		return false;
	aug = (const char *)c.p;
	auglen = strnlen(aug, (size_t)(c.end - c.p));
	if (auglen == (size_t)(c.end - c.p))
		return false;
	cur_skip(&c, auglen + 1);
	if (strstr(aug, "eh")) {
		cur_skip(&c, 8); /* GCC 2.x's EH data pointer */
		cie->unusual = true;
	}
	cie->code_align = cur_uleb(&c);
	cie->data_align = cur_sleb(&c);
	cie->ra_reg = version == 1 ? cur_uint(&c, 1) : cur_uleb(&c);
	if (aug[0] == 'z') {
		uint64_t alen = cur_uleb(&c);
		const uint8_t *aend;

		if (c.bad || alen > (uint64_t)(c.end - c.p))
			return false;
		aend = c.p + alen;
		cie->has_aug_data = true;
		for (size_t i = 1; i < auglen && !c.bad; i++) {
			uint64_t dummy;

			switch (aug[i]) {
			case 'R':
				cie->fde_enc = (uint8_t)cur_uint(&c, 1);
				break;
			case 'L':
				cur_skip(&c, 1);
				break;
			case 'P': {
				uint8_t penc = (uint8_t)cur_uint(&c, 1);

				/* the value may be indirect: only its size matters here */
				cur_encoded(&c, penc & 0x7f, 0, &dummy);
				break;
			}
			case 'S':
				cie->signal = true;
				break;
			case 'B':
				break;
			default:
				return false;
			}
		}
		c.vaddr += (uint64_t)(aend - c.p);
		c.p = aend;
	} else if (auglen && !cie->unusual) {
		return false;
	}
	cie->insn = c.p;
	cie->insn_end = c.end;
	cie->insn_vaddr = c.vaddr;
	return !c.bad;
}
