// SPDX-License-Identifier: Apache-2.0
/* User-stack unwinding with libunwind's remote API over captured registers + stack bytes. */
#define LOG_MODULE "unwind"
#include "log.h"

#include "unwind.h"

#include <errno.h>
#include <libunwind.h>
#include <linux/elf.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "elf.h"
#include "mlprof/sample.h"
#include "proc.h"

/* Exported by libunwind-x86_64 but not declared in its public headers (perf does the same). */
extern int _Ux86_64_dwarf_search_unwind_table(unw_addr_space_t as, unw_word_t ip,
					      unw_dyn_info_t *di, unw_proc_info_t *pi,
					      int need_unwind_info, void *arg);

/* Per-process libunwind address spaces kept (each holds libunwind's register-state cache). */
#define MAX_SPACES 64
/* Objects (ELF images) remembered per address space for memory reads outside the stack. */
#define MAX_OBJS 128
/* Parsed unwind tables kept across processes (each holds a reference on its ELF file). */
#define MAX_TABLES 512
/* Bound on FDEs indexed when synthesizing a table from .eh_frame. */
#define MAX_SYNTH_FDES (1u << 21)
/* Reads this far above the stack copy are taken for stack reads (copy too short). */
#define STACK_SLACK (8ull << 20)
/*
 * Code this far past an ELF entry point (e_entry) with no FDE is taken for the process's
 * first frame: ld.so's _start (RTLD_START) has no CFI and calls _dl_start, then jumps to
 * the program, all within its first 0x3d bytes.
 */
#define ENTRY_SPAN 64
/* Mappings end on a page boundary past their segment's end (4 KiB pages on x86-64). */
#define PAGE_SLACK 4096ull
/* Fake, non-canonical addresses where synthesized tables are exposed to libunwind. */
#define FAKE_TABLE_BASE	 0xfff0000000000000ull
#define FAKE_TABLE_SHIFT 36
/* Offsets in an object's fake range of its translated .debug_frame index and image. */
#define FAKE_DBG_TABLE (1ull << 34)
#define FAKE_DBG_IMAGE (1ull << 35)
/* Largest .debug_frame section translated (larger ones are skipped and counted). */
#define MAX_DEBUG_FRAME (64u << 20)
/* Bound on the translated .debug_frame images and indexes held by all tables together. */
#define MAX_DEBUG_FRAME_TOTAL (256ull << 20)

#ifndef PT_GNU_EH_FRAME
#define PT_GNU_EH_FRAME 0x6474e550
#endif

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

/* Unwind index of one ELF file: where its binary search table lives (vaddrs in the file). */
struct eh_table {
	struct elf_file *ef; /* own reference */
	bool ok;
	uint64_t segbase; /* vaddr the table entries are relative to */
	uint64_t table;	  /* vaddr of the .eh_frame_hdr table (unused when synth) */
	uint64_t count;	  /* entries */
	int32_t *synth;	  /* synthesized (initial_loc, fde) pairs, or NULL */
	uint64_t lo, hi;  /* vaddr extent of the PT_LOAD segments */
	uint64_t entry;	  /* e_entry, 0 when none */
	struct elf_section hdr_sec, frame_sec; /* fast paths for reads (data may be NULL) */
	uint64_t last_use;
	/* .debug_frame translated on first need: 0 not tried, 1 ready, -1 none/unusable */
	int dbg_state;
	uint8_t *dbg_image; /* .eh_frame form of .debug_frame, FDE addresses absolute */
	size_t dbg_image_len;
	int32_t *dbg_tab; /* sorted (pc - lo, FDE offset in dbg_image) pairs */
	uint64_t dbg_count;
};

/* One ELF image placed in a process: runtime = vaddr + bias. */
struct uw_obj {
	uint64_t lo, hi; /* runtime extent */
	uint64_t bias;
	struct eh_table *t;
};

/* Per-process libunwind state. */
struct uw_space {
	pid_t pid;
	const struct proc *p;
	uint64_t gen;
	unw_addr_space_t as;
	struct uw_obj objs[MAX_OBJS];
	size_t nobjs, last_obj;
	uint64_t last_use;
};

