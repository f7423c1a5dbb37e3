// SPDX-License-Identifier: Apache-2.0
/*
 * Unit test: unwinder object lifetimes. A hostile library's .eh_frame_hdr points its FDEs
 * into another library's mapping, so libunwind's nested reads inside find_proc_info look up
 * a second object while the first one's table is in use, right when the table cache is
 * full. Before the fix that lookup freed every table (the one in use included) and
 * find_proc_info went on with a dangling pointer: an ASan use-after-free in the sanitizer
 * build (in a plain build the freed table is usually reused by the next one, silently).
 * The process is a fake /proc tree whose maps name real copies of the fixture library.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <linux/elf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "check.h"
#include "mlprof/sample.h"
#include "symbolize/elf.h"
#include "symbolize/elf_lookup.h"
#include "symbolize/proc.h"
#include "unwind/unwind.h"

#define NFILL	  511 /* fills the unwinder's 512-table cache, less one */
#define NFILES	  (NFILL + 2)
#define BASE	  0x100000000ull
#define FAKE_PID  4242
#define FAR_STACK 0x7f0000000000ull /* sample sp: nowhere near the libraries */

static char dir[256];

static int write_file(const char *path, const void *data, size_t len)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	ssize_t n;

	if (fd < 0)
		return -errno;
	n = write(fd, data, len);
	close(fd);
	return n == (ssize_t)len ? 0 : -EIO;
}

static uint8_t *read_all(const char *path, size_t *len)
{
	struct stat st;
	uint8_t *buf;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0 || fstat(fd, &st)) {
		if (fd >= 0)
			close(fd);
		return NULL;
	}
	buf = malloc((size_t)st.st_size);
	if (buf && read(fd, buf, (size_t)st.st_size) != st.st_size) {
		free(buf);
		buf = NULL;
	}
	close(fd);
	*len = (size_t)st.st_size;
	return buf;
}

static int unwind_at(struct unwinder *u, struct proc *p, uint64_t ip, enum unwind_end *end)
{
	static struct {
		struct mlprof_sample s;
		uint8_t stack[64];
	} snap;
	uint64_t pcs[64];

	memset(&snap, 0, sizeof(snap));
	snap.s.type = MLPROF_EV_SAMPLE;
	snap.s.pid = snap.s.tid = FAKE_PID;
	snap.s.flags = MLPROF_SF_USER_REGS;
	snap.s.regs[MLPROF_REG_IP] = ip;
	snap.s.regs[MLPROF_REG_SP] = FAR_STACK;
	snap.s.ustack_len = sizeof(snap.stack);
	return unwinder__unwind(u, p, &snap.s, pcs, 64, end);
}

