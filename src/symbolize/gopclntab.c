// SPDX-License-Identifier: Apache-2.0
/* Go's pc/line table (.gopclntab, Go 1.16+): function names, file:line, stack-pointer deltas. */
#include "symbolize/gopclntab.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "symbolize/elf.h"
#include "symbolize/elf_lookup.h"

#define LOG_MODULE "gopclntab"
#include "util/log.h"

/* Header magics (Go's internal/abi.PCLnTabMagic): the layout changed with each. */
#define MAGIC_GO116 0xfffffffau /* Go 1.16-1.17 */
#define MAGIC_GO118 0xfffffff0u /* Go 1.18-1.19 */
#define MAGIC_GO120 0xfffffff1u /* Go 1.20 and later */
/* Word of runtime.moduledata holding text (runtime.text): after pcHeader and six slices. */
#define MODULEDATA_TEXT_WORD 22
/* Bound on the bytes of data sections searched for the module data. */
#define MODULEDATA_SCAN_MAX (64u << 20)

/* A table inside the blob: bytes [off, end). */
struct span {
	uint64_t off, end;
};

struct gopclntab {
	struct elf_file *ef; /* own reference, NULL for gopclntab__open_mem */
	const uint8_t *data;
	uint64_t len;
	uint32_t magic;
	uint32_t quantum;  /* instruction size unit of pc deltas */
	uint32_t nfunc;	   /* functions; the function table has nfunc + 1 entries */
	uint32_t ftab_sz;  /* size of one function table field: 4 (1.18+) or 8 (1.16) */
	uint32_t name_off; /* offset of _func.nameOff: after entryOff (1.18+) or entry (1.16) */
	uint64_t text_start;
	struct span funcname, cutab, filetab, pctab, pcln;
};

static int rd32(const struct gopclntab *t, uint64_t off, uint32_t *v)
{
	if (off > t->len || t->len - off < 4)
		return -EINVAL;
	memcpy(v, t->data + off, 4);
	return 0;
}

static int rd64(const struct gopclntab *t, uint64_t off, uint64_t *v)
{
	if (off > t->len || t->len - off < 8)
		return -EINVAL;
	memcpy(v, t->data + off, 8);
	return 0;
}

/* A NUL-terminated string at off inside span s, or NULL. */
static const char *str_at(const struct gopclntab *t, const struct span *s, uint64_t off)
{
	if (off >= s->end - s->off)
		return NULL;
	off += s->off;
	if (!memchr(t->data + off, '\0', s->end - off))
		return NULL;
	return (const char *)t->data + off;
}

/* Entry address of function table slot i (i <= nfunc). */
static int ftab_entry(const struct gopclntab *t, uint32_t i, uint64_t *entry)
{
	uint64_t off = t->pcln.off + (uint64_t)i * 2 * t->ftab_sz;
	uint32_t v32;

	if (t->ftab_sz == 8)
		return rd64(t, off, entry);
	if (rd32(t, off, &v32))
		return -EINVAL;
	*entry = t->text_start + v32;
	return 0;
}

/* Offset in the blob of function i's _func record. */
static int ftab_func(const struct gopclntab *t, uint32_t i, uint64_t *func)
{
	uint64_t off = t->pcln.off + ((uint64_t)i * 2 + 1) * t->ftab_sz;
	uint64_t v;
	uint32_t v32 = 0;
	int err;

	if (t->ftab_sz == 8) {
		err = rd64(t, off, &v);
	} else {
		err = rd32(t, off, &v32);
		v = v32;
	}
	if (err || v >= t->pcln.end - t->pcln.off)
		return -EINVAL;
	*func = t->pcln.off + v;
	return 0;
}

/* The 32-bit field at byte off of _func (offsets as in Go 1.18+; 1.16 is shifted by 4). */
static int func_field(const struct gopclntab *t, uint64_t func, uint32_t off, uint32_t *v)
{
	return rd32(t, func + t->name_off - 4 + off, v);
}

