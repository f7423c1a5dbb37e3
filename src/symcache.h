/* SPDX-License-Identifier: Apache-2.0 */
/* Symbol tables per ELF object, keyed by build id and file identity, shared, memory bounded. */
#ifndef MLPROF_SYMCACHE_H
#define MLPROF_SYMCACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "demangle.h" /* demangle() was declared here; its users include this header */

struct elf_file;
struct symcache;

struct symcache_config {
	size_t max_bytes;	  /* bound on symbol table memory; LRU tables evicted past it */
	const char *debug_dirs;	  /* ':'-separated roots for separate debug files
				   * (default "/usr/lib/debug") */
	bool no_source_lines;	  /* no DWARF source lines (libdw holds a file's decompressed
				   * .debug_* sections while it is open: tens of MB for
				   * libpython's debug file) */
	uint64_t max_dwarf_bytes; /* files with more .debug_* bytes give no lines (0: 4 MiB) */
};

struct sym_result {
	const char *name;    /* demangled name; owned by the cache, valid until the next call */
	uint64_t offset;     /* vaddr - symbol start */
	const char *source;  /* "symtab", "dynsym", "minidebuginfo", "debuginfo", "gopclntab"
			      * (static string) */
	const char *file;    /* source file of the function (DWARF), NULL when unknown; owned by
			      * the cache, valid until the next call */
	uint32_t line;	     /* source line of vaddr in that function, 0 when unknown */
	uint32_t start_line; /* first line of the function, 0 when unknown */
};

struct symcache_stats {
	uint64_t tables;    /* symbol tables held */
	uint64_t bytes;	    /* bytes held by them */
	uint64_t evictions; /* tables evicted by the memory bound */
	uint64_t lookups, hits;
	/* source lines (DWARF): result cache lookups, hits, bytes, evictions */
	uint64_t line_lookups, line_hits, line_bytes, line_evictions;
};

/* Returns a new cache or NULL with errno set. */
struct symcache *symcache__new(const struct symcache_config *cfg);
void symcache__free(struct symcache *sc);

/*
 * Names the function containing vaddr (an ELF virtual address of ef, i.e. the runtime
 * address minus the load bias). Uses .symtab, else .dynsym, plus MiniDebugInfo
 * (.gnu_debugdata) and separate debug files found by build id or debuglink in the host's
 * debug directories only (root_prefix, e.g. "/proc/123/root", only maps the object's path
 * to its directory inside that root; nothing is read from inside it). Tables are keyed by
 * build id and the file's identity: a file never gets the names of another file that
 * claims the same build id. Source file and line
 * come from the DWARF of the file or of its debug file, where there is one. Go binaries
 * (stripped or not) are named, with file and line, from .gopclntab first. Returns 0 and
 * fills out, or -ENOENT when no symbol covers vaddr.
 */
int symcache__lookup(struct symcache *sc, struct elf_file *ef, const char *root_prefix,
		     uint64_t vaddr, struct sym_result *out);
void symcache__stats(const struct symcache *sc, struct symcache_stats *out);

/* Kernel symbols from /proc/kallsyms. */
struct ksyms;
/* Loads kallsyms (needs root for real addresses). NULL with errno on failure. */
struct ksyms *ksyms__load(const char *path);
void ksyms__free(struct ksyms *ks);
/* Returns the name of the kernel function containing addr, or NULL. */
const char *ksyms__lookup(const struct ksyms *ks, uint64_t addr, uint64_t *offset);

#endif