struct unwinder {
	struct proc_cache *pc;
	struct uw_space spaces[MAX_SPACES];
	size_t nspaces;
	struct eh_table *tables[MAX_TABLES];
	size_t ntables;
	uint64_t tick;
	uint64_t dbg_bytes; /* held in translated .debug_frame images and indexes */
	struct unwind_stats stats;
};

/* State of one unwinder__unwind call, handed to the accessors as their arg. */
struct uw_call {
	struct unwinder *u;
	struct uw_space *sp;
	struct proc *p;
	const struct mlprof_sample *s;
	uint64_t stack_lo, stack_len;
	bool stack_cut; /* a read hit the stack above the copy */
	bool no_info;	/* find_proc_info found nothing during this step */
	bool at_entry;	/* ... and the pc was at an ELF entry point: the outermost frame */
	uint64_t no_info_ip;
};

/* ---- DWARF pointer decoding over a bounded buffer ---- */

struct cur {
	const uint8_t *p, *end;
	uint64_t vaddr; /* vaddr of *p */
	bool bad;
};

static void cur_skip(struct cur *c, size_t n)
{
	if ((size_t)(c->end - c->p) < n) {
		c->bad = true;
		c->p = c->end;
		return;
	}
	c->p += n;
	c->vaddr += n;
}

static uint64_t cur_uint(struct cur *c, size_t n)
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

static uint64_t cur_uleb(struct cur *c)
{
	uint64_t v = 0;
	unsigned int shift = 0;

	while (c->p < c->end) {
		uint8_t b = *c->p;

		cur_skip(c, 1);
		if (shift < 64)
			v |= (uint64_t)(b & 0x7f) << shift;
		shift += 7;
		if (!(b & 0x80))
			return v;
	}
	c->bad = true;
	return 0;
}

static int64_t cur_sleb(struct cur *c)
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
			if (shift < 64 && (b & 0x40))
				v |= ~0ull << shift;
			return (int64_t)v;
		}
	}
	c->bad = true;
	return 0;
}

/* Reads a DW_EH_PE encoded pointer; datarel is relative to datarel_base. */
static bool cur_encoded(struct cur *c, uint8_t enc, uint64_t datarel_base, uint64_t *out)
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

/* ---- unwind tables ---- */

struct cie_enc {
	uint64_t off;
	uint8_t enc;
};

/* FDE pointer encoding of the CIE at offset off of .eh_frame; false when unusable. */
static bool parse_cie(const struct elf_section *fs, uint64_t off, uint8_t *enc)
{
	struct cur c = {fs->data + off, fs->data + fs->size, fs->addr + off, false};
	uint64_t len = cur_uint(&c, 4), id;
	const char *aug;
	size_t auglen;
	uint8_t version;

	*enc = DW_EH_PE_absptr;
	if (len == 0xffffffffu)
		len = cur_uint(&c, 8);
	if (c.bad || len > (uint64_t)(c.end - c.p))
		return false;
	c.end = c.p + len;
	id = cur_uint(&c, 4);
	version = (uint8_t)cur_uint(&c, 1);
	if (c.bad || id != 0 || (version != 1 && version != 3))
		return false;
	aug = (const char *)c.p;
	auglen = strnlen(aug, (size_t)(c.end - c.p));
	if (auglen == (size_t)(c.end - c.p))
		return false;
	cur_skip(&c, auglen + 1);
	if (strstr(aug, "eh"))
		cur_skip(&c, 8);
	cur_uleb(&c); /* code alignment */
	cur_sleb(&c); /* data alignment */
	if (version == 1)
		cur_skip(&c, 1);
	else
		cur_uleb(&c);
	if (aug[0] != 'z')
		return !c.bad;
	cur_uleb(&c); /* augmentation data length */
	for (size_t i = 1; i < auglen && !c.bad; i++) {
		uint64_t dummy;

		switch (aug[i]) {
		case 'R':
			*enc = (uint8_t)cur_uint(&c, 1);
			return !c.bad;
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
		case 'B':
			break;
		default:
			return false;
		}
	}
	return !c.bad;
}

static int cmp_pair(const void *a, const void *b)
{
	const int32_t *x = a, *y = b;

	return x[0] < y[0] ? -1 : x[0] > y[0];
}