int main(void)
{
	struct proc_cache_config cfg = {.max_procs = 4, .max_elf_files = 2048};
	struct elf_section hdr;
	struct unwind_stats st;
	struct elf_file *ef = NULL;
	struct proc_cache *pc = NULL;
	struct unwinder *u = NULL;
	struct proc *p;
	enum unwind_end end;
	uint64_t fn, span = 0, hi = 0, b_fde, a_hdr;
	uint32_t count;
	uint8_t *img = NULL, *bad = NULL;
	size_t len = 0;
	char path[512];
	FILE *maps = NULL;
	int n;

	snprintf(dir, sizeof(dir), "%s/unwind_lifetime.XXXXXX", TEST_BIN_DIR);
	if (!mkdtemp(dir)) {
		perror("mkdtemp");
		return 2;
	}
	ef = elf_file__open(UW_FIXTURE_LIB);
	img = read_all(UW_FIXTURE_LIB, &len);
	CHECK(ef && img, "open %s", UW_FIXTURE_LIB);
	if (!ef || !img)
		goto done;
	CHECK(!elf_file__find_function(ef, "uwlib_leaf", &fn), "uwlib_leaf");
	CHECK(!elf_file__section(ef, ".eh_frame_hdr", &hdr) && hdr.size >= 12, ".eh_frame_hdr");
	if (check_failures)
		goto done;
	/* datarel sdata4 table, udata4 count: what GNU ld writes */
	CHECK(img[hdr.offset + 2] == 0x03 && img[hdr.offset + 3] == 0x3b, "table encodings");
	memcpy(&count, img + hdr.offset + 8, 4);
	CHECK(count > 0 && 12 + (uint64_t)count * 8 <= hdr.size, "fde count %u", count);
	if (check_failures)
		goto done;
	{
		const Elf64_Ehdr *eh = (const Elf64_Ehdr *)img;

		for (int i = 0; i < eh->e_phnum; i++) {
			const Elf64_Phdr *ph = (const Elf64_Phdr *)(img + eh->e_phoff +
								    (uint64_t)i * eh->e_phentsize);

			if (ph->p_type == PT_LOAD && ph->p_vaddr + ph->p_memsz > hi)
				hi = ph->p_vaddr + ph->p_memsz;
		}
	}
	hi = (hi + 4095) & ~4095ull;
	span = (hi > len ? hi : len) + 0x10000;

	/*
	 * Library A (the last but one) has every FDE pointer moved into B's mapping, onto the
	 * zero padding of B's ELF header: libunwind reads it through a lookup of object B
	 * while it is inside find_proc_info for A, takes the zero length for the end of the
	 * FDEs and reports no info, so find_proc_info goes on with A's table.
	 */
	b_fde = BASE + (uint64_t)(NFILES - 1) * span + 8;
	a_hdr = BASE + (uint64_t)(NFILES - 2) * span + hdr.addr;
	bad = malloc(len);
	CHECK(bad != NULL, "malloc");
	if (!bad)
		goto done;
	memcpy(bad, img, len);
	for (uint32_t j = 0; j < count; j++) {
		int32_t off = (int32_t)(int64_t)(b_fde - a_hdr);

		memcpy(bad + hdr.offset + 12 + (uint64_t)j * 8 + 4, &off, 4);
	}

	/* the fake /proc: PID/maps naming NFILES copies, PID/root -> "/" (no map_files) */
	snprintf(path, sizeof(path), "%s/%d", dir, FAKE_PID);
	mkdir(path, 0755);
	snprintf(path, sizeof(path), "%s/%d/root", dir, FAKE_PID);
	CHECK(!symlink("/", path), "symlink %s: %s", path, strerror(errno));
	snprintf(path, sizeof(path), "%s/%d/maps", dir, FAKE_PID);
	maps = fopen(path, "w");
	CHECK(maps != NULL, "fopen %s", path);
	if (!maps)
		goto done;
	for (int i = 0; i < NFILES; i++) {
		uint64_t start = BASE + (uint64_t)i * span;
		struct stat fst;

		snprintf(path, sizeof(path), "%s/lib%04d.so", dir, i);
		if (write_file(path, i == NFILES - 2 ? bad : img, len) || stat(path, &fst)) {
			CHECK(0, "write %s", path);
			goto done;
		}
		fprintf(maps, "%" PRIx64 "-%" PRIx64 " r-xp 00000000 %02x:%02x %llu %s\n", start,
			start + hi, major(fst.st_dev), minor(fst.st_dev),
			(unsigned long long)fst.st_ino, path);
	}
	fclose(maps);
	maps = NULL;

	cfg.proc_root = dir;
	pc = proc_cache__new(&cfg);
	u = pc ? unwinder__new(pc) : NULL;
	p = pc ? proc_cache__get(pc, FAKE_PID) : NULL;
	CHECK(u && p, "proc cache over %s", dir);
	if (!u || !p)
		goto done;
	CHECK_INT(p->n_maps, NFILES);

	/* one table per filler library: the cache is one short of full */
	for (int i = 0; i < NFILL; i++) {
		n = unwind_at(u, p, BASE + (uint64_t)i * span + fn, &end);
		CHECK(n >= 1, "filler %d: %d frames", i, n);
	}
	/* A's table fills the cache, then the nested read of B's FDE needs one more */
	n = unwind_at(u, p, BASE + (uint64_t)(NFILES - 2) * span + fn, &end);
	/* no unwind info for A (its FDEs are not A's): the stack ends at the sample's pc */
	CHECK(n == 1, "hostile library: %d frames, %s", n, unwind_end__str(end));
	/* the unwinder still works: B, and a filler whose table may have been dropped */
	n = unwind_at(u, p, BASE + (uint64_t)(NFILES - 1) * span + fn, &end);
	CHECK(n >= 1 && end != UNWIND_END_NO_INFO, "library B: %d frames, %s", n,
	      unwind_end__str(end));
	n = unwind_at(u, p, BASE + fn, &end);
	CHECK(n >= 1 && end != UNWIND_END_NO_INFO, "filler 0: %d frames, %s", n,
	      unwind_end__str(end));
	unwinder__stats(u, &st);
	CHECK_INT(st.unwinds, NFILL + 3);

done:
	if (maps)
		fclose(maps);
	unwinder__free(u);
	proc_cache__free(pc);
	elf_file__put(ef);
	free(img);
	free(bad);
	for (int i = 0; i < NFILES; i++) {
		snprintf(path, sizeof(path), "%s/lib%04d.so", dir, i);
		unlink(path);
	}
	snprintf(path, sizeof(path), "%s/%d/maps", dir, FAKE_PID);
	unlink(path);
	snprintf(path, sizeof(path), "%s/%d/root", dir, FAKE_PID);
	unlink(path);
	snprintf(path, sizeof(path), "%s/%d", dir, FAKE_PID);
	rmdir(path);
	rmdir(dir);
	return check_done("unwind_lifetime");
}
