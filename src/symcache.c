// SPDX-License-Identifier: Apache-2.0
/* Function symbol tables per ELF object (symtab/dynsym/MiniDebugInfo/debug files), LRU cache. */
#include <errno.h>
#include <linux/elf.h>
#include <lzma.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "debuginfod.h"
#include "dwarf_lines.h"
#include "elf.h"
#include "gopclntab.h"
#include "hash.h"
#include "lru.h"
#include "symcache.h"

#define LOG_MODULE "symcache"
#include "log.h"

#ifndef STT_GNU_IFUNC
#define STT_GNU_IFUNC 10
#endif

#define SC_BUCKETS	     1024 /* hash buckets for tables (chained) */
#define SC_DEMANGLE_SLOTS    512  /* direct-mapped cache of demangled names */
#define SC_DEMANGLE_MAX_LEN  4096 /* longer demangled names are cut (bounds the cache) */
#define SC_DEFAULT_MAX_BYTES (256u << 20)
#define SC_MINIDEBUG_MAX     (256u << 20) /* bound on decompressed .gnu_debugdata */
#define SC_LZMA_MEMLIMIT     (128u << 20) /* decoder memory bound */
#define SC_SIZE_BITS	     30
#define SC_SIZE_MAX	     ((1u << SC_SIZE_BITS) - 1)
#define SC_NAMES_MAX	     UINT32_MAX /* 32-bit arena offsets */

/* Where a symbol came from; index into src_names. Also the tie-break order for aliases. */
enum sym_src { SRC_SYMTAB = 0, SRC_DEBUGINFO, SRC_MINIDEBUG, SRC_DYNSYM };
static const char *const src_names[] = {"symtab", "debuginfo", "minidebuginfo", "dynsym"};

/* One function symbol: 16 bytes. */
struct sym {
	uint64_t addr;
	uint32_t name;	   /* offset in the table's arena */
	uint32_t size_src; /* size (low 30 bits, already extended for size-0 symbols) | src << 30 */
};

struct symtab {
	char *key;
	uint64_t hash;
	uint64_t gen;		   /* unique id: keys the demangle and line caches, never reused */
	struct elf_file *dwarf_ef; /* the file with DWARF line tables (itself or its debug file;
				    * a reference), or NULL */
	bool dbg_wait;	  /* built while debuginfod fetches its debug file: rebuilt when it ends */
	uint64_t dbg_gen; /* debuginfod__generation() when built */
	/* Go binaries: names and lines from .gopclntab first, or NULL */
	struct gopclntab *go;
	struct sym *syms;
	uint32_t nsyms;
	char *names;
	size_t bytes;
	struct symtab *hnext;
	struct lru_node lru;
};

struct demangled {
	uint64_t gen;
	uint32_t idx;
	char *name;
};

/* Not thread-safe: one symbolizing thread owns a cache. */
struct symcache {
	size_t max_bytes;
	char *debug_dirs;
	struct symtab *buckets[SC_BUCKETS];
	struct lru_list lru; /* every table, most recently used at head */
	struct symcache_stats stats;
	uint64_t next_gen;
	struct demangled dm[SC_DEMANGLE_SLOTS];
	struct dwarf_lines *lines; /* source lines, bounded on its own */
	struct debuginfod *dbgd;   /* debug files by build id from servers; NULL when off */
};

/* Symbol while a table is being built; names point into the source ELF images. */
struct build_sym {
	uint64_t addr, size, sec_end;
	const char *name;
	uint8_t rank; /* 0 global, 1 weak, 2 local/other */
	uint8_t src;
};

struct builder {
	struct build_sym *v;
	size_t n, cap;
	struct elf_file *keep[4]; /* images whose strings the builder points into */
	int nkeep;
};

/* See symcache.h. */
struct symcache *symcache__new(const struct symcache_config *cfg)
{
	struct symcache *sc = calloc(1, sizeof(*sc));
	const char *dirs = cfg && cfg->debug_dirs ? cfg->debug_dirs : "/usr/lib/debug";

