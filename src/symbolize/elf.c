// SPDX-License-Identifier: Apache-2.0
/* Bounds-checked ELF64 little-endian parser over an mmap'd file or an in-memory copy. */
#include <errno.h>
#include <fcntl.h>
#include <linux/elf.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "symbolize/elf.h"

#define LOG_MODULE "elf"
#include "util/log.h"

#define ELF_PAGE_SIZE 4096 /* x86-64: the granule the kernel maps segments at */

/*
 * The kernel's uapi <linux/elf.h> provides the structures (libc's <elf.h> defines the same
 * types and cannot be included beside it); a few GNU constants it lacks are defined here.
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

#define BUILD_ID_MAX  64	 /* bytes; sha1 is 20, some toolchains use up to 32 */
#define DEBUGLINK_MAX 256	 /* longest .gnu_debuglink file name kept */
#define SHSTRTAB_MAX  (1u << 20) /* section name table bound (real ones: < 1 KiB) */
/*
 * Bound on files mapped at once (each holds one slot of the SIGBUS registry below): well
 * above proc_cache's max_elf_files default (1024) plus the debug files a symbol table
 * build opens.
 */
#define MAP_SLOTS 8192

struct load_seg {
	uint64_t vaddr, memsz, offset, filesz;
};

struct elf_file {
	int refcnt;
	char *path;
	const uint8_t *data;
	size_t len;
	bool mapped;		/* munmap() on release, else free() */
	size_t map_len;		/* bytes reserved by the mapping, guard page included */
	int slot;		/* index in the SIGBUS registry while mapped */
	uint64_t serial;	/* unique per opened object, never reused */
	struct elf_identity id; /* of the file (all zero for in-memory images) */
	uint16_t type;
	uint64_t entry; /* e_entry (vaddr), 0 when none */
	struct elf_section *sections;
	uint32_t nsections;
	struct load_seg *loads;
	uint32_t nloads;
	char build_id[BUILD_ID_MAX * 2 + 1];
	char *debuglink; /* own copy, checked once (the file may change under the mapping) */
	char *shstrtab;	 /* own copy of the section names */
	uint32_t debuglink_crc;
};

/*
 * Files of other processes are untrusted and may shrink while they are mapped here: a read
 * past the new end of file raises SIGBUS. Rather than guard every read, each mapping is
 * registered below and a SIGBUS inside one replaces the pages from the faulting one to the
 * end of that mapping with zero pages, so the read (and every later one) sees zeros and
 * the file is marked truncated. Parsers already bound every read by sizes taken at open
 * time, and a guard page of zeros after each mapping stops string scans whose terminator
 * was rewritten away. No copy is made: memory costs nothing beyond the page cache.
 * Registration takes a mutex; the handler only reads the slots (async-signal-safe).
 */
struct map_slot {
	uintptr_t start, end; /* [start, end) of the file pages; start 0: free */
	int truncated;	      /* a SIGBUS was absorbed in this mapping */
};

static struct map_slot map_slots[MAP_SLOTS];
static pthread_mutex_t map_slots_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t sigbus_once = PTHREAD_ONCE_INIT;
static struct sigaction sigbus_prev;
static size_t page_size;
static uint64_t sigbus_count; /* SIGBUS absorbed, all files */
static uint64_t next_serial;

static void sigbus_handler(int sig, siginfo_t *si, void *uctx)
{
	uintptr_t a = (uintptr_t)si->si_addr;
	int saved = errno;

	for (int i = 0; i < MAP_SLOTS; i++) {
		uintptr_t s1 = __atomic_load_n(&map_slots[i].start, __ATOMIC_ACQUIRE);
		uintptr_t e = __atomic_load_n(&map_slots[i].end, __ATOMIC_ACQUIRE);
		uintptr_t s2 = __atomic_load_n(&map_slots[i].start, __ATOMIC_ACQUIRE);
		uintptr_t page = a & ~(uintptr_t)(page_size - 1);

		if (!s1 || s1 != s2 || a < s1 || a >= e)
			continue;
		/* past the end of file: so is every later page of this mapping */
		if (mmap((void *)page, e - page, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED,
			 -1, 0) == MAP_FAILED)
			break;
		__atomic_store_n(&map_slots[i].truncated, 1, __ATOMIC_RELAXED);
		__atomic_add_fetch(&sigbus_count, 1, __ATOMIC_RELAXED);
		errno = saved;
		return;
	}
	/* not ours (or no memory for zero pages): the previous disposition decides */
	sigaction(SIGBUS, &sigbus_prev, NULL);
	errno = saved;
	(void)sig;
	(void)uctx;
}

