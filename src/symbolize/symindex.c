// SPDX-License-Identifier: Apache-2.0
/* The function symbol index of one ELF file: built once, 12 bytes a symbol, names in place. */
#include "symbolize/symindex.h"

#include <errno.h>
#include <inttypes.h>
#include <linux/elf.h>
#include <lzma.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "symbolize/debuginfod.h"
#include "symbolize/elf.h"
#include "symbolize/gopclntab.h"

#define LOG_MODULE "symindex"
#include "util/log.h"

#ifndef STT_GNU_IFUNC
#define STT_GNU_IFUNC 10
#endif

#define SI_MINIDEBUG_MAX (256u << 20) /* bound on decompressed .gnu_debugdata */
#define SI_LZMA_MEMLIMIT (128u << 20) /* decoder memory bound */
#define SI_SIZE_BITS	 30
#define SI_SIZE_MAX	 ((1u << SI_SIZE_BITS) - 1)
#define SI_CANCEL_EVERY	 65536 /* symbols read between two looks at the cancel flag */

/* Where a symbol came from: selects its string table. Also the tie-break order for aliases. */
enum sym_src { SRC_SYMTAB = 0, SRC_DEBUGINFO, SRC_MINIDEBUG, SRC_DYNSYM, SRC__COUNT };
static const char *const src_names[] = {"symtab", "debuginfo", "minidebuginfo", "dynsym"};

/*
 * One function symbol: 12 bytes. The address is relative to the index's base (a library's
 * text spans far less than 4 GiB); the name is an offset into the string table of its
 * source image, which the index keeps mapped (never copied: libtorch_cpu.so's .strtab alone
 * is 78 MB).
 */
struct sym {
	uint32_t addr;	   /* vaddr - base */
	uint32_t name;	   /* offset in strs[src] */
	uint32_t size_src; /* size (low 30 bits, already extended for size-0 symbols) | src << 30 */
};

/* A string table inside one of the index's images. */
struct strtab {
	const char *data;
	uint64_t size;
	const struct elf_file *ef; /* the image it is in */
	uint64_t file_off;	   /* its offset there */
};

struct symindex {
	uint64_t base;
	struct sym *syms;
	uint32_t nsyms;
	/*
	 * first[b]: the first symbol at or above b << shift (b <= nbuckets): a lookup searches
	 * one bucket's few symbols, not the whole array (20 cache misses on libtorch_cpu's).
	 */
	uint32_t *first;
	uint32_t nbuckets;
	uint8_t shift;
	struct strtab strs[SRC__COUNT];
	struct elf_file *keep[3]; /* images the string tables live in (file, debug, mini) */
	int nkeep;
	struct elf_file *lines_ef; /* file with DWARF line tables (a reference), or NULL */
	struct gopclntab *go;	   /* Go binaries: names and lines from .gopclntab first */
	bool dbg_wait;		   /* built while debuginfod fetched its debug file */
	uint64_t dbg_gen;	   /* debuginfod__generation() when built */
};

/* Symbol while the index is built (24 bytes). */
struct build_sym {
	uint64_t addr;
	uint32_t size;
	uint32_t name;
	uint32_t sec_room; /* bytes from addr to the end of its section, UINT32_MAX unknown */
	uint8_t rank;	   /* 0 global, 1 weak, 2 local/other */
	uint8_t src;
};

struct builder {
	const struct symindex_config *cfg;
	struct symindex *ix;
	struct build_sym *v;
	size_t n, cap;
	uint64_t dropped; /* symbols more than 4 GiB above the lowest one */
};

static bool cancelled(const struct builder *b)
{
	return b->cfg->cancel && __atomic_load_n(b->cfg->cancel, __ATOMIC_RELAXED);
}

/* Keeps a reference on an image the index points into (consumes the caller's). */
static void keep_image(struct symindex *ix, struct elf_file *ef)
{
	if (ix->nkeep < (int)(sizeof(ix->keep) / sizeof(ix->keep[0])))
		ix->keep[ix->nkeep++] = ef;
	else
		elf_file__put(ef);
}

static int builder_reserve(struct builder *b, uint64_t more)
{
	size_t cap;
	struct build_sym *v;

	if (b->n + more <= b->cap)
		return 0;
	cap = b->n + more;
	if (cap < b->cap * 2)
		cap = b->cap * 2;
	v = realloc(b->v, cap * sizeof(*v));
	if (!v)
		return -ENOMEM;
	b->v = v;
	b->cap = cap;
	return 0;
}

