// SPDX-License-Identifier: Apache-2.0
/* Source lines of addresses from DWARF line tables and scopes (libdw), with bounded caches. */
#include <dwarf.h>
#include <elfutils/libdw.h>
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <gelf.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "symbolize/dwarf_lines.h"
#include "symbolize/elf.h"
#include "util/hash.h"
#include "util/lru.h"

#define LOG_MODULE "dwarf"
#include "util/log.h"

#define DL_BUCKETS	    4096
#define DL_DEFAULT_MAX_OPEN 16
/*
 * Files without usable lines (too big, no DWARF, unreadable) remembered by key, so that
 * they are neither reopened on every new address nor hold an open slot (direct-mapped).
 */
#define DL_FAILED_SLOTS 1024
/*
 * Files with more .debug_* bytes (once decompressed) are not read: opening one
 * costs its decompression (libpython's 9 MiB debug file: ~0.4 s of CPU and ~50 MB held),
 * which would stall the thread that also attaches probes to newly mapped libraries.
 */
#define DL_DEFAULT_MAX_DWARF (4ull << 20)
#define DL_MAX_RATIO	     200u	/* see dwarf_bytes */
#define DL_MAX_RANGES	     (1u << 20) /* CU address ranges kept per file */
#define DL_MAX_FILE_LEN	     1024	/* longer source paths are cut */

/* One cached answer, found or not (file[0] == '\0' and line 0: nothing covers vaddr). */
struct dl_entry {
	uint64_t key, vaddr;
	struct dl_entry *hnext;
	struct lru_node lru;
	uint32_t line, start_line;
	size_t bytes;
	char file[];
};

/* Address range of one compilation unit, by the offset of its DIE. */
struct cu_range {
	uint64_t lo, hi;
	Dwarf_Off die;
};

/* One open debug file (bad ones are closed at once and remembered in failed[]). */
struct dl_file {
	uint64_t key;
	int fd;
	Elf *elf;
	Dwarf *dw;
	struct cu_range *ranges;
	size_t nranges;
	struct lru_node lru;
};

/* Not thread-safe: owned by one symbolizing thread (through symcache). */
struct dwarf_lines {
	struct dwarf_lines_config cfg;
	struct dl_entry *buckets[DL_BUCKETS];
	struct lru_list entries;	  /* results, most recently used at head */
	struct lru_list files;		  /* open files, most recently used at head */
	uint64_t failed[DL_FAILED_SLOTS]; /* keys of files without usable lines */
	struct dwarf_lines_stats stats;
};

/* See dwarf_lines.h. */
struct dwarf_lines *dwarf_lines__new(const struct dwarf_lines_config *cfg)
{
	struct dwarf_lines *dl;

	if (elf_version(EV_CURRENT) == EV_NONE) {
		errno = ENOTSUP;
		return NULL;
	}
	dl = calloc(1, sizeof(*dl));
	if (!dl)
		return NULL;
	if (cfg)
		dl->cfg = *cfg;
	if (!dl->cfg.max_bytes)
		dl->cfg.max_bytes = DL_DEFAULT_MAX_BYTES;
	if (!dl->cfg.max_open)
		dl->cfg.max_open = DL_DEFAULT_MAX_OPEN;
	if (!dl->cfg.max_dwarf_bytes)
		dl->cfg.max_dwarf_bytes = DL_DEFAULT_MAX_DWARF;
	return dl;
}

static void file_close(struct dwarf_lines *dl, struct dl_file *f)
{
	lru__unlink(&dl->files, &f->lru);
	dl->stats.files_open--;
	if (f->dw)
		dwarf_end(f->dw);
	if (f->elf)
		elf_end(f->elf);
	if (f->fd >= 0)
		close(f->fd);
	free(f->ranges);
	free(f);
}

static uint32_t bucket_of(uint64_t key, uint64_t vaddr)
{
	return (uint32_t)(((key * 0x9e3779b97f4a7c15ull) ^ vaddr) * 0xff51afd7ed558ccdull >> 40) %
	       DL_BUCKETS;
}

static void entry_remove(struct dwarf_lines *dl, struct dl_entry *e)
{
	struct dl_entry **pp = &dl->buckets[bucket_of(e->key, e->vaddr)];

	while (*pp && *pp != e)
		pp = &(*pp)->hnext;
	if (*pp)
		*pp = e->hnext;
	lru__unlink(&dl->entries, &e->lru);
	dl->stats.entries--;
	dl->stats.bytes -= e->bytes;
	free(e);
}

