/* SPDX-License-Identifier: Apache-2.0 */
/* Source file and line of machine-code addresses from DWARF (elfutils' libdw), memory bounded. */
#ifndef MLPROF_DWARF_LINES_H
#define MLPROF_DWARF_LINES_H

#include <stddef.h>
#include <stdint.h>

struct elf_identity;

#define DL_DEFAULT_MAX_BYTES (8u << 20) /* result cache bound when none is given */

struct dwarf_lines;

struct dwarf_lines_config {
	size_t max_bytes;	  /* bound on cached results (LRU); 0: DL_DEFAULT_MAX_BYTES */
	unsigned max_open;	  /* debug files held open (LRU); 0: 8 */
	uint64_t max_dwarf_bytes; /* files whose .debug_* sections are larger are not read;
				   * 0: 4 MiB */
};

/* Where an address is: the function's file and first line, and the line in that function. */
struct src_line {
	const char *file;    /* the function's source file (absolute when DWARF has comp_dir);
			      * owned by the cache, valid until the next call */
	uint32_t line;	     /* line of the address in that function (an inlined callee's
			      * code counts as its call site's line) */
	uint32_t start_line; /* the function's declaration line, 0 when unknown */
};

struct dwarf_lines_stats {
	uint64_t lookups;	 /* dwarf_lines__lookup calls */
	uint64_t hits;		 /* answered from the result cache */
	uint64_t entries, bytes; /* results cached now and their bytes */
	uint64_t evictions;	 /* results evicted by max_bytes */
	uint64_t files_open;	 /* debug files held open now */
	uint64_t file_errors;	 /* files that could not be read (corrupt, too big, gone) */
	uint64_t files_too_big;	 /* ... of which: DWARF over max_dwarf_bytes once decompressed */
};

/* Returns a new cache (no file opened yet), or NULL with errno set. */
struct dwarf_lines *dwarf_lines__new(const struct dwarf_lines_config *cfg);
void dwarf_lines__free(struct dwarf_lines *dl);

/*
 * Looks up vaddr (an ELF virtual address) in the DWARF of the file at path. The file opened
 * there is used only when it is a regular file with identity *id (when id is given): a path
 * under another process's root may have been replaced (or made a FIFO or a symlink out of
 * that root) since the file was checked and mapped. file_key names that file uniquely for
 * the life of the cache (a key is never reused for another file). Results, found or not, are
 * cached. Corrupt, oversized or replaced files are remembered and give -ENOENT, never a
 * crash. Returns 0 and fills out, -ENOENT when no line information covers vaddr, -ENOMEM.
 */
int dwarf_lines__lookup(struct dwarf_lines *dl, uint64_t file_key, const char *path,
			const struct elf_identity *id, uint64_t vaddr, struct src_line *out);

/* Closes the file of file_key if it is open (its owner is gone); cached results age out. */
void dwarf_lines__forget(struct dwarf_lines *dl, uint64_t file_key);

void dwarf_lines__stats(const struct dwarf_lines *dl, struct dwarf_lines_stats *out);

#endif