/*
 * Adds the function symbols of one SHT_SYMTAB/SHT_DYNSYM section of ef (an image the index
 * keeps); corrupt entries are skipped. Only the symbol entries are read here: names are
 * touched later, when a frame needs one.
 */
static int add_symbols(struct builder *b, const struct elf_file *ef, const char *secname,
		       enum sym_src src)
{
	struct elf_section sec, str;
	uint64_t count;
	bool terminated;
	int err;

	if (elf_file__section(ef, secname, &sec) || !sec.data)
		return 0;
	if ((sec.type != SHT_SYMTAB && sec.type != SHT_DYNSYM) || sec.entsize < sizeof(Elf64_Sym))
		return 0;
	if (elf_file__section_by_index(ef, sec.link, &str) || !str.data || str.type != SHT_STRTAB ||
	    str.size == 0 || str.size > UINT32_MAX)
		return 0;
	count = sec.size / sec.entsize;
	err = builder_reserve(b, count);
	if (err)
		return err;
	b->ix->strs[src] = (struct strtab){(const char *)str.data, str.size, ef, str.offset};
	/* a table that ends in NUL terminates every name in it: no scan per symbol */
	terminated = str.data[str.size - 1] == '\0';
	for (uint64_t i = 1; i < count; i++) {
		struct elf_section owner;
		struct build_sym *bs;
		Elf64_Sym sym;
		unsigned type, bind;

		if (i % SI_CANCEL_EVERY == 0 && cancelled(b))
			return -ECANCELED;
		memcpy(&sym, sec.data + i * sec.entsize, sizeof(sym));
		type = ELF64_ST_TYPE(sym.st_info);
		bind = ELF64_ST_BIND(sym.st_info);
		if (type != STT_FUNC && type != STT_GNU_IFUNC)
			continue;
		if (sym.st_shndx == SHN_UNDEF || sym.st_shndx >= SHN_LORESERVE || !sym.st_value)
			continue;
		if (sym.st_name == 0 || sym.st_name >= str.size ||
		    (!terminated && !memchr(str.data + sym.st_name, '\0', str.size - sym.st_name)))
			continue;
		bs = &b->v[b->n++];
		bs->addr = sym.st_value;
		bs->size = sym.st_size > SI_SIZE_MAX ? SI_SIZE_MAX : (uint32_t)sym.st_size;
		bs->name = (uint32_t)sym.st_name;
		bs->sec_room = UINT32_MAX;
		if (!elf_file__section_by_index(ef, sym.st_shndx, &owner) &&
		    sym.st_value >= owner.addr && sym.st_value - owner.addr < owner.size) {
			uint64_t room = owner.addr + owner.size - sym.st_value;

			bs->sec_room = room > UINT32_MAX - 1 ? UINT32_MAX - 1 : (uint32_t)room;
		}
		bs->rank = bind == STB_GLOBAL ? 0 : bind == STB_WEAK ? 1 : 2;
		bs->src = (uint8_t)src;
	}
	/* the symbol entries are not read again: give their pages back */
	elf_file__drop_pages(ef, sec.offset, sec.size);
	return 0;
}

/* Internal glibc aliases (__GI_*, leading underscores) rank after their public names. */
static int alias_penalty(const char *name)
{
	int p = 0;

	if (strncmp(name, "__GI_", 5) == 0)
		p += 100;
	while (*name == '_') {
		p++;
		name++;
	}
	return p;
}

static int build_sym_cmp(const void *a, const void *b, void *arg)
{
	const struct build_sym *x = a, *y = b;
	const struct symindex *ix = arg;
	const char *nx, *ny;
	int ux, uy;

	if (x->addr != y->addr)
		return x->addr < y->addr ? -1 : 1;
	if (x->rank != y->rank)
		return x->rank - y->rank;
	if (x->src != y->src)
		return x->src - y->src;
	/* among aliases prefer the public spelling: "clone3" over "__clone3" over "__GI___clone3"
	 * (names are read only here, for symbols that share an address) */
	nx = ix->strs[x->src].data + x->name;
	ny = ix->strs[y->src].data + y->name;
	ux = alias_penalty(nx);
	uy = alias_penalty(ny);
	if (ux != uy)
		return ux - uy;
	/* deterministic among equals */
	return strcmp(nx, ny);
}
/* Decompresses .gnu_debugdata (xz) into an in-memory ELF; NULL when absent or bad. */
static struct elf_file *open_minidebuginfo(const struct elf_file *ef)
{
	lzma_stream strm = LZMA_STREAM_INIT;
	struct elf_file *mini = NULL;
	struct elf_section sec;
	uint8_t *out = NULL;
	size_t cap = 0;
	lzma_ret ret;

