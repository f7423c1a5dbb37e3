/* SPDX-License-Identifier: Apache-2.0 */
/* Bounded reading of DWARF call-frame data: integers, LEB128, DW_EH_PE encoded pointers. */
#ifndef MLPROF_DWARF_CURSOR_H
#define MLPROF_DWARF_CURSOR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define DW_EH_PE_omit	  0xff
#define DW_EH_PE_absptr	  0x00
#define DW_EH_PE_uleb128  0x01
#define DW_EH_PE_udata2	  0x02
#define DW_EH_PE_udata4	  0x03
#define DW_EH_PE_udata8	  0x04
#define DW_EH_PE_sleb128  0x09
#define DW_EH_PE_sdata2	  0x0a
#define DW_EH_PE_sdata4	  0x0b
#define DW_EH_PE_sdata8	  0x0c
#define DW_EH_PE_pcrel	  0x10
#define DW_EH_PE_datarel  0x30
#define DW_EH_PE_indirect 0x80

/* A read position in untrusted bytes [p, end) that sit at vaddr; bad after any overrun. */
struct cur {
	const uint8_t *p, *end;
	uint64_t vaddr; /* vaddr of *p */
	bool bad;
};

static inline void cur_skip(struct cur *c, size_t n)
{
	if ((size_t)(c->end - c->p) < n) {
		c->bad = true;
		c->p = c->end;
		return;
	}
	c->p += n;
	c->vaddr += n;
}

static inline uint64_t cur_uint(struct cur *c, size_t n)
{
	uint64_t v = 0;

	if ((size_t)(c->end - c->p) < n) {
		c->bad = true;
		c->p = c->end;
		return 0;
	}
	for (size_t i = 0; i < n; i++)
		v |= (uint64_t)c->p[i] << (8 * i);
	cur_skip(c, n);
	return v;
}

/* A LEB128 number; sign: sign-extended from its last byte's bit 6. */
static inline uint64_t cur_leb(struct cur *c, bool sign)
{
	uint64_t v = 0;
	unsigned int shift = 0;

	while (c->p < c->end) {
		uint8_t b = *c->p;

		cur_skip(c, 1);
		if (shift < 64)
			v |= (uint64_t)(b & 0x7f) << shift;
		shift += 7;
		if (!(b & 0x80)) {
			if (sign && shift < 64 && (b & 0x40))
				v |= ~0ull << shift;
			return v;
		}
	}
	c->bad = true;
	return 0;
}

static inline uint64_t cur_uleb(struct cur *c)
{
	return cur_leb(c, false);
}

static inline int64_t cur_sleb(struct cur *c)
{
	return (int64_t)cur_leb(c, true);
}

/* Reads a DW_EH_PE encoded pointer; datarel is relative to datarel_base. */
static inline bool cur_encoded(struct cur *c, uint8_t enc, uint64_t datarel_base, uint64_t *out)
{
	uint64_t field = c->vaddr, v;

	if (enc == DW_EH_PE_omit)
		return false;
	switch (enc & 0x0f) {
	case DW_EH_PE_absptr:
	case DW_EH_PE_udata8:
	case DW_EH_PE_sdata8:
		v = cur_uint(c, 8);
		break;
	case DW_EH_PE_uleb128:
		v = cur_uleb(c);
		break;
	case DW_EH_PE_udata2:
		v = cur_uint(c, 2);
		break;
	case DW_EH_PE_udata4:
		v = cur_uint(c, 4);
		break;
	case DW_EH_PE_sleb128:
		v = (uint64_t)cur_sleb(c);
		break;
	case DW_EH_PE_sdata2:
		v = (uint64_t)(int64_t)(int16_t)cur_uint(c, 2);
		break;
	case DW_EH_PE_sdata4:
		v = (uint64_t)(int64_t)(int32_t)cur_uint(c, 4);
		break;
	default:
		c->bad = true;
		return false;
	}
	switch (enc & 0x70) {
	case 0:
		break;
	case DW_EH_PE_pcrel:
		v += field;
		break;
	case DW_EH_PE_datarel:
		v += datarel_base;
		break;
	default:
		return false;
	}
	if (enc & DW_EH_PE_indirect)
		return false;
	*out = v;
	return !c->bad;
}

#endif