	if (!sc)
		return NULL;
	sc->max_bytes = cfg && cfg->max_bytes ? cfg->max_bytes : SC_DEFAULT_MAX_BYTES;
	sc->debug_dirs = strdup(dirs);
	if (!(cfg && cfg->no_source_lines)) {
		struct dwarf_lines_config lc = {.max_dwarf_bytes = cfg ? cfg->max_dwarf_bytes : 0};

		sc->lines = dwarf_lines__new(&lc);
	}
	if (!sc->debug_dirs || (!sc->lines && !(cfg && cfg->no_source_lines))) {
		free(sc->debug_dirs);
		dwarf_lines__free(sc->lines);
		free(sc);
		errno = ENOMEM;
		return NULL;
	}
	sc->next_gen = 1;
	/* from DEBUGINFOD_URLS; without it (or when it cannot start) symbols stay local */
	sc->dbgd = debuginfod__from_env();
	return sc;
}

static void symtab_free(struct symtab *t)
{
	if (!t)
		return;
	free(t->key);
	gopclntab__free(t->go);
	elf_file__put(t->dwarf_ef);
	free(t->syms);
	free(t->names);
	free(t);
}

/* See symcache.h. */
void symcache__free(struct symcache *sc)
{
	struct symtab *t, *next;

	if (!sc)
		return;
	for (t = lru_entry(sc->lru.head, struct symtab, lru); t; t = next) {
		next = lru_entry(t->lru.next, struct symtab, lru);
		symtab_free(t);
	}
	for (int i = 0; i < SC_DEMANGLE_SLOTS; i++)
		free(sc->dm[i].name);
	dwarf_lines__free(sc->lines);
	debuginfod__free(sc->dbgd);
	free(sc->debug_dirs);
	free(sc);
}

/* See symcache.h. */
void symcache__stats(const struct symcache *sc, struct symcache_stats *out)
{
	struct dwarf_lines_stats ls;

	*out = sc->stats;
	if (!sc->lines)
		return;
	dwarf_lines__stats(sc->lines, &ls);
	out->line_lookups = ls.lookups;
	out->line_hits = ls.hits;
	out->line_bytes = ls.bytes;
	out->line_evictions = ls.evictions;
}

static void table_remove(struct symcache *sc, struct symtab *t)
{
	struct symtab **pp = &sc->buckets[t->hash % SC_BUCKETS];

	while (*pp && *pp != t)
		pp = &(*pp)->hnext;
	if (*pp)
		*pp = t->hnext;
	lru__unlink(&sc->lru, &t->lru);
	sc->stats.tables--;
	sc->stats.bytes -= t->bytes;
	if (sc->lines)
		dwarf_lines__forget(sc->lines, t->gen);
	symtab_free(t);
}

/* Evicts least recently used tables until under the bound, never keep itself. */
static void evict(struct symcache *sc, const struct symtab *keep)
{
	while (sc->stats.bytes > sc->max_bytes && sc->lru.tail && sc->lru.tail != &keep->lru) {
		sc->stats.evictions++;
		table_remove(sc, lru_entry(sc->lru.tail, struct symtab, lru));
	}
}

/*
 * Cache key: the build id, or (without one) path, size and a hash of the ELF and section
 * headers, so that a rebuilt file at the same path gets a new table; then "@" and the
 * file's identity (device, inode, size, ctime; a unique id for in-memory images), so that
 * a file claiming another's build id (a container's, a user's) builds its own table and
 * never renames the frames of the file it imitates. Writes the key into buf when it fits,
 * else returns a malloc'd copy in *heap; NULL on ENOMEM.
 */