	if (elf_file__section(ef, ".gnu_debugdata", &sec) || !sec.data || !sec.size)
		return NULL;
	if (lzma_stream_decoder(&strm, SI_LZMA_MEMLIMIT, 0) != LZMA_OK)
		return NULL;
	strm.next_in = sec.data;
	strm.avail_in = sec.size;
	do {
		if (strm.avail_out == 0) {
			size_t ncap = cap ? cap * 2 : sec.size * 4 + 4096;
			uint8_t *p;

			if (ncap > SI_MINIDEBUG_MAX)
				ncap = SI_MINIDEBUG_MAX;
			if (ncap <= cap) {
				pr_warn("%s: .gnu_debugdata larger than %u bytes",
					elf_file__path(ef), SI_MINIDEBUG_MAX);
				goto cleanup;
			}
			p = realloc(out, ncap);
			if (!p)
				goto cleanup;
			out = p;
			strm.next_out = out + cap;
			strm.avail_out = ncap - cap;
			cap = ncap;
		}
		ret = lzma_code(&strm, LZMA_FINISH);
	} while (ret == LZMA_OK);
	if (ret != LZMA_STREAM_END) {
		pr_debug("%s: cannot decompress .gnu_debugdata (lzma error %d)", elf_file__path(ef),
			 (int)ret);
		goto cleanup;
	}
	mini = elf_file__open_mem(out, strm.total_out, ".gnu_debugdata");
cleanup:
	lzma_end(&strm);
	free(out);
	return mini;
}

/* Opens path and checks that it is the debug file wanted (build id or debuglink CRC). */
static struct elf_file *try_debug_file(const char *path, const char *bid, const uint32_t *crc)
{
	struct elf_file *dbg = elf_file__open(path);
	const char *dbid;

	if (!dbg)
		return NULL;
	dbid = elf_file__build_id(dbg);
	if (bid && (!dbid || strcmp(dbid, bid) != 0))
		goto reject;
	if (crc && elf_file__crc32(dbg) != *crc)
		goto reject;
	pr_debug("using debug file %s", path);
	return dbg;
reject:
	pr_debug("%s: debug file does not match", path);
	elf_file__put(dbg);
	return NULL;
}

/*
 * Finds a separate debug file by build id, then by debuglink. NULL when none.
 * Debug files come only from trusted places: the configured debug directories on the
 * host, and the object's own directory (and its .debug/) when the caller opened the object
 * by a host path. Nothing is taken from inside another process's root (root, "/proc/...")
 * nor next to an object opened through /proc: those directories belong to that process's
 * tenant, and its debug file would name frames of every process mapping the same file.
 */