static void sigbus_install(void)
{
	struct sigaction sa = {0};

	page_size = (size_t)sysconf(_SC_PAGESIZE);
	sa.sa_sigaction = sigbus_handler;
	sa.sa_flags = SA_SIGINFO | SA_RESTART | SA_NODEFER;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGBUS, &sa, &sigbus_prev);
}

/* Takes a registry slot for [start, end); -ENFILE when every slot is taken. */
static int slot_take(uintptr_t start, uintptr_t end)
{
	int idx = -ENFILE;

	pthread_mutex_lock(&map_slots_lock);
	for (int i = 0; i < MAP_SLOTS; i++) {
		if (map_slots[i].start)
			continue;
		map_slots[i].truncated = 0;
		__atomic_store_n(&map_slots[i].end, end, __ATOMIC_RELEASE);
		__atomic_store_n(&map_slots[i].start, start, __ATOMIC_RELEASE);
		idx = i;
		break;
	}
	pthread_mutex_unlock(&map_slots_lock);
	return idx;
}

static void slot_drop(int idx)
{
	pthread_mutex_lock(&map_slots_lock);
	__atomic_store_n(&map_slots[idx].start, 0, __ATOMIC_RELEASE);
	__atomic_store_n(&map_slots[idx].end, 0, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&map_slots_lock);
}

/*
 * Maps len bytes of fd read-only, followed by one page of zeros, and registers the file
 * pages with the SIGBUS handler. Fills ef's mapping fields; returns 0 or -errno.
 */