static const char *make_key(const struct elf_file *ef, char *buf, size_t bufsz, char **heap)
{
	const char *bid = elf_file__build_id(ef);
	const uint8_t *data;
	char id[96];
	size_t len;
	uint64_t h;
	int n;

	*heap = NULL;
	elf_file__identity_key(ef, id, sizeof(id));
	if (bid) {
		n = snprintf(buf, bufsz, "%s@%s", bid, id);
		return n >= 0 && (size_t)n < bufsz ? buf : NULL;
	}
	data = elf_file__data(ef, &len);
	h = hash__fnv1a(data, len < 64 ? len : 64, HASH_FNV1A_INIT);
	if (len >= 64) {
		Elf64_Ehdr eh;
		uint64_t sz;

		memcpy(&eh, data, sizeof(eh));
		sz = (uint64_t)eh.e_shnum * eh.e_shentsize;
		if (eh.e_shoff <= len && sz <= len - eh.e_shoff && sz <= (64u << 10))
			h = hash__fnv1a(data + eh.e_shoff, sz, h);
	}
	n = snprintf(buf, bufsz, "path:%s:%zu:%016llx@%s", elf_file__path(ef), len,
		     (unsigned long long)h, id);
	if (n >= 0 && (size_t)n < bufsz)
		return buf;
	if (asprintf(heap, "path:%s:%zu:%016llx@%s", elf_file__path(ef), len, (unsigned long long)h,
		     id) < 0) {
		*heap = NULL;
		return NULL;
	}
	return *heap;
}