enum { F_NAME = 4, F_PCSP = 16, F_PCFILE = 20, F_PCLN = 24, F_CU = 32, F_START_LINE = 36 };

/* Reads an unsigned LEB128 varint of at most 32 bits at *p (< end). */
static int uvarint(const struct gopclntab *t, uint64_t *p, uint64_t end, uint32_t *v)
{
	uint32_t r = 0;

	for (int shift = 0; shift < 35; shift += 7) {
		uint8_t b;

		if (*p >= end)
			return -EINVAL;
		b = t->data[(*p)++];
		r |= (uint32_t)(b & 0x7f) << shift;
		if (!(b & 0x80)) {
			*v = r;
			return 0;
		}
	}
	return -EINVAL;
}

/*
 * Runs the pc-value table at pctab offset tab of the function starting at entry up to
 * target (runtime.pcvalue): pairs of zigzag value deltas and pc deltas from value -1.
 */
static int pcvalue(const struct gopclntab *t, uint32_t tab, uint64_t entry, uint64_t target,
		   int32_t *val)
{
	uint64_t p = t->pctab.off + tab, pc = entry;
	uint32_t uv, pcd;
	int32_t v = -1;
	int err;

	if (!tab || tab >= t->pctab.end - t->pctab.off)
		return -EINVAL;
	/* every step consumes at least two bytes of the table: bounded by its size */
	for (bool first = true;; first = false) {
		if (p >= t->pctab.end)
			return -EINVAL;
		if (t->data[p] == 0 && !first)
			return -EINVAL; /* end of table before target */
		err = uvarint(t, &p, t->pctab.end, &uv);
		if (!err)
			err = uvarint(t, &p, t->pctab.end, &pcd);
		if (err)
			return err;
		v += (int32_t)((uv >> 1) ^ -(uv & 1));
		pc += (uint64_t)pcd * t->quantum;
		if (target < pc) {
			*val = v;
			return 0;
		}
	}
}

/* Slot of the function covering vaddr (binary search of the sorted entries). */
static int find(const struct gopclntab *t, uint64_t vaddr, uint32_t *idx, uint64_t *entry,
		uint64_t *end)
{
	uint32_t lo = 0, hi = t->nfunc;
	uint64_t e;

	if (ftab_entry(t, 0, &e) || vaddr < e || ftab_entry(t, t->nfunc, &e) || vaddr >= e)
		return -ENOENT;
	while (hi - lo > 1) {
		uint32_t mid = lo + (hi - lo) / 2;

		if (ftab_entry(t, mid, &e))
			return -EINVAL;
		if (e <= vaddr)
			lo = mid;
		else
			hi = mid;
	}
	if (ftab_entry(t, lo, entry) || ftab_entry(t, lo + 1, end))
		return -EINVAL;
	if (vaddr < *entry || vaddr >= *end)
		return -ENOENT; /* unsorted (corrupt) table */
	*idx = lo;
	return 0;
}

static int describe(const struct gopclntab *t, uint32_t idx, uint64_t *func,
		    struct gopclntab_func *out)
{
	uint32_t name;

	memset(out, 0, sizeof(*out));
	if (ftab_entry(t, idx, &out->entry) || ftab_entry(t, idx + 1, &out->end) ||
	    ftab_func(t, idx, func) || func_field(t, *func, F_NAME, &name))
		return -EINVAL;
	out->name = str_at(t, &t->funcname, name);
	return out->name ? 0 : -EINVAL;
}

/* File and line of vaddr in the function whose _func record is at func. */
static void lines_of(const struct gopclntab *t, uint64_t func, uint64_t vaddr,
		     struct gopclntab_func *out)
{
	uint32_t pcfile, pcln, cu, fileoff, start;
	int32_t fileno, line;
	uint64_t idx;

