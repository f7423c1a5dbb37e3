// SPDX-License-Identifier: Apache-2.0
/* Bounds-checked ELF64 little-endian parser over an mmap'd file or an in-memory copy. */
#include <errno.h>
#include <fcntl.h>
#include <linux/elf.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "elf.h"

#define LOG_MODULE "elf"
#include "log.h"

/*
 * <elf.h> from libc is shadowed by our own "elf.h" on the include path, so the kernel's
 * uapi header provides the structures; a few GNU constants it lacks are defined here.
 */
#ifndef NT_GNU_BUILD_ID
#define NT_GNU_BUILD_ID 3
#endif
#ifndef SHN_XINDEX
#define SHN_XINDEX 0xffff
#endif
#ifndef SHT_NOTE
#define SHT_NOTE 7
#endif

#define BUILD_ID_MAX 64 /* bytes; sha1 is 20, some toolchains use up to 32 */

struct load_seg {
	uint64_t vaddr, memsz, offset, filesz;
};

struct elf_file {
	int refcnt;
	char *path;
	const uint8_t *data;
	size_t len;
	bool mapped; /* munmap() on release, else free() */
	uint16_t type;
	uint64_t entry; /* e_entry (vaddr), 0 when none */
	struct elf_section *sections;
	uint32_t nsections;
	struct load_seg *loads;
	uint32_t nloads;
	char build_id[BUILD_ID_MAX * 2 + 1];
	const char *debuglink; /* points into data, NUL-terminated inside the section */
	uint32_t debuglink_crc;
};

/* True when [off, off + size) lies inside a buffer of len bytes; overflow safe. */
static bool range_ok(uint64_t off, uint64_t size, uint64_t len)
{
	return off <= len && size <= len - off;
}

static uint64_t align_up(uint64_t v, uint64_t a)
{
	return (v + a - 1) & ~(a - 1);
}

/* Scans a note area for NT_GNU_BUILD_ID; fills ef->build_id and returns true when found. */
static bool parse_notes(struct elf_file *ef, const uint8_t *p, uint64_t size, uint64_t align)
{
	static const char hex[] = "0123456789abcdef";
	uint64_t off = 0;

	align = align == 8 ? 8 : 4;
	while (size - off >= sizeof(Elf64_Nhdr)) {
		Elf64_Nhdr nh;
		uint64_t name_off, desc_off, next;

		memcpy(&nh, p + off, sizeof(nh));
		name_off = off + sizeof(nh);
		/* namesz/descsz are 32-bit: no 64-bit overflow below */
		desc_off = name_off + align_up(nh.n_namesz, align);
		if (desc_off > size || nh.n_descsz > size - desc_off)
			return false;
		next = desc_off + align_up(nh.n_descsz, align);
		if (nh.n_type == NT_GNU_BUILD_ID && nh.n_namesz == 4 &&
		    memcmp(p + name_off, "GNU", 4) == 0 && nh.n_descsz > 0 &&
		    nh.n_descsz <= BUILD_ID_MAX) {
			for (uint32_t i = 0; i < nh.n_descsz; i++) {
				ef->build_id[2 * i] = hex[p[desc_off + i] >> 4];
				ef->build_id[2 * i + 1] = hex[p[desc_off + i] & 15];
			}
			ef->build_id[2 * nh.n_descsz] = '\0';
			return true;
		}
		if (next >= size)
			break;
		off = next;
	}
	return false;
}