/* Builds a sorted (initial_loc, fde) table relative to .eh_frame when .eh_frame_hdr is absent. */
static int synth_table(struct eh_table *t)
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
 * See unwind.h. Every length and offset is checked against the section; a bad entry
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
static void scan_phdrs(struct eh_table *t, uint64_t *ehf_vaddr)
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
static void table_parse(struct eh_table *t)
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

static void unwinder_flush_spaces(struct unwinder *u)
{
	for (size_t i = 0; i < u->nspaces; i++) {
		u->spaces[i].nobjs = 0;
		u->spaces[i].last_obj = 0;
		unw_flush_cache(u->spaces[i].as, 0, 0);
	}
}

static void table_free(struct eh_table *t)
{
	if (!t)
		return;
	elf_file__put(t->ef);
	free(t->synth);
	free(t->dbg_image);
	free(t->dbg_tab);
	free(t);
}

static struct eh_table *table_get(struct unwinder *u, struct elf_file *ef)
{
	struct eh_table *t;

	for (size_t i = 0; i < u->ntables; i++) {
		if (u->tables[i]->ef == ef) {
			u->tables[i]->last_use = ++u->tick;
			return u->tables[i];
		}
	}
	if (u->ntables == MAX_TABLES) {
		/* objects in every space point at tables: forget them all, rarely */
		unwinder_flush_spaces(u);
		for (size_t i = 0; i < u->ntables; i++)
			table_free(u->tables[i]);
		u->ntables = 0;
		u->dbg_bytes = 0;
	}
	t = calloc(1, sizeof(*t));
	if (!t)
		return NULL;
	t->ef = elf_file__get(ef);
	t->entry = elf_file__entry(ef);
	t->last_use = ++u->tick;
	table_parse(t);
	u->tables[u->ntables++] = t;
	return t;
}

/*
 * Translates t's .debug_frame on first need (code built without .eh_frame: for instance
 * -fno-asynchronous-unwind-tables -g, hand-written assembly). True when it is ready.
 */
static bool table_debug_frame(struct unwinder *u, struct eh_table *t)
{
	struct elf_section sec;
	uint64_t bytes;
	int n;

	if (t->dbg_state)
		return t->dbg_state > 0;
	t->dbg_state = -1;
	if (elf_file__section(t->ef, ".debug_frame", &sec) || !sec.data || !sec.size)
		return false;
	if (sec.size > MAX_DEBUG_FRAME || u->dbg_bytes + sec.size > MAX_DEBUG_FRAME_TOTAL) {
		u->stats.debug_frame_skipped++;
		return false;
	}
	n = unwind__debug_frame_to_eh(sec.data, sec.size, t->lo, t->hi, &t->dbg_image,
				      &t->dbg_image_len, &t->dbg_tab);
	if (n == -E2BIG) {
		u->stats.debug_frame_skipped++;
		return false;
	}
	if (n <= 0) {
		pr_debug("no usable .debug_frame in %s: %s", elf_file__path(t->ef), strerror(-n));
		return false;
	}
	bytes = t->dbg_image_len + (uint64_t)n * 8;
	if (u->dbg_bytes + bytes > MAX_DEBUG_FRAME_TOTAL) {
		free(t->dbg_image);
		free(t->dbg_tab);
		t->dbg_image = NULL;
		t->dbg_tab = NULL;
		u->stats.debug_frame_skipped++;
		return false;
	}
	u->dbg_bytes += bytes;
	u->stats.debug_frame_tables++;
	t->dbg_count = (uint64_t)n;
	t->dbg_state = 1;
	return true;
}

/* ---- address spaces ---- */

static struct uw_obj *obj_find(struct uw_space *sp, uint64_t addr)
{
	struct uw_obj *o = &sp->objs[sp->last_obj];

	if (sp->last_obj < sp->nobjs && addr >= o->lo && addr < o->hi)
		return o;
	for (size_t i = 0; i < sp->nobjs; i++) {
		o = &sp->objs[i];
		if (addr >= o->lo && addr < o->hi) {
			sp->last_obj = i;
			return o;
		}
	}
	return NULL;
}

/* Registers (or finds) the object behind map m; NULL when it has no usable ELF. */
static struct uw_obj *obj_for_map(struct uw_call *call, const struct proc_map *m)
{
	struct uw_space *sp = call->sp;
	struct elf_file *ef;
	struct eh_table *t;
	struct uw_obj *o;
	uint64_t vaddr, bias;

