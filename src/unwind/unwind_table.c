// SPDX-License-Identifier: Apache-2.0
/* Unwind tables of ELF files: .eh_frame_hdr, synthesized from .eh_frame, from .debug_frame. */
#define LOG_MODULE "unwind"
#include "util/log.h"

#include "unwind/unwind_table.h"

#include <errno.h>
#include <linux/elf.h>
#include <stdlib.h>
#include <string.h>

#include "unwind/cfi_cie.h"
#include "unwind/dwarf_cursor.h"

/* Bound on FDEs indexed when synthesizing a table from .eh_frame. */
#define MAX_SYNTH_FDES (1u << 21)
/* Largest .debug_frame section translated (larger ones are skipped and counted). */
#define MAX_DEBUG_FRAME (64u << 20)

#ifndef PT_GNU_EH_FRAME
#define PT_GNU_EH_FRAME 0x6474e550
#endif

/* ---- unwind tables ---- */

struct cie_enc {
	uint64_t off;
	uint8_t enc;
};

/* FDE pointer encoding of the CIE at offset off of .eh_frame; false when unusable. */
static bool parse_cie(const struct elf_section *fs, uint64_t off, uint8_t *enc)
{
	struct cfi_cie cie;

	if (off >= fs->size ||
	    !cfi_cie__parse(fs->data + off, fs->size - off, fs->addr + off, &cie))
		return false;
	*enc = cie.fde_enc;
	return true;
}

static int cmp_pair(const void *a, const void *b)
{
	const int32_t *x = a, *y = b;

	return x[0] < y[0] ? -1 : x[0] > y[0];
}

/* Builds a sorted (initial_loc, fde) table relative to .eh_frame when .eh_frame_hdr is absent. */
static int synth_table(struct unwind_table *t)
{
	const struct elf_section *fs = &t->frame_sec;
	struct cie_enc cies[64];
	size_t ncies = 0, n = 0, cap = 0;
	int32_t *tab = NULL;
	uint64_t off = 0;

	while (fs->size - off >= 8) {
		struct cur c = {fs->data + off, fs->data + fs->size, fs->addr + off, false};
		uint64_t len = cur_uint(&c, 4), id_field, cie_off, pc_begin;
		uint8_t enc = 0;
		bool found = false;

		if (len == 0)
			break;
		if (len == 0xffffffffu)
			len = cur_uint(&c, 8);
		if (c.bad || len < 4 || len > (uint64_t)(c.end - c.p))
			break;
		uint64_t next = (uint64_t)(c.p - fs->data) + len;

		id_field = (uint64_t)(c.p - fs->data);
		cie_off = cur_uint(&c, 4);
		if (cie_off != 0 && cie_off <= id_field) {
			cie_off = id_field - cie_off;
			for (size_t i = 0; i < ncies; i++) {
				if (cies[i].off == cie_off) {
					enc = cies[i].enc;
					found = true;
					break;
				}
			}
			if (!found) {
				if (!parse_cie(fs, cie_off, &enc))
					goto next;
				if (ncies == sizeof(cies) / sizeof(cies[0]))
					ncies = 0;
				cies[ncies++] = (struct cie_enc){cie_off, enc};
			}
			if (!cur_encoded(&c, enc, 0, &pc_begin) || !pc_begin)
				goto next;
			int64_t rel_pc = (int64_t)(pc_begin - t->segbase);
			int64_t rel_fde = (int64_t)off;

			if (rel_pc != (int32_t)rel_pc || rel_fde != (int32_t)rel_fde)
				goto next;
			if (n >= MAX_SYNTH_FDES)
				break;
			if (n == cap) {
				size_t ncap = cap ? cap * 2 : 256;
				int32_t *p = realloc(tab, ncap * 2 * sizeof(*tab));

				if (!p) {
					free(tab);
					return -ENOMEM;
				}
				tab = p;
				cap = ncap;
			}
			tab[2 * n] = (int32_t)rel_pc;
			tab[2 * n + 1] = (int32_t)rel_fde;
			n++;
		}
	next:
		off = next;
	}
	if (!n) {
		free(tab);
		return -ENOENT;
	}
	qsort(tab, n, 2 * sizeof(*tab), cmp_pair);
	t->synth = tab;
	t->count = n;
	return 0;
}

/* ---- .debug_frame translated into an .eh_frame image ---- */

struct dbg_cie_map {
	uint64_t in_off;
	uint32_t out_off;
	bool ok;
};

/* Growable output buffer bounded by MAX_DEBUG_FRAME. */
struct obuf {
	uint8_t *p;
	size_t len, cap;
	int err;
};

