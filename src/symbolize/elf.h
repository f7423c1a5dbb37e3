/* SPDX-License-Identifier: Apache-2.0 */
/* Read-only, bounds-checked access to ELF64 files (untrusted input): sections, segments, notes. */
#ifndef MLPROF_ELF_H
#define MLPROF_ELF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct elf_file;

/* What a file on disk is: the same (dev, ino, size, ctime) means the same contents. */
struct stat;

struct elf_identity {
	uint64_t dev, ino, size, ctime_ns;
};

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
 * checked: a corrupt file yields NULL with errno = ENOEXEC, never a crash. The open never
 * blocks (O_NONBLOCK) and takes regular files only. The file may be truncated or rewritten
 * while it is mapped: reads past its new end see zeros (a SIGBUS handler puts zero pages
 * there, see elf_file__truncated), never a crash.
 * Returned object has one reference; release with elf_file__put().
 */
struct elf_file *elf_file__open(const char *path);
/* Same over an open descriptor (not consumed: the caller closes it); name used in logs. */
struct elf_file *elf_file__open_fd(int fd, const char *name);
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

/*
 * Translates between file offsets and virtual addresses through PT_LOAD segments. off is
 * inside a mapping that starts at file offset map_off (which segment a shared page belongs
 * to depends on it).
 */
int elf_file__offset_to_vaddr(const struct elf_file *ef, uint64_t map_off, uint64_t off,
			      uint64_t *vaddr);
int elf_file__vaddr_to_offset(const struct elf_file *ef, uint64_t vaddr, uint64_t *off);
/* Reads len bytes at virtual address vaddr from the file image (PT_LOAD backed). */
int elf_file__read_vaddr(const struct elf_file *ef, uint64_t vaddr, void *buf, size_t len);

/* One note of a note area (an SHT_NOTE section's or a PT_NOTE segment's bytes). */
struct elf_note {
	uint32_t type;
	uint32_t namesz, descsz;
	const uint8_t *name, *desc; /* inside the area */
};

/*
 * The note at *off of the note area [p, p + size), its fields aligned to align (8, else 4),
 * into out, and *off past it. False at the end of the area or at a note that does not fit
 * in it (untrusted input: everything is bounds checked; the walk ends there).
 */
bool elf_note__next(const uint8_t *p, uint64_t size, uint64_t align, uint64_t *off,
		    struct elf_note *out);

/*
 * A key naming the file's contents for per-file memos: its build id (else the path it was
 * mapped from and its size) and its identity (elf_file__identity_key), so that a file
 * claiming another's build id never shares its memo. Writes at most len bytes into buf and
 * returns buf.
 */
const char *elf_file__memo_key(const struct elf_file *ef, const char *path, char *buf, size_t len);

/*
 * The identity of the file behind ef ("dev:ino:size:ctime"), or "mem#N" (unique per object)
 * for an in-memory image. Writes at most len bytes into buf and returns buf.
 */
const char *elf_file__identity_key(const struct elf_file *ef, char *buf, size_t len);
/* Fills out with the file's identity; false for in-memory images. */
bool elf_file__identity(const struct elf_file *ef, struct elf_identity *out);
/* The identity of the file st describes (what elf_file__identity compares against). */
struct elf_identity elf_identity__from_stat(const struct stat *st);
/* True when a and b name the same file contents (device, inode, size, change time). */
bool elf_identity__equal(const struct elf_identity *a, const struct elf_identity *b);
/* A number naming this opened object, unique in this process and never reused. */
uint64_t elf_file__serial(const struct elf_file *ef);
/* True once a read found the file shorter than when it was opened (its tail reads as 0). */
bool elf_file__truncated(const struct elf_file *ef);
/* SIGBUS faults absorbed so far in mapped files of this process (all files). */
uint64_t elf__sigbus_count(void);

/*
 * Gives back this process's copies of the mapped file pages covering [off, off + len): they
 * leave the resident set and are read from the page cache again when touched. For tables
 * read once (a symbol table indexed elsewhere). No-op for in-memory images.
 */
void elf_file__drop_pages(const struct elf_file *ef, uint64_t off, uint64_t len);

/* Computes the CRC32 used by .gnu_debuglink over the whole file. */
uint32_t elf_file__crc32(const struct elf_file *ef);

#endif