static int builder_add(struct builder *b, const struct build_sym *s)
{
	if (b->n == b->cap) {
		size_t cap = b->cap ? b->cap * 2 : 1024;
		struct build_sym *v = realloc(b->v, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		b->v = v;
		b->cap = cap;
	}
	b->v[b->n++] = *s;
	return 0;
}

/* Adds the function symbols of one SHT_SYMTAB/SHT_DYNSYM section; corrupt entries skipped. */
static int add_symbols(struct builder *b, const struct elf_file *ef, const char *secname,
		       enum sym_src src)
{
	struct elf_section sec, str;
	uint64_t count;

	if (elf_file__section(ef, secname, &sec) || !sec.data)
		return 0;
	if ((sec.type != SHT_SYMTAB && sec.type != SHT_DYNSYM) || sec.entsize < sizeof(Elf64_Sym))
		return 0;
	if (elf_file__section_by_index(ef, sec.link, &str) || !str.data || str.type != SHT_STRTAB ||
	    str.size == 0)
		return 0;
	count = sec.size / sec.entsize;
	for (uint64_t i = 1; i < count; i++) {
		struct elf_section owner;
		struct build_sym bs = {0};
		Elf64_Sym sym;
		unsigned type, bind;
		int err;

		memcpy(&sym, sec.data + i * sec.entsize, sizeof(sym));
		type = ELF64_ST_TYPE(sym.st_info);
		bind = ELF64_ST_BIND(sym.st_info);
		if (type != STT_FUNC && type != STT_GNU_IFUNC)
			continue;
		if (sym.st_shndx == SHN_UNDEF || sym.st_shndx >= SHN_LORESERVE || !sym.st_value)
			continue;
		if (sym.st_name == 0 || sym.st_name >= str.size ||
		    !memchr(str.data + sym.st_name, '\0', str.size - sym.st_name))
			continue;
		bs.addr = sym.st_value;
		bs.size = sym.st_size;
		bs.sec_end = UINT64_MAX;
		if (!elf_file__section_by_index(ef, sym.st_shndx, &owner) &&
		    sym.st_value >= owner.addr && sym.st_value - owner.addr < owner.size)
			bs.sec_end = owner.addr + owner.size;
		bs.name = (const char *)str.data + sym.st_name;
		bs.rank = bind == STB_GLOBAL ? 0 : bind == STB_WEAK ? 1 : 2;
		bs.src = src;
		err = builder_add(b, &bs);
		if (err)
			return err;
	}
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

static int build_sym_cmp(const void *a, const void *b)
{
	const struct build_sym *x = a, *y = b;

	if (x->addr != y->addr)
		return x->addr < y->addr ? -1 : 1;
	if (x->rank != y->rank)
		return x->rank - y->rank;
	if (x->src != y->src)
		return x->src - y->src;
	/* among aliases prefer the public spelling: "clone3" over "__clone3" over "__GI___clone3"
	 */
	int ux = alias_penalty(x->name), uy = alias_penalty(y->name);
	if (ux != uy)
		return ux - uy;
	/* deterministic among equals */
	return strcmp(x->name, y->name);
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
	if (lzma_stream_decoder(&strm, SC_LZMA_MEMLIMIT, 0) != LZMA_OK)
		return NULL;
	strm.next_in = sec.data;
	strm.avail_in = sec.size;
	do {
		if (strm.avail_out == 0) {
			size_t ncap = cap ? cap * 2 : sec.size * 4 + 4096;
			uint8_t *p;

			if (ncap > SC_MINIDEBUG_MAX)
				ncap = SC_MINIDEBUG_MAX;
			if (ncap <= cap) {
				pr_warn("%s: .gnu_debugdata larger than %u bytes",
					elf_file__path(ef), SC_MINIDEBUG_MAX);
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
static struct elf_file *find_debug_file(const struct symcache *sc, const struct elf_file *ef,
					const char *root)
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
	for (const char *d = sc->debug_dirs; bid && strlen(bid) > 2 && *d && !dbg;) {
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
	for (const char *d = sc->debug_dirs; *d;) {
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
 * Otherwise the fetch runs in the background and t is marked to be rebuilt when it ends.
 */
static struct elf_file *fetched_debug_file(struct symcache *sc, const struct elf_file *ef,
					   struct symtab *t)
{
	const char *bid = elf_file__build_id(ef);
	struct elf_file *dbg;
	char *path;
	int err;

	if (!bid)
		return NULL;
	t->dbg_gen = debuginfod__generation(sc->dbgd);
	err = debuginfod__find(sc->dbgd, bid, &path);
	if (err == -EAGAIN || err == -ENOBUFS)
		t->dbg_wait = true;
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

static void builder_keep(struct builder *b, struct elf_file *ef)
{
	if (ef && b->nkeep < (int)(sizeof(b->keep) / sizeof(b->keep[0])))
		b->keep[b->nkeep++] = ef;
	else
		elf_file__put(ef);
}

/*
 * Sorts, deduplicates aliases, extends size-0 symbols to the next symbol and copies the
 * surviving names into one arena. Fills t.
 */
static int builder_finish(struct builder *b, struct symtab *t)
{
	size_t n = 0, names = 0;
	char *arena;

	if (b->n)
		qsort(b->v, b->n, sizeof(*b->v), build_sym_cmp);
	for (size_t i = 0; i < b->n; i++) {
		if (n && b->v[n - 1].addr == b->v[i].addr) {
			/* alias: the first (best ranked) name stays, the largest size wins */
			if (b->v[i].size > b->v[n - 1].size)
				b->v[n - 1].size = b->v[i].size;
			continue;
		}
		b->v[n++] = b->v[i];
	}
	for (size_t i = 0; i < n; i++) {
		/* "memcpy@@GLIBC_2.14" -> "memcpy": symbol versions are not part of the name */
		size_t len = strcspn(b->v[i].name, "@") + 1;

		if (names + len > SC_NAMES_MAX) {
			n = i; /* arena full: keep what fits */
			break;
		}
		names += len;
	}
	t->syms = malloc((n ? n : 1) * sizeof(*t->syms));
	arena = malloc(names ? names : 1);
	if (!t->syms || !arena) {
		free(arena);
		return -ENOMEM;
	}
	names = 0;
	for (size_t i = 0; i < n; i++) {
		struct build_sym *s = &b->v[i];
		uint64_t size = s->size;
		size_t len = strcspn(s->name, "@") + 1;

		if (size == 0) {
			uint64_t end = i + 1 < n ? b->v[i + 1].addr : s->addr + 1;

			if (end > s->sec_end)
				end = s->sec_end > s->addr ? s->sec_end : s->addr + 1;
			size = end - s->addr;
		}
		if (size > SC_SIZE_MAX)
			size = SC_SIZE_MAX;
		memcpy(arena + names, s->name, len - 1);
		arena[names + len - 1] = '\0';
		t->syms[i] = (struct sym){
			.addr = s->addr,
			.name = (uint32_t)names,
			.size_src = (uint32_t)size | (uint32_t)s->src << SC_SIZE_BITS,
		};
		names += len;
	}
	t->nsyms = n;
	t->names = arena;
	t->bytes = sizeof(*t) + n * sizeof(*t->syms) + names + strlen(t->key) + 1;
	return 0;
}

/* Builds the function symbol table of ef from all sources. */
static struct symtab *build_table(struct symcache *sc, struct elf_file *ef, const char *root,
				  char *key, uint64_t hash)
{
	struct builder b = {0};
	struct symtab *t = NULL;
	struct elf_section sec;
	bool have_symtab;
	uint16_t type = elf_file__type(ef);
	int err = 0;

	t = calloc(1, sizeof(*t));
	if (!t) {
		err = -ENOMEM;
		goto cleanup;
	}
	t->key = key;
	t->hash = hash;
	t->gen = sc->next_gen++;
	if (type != ET_EXEC && type != ET_DYN)
		goto finish; /* relocatable objects have no final addresses: empty table */

	/* Go: names and lines from .gopclntab (all that stripped Go binaries have) */
	t->go = gopclntab__open(ef);

	if (sc->lines && has_lines(ef))
		t->dwarf_ef = elf_file__get(ef);
	have_symtab = !elf_file__section(ef, ".symtab", &sec);
	if (have_symtab) {
		err = add_symbols(&b, ef, ".symtab", SRC_SYMTAB);
		/* the file was cut short under its mapping: .symtab read as zeros */
		if (!err && elf_file__truncated(ef)) {
			pr_warn("%s was truncated while in use: naming from what is left",
				elf_file__path(ef));
			b.n = 0;
			have_symtab = false;
		}
	}
	if (!err && !have_symtab) {
		struct elf_file *dbg, *mini;
		size_t ndyn;

		err = add_symbols(&b, ef, ".dynsym", SRC_DYNSYM);
		if (err)
			goto cleanup;
		ndyn = b.n;

		dbg = find_debug_file(sc, ef, root);
		if (!dbg && sc->dbgd)
			dbg = fetched_debug_file(sc, ef, t);
		if (dbg) {
			if (sc->lines && !t->dwarf_ef && has_lines(dbg))
				t->dwarf_ef = elf_file__get(dbg);
			builder_keep(&b, dbg);
			err = add_symbols(&b, dbg, ".symtab", SRC_DEBUGINFO);
		}
		/* MiniDebugInfo only when no debug file contributed functions */
		if (!err && b.n == ndyn && (mini = open_minidebuginfo(ef))) {
			builder_keep(&b, mini);
			err = add_symbols(&b, mini, ".symtab", SRC_MINIDEBUG);
		}
	}
	if (err)
		goto cleanup;
finish:
	err = builder_finish(&b, t);
cleanup:
	for (int i = 0; i < b.nkeep; i++)
		elf_file__put(b.keep[i]);
	free(b.v);
	if (err && err != -ENOMEM && t && !t->syms) {
		/* Unreadable symbols (corrupt ELF, bad MiniDebugInfo): remember the failure as an
		 * empty table so later frames of this object neither rebuild nor log again. */
		pr_warn("cannot read symbols of %s: %s", elf_file__path(ef), strerror(-err));
		t->nsyms = 0;
		t->bytes = sizeof(*t) + strlen(t->key) + 1;
		err = 0;
	}
	if (err) {
		if (t)
			symtab_free(t);
		else
			free(key);
		errno = -err;
		return NULL;
	}
	return t;
}

/* Returns the (possibly cached) display name of symbol idx of t. */
static const char *display_name(struct symcache *sc, const struct symtab *t, uint32_t idx)
{
	const char *raw = t->names + t->syms[idx].name;
	struct demangled *d;

	if (raw[0] != '_' || (raw[1] != 'Z' && raw[1] != 'R'))
		return raw;
	d = &sc->dm[(t->gen * 0x9e3779b97f4a7c15ull + idx) % SC_DEMANGLE_SLOTS];
	if (d->name && d->gen == t->gen && d->idx == idx)
		return d->name;
	free(d->name);
	d->name = demangle(raw);
	if (d->name && strlen(d->name) > SC_DEMANGLE_MAX_LEN) {
		char *shrunk;

		memcpy(d->name + SC_DEMANGLE_MAX_LEN - 3, "...", 4);
		shrunk = realloc(d->name, SC_DEMANGLE_MAX_LEN + 1);
		if (shrunk)
			d->name = shrunk;
	}
	d->gen = t->gen;
	d->idx = idx;
	return d->name ? d->name : raw;
}

/* Names a Go function (with its file and line) from the binary's .gopclntab. */
static int go_lookup(const struct gopclntab *go, uint64_t vaddr, struct sym_result *out)
{
	struct gopclntab_func f;
	int err;

	err = gopclntab__lookup(go, vaddr, true, &f);
	if (err)
		return err;
	out->name = f.name;
	out->offset = vaddr - f.entry;
	out->source = "gopclntab";
	out->file = f.file;
	out->line = f.line;
	out->start_line = f.file ? f.start_line : 0;
	return 0;
}

/* See symcache.h. stats.hits counts lookups whose table was already cached. */
int symcache__lookup(struct symcache *sc, struct elf_file *ef, const char *root_prefix,
		     uint64_t vaddr, struct sym_result *out)
{
	struct symtab *t;
	const struct sym *s;
	const char *key;
	char keybuf[512], *heap;
	uint64_t hash;
	uint32_t lo, hi, size;

	sc->stats.lookups++;
	key = make_key(ef, keybuf, sizeof(keybuf), &heap);
	if (!key)
		return -ENOMEM;
	hash = hash__str(key);
	for (t = sc->buckets[hash % SC_BUCKETS]; t; t = t->hnext)
		if (t->hash == hash && strcmp(t->key, key) == 0)
			break;
	if (t && t->dbg_wait && debuginfod__generation(sc->dbgd) != t->dbg_gen) {
		/* a debuginfod fetch ended since t was built: build it again with what came */
		table_remove(sc, t);
		t = NULL;
	}
	if (t) {
		free(heap);
		sc->stats.hits++;
		lru__touch(&sc->lru, &t->lru);
	} else {
		char *owned = heap ? heap : strdup(key);

		if (!owned)
			return -ENOMEM;
		t = build_table(sc, ef, root_prefix, owned, hash); /* takes owned */
		if (!t)
			return -errno; /* out of memory: nothing cached, a later lookup retries */
		t->hnext = sc->buckets[hash % SC_BUCKETS];
		sc->buckets[hash % SC_BUCKETS] = t;
		lru__push_head(&sc->lru, &t->lru);
		sc->stats.tables++;
		sc->stats.bytes += t->bytes;
		evict(sc, t);
	}

	if (t->go && go_lookup(t->go, vaddr, out) == 0)
		return 0;
	if (!t->nsyms || vaddr < t->syms[0].addr)
		return -ENOENT;
	/* last symbol with addr <= vaddr */
	lo = 0;
	hi = t->nsyms;
	while (hi - lo > 1) {
		uint32_t mid = lo + (hi - lo) / 2;

		if (t->syms[mid].addr <= vaddr)
			lo = mid;
		else
			hi = mid;
	}
	s = &t->syms[lo];
	size = s->size_src & SC_SIZE_MAX;
	if (vaddr - s->addr >= size)
		return -ENOENT;
	out->name = display_name(sc, t, lo);
	out->offset = vaddr - s->addr;
	out->source = src_names[s->size_src >> SC_SIZE_BITS];
	out->file = NULL;
	out->line = out->start_line = 0;
	if (t->dwarf_ef) {
		struct elf_identity eid;
		struct dl_file_id id;
		struct src_line sl;

		/* the path is reopened: only the file that was checked and mapped is read */
		if (!elf_file__identity(t->dwarf_ef, &eid))
			return 0;
		id = (struct dl_file_id){eid.dev, eid.ino, eid.size, eid.ctime_ns};
		if (dwarf_lines__lookup(sc->lines, t->gen, elf_file__path(t->dwarf_ef), &id, vaddr,
					&sl) == 0) {
			out->file = sl.file;
			out->line = sl.line;
			out->start_line = sl.start_line;
		}
	}
	return 0;
}
