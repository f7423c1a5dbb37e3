/* SPDX-License-Identifier: Apache-2.0 */
/* Symbol indexes per ELF file, keyed by build id and file identity, shared, memory bounded. */
#ifndef MLPROF_SYMCACHE_H
#define MLPROF_SYMCACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "symbolize/demangle.h" /* demangle() was declared here; its users include this header */

struct elf_file;
struct symcache;

/* Default bound on demangled names kept (symcache_config.demangle_bytes 0). */
#define SYMCACHE_DEMANGLE_BYTES (4u << 20)

struct symcache_config {
	size_t max_bytes;	  /* bound on symbol index memory; LRU indexes evicted past it */
	size_t demangle_bytes;	  /* bound on demangled names kept (0: SYMCACHE_DEMANGLE_BYTES) */
	bool background;	  /* build indexes on a thread of their own: a lookup whose index
				   * is not built yet returns -EAGAIN instead of waiting */
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
	uint64_t tables;	     /* symbol indexes held */
	uint64_t bytes;		     /* bytes held by them */
	uint64_t evictions;	     /* indexes evicted by the memory bound */
	uint64_t builds;	     /* indexes built (one per file, plus rebuilds) */
	uint64_t rebuilds;	     /* ... of a file whose index had been evicted: the bound is too
				      * small for the working set */
	uint64_t build_cpu_ns;	     /* CPU time spent building them */
	uint64_t build_max_cpu_ns;   /* the most one build took */
	uint64_t build_max_syms;     /* symbols in the largest index built */
	uint64_t building;	     /* builds queued or in progress now */
	uint64_t waits;		     /* lookups answered -EAGAIN (index not built yet) */
	uint64_t queue_full;	     /* lookups answered -EBUSY (too many builds queued) */
	uint64_t demangled;	     /* names demangled */
	uint64_t demangle_bytes;     /* bytes held by demangled names */
	uint64_t demangle_evictions; /* demangled names evicted by their bound */
	uint64_t lookups, hits;
	uint64_t recent_hits; /* ... named from a function named lately (no index search) */
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
 * fills out, or -ENOENT when no symbol covers vaddr. In background mode, -EAGAIN while the
 * file's index is being built (it was queued by this or an earlier call; see
 * symcache__ready_gen) and -EBUSY when too many builds are queued already.
 */
int symcache__lookup(struct symcache *sc, struct elf_file *ef, const char *root_prefix,
		     uint64_t vaddr, struct sym_result *out);
void symcache__stats(const struct symcache *sc, struct symcache_stats *out);

/*
 * Background mode: takes in the indexes built since the last call and returns a number that
 * grows each time one is ready (retry lookups that returned -EAGAIN when it changed).
 */
uint64_t symcache__ready_gen(struct symcache *sc);

/*
 * Background mode: waits up to timeout_ms for every queued build to end and takes them in.
 * Returns the builds still queued or in progress (0: all done).
 */
unsigned symcache__wait(struct symcache *sc, int timeout_ms);

/*
 * A number that changes whenever an index is dropped (evicted, or rebuilt because a debug
 * file arrived from debuginfod): results cached outside the cache must be keyed on it.
 */
uint64_t symcache__epoch(const struct symcache *sc);

/* Kernel symbols from /proc/kallsyms. */
struct ksyms;
/* Loads kallsyms (needs root for real addresses). NULL with errno on failure. */
struct ksyms *ksyms__load(const char *path);
void ksyms__free(struct ksyms *ks);
/* Returns the name of the kernel function containing addr, or NULL. */
const char *ksyms__lookup(const struct ksyms *ks, uint64_t addr, uint64_t *offset);

#endif