/* See dwarf_lines.h. */
void dwarf_lines__free(struct dwarf_lines *dl)
{
	if (!dl)
		return;
	while (dl->entries.tail)
		entry_remove(dl, lru_entry(dl->entries.tail, struct dl_entry, lru));
	while (dl->files.tail)
		file_close(dl, lru_entry(dl->files.tail, struct dl_file, lru));
	free(dl);
}

/* See dwarf_lines.h. */
void dwarf_lines__stats(const struct dwarf_lines *dl, struct dwarf_lines_stats *out)
{
	*out = dl->stats;
}

/*
 * The size a section has once decompressed: its ELF compression header (SHF_COMPRESSED)
 * or GNU .zdebug_ header ("ZLIB" and a big-endian size), read from the file; UINT64_MAX
 * when unreadable. A 1 MiB file may declare a gigabyte: what libdw would allocate.
 */
static uint64_t section_bytes(Elf *elf, int fd, const GElf_Shdr *sh, bool zdebug)
{
	unsigned char h[sizeof(Elf64_Chdr)];
	uint64_t v = 0;

	if (!(sh->sh_flags & SHF_COMPRESSED) && !zdebug)
		return sh->sh_size;
	if (pread(fd, h, sizeof(h), (off_t)sh->sh_offset) != (ssize_t)sizeof(h))
		return UINT64_MAX;
	if (sh->sh_flags & SHF_COMPRESSED) {
		if (gelf_getclass(elf) == ELFCLASS32) {
			Elf32_Chdr c;

			memcpy(&c, h, sizeof(c));
			return c.ch_size;
		}
		Elf64_Chdr c;

		memcpy(&c, h, sizeof(c));
		return c.ch_size;
	}
	if (memcmp(h, "ZLIB", 4) != 0)
		return UINT64_MAX;
	for (int i = 4; i < 12; i++)
		v = v << 8 | h[i];
	return v;
}

/*
 * Bytes of the file's DWARF sections once decompressed (what libdw may hold in memory);
 * UINT64_MAX when a section's header is unreadable or it claims to inflate more than
 * DL_MAX_RATIO times past 16 MiB (real DWARF compresses 3-10 times; zlib can reach 1000).
 */
static uint64_t dwarf_bytes(Elf *elf, int fd)
{
	Elf_Scn *scn = NULL;
	size_t shstrndx;
	uint64_t sum = 0;

	if (elf_getshdrstrndx(elf, &shstrndx) != 0)
		return 0;
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		const char *name;
		uint64_t n;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type == SHT_NOBITS)
			continue;
		name = elf_strptr(elf, shstrndx, sh.sh_name);
		if (!name ||
		    (strncmp(name, ".debug_", 7) != 0 && strncmp(name, ".zdebug_", 8) != 0))
			continue;
		n = section_bytes(elf, fd, &sh, name[1] == 'z');
		if (n > (16u << 20) && n / DL_MAX_RATIO > sh.sh_size)
			return UINT64_MAX;
		if (n > UINT64_MAX - sum)
			return UINT64_MAX;
		sum += n;
	}
	return sum;
}

static int range_cmp(const void *a, const void *b)
{
	const struct cu_range *x = a, *y = b;

	return x->lo < y->lo ? -1 : x->lo > y->lo;
}

/* The address ranges of every compile unit, sorted (no reliance on .debug_aranges). */
static int build_ranges(struct dl_file *f)
{
	Dwarf_CU *cu = NULL;
	Dwarf_Die cudie;
	uint8_t unit_type;
	size_t cap = 0;

	while (dwarf_get_units(f->dw, cu, &cu, NULL, &unit_type, &cudie, NULL) == 0) {
		Dwarf_Addr base, lo, hi;
		ptrdiff_t off = 0;

		if (unit_type != DW_UT_compile && unit_type != DW_UT_partial)
			continue;
		while ((off = dwarf_ranges(&cudie, off, &base, &lo, &hi)) > 0) {
			if (hi <= lo)
				continue;
			if (f->nranges == DL_MAX_RANGES)
				goto done;
			if (f->nranges == cap) {
				size_t ncap = cap ? cap * 2 : 64;
				struct cu_range *r = realloc(f->ranges, ncap * sizeof(*r));

				if (!r)
					return -ENOMEM;
				f->ranges = r;
				cap = ncap;
			}
			f->ranges[f->nranges++] = (struct cu_range){
				.lo = lo, .hi = hi, .die = dwarf_dieoffset(&cudie)};
		}
	}
done:
	if (f->nranges)
		qsort(f->ranges, f->nranges, sizeof(*f->ranges), range_cmp);
	return 0;
}

