// SPDX-License-Identifier: Apache-2.0
/* Symbols of an ELF file by name (elf_lookup.h), read through elf.h's bounds-checked sections. */
#include "symbolize/elf_lookup.h"

#include <errno.h>
#include <linux/elf.h>
#include <stdbool.h>
#include <string.h>

#include "symbolize/elf.h"

#define LOG_MODULE "elf"
#include "util/log.h"

#ifndef STT_GNU_IFUNC
#define STT_GNU_IFUNC 10
#endif

/*
 * Symbol tables scanned entry by entry at most this big: a name in a larger one (PyTorch's
 * .symtab holds 546k entries) is found through .gnu.hash, or not by a scan.
 */
#define SCAN_MAX_BYTES (4u << 20)
#ifndef SHT_GNU_HASH
#define SHT_GNU_HASH 0x6ffffff6
#endif

/* True when symbol entry s of a table with strings str is a defined name (and function). */
static bool sym_matches(const Elf64_Sym *s, const struct elf_section *str, const char *name,
			size_t nlen, bool func)
{
	if (func && ELF64_ST_TYPE(s->st_info) != STT_FUNC &&
	    ELF64_ST_TYPE(s->st_info) != STT_GNU_IFUNC)
		return false;
	if (s->st_shndx == SHN_UNDEF || s->st_name >= str->size || str->size - s->st_name <= nlen)
		return false;
	return memcmp(str->data + s->st_name, name, nlen + 1) == 0;
}