static struct elf_file *find_debug_file(const struct symindex_config *cfg,
					const struct elf_file *ef, const char *root)
{
	const char *bid = elf_file__build_id(ef);
	const char *path = elf_file__path(ef);
	const char *link, *slash, *dir_in_root = path;
	bool via_proc = strncmp(path, "/proc/", 6) == 0;
	struct elf_file *dbg = NULL;
	char buf[4096];
	uint32_t crc = 0;
	size_t dirlen;

	/* build id: <debugdir>/.build-id/ab/cdef....debug */
	for (const char *d = cfg->debug_dirs; bid && strlen(bid) > 2 && *d && !dbg;) {
		size_t n = strcspn(d, ":");

		if (n && snprintf(buf, sizeof(buf), "%.*s/.build-id/%.2s/%s.debug", (int)n, d, bid,
				  bid + 2) < (int)sizeof(buf))
			dbg = try_debug_file(buf, bid, NULL);
		d += n + (d[n] == ':');
	}
	if (dbg)
		return dbg;

	link = elf_file__debuglink(ef, &crc);
	slash = strrchr(path, '/');
	if (!link || !slash)
		return NULL;
	dirlen = slash - path; /* directory of the file as we can open it */
	/* same dir, then <dir>/.debug/ (host paths only) */
	if (!via_proc &&
	    snprintf(buf, sizeof(buf), "%.*s/%s", (int)dirlen, path, link) < (int)sizeof(buf) &&
	    strcmp(buf, path) != 0 && (dbg = try_debug_file(buf, NULL, &crc)))
		return dbg;
	if (!via_proc &&
	    snprintf(buf, sizeof(buf), "%.*s/.debug/%s", (int)dirlen, path, link) <
		    (int)sizeof(buf) &&
	    (dbg = try_debug_file(buf, NULL, &crc)))
		return dbg;
	/* <debugdir><dir inside the root>/<name>, on the host */
	if (root && *root && strncmp(path, root, strlen(root)) == 0)
		dir_in_root = path + strlen(root);
	dirlen = slash - dir_in_root;
	for (const char *d = cfg->debug_dirs; *d;) {
		size_t n = strcspn(d, ":");

		if (n &&
		    snprintf(buf, sizeof(buf), "%.*s%.*s/%s", (int)n, d, (int)dirlen, dir_in_root,
			     link) < (int)sizeof(buf) &&
		    (dbg = try_debug_file(buf, NULL, &crc)))
			return dbg;
		d += n + (d[n] == ':');
	}
	return NULL;
}

/*
 * The debug file of a stripped ef from debuginfod, when it is in the local cache already.
 * Otherwise the fetch runs in the background and ix is marked to be rebuilt when it ends.
 */
static struct elf_file *fetched_debug_file(const struct symindex_config *cfg,
					   const struct elf_file *ef, struct symindex *ix)
{
	const char *bid = elf_file__build_id(ef);
	struct elf_file *dbg;
	char *path;
	int err;

	if (!bid)
		return NULL;
	ix->dbg_gen = debuginfod__generation(cfg->dbgd);
	err = debuginfod__find(cfg->dbgd, bid, &path);
	if (err == -EAGAIN || err == -ENOBUFS)
		ix->dbg_wait = true;
	if (err)
		return NULL;
	dbg = try_debug_file(path, bid, NULL);
	free(path);
	return dbg;
}

/* Whether ef has a DWARF line table (libdw reads it in dwarf_lines.c). */
static bool has_lines(const struct elf_file *ef)
{
	struct elf_section sec;

	return !elf_file__section(ef, ".debug_line", &sec) ||
	       !elf_file__section(ef, ".zdebug_line", &sec);
}

/* Symbols a bucket of symindex.first holds on average (half a byte of index per symbol). */
#define SI_BUCKET_SYMS 8

/* Fills ix->first over the sorted ix->syms (none for small indexes: one search is short). */
static int build_buckets(struct symindex *ix)
{
	uint64_t span, want;
	uint32_t j = 0;

	if (ix->nsyms < 4 * SI_BUCKET_SYMS)
		return 0;
	span = (uint64_t)ix->syms[ix->nsyms - 1].addr + 1;
	want = ix->nsyms / SI_BUCKET_SYMS;
	ix->shift = 0;
	while ((span >> ix->shift) > want)
		ix->shift++;
	ix->nbuckets = (uint32_t)(span >> ix->shift) + 1;
	ix->first = malloc(((size_t)ix->nbuckets + 1) * sizeof(*ix->first));
	if (!ix->first)
		return -ENOMEM;
	for (uint32_t b = 0; b <= ix->nbuckets; b++) {
		while (j < ix->nsyms && ix->syms[j].addr < ((uint64_t)b << ix->shift))
			j++;
		ix->first[b] = j;
	}
	return 0;
}

/*
 * Sorts, keeps the best-ranked name of each address (aliases), extends size-0 symbols to
 * the next symbol (or their section's end) and packs the survivors into 12-byte entries.
 */