static int parse_sections(struct elf_file *ef, const Elf64_Ehdr *eh)
{
	uint64_t shoff = eh->e_shoff, shnum = eh->e_shnum;
	uint32_t shstrndx = eh->e_shstrndx;
	const struct elf_section *strsec = NULL;
	Elf64_Shdr sh0;

	if (shoff == 0)
		return 0; /* no section headers: valid (e.g. some stripped images) */
	if (eh->e_shentsize < sizeof(Elf64_Shdr) || !range_ok(shoff, sizeof(Elf64_Shdr), ef->len))
		return -ENOEXEC;
	memcpy(&sh0, ef->data + shoff, sizeof(sh0));
	/* extended numbering: real counts live in section header 0 */
	if (shnum == 0)
		shnum = sh0.sh_size;
	if (shstrndx == SHN_XINDEX)
		shstrndx = sh0.sh_link;
	if (shnum == 0)
		return 0;
	if (shnum > (ef->len - shoff) / eh->e_shentsize || shnum > UINT32_MAX)
		return -ENOEXEC;

	ef->sections = calloc(shnum, sizeof(*ef->sections));
	if (!ef->sections)
		return -ENOMEM;
	ef->nsections = shnum;
	for (uint64_t i = 0; i < shnum; i++) {
		struct elf_section *s = &ef->sections[i];
		Elf64_Shdr sh;

		memcpy(&sh, ef->data + shoff + i * eh->e_shentsize, sizeof(sh));
		s->name = "";
		s->type = sh.sh_type;
		s->flags = sh.sh_flags;
		s->addr = sh.sh_addr;
		s->offset = sh.sh_offset;
		s->size = sh.sh_size;
		s->link = sh.sh_link;
		s->entsize = sh.sh_entsize;
		if (sh.sh_type == SHT_NOBITS || sh.sh_type == SHT_NULL) {
			s->data = NULL;
			continue;
		}
		if (!range_ok(sh.sh_offset, sh.sh_size, ef->len))
			return -ENOEXEC;
		s->data = ef->data + sh.sh_offset;
	}

	if (shstrndx == SHN_UNDEF)
		return 0;
	if (shstrndx >= shnum)
		return -ENOEXEC;
	strsec = &ef->sections[shstrndx];
	if (!strsec->data || strsec->size == 0 || strsec->data[strsec->size - 1] != '\0')
		return -ENOEXEC;
	for (uint64_t i = 0; i < shnum; i++) {
		Elf64_Shdr sh;

		memcpy(&sh, ef->data + shoff + i * eh->e_shentsize, sizeof(sh));
		if (sh.sh_name >= strsec->size)
			return -ENOEXEC;
		/* the table ends with NUL (checked above), so the name is terminated */
		ef->sections[i].name = (const char *)strsec->data + sh.sh_name;
	}
	return 0;
}

static int parse_segments(struct elf_file *ef, const Elf64_Ehdr *eh)
{
	uint64_t phoff = eh->e_phoff, phnum = eh->e_phnum;

	if (phnum == PN_XNUM && ef->nsections > 0) {
		Elf64_Shdr sh0;

		memcpy(&sh0, ef->data + eh->e_shoff, sizeof(sh0));
		phnum = sh0.sh_info;
	}
	if (phnum == 0 || phoff == 0)
		return 0;
	if (eh->e_phentsize < sizeof(Elf64_Phdr) || phoff > ef->len ||
	    phnum > (ef->len - phoff) / eh->e_phentsize)
		return -ENOEXEC;
	ef->loads = calloc(phnum, sizeof(*ef->loads));
	if (!ef->loads)
		return -ENOMEM;
	for (uint64_t i = 0; i < phnum; i++) {
		Elf64_Phdr ph;

		memcpy(&ph, ef->data + phoff + i * eh->e_phentsize, sizeof(ph));
		if (ph.p_type == PT_LOAD) {
			/*
			 * Separate debug files keep the original program headers although
			 * their contents are gone, so a segment may point past the file:
			 * that is checked at read time, not here.
			 */
			if (ph.p_vaddr + ph.p_memsz < ph.p_vaddr ||
			    ph.p_offset + ph.p_filesz < ph.p_offset || ph.p_filesz > ph.p_memsz)
				continue;
			ef->loads[ef->nloads++] = (struct load_seg){
				.vaddr = ph.p_vaddr,
				.memsz = ph.p_memsz,
				.offset = ph.p_offset,
				.filesz = ph.p_filesz,
			};
		} else if (ph.p_type == PT_NOTE && !ef->build_id[0] &&
			   range_ok(ph.p_offset, ph.p_filesz, ef->len)) {
			parse_notes(ef, ef->data + ph.p_offset, ph.p_filesz, ph.p_align);
		}
	}
	return 0;
}

static void parse_debuglink(struct elf_file *ef)
{
	struct elf_section s;
	const char *name;
	const uint8_t *nul;
	uint64_t crc_off;

	if (elf_file__section(ef, ".gnu_debuglink", &s) || !s.data || s.size < 6)
		return;
	nul = memchr(s.data, '\0', s.size);
	if (!nul || nul == s.data)
		return;
	name = (const char *)s.data;
	crc_off = align_up((uint64_t)(nul - s.data) + 1, 4);
	if (crc_off + 4 > s.size || strchr(name, '/'))
		return; /* a name with '/' could point anywhere: refuse it */
	memcpy(&ef->debuglink_crc, s.data + crc_off, 4);
	ef->debuglink = name;
}