	if (func_field(t, func, F_PCFILE, &pcfile) || func_field(t, func, F_PCLN, &pcln) ||
	    func_field(t, func, F_CU, &cu))
		return;
	if (pcvalue(t, pcln, out->entry, vaddr, &line) || line <= 0)
		return;
	if (pcvalue(t, pcfile, out->entry, vaddr, &fileno) || fileno < 0)
		return;
	idx = (uint64_t)cu + (uint32_t)fileno;
	if (idx >= (t->cutab.end - t->cutab.off) / 4 || rd32(t, t->cutab.off + idx * 4, &fileoff))
		return;
	out->file = str_at(t, &t->filetab, fileoff);
	if (!out->file)
		return;
	out->line = (uint32_t)line;
	if (t->magic == MAGIC_GO120 && !func_field(t, func, F_START_LINE, &start) &&
	    (int32_t)start > 0 && start <= (uint32_t)line)
		out->start_line = start;
}

/* See gopclntab.h. */
uint32_t gopclntab__count(const struct gopclntab *t)
{
	return t->nfunc;
}

/* See gopclntab.h. */
int gopclntab__func(const struct gopclntab *t, uint32_t idx, struct gopclntab_func *out)
{
	uint64_t func;

	if (idx >= t->nfunc)
		return -EINVAL;
	return describe(t, idx, &func, out);
}

/* See gopclntab.h. */
int gopclntab__lookup(const struct gopclntab *t, uint64_t vaddr, bool lines,
		      struct gopclntab_func *out)
{
	uint64_t entry, end, func;
	uint32_t idx;
	int err;

	err = find(t, vaddr, &idx, &entry, &end);
	if (!err)
		err = describe(t, idx, &func, out);
	if (err)
		return err;
	if (lines)
		lines_of(t, func, vaddr, out);
	return 0;
}

/* See gopclntab.h. */
int gopclntab__sp_delta(const struct gopclntab *t, uint64_t vaddr, uint32_t *delta)
{
	uint64_t entry, end, func;
	uint32_t idx, pcsp;
	int32_t v;
	int err;

	err = find(t, vaddr, &idx, &entry, &end);
	if (err)
		return err;
	if (ftab_func(t, idx, &func) || func_field(t, func, F_PCSP, &pcsp) ||
	    pcvalue(t, pcsp, entry, vaddr, &v) || v < 0)
		return -EINVAL;
	*delta = (uint32_t)v;
	return 0;
}

/* Header word i (pointer-sized, after magic, pads, quantum and pointer size). */
static uint64_t hdr_word(const struct gopclntab *t, int i)
{
	uint64_t v = 0;

	rd64(t, 8 + 8 * (uint64_t)i, &v);
	return v;
}

/* Reads and checks the header: the five tables must lie in order inside the blob. */
static int parse(struct gopclntab *t)
{
	struct span *tabs[] = {&t->funcname, &t->cutab, &t->filetab, &t->pctab, &t->pcln};
	int first; /* header word of the first table offset */
	uint64_t nfunc;

	if (t->len < 8 + 8 * 8 || t->data[4] || t->data[5])
		return -ENOEXEC;
	memcpy(&t->magic, t->data, 4);
	t->quantum = t->data[6];
	if (t->magic == 0xfffffffbu)
		return -ENOTSUP; /* Go 1.2-1.15 */
	if (t->magic != MAGIC_GO116 && t->magic != MAGIC_GO118 && t->magic != MAGIC_GO120)
		return -ENOEXEC;
	if (t->data[7] != 8)
		return -ENOTSUP; /* not a 64-bit table */
	switch (t->magic) {
	case MAGIC_GO116:
		first = 2;
		t->ftab_sz = 8;
		t->name_off = 8;
		break;
	case MAGIC_GO118:
	case MAGIC_GO120:
		first = 3; /* word 2 was textStart (unrelocated, unused) */
		t->ftab_sz = 4;
		t->name_off = 4;
		break;
	default:
		return -ENOEXEC;
	}
	if (t->quantum != 1 && t->quantum != 2 && t->quantum != 4)
		return -ENOEXEC;
	if (t->len < 8 + 8 * (uint64_t)(first + 5))
		return -ENOEXEC;
	nfunc = hdr_word(t, 0);
	for (int i = 0; i < 5; i++) {
		tabs[i]->off = hdr_word(t, first + i);
		if (tabs[i]->off > t->len || (i && tabs[i]->off < tabs[i - 1]->off))
			return -ENOEXEC;
		if (i)
			tabs[i - 1]->end = tabs[i]->off;
	}
	t->pcln.end = t->len;
	if (!nfunc || nfunc >= UINT32_MAX ||
	    (2 * nfunc + 1) * t->ftab_sz > t->pcln.end - t->pcln.off)
		return -ENOEXEC;
	t->nfunc = (uint32_t)nfunc;
	return 0;
}

