/* SPDX-License-Identifier: Apache-2.0 */
/* Read-only, bounds-checked access to ELF64 files (untrusted input): sections, segments, notes. */
#ifndef MLPROF_ELF_H
#define MLPROF_ELF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct elf_file;

struct elf_section {
	const char *name;
	uint32_t type; /* SHT_* */
	uint64_t flags;
	uint64_t addr;	 /* sh_addr */
	uint64_t offset; /* sh_offset */
	uint64_t size;
	uint32_t link;
	uint64_t entsize;
	const uint8_t *data; /* NULL for SHT_NOBITS */
};

/*
 * Opens and maps an ELF64 little-endian file. Every header, table and string is bounds
 * checked: a corrupt file yields NULL with errno = ENOEXEC, never a crash.
 * Returned object has one reference; release with elf_file__put().
 */
struct elf_file *elf_file__open(const char *path);
/* Same over an in-memory image (copied); display name used in logs. */
struct elf_file *elf_file__open_mem(const void *data, size_t len, const char *name);
struct elf_file *elf_file__get(struct elf_file *ef);
void elf_file__put(struct elf_file *ef);

const char *elf_file__path(const struct elf_file *ef);
uint16_t elf_file__type(const struct elf_file *ef); /* ET_EXEC, ET_DYN, ... */
/* Entry point (e_entry) as a virtual address of the file; 0 when it has none. */
uint64_t elf_file__entry(const struct elf_file *ef);
/* Lowercase hex GNU build id, or NULL when the file has none. */
const char *elf_file__build_id(const struct elf_file *ef);
/* .gnu_debuglink file name and CRC, or NULL. */
const char *elf_file__debuglink(const struct elf_file *ef, uint32_t *crc);
/* Whole mapped image. */
const uint8_t *elf_file__data(const struct elf_file *ef, size_t *len);

/* Finds a section by name. Returns 0 and fills out, or -ENOENT. */
int elf_file__section(const struct elf_file *ef, const char *name, struct elf_section *out);
int elf_file__section_by_index(const struct elf_file *ef, uint32_t idx, struct elf_section *out);

/* Translates between file offsets and virtual addresses through PT_LOAD segments. */
int elf_file__offset_to_vaddr(const struct elf_file *ef, uint64_t off, uint64_t *vaddr);
int elf_file__vaddr_to_offset(const struct elf_file *ef, uint64_t vaddr, uint64_t *off);
/* Reads len bytes at virtual address vaddr from the file image (PT_LOAD backed). */
int elf_file__read_vaddr(const struct elf_file *ef, uint64_t vaddr, void *buf, size_t len);

/* Computes the CRC32 used by .gnu_debuglink over the whole file. */
uint32_t elf_file__crc32(const struct elf_file *ef);

#endif
