/* SPDX-License-Identifier: Apache-2.0 */
/* Go's pc/line table (.gopclntab, Go 1.16+): function names, file:line, stack-pointer deltas. */
#ifndef MLPROF_GOPCLNTAB_H
#define MLPROF_GOPCLNTAB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct elf_file;
struct gopclntab;

/* One Go function, as gopclntab__lookup and gopclntab__func describe it. */
struct gopclntab_func {
	const char *name;    /* e.g. "main.main"; points into the table, valid while it is open */
	uint64_t entry;	     /* first instruction (ELF virtual address) */
	uint64_t end;	     /* past the last one */
	const char *file;    /* source file of the looked-up pc, or NULL (not asked for, unknown) */
	uint32_t line;	     /* its line, 0 when unknown */
	uint32_t start_line; /* line of the func keyword (Go 1.20+ tables), 0 when unknown */
};

/*
 * Opens the pc/line table of a Go executable: the .gopclntab section (also the one PIE
 * builds name .data.rel.ro.gopclntab), with the text start taken from the runtime's module
 * data (cgo builds put C code before Go's), else the runtime.text symbol, else .text.
 * Takes a reference on ef (released by gopclntab__free). NULL with errno ENOENT (not a Go
 * binary), ENOTSUP (table older than Go 1.16 or not little-endian 64-bit), ENOEXEC
 * (corrupt) or ENOMEM.
 */
struct gopclntab *gopclntab__open(struct elf_file *ef);

/*
 * Same over the bytes of a table (untrusted; must stay valid while the result is used)
 * whose functions start at text_start (runtime.text). Every offset read from it is checked
 * against len, so a truncated or corrupt table yields errors, never a read outside it.
 */
struct gopclntab *gopclntab__open_mem(const uint8_t *data, size_t len, uint64_t text_start);
void gopclntab__free(struct gopclntab *t);

/* Number of functions in the table. */
uint32_t gopclntab__count(const struct gopclntab *t);

/*
 * Describes function idx (< gopclntab__count) without file/line. Returns 0, or -EINVAL
 * when its entry in the table is corrupt.
 */
int gopclntab__func(const struct gopclntab *t, uint32_t idx, struct gopclntab_func *out);

/*
 * Names the function containing vaddr and, when lines is true, the file and line of vaddr
 * (both left unknown when the function's line tables are corrupt). Returns 0, -ENOENT
 * when no function covers vaddr, -EINVAL when the table entry is corrupt.
 */
int gopclntab__lookup(const struct gopclntab *t, uint64_t vaddr, bool lines,
		      struct gopclntab_func *out);

/*
 * The stack-pointer delta at vaddr: how many bytes the function has pushed or allocated
 * below its return address there, so that the return address is at sp + *delta. Returns
 * 0, -ENOENT (no function covers vaddr) or -EINVAL (no or corrupt pcsp table).
 */
int gopclntab__sp_delta(const struct gopclntab *t, uint64_t vaddr, uint32_t *delta);

#endif