static int parse(struct elf_file *ef)
{
	Elf64_Ehdr eh;
	int err;

	if (ef->len < sizeof(eh))
		return -ENOEXEC;
	memcpy(&eh, ef->data, sizeof(eh));
	if (memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0 || eh.e_ident[EI_CLASS] != ELFCLASS64 ||
	    eh.e_ident[EI_DATA] != ELFDATA2LSB)
		return -ENOEXEC;
	ef->type = eh.e_type;
	ef->entry = eh.e_entry;

	err = parse_sections(ef, &eh);
	if (err)
		return err;
	/* build id: note sections first, then PT_NOTE segments (parse_segments) */
	for (uint32_t i = 0; i < ef->nsections && !ef->build_id[0]; i++) {
		const struct elf_section *s = &ef->sections[i];
		Elf64_Shdr sh;

		if (s->type != SHT_NOTE || !s->data)
			continue;
		/* header table was bounds checked by parse_sections() */
		memcpy(&sh, ef->data + eh.e_shoff + (uint64_t)i * eh.e_shentsize, sizeof(sh));
		parse_notes(ef, s->data, s->size, sh.sh_addralign);
	}
	err = parse_segments(ef, &eh);
	if (err)
		return err;
	parse_debuglink(ef);
	return 0;
}

static void elf_release(struct elf_file *ef)
{
	if (!ef)
		return;
	if (ef->data) {
		if (ef->mapped)
			munmap((void *)ef->data, ef->len);
		else
			free((void *)ef->data);
	}
	free(ef->sections);
	free(ef->loads);
	free(ef->path);
	free(ef);
}

/* Parses ef (data already set); on failure releases it and returns NULL with errno. */
static struct elf_file *finish_open(struct elf_file *ef)
{
	int err;

	err = parse(ef);
	if (err) {
		if (err == -ENOEXEC)
			pr_debug("%s: not a valid ELF64 LE file", ef->path);
		elf_release(ef);
		errno = -err;
		return NULL;
	}
	return ef;
}

/* See elf.h. */
struct elf_file *elf_file__open(const char *path)
{
	struct elf_file *ef = NULL;
	struct stat st;
	void *map;
	int fd, err;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	if (fstat(fd, &st)) {
		err = -errno;
		goto cleanup;
	}
	if (!S_ISREG(st.st_mode) || st.st_size < (off_t)sizeof(Elf64_Ehdr)) {
		err = S_ISDIR(st.st_mode) ? -EISDIR : -ENOEXEC;
		goto cleanup;
	}
	ef = calloc(1, sizeof(*ef));
	if (!ef) {
		err = -ENOMEM;
		goto cleanup;
	}
	ef->refcnt = 1;
	ef->path = strdup(path);
	if (!ef->path) {
		err = -ENOMEM;
		goto cleanup;
	}
	map = mmap(NULL, st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	if (map == MAP_FAILED) {
		err = -errno;
		goto cleanup;
	}
	ef->data = map;
	ef->len = st.st_size;
	ef->mapped = true;
	close(fd);
	return finish_open(ef);

cleanup:
	close(fd);
	elf_release(ef);
	errno = -err;
	return NULL;
}

/* See elf.h. */
struct elf_file *elf_file__open_mem(const void *data, size_t len, const char *name)
{
	struct elf_file *ef;
	void *copy;