static uint8_t *obuf_grow(struct obuf *o, size_t n)
{
	uint8_t *at;

	if (o->err)
		return NULL;
	if (n > MAX_DEBUG_FRAME || o->len > MAX_DEBUG_FRAME - n) {
		o->err = -E2BIG;
		return NULL;
	}
	if (o->len + n > o->cap) {
		size_t ncap = o->cap ? o->cap : 4096;
		uint8_t *p;

		while (ncap < o->len + n)
			ncap *= 2;
		p = realloc(o->p, ncap);
		if (!p) {
			o->err = -ENOMEM;
			return NULL;
		}
		o->p = p;
		o->cap = ncap;
	}
	at = o->p + o->len;
	o->len += n;
	return at;
}

static void put_u32(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static void put_u64(uint8_t *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

/* Reads an initial length; sets *end to the entry's end and *is64 for the 64-bit format. */
static bool dbg_entry_len(struct cur *c, const uint8_t **end, bool *is64)
{
	uint64_t len = cur_uint(c, 4);

	*is64 = len == 0xffffffffu;
	if (*is64)
		len = cur_uint(c, 8);
	if (c->bad || len > (uint64_t)(c->end - c->p))
		return false;
	*end = c->p + len;
	return true;
}

/*
 * Appends the .eh_frame form of the .debug_frame CIE at in_off: CIE id 0, version 4
 * becomes 3 without its address and segment sizes, everything else is kept. Only an
 * empty augmentation is taken, so FDE addresses stay absolute 8-byte values (libunwind's
 * default for a CIE without 'R'). Returns false when the CIE is corrupt or unsupported.
 */
static bool dbg_put_cie(const uint8_t *df, size_t df_len, uint64_t in_off, struct obuf *o,
			uint32_t *out_off)
{
	struct cur c = {df, df + df_len, 0, false};
	const uint8_t *end, *rest;
	uint64_t id;
	uint8_t version, *w;
	bool is64;
	size_t n;

	cur_skip(&c, in_off);
	if (c.bad || !dbg_entry_len(&c, &end, &is64))
		return false;
	c.end = end;
	id = cur_uint(&c, is64 ? 8 : 4);
	version = (uint8_t)cur_uint(&c, 1);
	if (c.bad || id != (is64 ? UINT64_MAX : 0xffffffffu) ||
	    (version != 1 && version != 3 && version != 4))
		return false;
	if (cur_uint(&c, 1) != 0) /* augmentation string */
		return false;
	if (version == 4 && (cur_uint(&c, 1) != 8 || cur_uint(&c, 1) != 0))
		return false; /* address size, segment selector size */
	rest = c.p;
	cur_uleb(&c); /* code alignment */
	cur_sleb(&c); /* data alignment */
	if (version == 1)
		cur_skip(&c, 1);
	else
		cur_uleb(&c); /* return address column */
	if (c.bad)
		return false;
	n = (size_t)(end - rest);
	if (n > UINT32_MAX - 6 || o->len > INT32_MAX)
		return false;
	*out_off = (uint32_t)o->len;
	w = obuf_grow(o, 4 + 4 + 1 + 1 + n);
	if (!w)
		return false;
	put_u32(w, (uint32_t)(4 + 1 + 1 + n));
	put_u32(w + 4, 0);
	w[8] = version == 4 ? 3 : version;
	w[9] = 0;
	memcpy(w + 10, rest, n);
	return true;
}

/*
 * See unwind_table.h. Every length and offset is checked against the section; a bad entry
 * length ends the walk (what came before is kept), a bad CIE drops its FDEs.
 */
int unwind__debug_frame_to_eh(const uint8_t *df, size_t df_len, uint64_t lo, uint64_t hi,
			      uint8_t **image, size_t *image_len, int32_t **index)
{
	struct dbg_cie_map cies[64];
	size_t ncies = 0, next_cie = 0, n = 0, cap = 0;
	struct obuf o = {NULL, 0, 0, 0};
	int32_t *tab = NULL;
	uint64_t off = 0;
	int err;

	*image = NULL;
	*image_len = 0;
	*index = NULL;
	if (!df || hi <= lo || hi - lo > INT32_MAX || df_len > MAX_DEBUG_FRAME)
		return -EINVAL;
	while (df_len - off >= 4) {
		struct cur c = {df + off, df + df_len, off, false};
		const uint8_t *end;
		uint64_t cie_off, pc, range;
		uint32_t out_cie = 0;
		bool is64, found = false, ok = false;
		uint8_t *w;
		size_t ninstr, fde_off;

		if (!dbg_entry_len(&c, &end, &is64))
			break; /* a bad length: nothing after it can be found */
		uint64_t next = (uint64_t)(end - df);

		if (end == c.p)
			goto next; /* zero-length padding */
		c.end = end;
		cie_off = cur_uint(&c, is64 ? 8 : 4);
		if (c.bad || cie_off == (is64 ? UINT64_MAX : 0xffffffffu))
			goto next; /* a CIE: written when an FDE uses it */
		for (size_t i = 0; i < ncies; i++) {
			if (cies[i].in_off == cie_off) {
				ok = cies[i].ok;
				out_cie = cies[i].out_off;
				found = true;
				break;
			}
		}
		if (!found) {
			/* a CIE must be a different entry, not this FDE */
			ok = cie_off != off && dbg_put_cie(df, df_len, cie_off, &o, &out_cie);
			if (o.err)
				break;
			cies[next_cie] = (struct dbg_cie_map){cie_off, out_cie, ok};
			next_cie = (next_cie + 1) % (sizeof(cies) / sizeof(cies[0]));
			if (ncies < sizeof(cies) / sizeof(cies[0]))
				ncies++;
		}
		if (!ok)
			goto next;
		pc = cur_uint(&c, 8);
		range = cur_uint(&c, 8);
		/* code dropped by the linker has pc 0 or a tombstone (-1, -2) outside [lo, hi) */
		if (c.bad || pc < lo || pc >= hi || !range || range > hi - pc)
			goto next;
		if (o.len > INT32_MAX || n >= MAX_SYNTH_FDES)
			break;
		ninstr = (size_t)(end - c.p);
		if (ninstr > UINT32_MAX - 20)
			goto next;
		if (n == cap) {
			size_t ncap = cap ? cap * 2 : 64;
			int32_t *p = realloc(tab, ncap * 2 * sizeof(*tab));

			if (!p) {
				o.err = -ENOMEM;
				break;
			}
			tab = p;
			cap = ncap;
		}
		fde_off = o.len;
		w = obuf_grow(&o, 4 + 4 + 8 + 8 + ninstr);
		if (!w)
			break;
		tab[2 * n] = (int32_t)(pc - lo);
		tab[2 * n + 1] = (int32_t)fde_off;
		put_u32(w, (uint32_t)(4 + 8 + 8 + ninstr));
		/* eh_frame CIE pointer: distance back from this field to the CIE */
		put_u32(w + 4, (uint32_t)(fde_off + 4 - out_cie));
		put_u64(w + 8, pc);
		put_u64(w + 16, range);
		memcpy(w + 24, c.p, ninstr);
		n++;
	next:
		off = next;
	}
	err = o.err;
	if (!err && !n)
		err = -ENOENT;
	if (err) {
		free(o.p);
		free(tab);
		return err;
	}
	qsort(tab, n, 2 * sizeof(*tab), cmp_pair);
	*image = o.p;
	*image_len = o.len;
	*index = tab;
	return (int)n;
}

/* Finds PT_LOAD extent and PT_GNU_EH_FRAME in the program headers (bounds checked). */
static void scan_phdrs(struct unwind_table *t, uint64_t *ehf_vaddr)
{
	size_t len;
	const uint8_t *d = elf_file__data(t->ef, &len);
	Elf64_Ehdr eh;

	*ehf_vaddr = 0;
	t->lo = UINT64_MAX;
	t->hi = 0;
	if (!d || len < sizeof(eh))
		return;
	memcpy(&eh, d, sizeof(eh));
	if (eh.e_phentsize < sizeof(Elf64_Phdr) || eh.e_phoff > len ||
	    eh.e_phnum > (len - eh.e_phoff) / eh.e_phentsize)
		return;
	for (unsigned int i = 0; i < eh.e_phnum; i++) {
		Elf64_Phdr ph;

		memcpy(&ph, d + eh.e_phoff + (uint64_t)i * eh.e_phentsize, sizeof(ph));
		if (ph.p_type == PT_LOAD && ph.p_vaddr + ph.p_memsz >= ph.p_vaddr) {
			if (ph.p_vaddr < t->lo)
				t->lo = ph.p_vaddr;
			if (ph.p_vaddr + ph.p_memsz > t->hi)
				t->hi = ph.p_vaddr + ph.p_memsz;
		} else if (ph.p_type == PT_GNU_EH_FRAME) {
			*ehf_vaddr = ph.p_vaddr;
		}
	}
}

/* Parses .eh_frame_hdr (or synthesizes a table from .eh_frame) for t->ef. */
static void table_parse(struct unwind_table *t)
{
	uint64_t ehf_vaddr, eh_frame_ptr, count;
	struct cur c;
	uint8_t enc_ptr, enc_count, enc_table;

	scan_phdrs(t, &ehf_vaddr);
	if (t->lo >= t->hi)
		return;
	if (elf_file__section(t->ef, ".eh_frame", &t->frame_sec) || !t->frame_sec.data)
		memset(&t->frame_sec, 0, sizeof(t->frame_sec));
	if (elf_file__section(t->ef, ".eh_frame_hdr", &t->hdr_sec) || !t->hdr_sec.data) {
		uint64_t off;
		size_t len;
		const uint8_t *d = elf_file__data(t->ef, &len);

		memset(&t->hdr_sec, 0, sizeof(t->hdr_sec));
		/* stripped section headers: PT_GNU_EH_FRAME still locates the header */
		if (ehf_vaddr && !elf_file__vaddr_to_offset(t->ef, ehf_vaddr, &off) && off < len) {
			t->hdr_sec.addr = ehf_vaddr;
			t->hdr_sec.data = d + off;
			t->hdr_sec.size = len - off;
		}
	}
	if (t->hdr_sec.data && t->hdr_sec.size >= 4) {
		c = (struct cur){t->hdr_sec.data, t->hdr_sec.data + t->hdr_sec.size,
				 t->hdr_sec.addr, false};
		if (cur_uint(&c, 1) == 1) {
			enc_ptr = (uint8_t)cur_uint(&c, 1);
			enc_count = (uint8_t)cur_uint(&c, 1);
			enc_table = (uint8_t)cur_uint(&c, 1);
			if (cur_encoded(&c, enc_ptr, t->hdr_sec.addr, &eh_frame_ptr) &&
			    cur_encoded(&c, enc_count, t->hdr_sec.addr, &count) &&
			    enc_table == (DW_EH_PE_datarel | DW_EH_PE_sdata4) && count &&
			    count <= (uint64_t)(c.end - c.p) / 8) {
				t->segbase = t->hdr_sec.addr;
				t->table = c.vaddr;
				t->count = count;
				t->ok = true;
				return;
			}
		}
	}
	if (t->frame_sec.data && t->frame_sec.size) {
		t->segbase = t->frame_sec.addr;
		if (synth_table(t) == 0)
			t->ok = true;
	}
}

/* See unwind_table.h. */
void unwind_table__free(struct unwind_table *t)
{
	if (!t)
		return;
	elf_file__put(t->ef);
	free(t->synth);
	free(t->dbg_image);
	free(t->dbg_tab);
	free(t);
}

/*
 * See unwind_table.h. Needed for code built without .eh_frame: for instance
 * -fno-asynchronous-unwind-tables -g, hand-written assembly.
 */
int unwind_table__load_debug_frame(struct unwind_table *t, uint64_t budget, uint64_t *bytes)
{
	struct elf_section sec;
	uint64_t held;
	int n;

	*bytes = 0;
	if (t->dbg_state)
		return t->dbg_state > 0 ? 0 : -ENOENT;
	t->dbg_state = -1;
	if (elf_file__section(t->ef, ".debug_frame", &sec) || !sec.data || !sec.size)
		return -ENOENT;
	if (sec.size > MAX_DEBUG_FRAME || sec.size > budget)
		return -E2BIG;
	n = unwind__debug_frame_to_eh(sec.data, sec.size, t->lo, t->hi, &t->dbg_image,
				      &t->dbg_image_len, &t->dbg_tab);
	if (n == -E2BIG)
		return -E2BIG;
	if (n <= 0) {
		pr_debug("no usable .debug_frame in %s: %s", elf_file__path(t->ef), strerror(-n));
		return -ENOENT;
	}
	held = t->dbg_image_len + (uint64_t)n * 8;
	if (held > budget) {
		free(t->dbg_image);
		free(t->dbg_tab);
		t->dbg_image = NULL;
		t->dbg_tab = NULL;
		return -E2BIG;
	}
	t->dbg_count = (uint64_t)n;
	t->dbg_state = 1;
	*bytes = held;
	return 0;
}

static bool read_section(const struct elf_section *s, uint64_t vaddr, void *buf, size_t len)
{
	if (!s->data || vaddr < s->addr || vaddr - s->addr > s->size ||
	    len > s->size - (vaddr - s->addr))
		return false;
	memcpy(buf, s->data + (vaddr - s->addr), len);
	return true;
}

/* See unwind_table.h. */
bool unwind_table__read(const struct unwind_table *t, uint64_t vaddr, uint64_t *val)
{
	uint8_t b[8];

	if (read_section(&t->frame_sec, vaddr, val, 8) || read_section(&t->hdr_sec, vaddr, val, 8))
		return true;
	if (!elf_file__read_vaddr(t->ef, vaddr, val, 8))
		return true;
	/* a word straddling a segment end: take the bytes that exist */
	for (int i = 0; i < 8; i++) {
		if (elf_file__read_vaddr(t->ef, vaddr + (uint64_t)i, &b[i], 1)) {
			if (i == 0)
				return false;
			b[i] = 0;
		}
	}
	memcpy(val, b, 8);
	return true;
}

/* See unwind_table.h. */
struct unwind_table *unwind_table__new(struct elf_file *ef)
{
	struct unwind_table *t = calloc(1, sizeof(*t));

	if (!t)
		return NULL;
	t->ef = elf_file__get(ef);
	t->entry = elf_file__entry(ef);
	table_parse(t);
	return t;
}