static int builder_finish(struct builder *b)
{
	struct symindex *ix = b->ix;
	size_t n = 0;

	if (b->n)
		qsort_r(b->v, b->n, sizeof(*b->v), build_sym_cmp, ix);
	if (cancelled(b))
		return -ECANCELED;
	for (size_t i = 0; i < b->n; i++) {
		if (n && b->v[n - 1].addr == b->v[i].addr) {
			/* alias: the first (best ranked) name stays, the largest size wins */
			if (b->v[i].size > b->v[n - 1].size)
				b->v[n - 1].size = b->v[i].size;
			continue;
		}
		b->v[n++] = b->v[i];
	}
	ix->base = n ? b->v[0].addr : 0;
	ix->syms = malloc((n ? n : 1) * sizeof(*ix->syms));
	if (!ix->syms)
		return -ENOMEM;
	ix->nsyms = 0;
	for (size_t i = 0; i < n; i++) {
		const struct build_sym *s = &b->v[i];
		uint64_t size = s->size;

		if (s->addr - ix->base > UINT32_MAX) {
			b->dropped += n - i; /* sorted: every later one is further away */
			break;
		}
		if (size == 0) {
			uint64_t end = i + 1 < n ? b->v[i + 1].addr : s->addr + 1;

			if (s->sec_room != UINT32_MAX && end - s->addr > s->sec_room)
				end = s->addr + (s->sec_room ? s->sec_room : 1);
			size = end - s->addr;
		}
		if (size > SI_SIZE_MAX)
			size = SI_SIZE_MAX;
		ix->syms[ix->nsyms++] = (struct sym){
			.addr = (uint32_t)(s->addr - ix->base),
			.name = s->name,
			.size_src = (uint32_t)size | (uint32_t)s->src << SI_SIZE_BITS,
		};
	}
	if (b->dropped)
		pr_debug("%" PRIu64 " symbols more than 4 GiB above the first one left out",
			 b->dropped);
	return build_buckets(ix);
}

/* Reads every symbol source of ef into b. */
static int read_sources(struct builder *b, struct elf_file *ef, const char *root)
{
	const struct symindex_config *cfg = b->cfg;
	struct symindex *ix = b->ix;
	struct elf_file *dbg, *mini;
	struct elf_section sec;
	size_t ndyn;
	int err;

	if (!elf_file__section(ef, ".symtab", &sec)) {
		err = add_symbols(b, ef, ".symtab", SRC_SYMTAB);
		/* the file was cut short under its mapping: .symtab read as zeros */
		if (err || !elf_file__truncated(ef))
			return err;
		pr_warn("%s was truncated while in use: naming from what is left",
			elf_file__path(ef));
		b->n = 0;
		ix->strs[SRC_SYMTAB] = (struct strtab){0};
	}
	err = add_symbols(b, ef, ".dynsym", SRC_DYNSYM);
	if (err)
		return err;
	ndyn = b->n;
	dbg = find_debug_file(cfg, ef, root);
	if (!dbg && cfg->dbgd)
		dbg = fetched_debug_file(cfg, ef, ix);
	if (dbg) {
		if (cfg->want_lines && !ix->lines_ef && has_lines(dbg))
			ix->lines_ef = elf_file__get(dbg);
		keep_image(ix, dbg);
		err = add_symbols(b, dbg, ".symtab", SRC_DEBUGINFO);
		if (err)
			return err;
	}
	/* MiniDebugInfo only when no debug file contributed functions */
	if (b->n == ndyn && (mini = open_minidebuginfo(ef))) {
		keep_image(ix, mini);
		err = add_symbols(b, mini, ".symtab", SRC_MINIDEBUG);
	}
	return err;
}

/* See symindex.h. */
struct symindex *symindex__build(const struct symindex_config *cfg, struct elf_file *ef,
				 const char *root)
{
	struct builder b = {.cfg = cfg};
	struct symindex *ix;
	uint16_t type = elf_file__type(ef);
	int err = 0;

	ix = calloc(1, sizeof(*ix));
	if (!ix) {
		errno = ENOMEM;
		return NULL;
	}
	b.ix = ix;
	keep_image(ix, elf_file__get(ef));
	if (type == ET_EXEC || type == ET_DYN) {
		/* (relocatable objects have no final addresses: empty index) */
		ix->go = gopclntab__open(ef);
		if (cfg->want_lines && has_lines(ef))
			ix->lines_ef = elf_file__get(ef);
		err = read_sources(&b, ef, root);
	}
	if (!err)
		err = builder_finish(&b);
	free(b.v);
	/*
	 * The sort read the names of aliases: those pages go back too. A lookup reads the
	 * few it names (libtorch_cpu.so's .strtab is 78 MB; a profile names a few hundred).
	 */
	for (int i = 0; i < SRC__COUNT; i++)
		if (ix->strs[i].ef)
			elf_file__drop_pages(ix->strs[i].ef, ix->strs[i].file_off,
					     ix->strs[i].size);
	if (err == -ENOMEM || err == -ECANCELED) {
		symindex__free(ix);
		errno = -err;
		return NULL;
	}
	if (err) {
		/* Unreadable symbols (corrupt ELF, bad MiniDebugInfo): an empty index, so that
		 * later frames of this object neither rebuild nor log again. */
		pr_warn("cannot read symbols of %s: %s", elf_file__path(ef), strerror(-err));
		free(ix->syms);
		free(ix->first);
		ix->syms = NULL;
		ix->first = NULL;
		ix->nsyms = 0;
	}
	return ix;
}