static int map_file(struct elf_file *ef, int fd, size_t len)
{
	size_t file_pages, total;
	void *base;
	int slot;

	pthread_once(&sigbus_once, sigbus_install);
	file_pages = (len + page_size - 1) & ~(page_size - 1);
	if (file_pages < len || file_pages + page_size < file_pages)
		return -EFBIG;
	total = file_pages + page_size;
	base = mmap(NULL, total, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (base == MAP_FAILED)
		return -errno;
	if (mmap(base, len, PROT_READ, MAP_PRIVATE | MAP_FIXED, fd, 0) == MAP_FAILED) {
		int err = -errno;

		munmap(base, total);
		return err;
	}
	slot = slot_take((uintptr_t)base, (uintptr_t)base + file_pages);
	if (slot < 0) {
		pr_warn("more than %d files mapped: %s not opened", MAP_SLOTS, ef->path);
		munmap(base, total);
		return slot;
	}
	ef->data = base;
	ef->len = len;
	ef->map_len = total;
	ef->slot = slot;
	ef->mapped = true;
	return 0;
}

/* True when [off, off + size) lies inside a buffer of len bytes; overflow safe. */
static bool range_ok(uint64_t off, uint64_t size, uint64_t len)
{
	return off <= len && size <= len - off;
}

static uint64_t align_up(uint64_t v, uint64_t a)
{
	return (v + a - 1) & ~(a - 1);
}

/* See elf.h. */
bool elf_note__next(const uint8_t *p, uint64_t size, uint64_t align, uint64_t *off,
		    struct elf_note *out)
{
	Elf64_Nhdr nh;
	uint64_t desc_off;

	align = align == 8 ? 8 : 4;
	if (*off > size || size - *off < sizeof(nh))
		return false;
	memcpy(&nh, p + *off, sizeof(nh));
	/* namesz/descsz are 32-bit: no 64-bit overflow below */
	desc_off = *off + sizeof(nh) + align_up(nh.n_namesz, align);
	if (desc_off > size || nh.n_descsz > size - desc_off)
		return false;
	out->type = nh.n_type;
	out->namesz = nh.n_namesz;
	out->descsz = nh.n_descsz;
	out->name = p + *off + sizeof(nh);
	out->desc = p + desc_off;
	*off = desc_off + align_up(nh.n_descsz, align);
	return true;
}

/* Scans a note area for NT_GNU_BUILD_ID; fills ef->build_id and returns true when found. */
static bool parse_notes(struct elf_file *ef, const uint8_t *p, uint64_t size, uint64_t align)
{
	static const char hex[] = "0123456789abcdef";
	struct elf_note n;
	uint64_t off = 0;

	while (elf_note__next(p, size, align, &off, &n)) {
		if (n.type == NT_GNU_BUILD_ID && n.namesz == 4 && memcmp(n.name, "GNU", 4) == 0 &&
		    n.descsz > 0 && n.descsz <= BUILD_ID_MAX) {
			for (uint32_t i = 0; i < n.descsz; i++) {
				ef->build_id[2 * i] = hex[n.desc[i] >> 4];
				ef->build_id[2 * i + 1] = hex[n.desc[i] & 15];
			}
			ef->build_id[2 * n.descsz] = '\0';
			return true;
		}
	}
	return false;
}

/*
 * Most sections and program headers a file may have. Linked executables and libraries have
 * tens (only relocatable objects built with -ffunction-sections reach the 65,280 that need
 * extended numbering, and those are never mapped to run); the kernel loads at most 64 KiB
 * of program headers.
 */
#define ELF_MAX_SECTIONS (1u << 16)
#define ELF_MAX_SEGMENTS ((64u << 10) / sizeof(Elf64_Phdr))

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
	/*
	 * Bounded by the file's size and by ELF_MAX_SECTIONS: with extended numbering the count
	 * is section 0's sh_size, and a sparse file is as large as it claims to be.
	 */
	if (shnum > (ef->len - shoff) / eh->e_shentsize || shnum > ELF_MAX_SECTIONS)
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
	if (!strsec->data || strsec->size == 0 || strsec->size > SHSTRTAB_MAX)
		return -ENOEXEC;
	/*
	 * Section names are looked up for as long as the file is open: keep them in a copy,
	 * so that a file cut short or rewritten later still finds its sections by name.
	 */
	ef->shstrtab = malloc(strsec->size);
	if (!ef->shstrtab)
		return -ENOMEM;
	memcpy(ef->shstrtab, strsec->data, strsec->size);
	if (ef->shstrtab[strsec->size - 1] != '\0')
		return -ENOEXEC;
	for (uint64_t i = 0; i < shnum; i++) {
		Elf64_Shdr sh;

		memcpy(&sh, ef->data + shoff + i * eh->e_shentsize, sizeof(sh));
		if (sh.sh_name >= strsec->size)
			return -ENOEXEC;
		/* the table ends with NUL (checked above), so the name is terminated */
		ef->sections[i].name = ef->shstrtab + sh.sh_name;
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
	    phnum > (ef->len - phoff) / eh->e_phentsize || phnum > ELF_MAX_SEGMENTS)
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
	if (crc_off + 4 > s.size || (size_t)(nul - s.data) >= DEBUGLINK_MAX)
		return;
	/* copy first, then check the copy: the mapped bytes may change under us */
	ef->debuglink = strndup(name, (size_t)(nul - s.data));
	if (!ef->debuglink)
		return;
	if (!ef->debuglink[0] || strchr(ef->debuglink, '/') || strcmp(ef->debuglink, "..") == 0) {
		/* a name with '/' could point anywhere: refuse it */
		free(ef->debuglink);
		ef->debuglink = NULL;
		return;
	}
	memcpy(&ef->debuglink_crc, s.data + crc_off, 4);
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
		if (ef->mapped) {
			/* unregister first: the range may be reused by the next mmap */
			slot_drop(ef->slot);
			munmap((void *)ef->data, ef->map_len);
		} else {
			free((void *)ef->data);
		}
	}
	free(ef->debuglink);
	free(ef->shstrtab);
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
struct elf_file *elf_file__open_fd(int fd, const char *name)
{
	struct elf_file *ef = NULL;
	struct stat st;
	int err;

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
	ef->serial = __atomic_add_fetch(&next_serial, 1, __ATOMIC_RELAXED);
	ef->id = elf_identity__from_stat(&st);
	ef->path = strdup(name);
	if (!ef->path) {
		err = -ENOMEM;
		goto cleanup;
	}
	err = map_file(ef, fd, (size_t)st.st_size);
	if (err)
		goto cleanup;
	return finish_open(ef);

cleanup:
	elf_release(ef);
	errno = -err;
	return NULL;
}

/* See elf.h. */
struct elf_file *elf_file__open(const char *path)
{
	struct elf_file *ef;
	int fd, err;