	o = obj_find(sp, m->start);
	if (o)
		return o;
	ef = proc_cache__map_elf(call->u->pc, call->p, m);
	if (!ef)
		return NULL;
	if (proc_map__to_vaddr(m, ef, m->start, &vaddr))
		return NULL;
	t = table_get(call->u, ef);
	if (!t || t->lo >= t->hi)
		return NULL;
	bias = m->start - vaddr;
	if (sp->nobjs == MAX_OBJS) {
		unw_flush_cache(sp->as, 0, 0);
		sp->nobjs = 0;
	}
	o = &sp->objs[sp->nobjs];
	o->lo = t->lo + bias;
	o->hi = t->hi + bias;
	o->bias = bias;
	o->t = t;
	/*
	 * The mapping must lie within the PT_LOAD extent, which the kernel maps in whole
	 * pages: the [vdso] (a 0x1522-byte segment in a two-page mapping) and every
	 * segment's last page extend past p_vaddr + p_memsz.
	 */
	if (o->lo > m->start || ((o->hi + PAGE_SLACK - 1) & ~(PAGE_SLACK - 1)) < m->end)
		return NULL;
	sp->last_obj = sp->nobjs++;
	return o;
}

static bool read_section(const struct elf_section *s, uint64_t vaddr, void *buf, size_t len)
{
	if (!s->data || vaddr < s->addr || vaddr - s->addr > s->size ||
	    len > s->size - (vaddr - s->addr))
		return false;
	memcpy(buf, s->data + (vaddr - s->addr), len);
	return true;
}