/*
 * Opens path for key (evicting the least recently used file past max_open). NULL with errno
 * ENOENT (no usable lines: remembered) or ENOMEM.
 */
static struct dl_file *file_open(struct dwarf_lines *dl, uint64_t key, const char *path,
				 const struct elf_identity *id)
{
	struct dl_file *f;
	struct elf_identity now;
	struct stat st;
	uint64_t bytes;
	bool ok;
	int err;

	while (dl->stats.files_open >= dl->cfg.max_open && dl->files.tail)
		file_close(dl, lru_entry(dl->files.tail, struct dl_file, lru));
	f = calloc(1, sizeof(*f));
	if (!f)
		return NULL;
	f->key = key;
	lru__push_head(&dl->files, &f->lru);
	dl->stats.files_open++;
	/* never blocks (a FIFO put in its place), and must be the file that was checked */
	f->fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	if (f->fd < 0) {
		pr_debug("cannot open %s: %s", path, strerror(errno));
		goto bad;
	}
	ok = !fstat(f->fd, &st) && S_ISREG(st.st_mode);
	if (ok && id) {
		now = elf_identity__from_stat(&st);
		ok = elf_identity__equal(&now, id);
	}
	if (!ok) {
		pr_debug("%s: not the file that was mapped (replaced?): no source lines", path);
		goto bad;
	}
	/* ELF_C_READ, not mmap: a file truncated under us reads as an error, not SIGBUS */
	f->elf = elf_begin(f->fd, ELF_C_READ, NULL);
	if (!f->elf || elf_kind(f->elf) != ELF_K_ELF) {
		pr_debug("%s: not an ELF file", path);
		goto bad;
	}
	bytes = dwarf_bytes(f->elf, f->fd);
	if (bytes > dl->cfg.max_dwarf_bytes) {
		dl->stats.files_too_big++;
		if (bytes == UINT64_MAX)
			pr_info("%s: DWARF section headers unreadable or inflating over %u:1: no "
				"source lines",
				path, DL_MAX_RATIO);
		else
			pr_info("%s: DWARF of %llu MiB (decompressed) is over the %llu MiB limit: "
				"no source lines",
				path, (unsigned long long)(bytes >> 20),
				(unsigned long long)(dl->cfg.max_dwarf_bytes >> 20));
		goto bad;
	}
	f->dw = dwarf_begin_elf(f->elf, DWARF_C_READ, NULL);
	if (!f->dw) {
		pr_debug("%s: no DWARF: %s", path, dwarf_errmsg(-1));
		goto bad;
	}
	err = build_ranges(f);
	if (err == -ENOMEM) {
		file_close(dl, f);
		errno = ENOMEM;
		return NULL;
	}
	return f;
bad:
	dl->stats.file_errors++;
	dl->failed[key % DL_FAILED_SLOTS] = key;
	file_close(dl, f);
	errno = ENOENT;
	return NULL;
}

static struct dl_file *file_get(struct dwarf_lines *dl, uint64_t key, const char *path,
				const struct elf_identity *id)
{
	struct lru_node *n;

	if (dl->failed[key % DL_FAILED_SLOTS] == key) {
		errno = ENOENT;
		return NULL;
	}
	for (n = dl->files.head; n; n = n->next) {
		struct dl_file *f = lru_entry(n, struct dl_file, lru);

		if (f->key == key) {
			lru__touch(&dl->files, n);
			return f;
		}
	}
	return file_open(dl, key, path, id);
}

/* See dwarf_lines.h. */
void dwarf_lines__forget(struct dwarf_lines *dl, uint64_t file_key)
{
	struct lru_node *n;

	for (n = dl->files.head; n; n = n->next) {
		struct dl_file *f = lru_entry(n, struct dl_file, lru);

		if (f->key == file_key) {
			file_close(dl, f);
			return;
		}
	}
}