static uint32_t load_u32(const uint8_t *p)
{
	uint32_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

/*
 * Looks name up through the GNU hash table of .dynsym (a few reads, whatever its size).
 * Returns 0, -ENOENT (not there) or -ENOTSUP (no usable .gnu.hash).
 */
static int find_gnu_hash(const struct elf_file *ef, const char *name, bool func, uint64_t *value,
			 uint64_t *size)
{
	struct elf_section gh, sym, str;
	uint32_t nbuckets, symoff, bloom_n, shift, h = 5381, idx;
	const uint8_t *buckets, *chain;
	uint64_t bloom, need, nsyms;
	size_t nlen = strlen(name);

	if (elf_file__section(ef, ".gnu.hash", &gh) || !gh.data || gh.type != SHT_GNU_HASH ||
	    gh.size < 16 || elf_file__section_by_index(ef, gh.link, &sym) || !sym.data ||
	    sym.entsize != sizeof(Elf64_Sym) || elf_file__section_by_index(ef, sym.link, &str) ||
	    !str.data)
		return -ENOTSUP;
	nbuckets = load_u32(gh.data);
	symoff = load_u32(gh.data + 4);
	bloom_n = load_u32(gh.data + 8);
	shift = load_u32(gh.data + 12);
	need = 16 + (uint64_t)bloom_n * 8 + (uint64_t)nbuckets * 4;
	nsyms = sym.size / sizeof(Elf64_Sym);
	if (!nbuckets || !bloom_n || shift >= 32 || need > gh.size || symoff > nsyms)
		return -ENOTSUP;
	for (const char *c = name; *c; c++)
		h = h * 33 + (uint8_t)*c;
	memcpy(&bloom, gh.data + 16 + (uint64_t)((h / 64) % bloom_n) * 8, 8);
	if (!((bloom >> (h % 64)) & (bloom >> ((h >> shift) % 64)) & 1))
		return -ENOENT;
	buckets = gh.data + 16 + (uint64_t)bloom_n * 8;
	chain = buckets + (uint64_t)nbuckets * 4;
	idx = load_u32(buckets + (uint64_t)(h % nbuckets) * 4);
	if (idx < symoff)
		return -ENOENT;
	for (; idx < nsyms; idx++) {
		uint64_t coff = (uint64_t)(idx - symoff) * 4;
		uint32_t h2;
		Elf64_Sym s;

		if (coff + 4 > gh.size - need)
			return -ENOENT;
		h2 = load_u32(chain + coff);
		if ((h | 1) == (h2 | 1)) {
			memcpy(&s, sym.data + (uint64_t)idx * sizeof(s), sizeof(s));
			if (sym_matches(&s, &str, name, nlen, func)) {
				*value = s.st_value;
				if (size)
					*size = s.st_size;
				return 0;
			}
		}
		if (h2 & 1)
			break;
	}
	return -ENOENT;
}

/* Symbol entries a whole-table scan reads between giving its pages back (~1.5 MB). */
#define SCAN_DROP_EVERY 65536

/* Looks name up in one symbol table section (bounds-checked; st_name must stay in strtab). */
static int find_in_symtab(const struct elf_file *ef, const char *secname, const char *name,
			  bool func, uint64_t *value, uint64_t *size)
{
	struct elf_section sym, str;
	size_t nlen = strlen(name);
	int err;

	if (!strcmp(secname, ".dynsym")) {
		err = find_gnu_hash(ef, name, func, value, size);
		if (err != -ENOTSUP)
			return err;
	}
	if (elf_file__section(ef, secname, &sym) || !sym.data || sym.entsize != sizeof(Elf64_Sym) ||
	    elf_file__section_by_index(ef, sym.link, &str) || !str.data)
		return -ENOENT;
	if (sym.size > SCAN_MAX_BYTES) {
		pr_debug("%s: %s too large to scan for %s", elf_file__path(ef), secname, name);
		return -ENOENT;
	}
	for (uint64_t i = 0; i < sym.size / sizeof(Elf64_Sym); i++) {
		Elf64_Sym s;

		memcpy(&s, sym.data + i * sizeof(Elf64_Sym), sizeof(s));
		if (!sym_matches(&s, &str, name, nlen, func))
			continue;
		*value = s.st_value;
		if (size)
			*size = s.st_size;
		return 0;
	}
	return -ENOENT;
}

/* See elf_lookup.h. */
size_t elf_file__scan_functions(const struct elf_file *ef, const char *const *names, size_t n,
				uint64_t *values)
{
	return elf_file__scan_functions_prefix(ef, names, n, values, NULL, NULL, NULL);
}

/* See elf_lookup.h. */
size_t elf_file__scan_functions_prefix(const struct elf_file *ef, const char *const *names,
				       size_t n, uint64_t *values, const char *prefix,
				       elf_func_cb cb, void *ctx)
{
	struct elf_section sym, str;
	size_t found = 0, len[8], plen = prefix && cb ? strlen(prefix) : 0;

	if (n > 8)
		n = 8;
	for (size_t k = 0; k < n; k++)
		len[k] = strlen(names[k]);
	if (elf_file__section(ef, ".symtab", &sym) || !sym.data ||
	    sym.entsize != sizeof(Elf64_Sym) || elf_file__section_by_index(ef, sym.link, &str) ||
	    !str.data)
		return 0;
	for (uint64_t i = 0; i < sym.size / sizeof(Elf64_Sym) && (found < n || plen); i++) {
		Elf64_Sym s;

		/*
		 * Every function's name is read: libtorch_cpu.so's 13 MB of entries and 78 MB of
		 * names would stay in the RSS (a peak of ~80 MB) until the mapping goes. The pages
		 * read so far go back every SCAN_DROP_EVERY entries (the names in bulk: they
		 * follow the entries' order only roughly).
		 */
		if (i && i % SCAN_DROP_EVERY == 0) {
			elf_file__drop_pages(ef, sym.offset, i * sizeof(Elf64_Sym));
			elf_file__drop_pages(ef, str.offset, str.size);
		}
		memcpy(&s, sym.data + i * sizeof(Elf64_Sym), sizeof(s));
		for (size_t k = 0; k < n; k++)
			if (!values[k] && sym_matches(&s, &str, names[k], len[k], true)) {
				values[k] = s.st_value;
				found++;
			}
		/* a prefix match whose name ends inside the table (memchr: NUL-terminated) */
		if (plen && (ELF64_ST_TYPE(s.st_info) == STT_FUNC) && s.st_shndx != SHN_UNDEF &&
		    s.st_name < str.size && str.size - s.st_name > plen &&
		    !memcmp(str.data + s.st_name, prefix, plen) &&
		    memchr(str.data + s.st_name, 0, str.size - s.st_name))
			cb(ctx, (const char *)str.data + s.st_name, s.st_value);
	}
	elf_file__drop_pages(ef, sym.offset, sym.size);
	elf_file__drop_pages(ef, str.offset, str.size);
	return found;
}

/* See elf_lookup.h. */
int elf_file__find_symbol(const struct elf_file *ef, const char *name, uint64_t *value,
			  uint64_t *size)
{
	if (!find_in_symtab(ef, ".dynsym", name, false, value, size))
		return 0;
	return find_in_symtab(ef, ".symtab", name, false, value, size);
}

/* See elf_lookup.h. */
int elf_file__find_function(const struct elf_file *ef, const char *name, uint64_t *value)
{
	if (!find_in_symtab(ef, ".dynsym", name, true, value, NULL))
		return 0;
	return find_in_symtab(ef, ".symtab", name, true, value, NULL);
}