	if (!data || len < sizeof(Elf64_Ehdr)) {
		errno = ENOEXEC;
		return NULL;
	}
	ef = calloc(1, sizeof(*ef));
	if (!ef)
		return NULL;
	ef->refcnt = 1;
	ef->path = strdup(name ? name : "(memory)");
	copy = malloc(len);
	if (!ef->path || !copy) {
		free(copy);
		elf_release(ef);
		errno = ENOMEM;
		return NULL;
	}
	memcpy(copy, data, len);
	ef->data = copy;
	ef->len = len;
	return finish_open(ef);
}

/* See elf.h. */
struct elf_file *elf_file__get(struct elf_file *ef)
{
	if (ef)
		__atomic_add_fetch(&ef->refcnt, 1, __ATOMIC_RELAXED);
	return ef;
}

/* See elf.h. */
void elf_file__put(struct elf_file *ef)
{
	if (ef && __atomic_sub_fetch(&ef->refcnt, 1, __ATOMIC_ACQ_REL) == 0)
		elf_release(ef);
}

/* See elf.h. */
const char *elf_file__path(const struct elf_file *ef)
{
	return ef->path;
}

/* See elf.h. */
uint16_t elf_file__type(const struct elf_file *ef)
{
	return ef->type;
}

/* See elf.h. */
uint64_t elf_file__entry(const struct elf_file *ef)
{
	return ef->entry;
}

/* See elf.h. */
const char *elf_file__build_id(const struct elf_file *ef)
{
	return ef->build_id[0] ? ef->build_id : NULL;
}

/* See elf.h. */
const char *elf_file__debuglink(const struct elf_file *ef, uint32_t *crc)
{
	if (ef->debuglink && crc)
		*crc = ef->debuglink_crc;
	return ef->debuglink;
}

/* See elf.h. */
const uint8_t *elf_file__data(const struct elf_file *ef, size_t *len)
{
	if (len)
		*len = ef->len;
	return ef->data;
}

/* See elf.h. */
int elf_file__section(const struct elf_file *ef, const char *name, struct elf_section *out)
{
	for (uint32_t i = 0; i < ef->nsections; i++) {
		if (strcmp(ef->sections[i].name, name) == 0) {
			*out = ef->sections[i];
			return 0;
		}
	}
	return -ENOENT;
}

/* See elf.h. */
int elf_file__section_by_index(const struct elf_file *ef, uint32_t idx, struct elf_section *out)
{
	if (idx >= ef->nsections)
		return -ENOENT;
	*out = ef->sections[idx];
	return 0;
}

/* See elf.h. Returns -ENOENT when no PT_LOAD segment maps the offset. */
int elf_file__offset_to_vaddr(const struct elf_file *ef, uint64_t off, uint64_t *vaddr)
{
	for (uint32_t i = 0; i < ef->nloads; i++) {
		const struct load_seg *l = &ef->loads[i];

		if (off >= l->offset && off - l->offset < l->filesz) {
			*vaddr = l->vaddr + (off - l->offset);
			return 0;
		}
	}
	return -ENOENT;
}

/* See elf.h. Returns -ENOENT when no PT_LOAD segment has file bytes at vaddr. */
int elf_file__vaddr_to_offset(const struct elf_file *ef, uint64_t vaddr, uint64_t *off)
{
	for (uint32_t i = 0; i < ef->nloads; i++) {
		const struct load_seg *l = &ef->loads[i];

		if (vaddr >= l->vaddr && vaddr - l->vaddr < l->filesz) {
			*off = l->offset + (vaddr - l->vaddr);
			return 0;
		}
	}
	return -ENOENT;
}

/* See elf.h. Returns 0, or -EFAULT when the range is not entirely backed by file bytes. */
int elf_file__read_vaddr(const struct elf_file *ef, uint64_t vaddr, void *buf, size_t len)
{
	for (uint32_t i = 0; i < ef->nloads; i++) {
		const struct load_seg *l = &ef->loads[i];
		uint64_t rel, off;

		if (vaddr < l->vaddr || vaddr - l->vaddr >= l->filesz)
			continue;
		rel = vaddr - l->vaddr;
		if (len > l->filesz - rel)
			return -EFAULT;
		off = l->offset + rel;
		if (!range_ok(off, len, ef->len))
			return -EFAULT;
		memcpy(buf, ef->data + off, len);
		return 0;
	}
	return -EFAULT;
}

/* See elf.h. Standard CRC-32 (zlib polynomial), as used by .gnu_debuglink. */
uint32_t elf_file__crc32(const struct elf_file *ef)
{
	uLong crc = crc32(0L, Z_NULL, 0);
	size_t off = 0;

	while (off < ef->len) {
		size_t n = ef->len - off;

		if (n > (1u << 30))
			n = 1u << 30;
		crc = crc32(crc, ef->data + off, (uInt)n);
		off += n;
	}
	return (uint32_t)crc;
}
