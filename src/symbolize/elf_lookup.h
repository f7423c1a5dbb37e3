/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Finding symbols of an ELF file by name: through .gnu.hash, by a bounded scan of .dynsym or
 * .symtab, or (off the sampling thread) by one pass over a whole .symtab.
 */
#ifndef MLPROF_ELF_LOOKUP_H
#define MLPROF_ELF_LOOKUP_H

#include <stddef.h>
#include <stdint.h>

struct elf_file;

/*
 * Finds a defined symbol by exact name in .dynsym (through .gnu.hash: a few reads whatever
 * its size; a linear scan without one), then .symtab (a linear scan, only of tables up to
 * 4 MiB: never a whole PyTorch-sized table on the sampling thread). For a few look-ups per
 * file, not per sample. Returns 0 and its value (a vaddr for code and data) and size (size
 * may be NULL), or -ENOENT.
 */
int elf_file__find_symbol(const struct elf_file *ef, const char *name, uint64_t *value,
			  uint64_t *size);

/* Same, for a function (STT_FUNC or STT_GNU_IFUNC) only: a data symbol never matches. */
int elf_file__find_function(const struct elf_file *ef, const char *name, uint64_t *value);

/*
 * Finds the functions names[0..n) (n at most 8) in the whole .symtab, whatever its size (local
 * symbols too: hidden functions of a shared library are there only), in one pass that stops when
 * all are found: values[i] is set, or left 0. Reads the whole table and its strings (a
 * PyTorch library: tens of MB): only off the sampling thread. Returns how many were found.
 */
size_t elf_file__scan_functions(const struct elf_file *ef, const char *const *names, size_t n,
				uint64_t *values);

/* Called with a function symbol's NUL-terminated name and value. */
typedef void (*elf_func_cb)(void *ctx, const char *name, uint64_t value);

/*
 * Same pass as elf_file__scan_functions, and also cb(ctx, name, value) for every function
 * whose name starts with prefix (then the pass reads the whole table).
 */
size_t elf_file__scan_functions_prefix(const struct elf_file *ef, const char *const *names,
				       size_t n, uint64_t *values, const char *prefix,
				       elf_func_cb cb, void *ctx);

#endif