/* See symindex.h. */
void symindex__free(struct symindex *ix)
{
	if (!ix)
		return;
	gopclntab__free(ix->go);
	elf_file__put(ix->lines_ef);
	for (int i = 0; i < ix->nkeep; i++)
		elf_file__put(ix->keep[i]);
	free(ix->syms);
	free(ix->first);
	free(ix);
}

/* See symindex.h. */
size_t symindex__bytes(const struct symindex *ix)
{
	return sizeof(*ix) + (size_t)ix->nsyms * sizeof(*ix->syms) +
	       (ix->first ? ((size_t)ix->nbuckets + 1) * sizeof(*ix->first) : 0);
}

/* See symindex.h. */
uint32_t symindex__count(const struct symindex *ix)
{
	return ix->nsyms;
}

/* See symindex.h. */
const struct gopclntab *symindex__go(const struct symindex *ix)
{
	return ix->go;
}

/* See symindex.h. */
struct elf_file *symindex__lines_file(const struct symindex *ix)
{
	return ix->lines_ef;
}

/* See symindex.h. */
bool symindex__debug_pending(const struct symindex *ix, uint64_t *gen)
{
	*gen = ix->dbg_gen;
	return ix->dbg_wait;
}

/* See symindex.h. */
int symindex__find(const struct symindex *ix, uint64_t vaddr, struct symindex_hit *hit)
{
	const struct sym *s;
	const struct strtab *st;
	uint32_t lo, hi, size;
	uint64_t rel;

	if (!ix->nsyms || vaddr < ix->base || vaddr - ix->base > UINT32_MAX)
		return -ENOENT;
	rel = vaddr - ix->base;
	/* last symbol with addr <= rel: in [first[b] - 1, first[b + 1]) of rel's bucket b */
	lo = 0;
	hi = ix->nsyms;
	if (ix->first && (rel >> ix->shift) < ix->nbuckets) {
		uint32_t b = (uint32_t)(rel >> ix->shift);

		lo = ix->first[b] ? ix->first[b] - 1 : 0;
		hi = ix->first[b + 1] > lo ? ix->first[b + 1] : lo + 1;
	} else if (ix->first) {
		lo = ix->nsyms - 1;
	}
	while (hi - lo > 1) {
		uint32_t mid = lo + (hi - lo) / 2;

		if (ix->syms[mid].addr <= rel)
			lo = mid;
		else
			hi = mid;
	}
	s = &ix->syms[lo];
	size = s->size_src & SI_SIZE_MAX;
	if (rel < s->addr || rel - s->addr >= size)
		return -ENOENT;
	st = &ix->strs[s->size_src >> SI_SIZE_BITS];
	hit->raw = st->data + s->name;
	hit->raw_max = st->size - s->name;
	hit->idx = lo;
	hit->offset = rel - s->addr;
	hit->size = size;
	hit->source = src_names[s->size_src >> SI_SIZE_BITS];
	return 0;
}

/* See symindex.h. */
char *symindex__plain_name(const struct symindex_hit *hit, char *buf, size_t len)
{
	/* the string table may have been rewritten since it was checked: bound the scan */
	size_t n = strnlen(hit->raw, hit->raw_max);
	const char *at = memchr(hit->raw, '@', n);

	/* "memcpy@@GLIBC_2.14" -> "memcpy": symbol versions are not part of the name */
	if (at && at != hit->raw)
		n = (size_t)(at - hit->raw);
	if (!len)
		return buf;
	if (n >= len) {
		n = len - 1;
		if (n >= 3)
			memcpy(buf + n - 3, "...", 3);
		memcpy(buf, hit->raw, n >= 3 ? n - 3 : n);
	} else {
		memcpy(buf, hit->raw, n);
	}
	buf[n] = '\0';
	return buf;
}