	/* never wait: a FIFO or a device in place of a file must not block the open */
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	if (fd < 0)
		return NULL;
	ef = elf_file__open_fd(fd, path);
	err = errno;
	close(fd);
	errno = err;
	return ef;
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
	ef->serial = __atomic_add_fetch(&next_serial, 1, __ATOMIC_RELAXED);
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
int elf_file__offset_to_vaddr(const struct elf_file *ef, uint64_t map_off, uint64_t off,
			      uint64_t *vaddr)
{
	const struct load_seg *best = NULL;

	/*
	 * The kernel maps each PT_LOAD from its page-aligned file offset, so the page that holds
	 * the end of one segment may hold the start of the next: with lld's layout (read-only
	 * segment first, then text at an offset that is not page-aligned) a mapping of the text
	 * starts at a file offset that is also inside the read-only segment. The segment mapped
	 * there is the one whose aligned start is the mapping's own offset.
	 */
	for (uint32_t i = 0; i < ef->nloads; i++) {
		const struct load_seg *l = &ef->loads[i];
		uint64_t start = l->offset & ~(uint64_t)(ELF_PAGE_SIZE - 1);

		if (off < start || off >= l->offset + l->filesz)
			continue;
		if (start == map_off) {
			best = l;
			break;
		}
		if (!best)
			best = l;
	}
	if (!best)
		return -ENOENT;
	*vaddr = best->vaddr + (off - best->offset); /* wraps to below vaddr for the head page */
	return 0;
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

/* See elf.h. */
void elf_file__drop_pages(const struct elf_file *ef, uint64_t off, uint64_t len)
{
	uintptr_t start, end;

	if (!ef->mapped || !len || !range_ok(off, len, ef->len))
		return;
	/* whole pages inside the range only: a neighbour's page may still be in use */
	start = ((uintptr_t)ef->data + off + page_size - 1) & ~(uintptr_t)(page_size - 1);
	end = ((uintptr_t)ef->data + off + len) & ~(uintptr_t)(page_size - 1);
	if (end > start)
		madvise((void *)start, end - start, MADV_DONTNEED);
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

/* See elf.h. */
const char *elf_file__memo_key(const struct elf_file *ef, const char *path, char *buf, size_t len)
{
	char id[96];

	elf_file__identity_key(ef, id, sizeof(id));
	/* the identity first: a long build id or path may be cut, never the identity */
	if (ef->build_id[0])
		snprintf(buf, len, "%s@%s", id, ef->build_id);
	else
		snprintf(buf, len, "%s@%s:%zu", id, path, ef->len);
	return buf;
}

/* See elf.h. */
const char *elf_file__identity_key(const struct elf_file *ef, char *buf, size_t len)
{
	if (!ef->mapped)
		snprintf(buf, len, "mem#%llu", (unsigned long long)ef->serial);
	else
		snprintf(buf, len, "%llx:%llu:%llu:%llu", (unsigned long long)ef->id.dev,
			 (unsigned long long)ef->id.ino, (unsigned long long)ef->id.size,
			 (unsigned long long)ef->id.ctime_ns);
	return buf;
}

/* See elf.h. */
struct elf_identity elf_identity__from_stat(const struct stat *st)
{
	return (struct elf_identity){
		.dev = st->st_dev,
		.ino = st->st_ino,
		.size = (uint64_t)st->st_size,
		.ctime_ns = (uint64_t)st->st_ctim.tv_sec * 1000000000ull +
			    (uint64_t)st->st_ctim.tv_nsec,
	};
}

/* See elf.h. */
bool elf_identity__equal(const struct elf_identity *a, const struct elf_identity *b)
{
	return a->dev == b->dev && a->ino == b->ino && a->size == b->size &&
	       a->ctime_ns == b->ctime_ns;
}

/* See elf.h. */
bool elf_file__identity(const struct elf_file *ef, struct elf_identity *out)
{
	if (!ef->mapped)
		return false;
	*out = ef->id;
	return true;
}

/* See elf.h. */
uint64_t elf_file__serial(const struct elf_file *ef)
{
	return ef->serial;
}

/* See elf.h. */
bool elf_file__truncated(const struct elf_file *ef)
{
	return ef->mapped && __atomic_load_n(&map_slots[ef->slot].truncated, __ATOMIC_RELAXED);
}

/* See elf.h. */
uint64_t elf__sigbus_count(void)
{
	return __atomic_load_n(&sigbus_count, __ATOMIC_RELAXED);
}