/* Reads a word of an object's file image; bytes past the file-backed end read as 0. */
static bool obj_read(const struct uw_obj *o, uint64_t addr, unw_word_t *val)
{
	const struct eh_table *t = o->t;
	uint64_t vaddr = addr - o->bias;
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

static struct uw_space *space_get(struct unwinder *u, struct proc *p)
{
	struct uw_space *sp = NULL;

	for (size_t i = 0; i < u->nspaces; i++) {
		if (u->spaces[i].pid == p->pid) {
			sp = &u->spaces[i];
			break;
		}
	}
	if (!sp && u->nspaces < MAX_SPACES) {
		unw_addr_space_t as;

		sp = &u->spaces[u->nspaces];
		as = sp->as;
		memset(sp, 0, sizeof(*sp));
		sp->as = as;
		u->nspaces++;
	} else if (!sp) {
		sp = &u->spaces[0];
		for (size_t i = 1; i < u->nspaces; i++)
			if (u->spaces[i].last_use < sp->last_use)
				sp = &u->spaces[i];
		sp->p = NULL; /* force a flush below */
	}
	if (!sp->as)
		return NULL;
	sp->last_use = ++u->tick;
	if (sp->pid != p->pid || sp->p != p || sp->gen != p->gen) {
		/* different process instance or changed maps: drop cached unwind state */
		unw_flush_cache(sp->as, 0, 0);
		sp->nobjs = 0;
		sp->last_obj = 0;
		sp->pid = p->pid;
		sp->p = p;
		sp->gen = p->gen;
	}
	return sp;
}

/* ---- libunwind accessors ---- */

static int find_proc_info(unw_addr_space_t as, unw_word_t ip, unw_proc_info_t *pi,
			  int need_unwind_info, void *arg)
{
	struct uw_call *call = arg;
	const struct proc_map *m;
	struct uw_obj *o;
	unw_dyn_info_t di;
	uint64_t fake;
	int ret;

	m = proc_cache__find_map(call->u->pc, call->p, ip);
	o = m ? obj_for_map(call, m) : NULL;
	ret = -UNW_ENOINFO;
	if (!o)
		goto no_info;
	fake = FAKE_TABLE_BASE + ((uint64_t)(o - call->sp->objs) << FAKE_TABLE_SHIFT);
	if (o->t->ok) {
		memset(&di, 0, sizeof(di));
		di.format = UNW_INFO_FORMAT_REMOTE_TABLE;
		di.start_ip = m->start;
		di.end_ip = m->end;
		di.u.rti.segbase = o->t->segbase + o->bias;
		if (o->t->synth)
			di.u.rti.table_data = fake;
		else
			di.u.rti.table_data = o->t->table + o->bias;
		di.u.rti.table_len = o->t->count * 8 / sizeof(unw_word_t);
		ret = _Ux86_64_dwarf_search_unwind_table(as, ip, &di, pi, need_unwind_info, arg);
		if (ret != -UNW_ENOINFO)
			return ret;
	}
	if (table_debug_frame(call->u, o->t)) {
		/*
		 * Index entries are relative to the object's lowest vaddr (start_ip), FDE
		 * offsets to the image (segbase); FDE addresses are link-time values that
		 * libunwind moves by load_offset.
		 */
		memset(&di, 0, sizeof(di));
		di.format = UNW_INFO_FORMAT_IP_OFFSET;
		di.start_ip = o->lo;
		di.end_ip = m->end > o->hi ? m->end : o->hi;
		di.load_offset = o->bias;
		di.u.rti.segbase = fake + FAKE_DBG_IMAGE;
		di.u.rti.table_data = fake + FAKE_DBG_TABLE;
		di.u.rti.table_len = o->t->dbg_count * 8 / sizeof(unw_word_t);
		ret = _Ux86_64_dwarf_search_unwind_table(as, ip, &di, pi, need_unwind_info, arg);
		if (ret != -UNW_ENOINFO)
			return ret;
	}
no_info:
	call->no_info = true;
	call->no_info_ip = ip;
	/* libunwind asks for ip - 1 in callers' frames: still inside _start */
	if (o && o->t->entry && ip - o->bias >= o->t->entry &&
	    ip - o->bias - o->t->entry < ENTRY_SPAN)
		call->at_entry = true;
	return ret;
}

static void put_unwind_info(unw_addr_space_t as, unw_proc_info_t *pi, void *arg)
{
	/*
	 * Nothing to do: for DWARF tables libunwind releases pi->unwind_info itself (from its
	 * own pool) before calling this, and perf's implementation is a no-op as well.
	 */
}

static int get_dyn_info_list_addr(unw_addr_space_t as, unw_word_t *dil_addr, void *arg)
{
	return -UNW_ENOINFO;
}

static int access_mem(unw_addr_space_t as, unw_word_t addr, unw_word_t *valp, int write, void *arg)
{
	struct uw_call *call = arg;
	const struct proc_map *m;
	struct uw_obj *o;

	if (write)
		return -UNW_EINVAL;
	if (addr >= call->stack_lo && addr - call->stack_lo <= call->stack_len &&
	    call->stack_len - (addr - call->stack_lo) >= sizeof(*valp)) {
		memcpy(valp, call->s->ustack + (addr - call->stack_lo), sizeof(*valp));
		return 0;
	}
	if (addr >= FAKE_TABLE_BASE) {
		uint64_t idx = (addr - FAKE_TABLE_BASE) >> FAKE_TABLE_SHIFT;
		uint64_t off = (addr - FAKE_TABLE_BASE) & ((1ull << FAKE_TABLE_SHIFT) - 1);

		const struct eh_table *t = idx < call->sp->nobjs ? call->sp->objs[idx].t : NULL;
		const uint8_t *data = NULL;
		uint64_t size = 0;

		if (t && off >= FAKE_DBG_IMAGE) {
			data = t->dbg_image;
			size = t->dbg_image_len;
			off -= FAKE_DBG_IMAGE;
		} else if (t && off >= FAKE_DBG_TABLE) {
			data = (const uint8_t *)t->dbg_tab;
			size = t->dbg_count * 8;
			off -= FAKE_DBG_TABLE;
		} else if (t) {
			data = (const uint8_t *)t->synth;
			size = t->count * 8;
		}
		if (data && off < size) {
			uint8_t b[8] = {0};

			memcpy(b, data + off, size - off < 8 ? size - off : 8);
			memcpy(valp, b, 8);
			return 0;
		}
		return -UNW_EINVAL;
	}
	o = obj_find(call->sp, addr);
	if (!o && addr >= call->stack_lo && addr - call->stack_lo < call->stack_len + STACK_SLACK) {
		/*
		 * Above the copy and in no object seen so far: take it for the stack (an
		 * object's tables are always registered by find_proc_info before they are
		 * read), without a maps lookup that could trigger a re-read.
		 */
		call->stack_cut = true;
		return -UNW_EINVAL;
	}
	if (!o) {
		m = proc_cache__find_map(call->u->pc, call->p, addr);
		if (m)
			o = obj_for_map(call, m);
	}
	if (o && obj_read(o, addr, valp))
		return 0;
	return -UNW_EINVAL;
}

static const int8_t reg_map[UNW_X86_64_RIP + 1] = {
	[UNW_X86_64_RAX] = MLPROF_REG_AX,  [UNW_X86_64_RDX] = MLPROF_REG_DX,
	[UNW_X86_64_RCX] = MLPROF_REG_CX,  [UNW_X86_64_RBX] = MLPROF_REG_BX,
	[UNW_X86_64_RSI] = MLPROF_REG_SI,  [UNW_X86_64_RDI] = MLPROF_REG_DI,
	[UNW_X86_64_RBP] = MLPROF_REG_BP,  [UNW_X86_64_RSP] = MLPROF_REG_SP,
	[UNW_X86_64_R8] = MLPROF_REG_R8,   [UNW_X86_64_R9] = MLPROF_REG_R9,
	[UNW_X86_64_R10] = MLPROF_REG_R10, [UNW_X86_64_R11] = MLPROF_REG_R11,
	[UNW_X86_64_R12] = MLPROF_REG_R12, [UNW_X86_64_R13] = MLPROF_REG_R13,
	[UNW_X86_64_R14] = MLPROF_REG_R14, [UNW_X86_64_R15] = MLPROF_REG_R15,
	[UNW_X86_64_RIP] = MLPROF_REG_IP,
};

static int access_reg(unw_addr_space_t as, unw_regnum_t regnum, unw_word_t *valp, int write,
		      void *arg)
{
	struct uw_call *call = arg;

	if (write || regnum < 0 || regnum > UNW_X86_64_RIP)
		return -UNW_EBADREG;
	*valp = call->s->regs[reg_map[regnum]];
	return 0;
}

static int access_fpreg(unw_addr_space_t as, unw_regnum_t num, unw_fpreg_t *val, int write,
			void *arg)
{
	return -UNW_EINVAL;
}

static int resume(unw_addr_space_t as, unw_cursor_t *cu, void *arg)
{
	return -UNW_EINVAL;
}

static int get_proc_name(unw_addr_space_t as, unw_word_t addr, char *bufp, size_t buf_len,
			 unw_word_t *offp, void *arg)
{
	return -UNW_ENOINFO;
}

static unw_accessors_t accessors = {
	.find_proc_info = find_proc_info,
	.put_unwind_info = put_unwind_info,
	.get_dyn_info_list_addr = get_dyn_info_list_addr,
	.access_mem = access_mem,
	.access_reg = access_reg,
	.access_fpreg = access_fpreg,
	.resume = resume,
	.get_proc_name = get_proc_name,
};

/* ---- public API ---- */

struct unwinder *unwinder__new(struct proc_cache *pc)
{
	struct unwinder *u;

	u = calloc(1, sizeof(*u));
	if (!u)
		return NULL;
	u->pc = pc;
	for (size_t i = 0; i < MAX_SPACES; i++) {
		u->spaces[i].as = unw_create_addr_space(&accessors, 0);
		if (!u->spaces[i].as) {
			pr_warn("cannot create a libunwind address space");
			unwinder__free(u);
			errno = ENOMEM;
			return NULL;
		}
		/*
		 * One address space per process, so GLOBAL (per address space) caching is
		 * correct; PER_THREAD would share one TLS cache between processes in
		 * libunwind builds that have it (and is GLOBAL in those that do not).
		 */
		unw_set_caching_policy(u->spaces[i].as, UNW_CACHE_GLOBAL);
	}
	return u;
}

void unwinder__free(struct unwinder *u)
{
	if (!u)
		return;
	for (size_t i = 0; i < MAX_SPACES; i++)
		if (u->spaces[i].as)
			unw_destroy_addr_space(u->spaces[i].as);
	for (size_t i = 0; i < u->ntables; i++)
		table_free(u->tables[i]);
	free(u);
}

static enum unwind_end finish(struct unwinder *u, enum unwind_end end, int n)
{
	u->stats.unwinds++;
	u->stats.ends[end]++;
	u->stats.frames += (uint64_t)n;
	return end;
}

int unwinder__unwind(struct unwinder *u, struct proc *p, const struct mlprof_sample *s,
		     uint64_t *pcs, int max, enum unwind_end *end)
{
	struct uw_call call = {0};
	unw_word_t ip = 0, sp = 0, prev_ip = 0, prev_sp = 0;
	unw_cursor_t cursor;
	int n = 0, ret;

	if (!(s->flags & MLPROF_SF_USER_REGS) || !s->regs[MLPROF_REG_IP]) {
		*end = finish(u, UNWIND_END_NO_REGS, 0);
		return 0;
	}
	if (max <= 0) {
		*end = finish(u, UNWIND_END_MAX_DEPTH, 0);
		return 0;
	}
	call.u = u;
	call.p = p;
	call.s = s;
	call.stack_lo = s->regs[MLPROF_REG_SP];
	call.stack_len = s->ustack_len;
	if (!p) {
		pcs[n++] = s->regs[MLPROF_REG_IP];
		*end = finish(u, UNWIND_END_NO_INFO, n);
		return n;
	}
	/* the table cache may be reset inside: take the space after nothing else can move */
	call.sp = space_get(u, p);
	if (!call.sp) {
		pcs[n++] = s->regs[MLPROF_REG_IP];
		*end = finish(u, UNWIND_END_BAD_FRAME, n);
		return n;
	}
	ret = unw_init_remote(&cursor, call.sp->as, &call);
	if (ret < 0) {
		pcs[n++] = s->regs[MLPROF_REG_IP];
		*end = finish(u, UNWIND_END_BAD_FRAME, n);
		return n;
	}
	for (;;) {
		if (unw_get_reg(&cursor, UNW_REG_IP, &ip) < 0 ||
		    unw_get_reg(&cursor, UNW_REG_SP, &sp) < 0) {
			*end = UNWIND_END_BAD_FRAME;
			break;
		}
		if (n > 0 && ip == prev_ip && sp == prev_sp) {
			*end = UNWIND_END_BAD_FRAME;
			break;
		}
		if (n > 0 && ip == 0) {
			*end = UNWIND_END_COMPLETE;
			break;
		}
		pcs[n++] = ip;
		if (n >= max) {
			*end = UNWIND_END_MAX_DEPTH;
			break;
		}
		prev_ip = ip;
		prev_sp = sp;
		call.stack_cut = false;
		call.no_info = false;
		call.at_entry = false;
		ret = unw_step(&cursor);
		if (call.at_entry) {
			*end = UNWIND_END_COMPLETE;
			break;
		}
		/*
		 * Without unwind info libunwind guesses (frame-pointer chain, return address
		 * at [rsp]); in code built without frame pointers that yields garbage
		 * frames, so a guessed step ends the unwind instead.
		 */
		if (ret > 0 && !call.no_info)
			continue;
		if (call.stack_cut)
			*end = (s->flags & MLPROF_SF_USTACK_CUT) ? UNWIND_END_STACK_CUT
								 : UNWIND_END_BAD_FRAME;
		else if (call.no_info)
			*end = UNWIND_END_NO_INFO;
		else if (ret == 0)
			*end = UNWIND_END_COMPLETE;
		else if (ret == -UNW_ENOINFO)
			*end = UNWIND_END_NO_INFO;
		else
			*end = UNWIND_END_BAD_FRAME;
		break;
	}
	finish(u, *end, n);
	return n;
}

const char *unwind_end__str(enum unwind_end end)
{
	switch (end) {
	case UNWIND_END_COMPLETE:
		return "complete";
	case UNWIND_END_STACK_CUT:
		return "stack_cut";
	case UNWIND_END_NO_INFO:
		return "no_info";
	case UNWIND_END_MAX_DEPTH:
		return "max_depth";
	case UNWIND_END_BAD_FRAME:
		return "bad_frame";
	case UNWIND_END_NO_REGS:
		return "no_regs";
	}
	return "unknown";
}

void unwinder__stats(const struct unwinder *u, struct unwind_stats *out)
{
	*out = u->stats;
}
