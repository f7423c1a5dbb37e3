/* SPDX-License-Identifier: Apache-2.0 */
/* The function symbol index of one ELF file: 12 bytes a symbol, names left in the file. */
#ifndef MLPROF_SYMINDEX_H
#define MLPROF_SYMINDEX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct debuginfod;
struct elf_file;
struct gopclntab;
struct symindex;

struct symindex_config {
	const char *debug_dirs;	 /* ':'-separated roots for separate debug files */
	struct debuginfod *dbgd; /* debug files by build id from servers, or NULL */
	bool want_lines;	 /* keep a reference on the file that has DWARF lines */
	const bool *cancel;	 /* polled while building: true abandons the build, or NULL */
};

/* What a symbol lookup found: the raw name stays inside the index's images. */
struct symindex_hit {
	const char *raw;    /* name as in the string table (may carry "@VERSION"), bounded by
			     * raw_max bytes; valid while the index lives */
	size_t raw_max;	    /* bytes readable at raw (the rest of its string table) */
	uint32_t idx;	    /* symbol number in the index: (index, idx) names a function */
	uint64_t offset;    /* vaddr - symbol start */
	uint64_t size;	    /* the symbol's size: it covers [vaddr - offset, + size) */
	const char *source; /* "symtab", "dynsym", "minidebuginfo", "debuginfo" (static) */
};

/*
 * Builds the index of ef's function symbols: .symtab, else .dynsym plus a separate debug
 * file (by build id or debuglink, from the configured directories only: root, e.g.
 * "/proc/123/root", maps the object's path to a directory inside that root and nothing is
 * read from inside it) or debuginfod, else MiniDebugInfo; and Go's .gopclntab. Names are
 * not copied: each symbol keeps its address, size and an offset into the string table of
 * the image it came from, and the index holds a reference on those images. Reads only
 * ef and the debug files; safe on any thread. A file with unreadable symbols gets an empty
 * index (logged once). Returns the index, or NULL with errno ENOMEM or ECANCELED.
 */
struct symindex *symindex__build(const struct symindex_config *cfg, struct elf_file *ef,
				 const char *root);
void symindex__free(struct symindex *ix);

/* Heap bytes the index holds (its arrays; not the mapped images it points into). */
size_t symindex__bytes(const struct symindex *ix);
/* Function symbols indexed. */
uint32_t symindex__count(const struct symindex *ix);
/* Go's function table, or NULL. Owned by the index. */
const struct gopclntab *symindex__go(const struct symindex *ix);
/* The file holding DWARF line tables (ef or its debug file; borrowed), or NULL. */
struct elf_file *symindex__lines_file(const struct symindex *ix);
/*
 * True when the index was built while debuginfod was fetching its debug file; *gen is the
 * debuginfod generation it was built at (rebuild once it changed).
 */
bool symindex__debug_pending(const struct symindex *ix, uint64_t *gen);

/* Finds the function containing vaddr. Returns 0 and fills hit, or -ENOENT. */
int symindex__find(const struct symindex *ix, uint64_t vaddr, struct symindex_hit *hit);

/*
 * Copies a raw symbol name into buf (len bytes), without its "@VERSION" suffix and cut
 * with "..." when longer. Returns buf.
 */
char *symindex__plain_name(const struct symindex_hit *hit, char *buf, size_t len);

#endif