/* See gopclntab.h. */
struct gopclntab *gopclntab__open_mem(const uint8_t *data, size_t len, uint64_t text_start)
{
	struct gopclntab *t;
	int err;

	t = calloc(1, sizeof(*t));
	if (!t)
		return NULL;
	t->data = data;
	t->len = len;
	t->text_start = text_start;
	err = parse(t);
	if (err) {
		free(t);
		errno = -err;
		return NULL;
	}
	return t;
}

/*
 * runtime.text from the module data (in .go.module with recent Go, .noptrdata before): the
 * first words of runtime.firstmoduledata point at the table and its function name table
 * (both relocated in the file unless PIE).
 */
static int moduledata_text(struct elf_file *ef, const struct elf_section *tab,
			   const struct gopclntab *t, uint64_t *text)
{
	static const char *const secs[] = {".go.module", ".noptrdata", ".data.rel.ro", ".data"};
	struct elf_section s, txt;

	if (elf_file__section(ef, ".text", &txt))
		return -ENOENT;
	for (size_t i = 0; i < sizeof(secs) / sizeof(secs[0]); i++) {
		uint64_t n;

		if (elf_file__section(ef, secs[i], &s) || !s.data)
			continue;
		n = (s.size < MODULEDATA_SCAN_MAX ? s.size : MODULEDATA_SCAN_MAX) / 8;
		for (uint64_t w = 0; w + MODULEDATA_TEXT_WORD < n; w++) {
			uint64_t v[2], tx;

			memcpy(v, s.data + w * 8, sizeof(v));
			if (v[0] != tab->addr || v[1] != tab->addr + t->funcname.off)
				continue;
			memcpy(&tx, s.data + (w + MODULEDATA_TEXT_WORD) * 8, 8);
			if (tx >= txt.addr && tx - txt.addr < txt.size) {
				*text = tx;
				return 0;
			}
		}
	}
	return -ENOENT;
}

/* See gopclntab.h. */
struct gopclntab *gopclntab__open(struct elf_file *ef)
{
	struct gopclntab *t = NULL;
	struct elf_section sec, txt;
	uint64_t text = 0;
	int err;

	if ((elf_file__section(ef, ".gopclntab", &sec) &&
	     elf_file__section(ef, ".data.rel.ro.gopclntab", &sec)) ||
	    !sec.data) {
		errno = ENOENT;
		return NULL;
	}
	t = gopclntab__open_mem(sec.data, sec.size, 0);
	if (!t) {
		err = -errno;
		if (err != -ENOMEM)
			pr_debug("%s: unusable .gopclntab: %s", elf_file__path(ef), strerror(-err));
		goto cleanup;
	}
	if (t->magic != MAGIC_GO116 && moduledata_text(ef, &sec, t, &text) &&
	    elf_file__find_symbol(ef, "runtime.text", &text, NULL)) {
		if (elf_file__section(ef, ".text", &txt)) {
			err = -ENOEXEC;
			goto cleanup;
		}
		text = txt.addr;
	}
	t->text_start = text;
	t->ef = elf_file__get(ef);
	return t;
cleanup:
	free(t);
	errno = -err;
	return NULL;
}

/* See gopclntab.h. */
void gopclntab__free(struct gopclntab *t)
{
	if (!t)
		return;
	elf_file__put(t->ef);
	free(t);
}
