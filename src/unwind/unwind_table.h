/* SPDX-License-Identifier: Apache-2.0 */
/* Unwind tables of one ELF file: .eh_frame_hdr, synthesized from .eh_frame, .debug_frame. */
#ifndef MLPROF_UNWIND_TABLE_H
#define MLPROF_UNWIND_TABLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "symbolize/elf.h"

/*
 * Unwind index of one ELF file: where its binary search table of (initial pc, FDE) int32
 * pairs lives, in libunwind's remote-table layout (vaddrs in the file).
 */
struct unwind_table {
	struct elf_file *ef; /* own reference */
	bool ok;	     /* an .eh_frame_hdr table or a synthesized one is usable */
	uint64_t segbase;    /* vaddr the table entries are relative to */
	uint64_t table;	     /* vaddr of the .eh_frame_hdr table (unused when synth) */
	uint64_t count;	     /* entries */
	int32_t *synth;	     /* synthesized (initial_loc, fde) pairs, or NULL */
	uint64_t lo, hi;     /* vaddr extent of the PT_LOAD segments (lo >= hi: none) */
	uint64_t entry;	     /* e_entry, 0 when none */
	struct elf_section hdr_sec, frame_sec; /* fast paths for reads (data may be NULL) */
	/* .debug_frame translated on first need: 0 not tried, 1 ready, -1 none/unusable */
	int dbg_state;
	uint8_t *dbg_image; /* .eh_frame form of .debug_frame, FDE addresses absolute */
	size_t dbg_image_len;
	int32_t *dbg_tab; /* sorted (pc - lo, FDE offset in dbg_image) pairs */
	uint64_t dbg_count;
};

/*
 * Reads ef's program headers and .eh_frame_hdr (or synthesizes a sorted table from
 * .eh_frame when the header is missing) and takes a reference on ef. A file without
 * usable tables still gets a table (ok false). NULL with errno ENOMEM.
 */
struct unwind_table *unwind_table__new(struct elf_file *ef);
/* Drops the reference on the file and frees the tables (NULL is a no-op). */
void unwind_table__free(struct unwind_table *t);

/*
 * Translates t's .debug_frame section (once: later calls return the first result) when it
 * and its translation fit in budget bytes. Returns 0 and adds the bytes now held to *bytes,
 * -E2BIG when over the budget or the per-file bound, -ENOENT when there is no usable
 * .debug_frame (or a previous try failed).
 */
int unwind_table__load_debug_frame(struct unwind_table *t, uint64_t budget, uint64_t *bytes);

/*
 * Reads the 8-byte word at link-time vaddr from the file's image (bytes past the
 * file-backed end of a segment read as 0). False when vaddr is not in the file.
 */
bool unwind_table__read(const struct unwind_table *t, uint64_t vaddr, uint64_t *val);

/*
 * Translates a .debug_frame section (untrusted bytes, df_len <= 64 MiB) describing code at
 * link-time vaddrs [lo, hi) (hi - lo < 2 GiB) into an .eh_frame-style image whose FDEs hold
 * absolute 8-byte addresses, and a sorted index of (pc - lo, FDE offset in image) int32
 * pairs. Used by unwind_table__load_debug_frame; exposed for tests. Returns the number of
 * index pairs (> 0), -ENOENT when no FDE is usable, -E2BIG past the size bound, -EINVAL or
 * -ENOMEM. On success the caller owns *image (*image_len bytes) and *index and frees them
 * with free().
 */
int unwind__debug_frame_to_eh(const uint8_t *df, size_t df_len, uint64_t lo, uint64_t hi,
			      uint8_t **image, size_t *image_len, int32_t **index);

#endif