/* The compile unit DIE covering vaddr. */
static bool cu_of(const struct dl_file *f, uint64_t vaddr, Dwarf_Die *cu)
{
	size_t lo = 0, hi = f->nranges;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (f->ranges[mid].lo <= vaddr)
			lo = mid + 1;
		else
			hi = mid;
	}
	/* ranges may nest or overlap (odd producers): try the few candidates before */
	for (size_t i = lo, tries = 0; i-- > 0 && tries < 8; tries++)
		if (vaddr < f->ranges[i].hi)
			return dwarf_offdie(f->dw, f->ranges[i].die, cu) != NULL;
	return false;
}

/*
 * Resolves vaddr in f: the line table's line, then the enclosing function from the
 * concrete scope chain. Inside inlined code the line reported is the call site of the
 * outermost inlined call, so that the line lies in the function the symbol names.
 */
static void resolve(struct dl_file *f, uint64_t vaddr, const char **file, uint32_t *line,
		    uint32_t *start_line)
{
	Dwarf_Die cu, *scopes = NULL, *chain = NULL;
	Dwarf_Line *ln;
	int n, nchain = 0, lineno = 0;

	*file = NULL;
	*line = *start_line = 0;
	if (!f->dw || !cu_of(f, vaddr, &cu))
		return;
	ln = dwarf_getsrc_die(&cu, vaddr);
	if (ln && dwarf_lineno(ln, &lineno) == 0 && lineno > 0) {
		*file = dwarf_linesrc(ln, NULL, NULL);
		*line = (uint32_t)lineno;
	}
	n = dwarf_getscopes(&cu, vaddr, &scopes);
	if (n > 0)
		nchain = dwarf_getscopes_die(&scopes[0], &chain);
	for (int i = 0, inl = -1; i < nchain; i++) {
		int tag = dwarf_tag(&chain[i]);
		Dwarf_Attribute attr;
		Dwarf_Word w;
		const char *decl;

		if (tag == DW_TAG_inlined_subroutine) {
			inl = i;
			continue;
		}
		if (tag != DW_TAG_subprogram)
			continue;
		if (inl >= 0 &&
		    dwarf_formudata(dwarf_attr(&chain[inl], DW_AT_call_line, &attr), &w) == 0 &&
		    w > 0 && w <= UINT32_MAX)
			*line = (uint32_t)w;
		decl = dwarf_decl_file(&chain[i]);
		if (decl)
			*file = decl;
		if (dwarf_decl_line(&chain[i], &lineno) == 0 && lineno > 0)
			*start_line = (uint32_t)lineno;
		break;
	}
	free(scopes);
	free(chain);
	if (!*line)
		*file = NULL;
}

/* See dwarf_lines.h. */
int dwarf_lines__lookup(struct dwarf_lines *dl, uint64_t file_key, const char *path,
			const struct elf_identity *id, uint64_t vaddr, struct src_line *out)
{
	uint32_t b = bucket_of(file_key, vaddr), line, start_line;
	struct dl_entry *e;
	struct dl_file *f;
	const char *file;
	size_t flen;

	dl->stats.lookups++;
	for (e = dl->buckets[b]; e; e = e->hnext)
		if (e->key == file_key && e->vaddr == vaddr)
			break;
	if (e) {
		dl->stats.hits++;
		lru__touch(&dl->entries, &e->lru);
		goto answer;
	}
	f = file_get(dl, file_key, path, id);
	if (!f)
		return errno == ENOENT ? -ENOENT : -ENOMEM;
	resolve(f, vaddr, &file, &line, &start_line);
	flen = file ? strnlen(file, DL_MAX_FILE_LEN) : 0;
	e = malloc(sizeof(*e) + flen + 1);
	if (!e)
		return -ENOMEM;
	e->key = file_key;
	e->vaddr = vaddr;
	e->line = line;
	e->start_line = start_line;
	e->bytes = sizeof(*e) + flen + 1;
	memcpy(e->file, file ? file : "", flen);
	e->file[flen] = '\0';
	e->hnext = dl->buckets[b];
	dl->buckets[b] = e;
	e->lru.prev = e->lru.next = NULL;
	lru__push_head(&dl->entries, &e->lru);
	dl->stats.entries++;
	dl->stats.bytes += e->bytes;
	while (dl->stats.bytes > dl->cfg.max_bytes && dl->entries.tail != &e->lru) {
		dl->stats.evictions++;
		entry_remove(dl, lru_entry(dl->entries.tail, struct dl_entry, lru));
	}
answer:
	if (!e->line)
		return -ENOENT;
	out->file = e->file;
	out->line = e->line;
	out->start_line = e->start_line;
	return 0;
}
