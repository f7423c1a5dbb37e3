/* SPDX-License-Identifier: Apache-2.0 */
/* Symbol tables per ELF object, keyed by build id, shared by all processes, memory bounded. */
#ifndef MLPROF_SYMCACHE_H
#define MLPROF_SYMCACHE_H

#include <stddef.h>
#include <stdint.h>

struct elf_file;
struct symcache;

struct symcache_config {
	size_t max_bytes;	/* bound on symbol table memory; LRU tables evicted past it */
	const char *debug_dirs; /* ':'-separated roots for separate debug files
				 * (default "/usr/lib/debug") */
};

struct sym_result {
	const char *name;   /* demangled name; owned by the cache, valid until the next call */
	uint64_t offset;    /* vaddr - symbol start */
	const char *source; /* "symtab", "dynsym", "minidebuginfo", "debuginfo" (static string) */
};

struct symcache_stats {
	uint64_t tables;    /* symbol tables held */
	uint64_t bytes;	    /* bytes held by them */
	uint64_t evictions; /* tables evicted by the memory bound */
	uint64_t lookups, hits;
};

/* Returns a new cache or NULL with errno set. */
struct symcache *symcache__new(const struct symcache_config *cfg);
void symcache__free(struct symcache *sc);

/*
 * Names the function containing vaddr (an ELF virtual address of ef, i.e. the runtime
 * address minus the load bias). Uses .symtab, else .dynsym, plus MiniDebugInfo
 * (.gnu_debugdata) and separate debug files found by build id or debuglink (looked up
 * under root_prefix, e.g. "/proc/123/root", and then on the host). Returns 0 and fills
 * out, or -ENOENT when no symbol covers vaddr.
 */
int symcache__lookup(struct symcache *sc, struct elf_file *ef, const char *root_prefix,
		     uint64_t vaddr, struct sym_result *out);
void symcache__stats(const struct symcache *sc, struct symcache_stats *out);

/* Demangles C++ (Itanium) and Rust legacy names. Returns malloc'd string or NULL. */
char *demangle(const char *mangled);

/* Kernel symbols from /proc/kallsyms. */
struct ksyms;
/* Loads kallsyms (needs root for real addresses). NULL with errno on failure. */
struct ksyms *ksyms__load(const char *path);
void ksyms__free(struct ksyms *ks);
/* Returns the name of the kernel function containing addr, or NULL. */
const char *ksyms__lookup(const struct ksyms *ks, uint64_t addr, uint64_t *offset);

#endif
