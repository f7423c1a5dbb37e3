// SPDX-License-Identifier: Apache-2.0
/* Unit test: /proc/PID/maps parsing on odd input, ELF sharing, exit/exec and dlopen re-reads. */
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "fds.h"
#include "symbolize/elf.h"
#include "symbolize/proc.h"
#include "symbolize/proc_files.h"

static char tmpdir[64];

static void write_file(const char *rel, const char *data, size_t len)
{
	char path[512];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", tmpdir, rel);
	f = fopen(path, "w");
	if (!f) {
		perror(path);
		exit(2);
	}
	fwrite(data, 1, len, f);
	fclose(f);
}

static void make_pid_dir(int pid)
{
	char path[512];

	snprintf(path, sizeof(path), "%s/%d", tmpdir, pid);
	mkdir(path, 0755);
}

static const char *libc_path(uint64_t *inode, unsigned int *maj, unsigned int *min)
{
	static char path[256];
	FILE *f = fopen("/proc/self/maps", "r");
	char line[512];

	path[0] = '\0';
	while (f && fgets(line, sizeof(line), f)) {
		unsigned long lo, hi, off, ino;
		char perms[5];
		int n = 0;

		if (sscanf(line, "%lx-%lx %4s %lx %x:%x %lu %n", &lo, &hi, perms, &off, maj, min,
			   &ino, &n) >= 7 &&
		    strstr(line, "/libc.so")) {
			snprintf(path, sizeof(path), "%s", line + n);
			path[strcspn(path, "\n")] = '\0';
			*inode = ino;
			break;
		}
	}
	if (f)
		fclose(f);
	return path;
}

static void test_fake_maps(void)
{
	struct proc_cache_config cfg = {.max_procs = 2, .max_elf_files = 8, .proc_root = tmpdir};
	struct proc_cache *pc;
	struct proc_cache_stats st;
	const struct proc_map *m;
	struct proc *p;
	char *maps, *huge;
	size_t len = 0, cap = 64 * 1024;
	uint64_t libc_ino = 0;
	unsigned int maj = 0, min = 0;
	const char *libc = libc_path(&libc_ino, &maj, &min);
	char root[512];

	CHECK(libc[0] == '/', "libc not found in own maps");
	maps = calloc(1, cap);
	huge = calloc(1, 10001);
	if (!maps || !huge)
		exit(2);
	memset(huge, 'a', 10000);
	/* unsorted, odd and broken lines; only executable mappings must be kept */
	len += (size_t)snprintf(
		maps + len, cap - len,
		"7f0000100000-7f0000200000 r-xp 00002000 fd:01 124 "
		"/tmp/gone lib.so (deleted)\n"
		"00400000-00452000 r-xp 00000000 08:02 173521      /usr/bin/daemon\n"
		"00651000-00652000 r--p 00051000 08:02 173521      /usr/bin/daemon\n"
		"7f0000000000-7f0000001000 r-xp 00001000 fd:01 123   "
		"/opt/my app/lib foo.so\n"
		"7f0000300000-7f0000301000 rwxp 00000000 00:00 0 \n"
		"7f0000500000-7f0000600000 r-xp 00000000 00:00 0 /%s\n"
		"7f0000400000-7f00004\n"
		"hello world\n"
		"7f0000700000-7f0000710000 r-xp 00026000 %02x:%02x %" PRIu64 " %s\n"
		"7ffff7fc1000-7ffff7fc3000 r-xp 00000000 00:00 0      [vdso]\n"
		"\x01\x02\x03 binary\n"
		"7f0000800000-7f0000801000 r-xp 00000000 00:00 0      [last]",
		huge, maj, min, libc_ino, libc);
	make_pid_dir(4242);
	write_file("4242/maps", maps, len);
	write_file("4242/comm", "fake proc\n", 10);
	snprintf(root, sizeof(root), "%s/4242/root", tmpdir);
	CHECK_INT(symlink("/", root), 0);

	pc = proc_cache__new(&cfg);
	CHECK(pc != NULL, "proc_cache__new");
	p = proc_cache__get(pc, 4242);
	CHECK(p != NULL, "get fake");
	if (!p)
		goto cleanup;
	CHECK_STR(p->comm, "fake proc");
	CHECK_STR(p->root, "/proc/4242/root");
	CHECK_INT(p->n_maps, 7);
	if (p->n_maps != 7)
		goto cleanup;
	for (size_t i = 1; i < p->n_maps; i++)
		CHECK(p->maps[i - 1].end <= p->maps[i].start, "maps not sorted at %zu", i);
	CHECK_INT(p->maps[0].start, 0x400000);
	CHECK_STR(p->maps[0].path, "/usr/bin/daemon");
	CHECK_INT(p->maps[0].inode, 173521);
	CHECK_INT(p->maps[0].dev_major, 8);
	CHECK_INT(p->maps[0].dev_minor, 2);
	CHECK_STR(p->maps[1].path, "/opt/my app/lib foo.so");
	CHECK_INT(p->maps[1].offset, 0x1000);
	CHECK_INT(p->maps[1].dev_major, 0xfd);
	CHECK_STR(p->maps[2].path, "/tmp/gone lib.so (deleted)");
	CHECK_INT(p->maps[2].offset, 0x2000);
	CHECK_STR(p->maps[3].path, "");
	CHECK(p->maps[3].fm.file == NULL, "anonymous map has a file");
	CHECK_STR(p->maps[4].path, libc);
	CHECK_STR(p->maps[5].path, "[last]");
	CHECK_STR(p->maps[6].path, "[vdso]");
	CHECK_INT(p->maps[1].fm.start, 0x7f0000000000);
	CHECK_INT(p->maps[1].fm.limit, 0x7f0000001000);
	CHECK_INT(p->maps[1].fm.file_offset, 0x1000);
	CHECK_STR(p->maps[1].fm.file, "/opt/my app/lib foo.so");

	m = proc_cache__find_map(pc, p, 0x400123);
	CHECK(m == &p->maps[0], "find 0x400123");
	m = proc_cache__find_map(pc, p, 0x7f0000000fff);
	CHECK(m == &p->maps[1], "find end-1");
	CHECK(proc_cache__find_map(pc, p, 0x7f0000001000) == NULL, "end is exclusive");
	CHECK(proc_cache__find_map(pc, p, 0x651000) == NULL, "non-exec map kept");

	/* the libc line resolves through root + path (no map_files in a fake dir) */
	{
		struct elf_file *ef = proc_cache__map_elf(pc, p, &p->maps[4]);
		struct elf_file *real = elf_file__open(libc);
		uint64_t vaddr = 0;

		CHECK(ef != NULL, "libc via root");
		CHECK(real != NULL, "open libc");
		if (ef && real) {
			CHECK_STR(elf_file__build_id(ef), elf_file__build_id(real));
			CHECK_STR(p->maps[4].fm.build_id, elf_file__build_id(real));
			CHECK_INT(proc_map__to_vaddr(&p->maps[4], ef, 0x7f0000700010, &vaddr), 0);
			CHECK_INT(vaddr, 0x26010); /* libc's text: offset == vaddr */
		}
		elf_file__put(real);
		/* files that do not exist, anonymous and vdso-less: NULL, no crash */
		CHECK(proc_cache__map_elf(pc, p, &p->maps[0]) == NULL, "daemon");
		CHECK(proc_cache__map_elf(pc, p, &p->maps[2]) == NULL, "deleted");
		CHECK(proc_cache__map_elf(pc, p, &p->maps[3]) == NULL, "anon");
		CHECK(proc_cache__map_elf(pc, p, &p->maps[6]) == NULL, "fake vdso");
	}

	/* LRU: max_procs = 2, a third process evicts the least recently used */
	make_pid_dir(4243);
	write_file("4243/maps", "00400000-00401000 r-xp 00000000 08:02 1 /bin/a\n", 46);
	make_pid_dir(4244);
	write_file("4244/maps", "00400000-00401000 r-xp 00000000 08:02 2 /bin/b\n", 46);
	CHECK(proc_cache__get(pc, 4243) != NULL, "4243");
	CHECK(proc_cache__get(pc, 4242) == p, "4242 again, same pointer");
	CHECK(proc_cache__get(pc, 4244) != NULL, "4244");
	proc_cache__stats(pc, &st);
	CHECK_INT(st.proc_evictions, 1);
	CHECK_INT(st.procs, 2);
	CHECK_INT(st.elf_files, 1);
	/* the evicted one was 4243: 4242 is still cached (no new maps read) */
	uint64_t reads = st.maps_reads;

	CHECK(proc_cache__get(pc, 4242) == p, "4242 still cached");
	proc_cache__stats(pc, &st);
	CHECK_INT(st.maps_reads, reads);
	/* an unknown pid without a directory */
	errno = 0;
	CHECK(proc_cache__get(pc, 4999) == NULL, "missing pid");
	CHECK_INT(errno, ESRCH);

	/* exec: maps dropped, the next get re-reads them; gen changes */
	uint64_t gen = p->gen;

	proc_cache__on_exec(pc, 4242);
	CHECK_INT(p->n_maps, 0);
	CHECK(proc_cache__get(pc, 4242) == p, "after exec");
	CHECK_INT(p->n_maps, 7);
	CHECK(p->gen != gen, "gen unchanged after exec");

	/*
	 * Past exit_mm (its exit event still queued) the maps file reads empty: a miss that
	 * re-reads, or a refresh, must keep the maps the process's last samples need.
	 */
	write_file("4242/maps", "", 0);
	usleep(20 * 1000); /* past the re-read interval */
	CHECK(proc_cache__find_map(pc, p, 0x10000) == NULL, "miss on an exited process");
	proc_cache__refresh(pc, 4242);
	CHECK_INT(p->n_maps, 7);
	CHECK(proc_cache__find_map(pc, p, 0x400123) == &p->maps[0], "maps kept after exit");
	/* a new pid that is already a zombie: not cached */
	make_pid_dir(4245);
	write_file("4245/maps", "", 0);
	errno = 0;
	CHECK(proc_cache__get(pc, 4245) == NULL, "zombie cached");
	CHECK_INT(errno, ESRCH);

cleanup:
	proc_cache__free(pc);
	free(maps);
	free(huge);
}

/*
 * A process that maps a library after 32 others within one gc period (PyTorch's import):
 * its maps stop being re-read until a trim frees the replaced sets; the refresh that came
 * meanwhile is done at the trim, so the new library's code is found.
 */
static void test_retired_trim(void)
{
	struct proc_cache_config cfg = {.max_procs = 4, .max_elf_files = 8, .proc_root = tmpdir};
	struct proc_cache *pc = proc_cache__new(&cfg);
	char maps[8192];
	struct proc *p;
	int i, len;

	CHECK(pc != NULL, "new");
	if (!pc)
		return;
	make_pid_dir(4250);
	write_file("4250/comm", "importer\n", 9);
	write_file("4250/maps", "00400000-00452000 r-xp 00000000 08:02 1 /usr/bin/importer\n", 56);
	p = proc_cache__get(pc, 4250);
	CHECK(p != NULL, "get");
	if (!p)
		goto out;
	for (i = 1; i <= 40; i++) {
		/* one more library each time, as dlopen does */
		len = snprintf(maps, sizeof(maps),
			       "00400000-00452000 r-xp 00000000 08:02 1 /usr/bin/importer\n");
		for (int k = 1; k <= i; k++)
			len += snprintf(
				maps + len, sizeof(maps) - (size_t)len,
				"7f%04x000000-7f%04x100000 r-xp 00000000 08:02 %d /lib/l%d.so\n",
				(unsigned int)k, (unsigned int)k, 100 + k, k);
		write_file("4250/maps", maps, (size_t)len);
		proc_cache__refresh(pc, 4250);
	}
	/* 32 replaced sets: the last refreshes were not done */
	CHECK(proc_cache__retired_full(pc), "retired full after 40 refreshes");
	CHECK(p->n_maps < 41, "maps re-read past the bound: %zu", p->n_maps);
	CHECK(proc_cache__find_map_cached(p, 0x7f0028000123ull) == NULL, "l40 known before trim");
	proc_cache__trim(pc);
	CHECK(!proc_cache__retired_full(pc), "still full after trim");
	CHECK_INT(p->n_maps, 41);
	CHECK(proc_cache__find_map_cached(p, 0x7f0028000123ull) != NULL, "l40 unknown after trim");
out:
	proc_cache__free(pc);
}

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static void test_real_processes(void)
{
	struct proc_cache_config cfg = {.max_procs = 8, .max_elf_files = 8, .proc_root = "/proc"};
	uint64_t addr = (uint64_t)(uintptr_t)&getppid; /* in libc, same address in a fork */
	struct proc_cache_stats st;
	const struct proc_map *m1, *m2;
	struct elf_file *e1, *e2;
	struct proc_cache *pc;
	struct proc *self, *child;
	pid_t pid;
	int status;

	pid = fork();
	if (pid == 0) {
		pause();
		_exit(0);
	}
	CHECK(pid > 0, "fork");
	pc = proc_cache__new(&cfg);
	self = proc_cache__get(pc, getpid());
	child = proc_cache__get(pc, pid);
	CHECK(self && child, "get self/child");
	if (!self || !child)
		goto cleanup;
	CHECK_STR(self->comm, child->comm);
	m1 = proc_cache__find_map(pc, self, addr);
	m2 = proc_cache__find_map(pc, child, addr);
	CHECK(m1 && m2, "libc map");
	if (!m1 || !m2)
		goto cleanup;
	CHECK(strstr(m1->path, "libc.so") != NULL, "not libc: %s", m1->path);
	e1 = proc_cache__map_elf(pc, self, m1);
	e2 = proc_cache__map_elf(pc, child, m2);
	CHECK(e1 && e1 == e2, "libc not shared: %p %p", (void *)e1, (void *)e2);
	proc_cache__stats(pc, &st);
	CHECK_INT(st.elf_files, 1);
	CHECK(m1->fm.build_id && strlen(m1->fm.build_id) == 40, "libc build id");
	{
		uint64_t vaddr = 0, off = addr - m1->start + m1->offset, expect = 0;

		CHECK_INT(proc_map__to_vaddr(m1, e1, addr, &vaddr), 0);
		CHECK_INT(elf_file__offset_to_vaddr(e1, m1->offset, off, &expect), 0);
		CHECK_INT(vaddr, expect);
	}

	/* the child exits: its cached maps and ELF stay usable until gc */
	kill(pid, SIGKILL);
	waitpid(pid, &status, 0);
	proc_cache__on_exit(pc, pid);
	CHECK(child->dead, "not dead");
	proc_cache__stats(pc, &st);
	uint64_t reads = st.maps_reads;

	m2 = proc_cache__find_map(pc, child, addr);
	CHECK(m2 != NULL, "dead child map");
	CHECK(m2 && proc_cache__map_elf(pc, child, m2) == e1, "dead child elf");
	/* a miss on a dead process never re-reads */
	CHECK(proc_cache__find_map(pc, child, 0x10) == NULL, "miss");
	proc_cache__stats(pc, &st);
	CHECK_INT(st.maps_reads, reads);
	proc_cache__gc(pc);
	proc_cache__stats(pc, &st);
	CHECK_INT(st.procs, 1);
	CHECK_INT(st.elf_files, 1); /* still used by self */
	errno = 0;
	CHECK(proc_cache__get(pc, pid) == NULL, "reaped child still found");
	CHECK_INT(errno, ESRCH);

	/* dlopen: a miss re-reads the maps, at most once per 10 ms */
	{
		char path[512];
		void *lib, *sym;
		uint64_t gen = self->gen, t0;
		const struct proc_map *m;

		snprintf(path, sizeof(path), "%s/fixtures-unwind/libuwfix.so", TEST_BIN_DIR);
		/* first make sure a fresh read just happened */
		proc_cache__on_exec(pc, getpid());
		self = proc_cache__get(pc, getpid());
		gen = self->gen;
		t0 = now_ms();
		lib = dlopen(path, RTLD_NOW);
		CHECK(lib != NULL, "dlopen %s: %s", path, dlerror());
		if (!lib)
			goto cleanup;
		sym = dlsym(lib, "uwlib_entry");
		proc_cache__stats(pc, &st);
		reads = st.maps_reads;
		m = proc_cache__find_map(pc, self, (uint64_t)(uintptr_t)sym);
		if (now_ms() - t0 < 8) {
			CHECK(m == NULL, "re-read inside the rate limit");
			proc_cache__stats(pc, &st);
			CHECK_INT(st.maps_reads, reads);
		}
		usleep(15 * 1000);
		m = proc_cache__find_map(pc, self, (uint64_t)(uintptr_t)sym);
		CHECK(m != NULL, "dlopened library not found after re-read");
		CHECK(m && strstr(m->path, "libuwfix.so"), "wrong map");
		CHECK(self->gen != gen, "gen unchanged after re-read");
		proc_cache__stats(pc, &st);
		CHECK_INT(st.maps_reads, reads + 1);
		/* ELF of the new library opens through map_files */
		CHECK(m && proc_cache__map_elf(pc, self, m) != NULL, "dlopened ELF");
		dlclose(lib);
	}

	/*
	 * Garbage pcs of a broken stack (a heap pointer): one PROCMAP_QUERY finds no code there,
	 * and the stretch up to the next executable mapping is not queried again; maps that
	 * change (a re-read) forget it.
	 */
	{
		char *heap = malloc(1 << 20);
		uint64_t a = (uint64_t)(uintptr_t)heap, checked;

		proc_cache__on_exec(pc, getpid());
		self = proc_cache__get(pc, getpid());
		usleep(15 * 1000); /* past the re-read interval */
		proc_cache__stats(pc, &st);
		checked = st.misses_checked;
		CHECK(proc_cache__find_map(pc, self, a) == NULL, "heap address found");
		proc_cache__stats(pc, &st);
		if (st.misses_checked == checked + 1) {
			/* the maps file asked stays open for the next query, until exec */
			CHECK_INT(count_fds("/proc/", "/maps"), 1);
			usleep(15 * 1000);
			CHECK(proc_cache__find_map(pc, self, a + 8192) == NULL,
			      "heap address found");
			proc_cache__stats(pc, &st);
			CHECK_INT(st.misses_checked, checked + 1);
			CHECK_INT(st.misses_in_gaps, 1);
			proc_cache__on_exec(pc, getpid()); /* new maps: the gap is forgotten */
			CHECK_INT(count_fds("/proc/", "/maps"),
				  0); /* (it answered for the old image) */
			self = proc_cache__get(pc, getpid());
			usleep(15 * 1000);
			CHECK(proc_cache__find_map(pc, self, a + 8192) == NULL,
			      "heap address found");
			proc_cache__stats(pc, &st);
			CHECK_INT(st.misses_checked, checked + 2);
			CHECK_INT(st.misses_in_gaps, 1);
			CHECK_INT(count_fds("/proc/", "/maps"), 1);
		} else {
			printf("  (no PROCMAP_QUERY on this kernel: gaps not checked)\n");
		}
		free(heap);
	}
cleanup:
	proc_cache__free(pc);
	CHECK_INT(count_fds("/proc/", "/maps"), 0);
}

static const struct proc_map *vdso_map(struct proc *p)
{
	for (size_t i = 0; i < p->n_maps; i++)
		if (strcmp(p->maps[i].path, "[vdso]") == 0)
			return &p->maps[i];
	return NULL;
}

/* Two processes map the same [vdso]: one ELF (one symbol table) serves both. */
static void test_vdso_shared(void)
{
	struct proc_cache_config cfg = {.max_procs = 16};
	struct proc_cache *pc = proc_cache__new(&cfg);
	const struct proc_map *ma, *mb;
	struct elf_file *a = NULL, *b = NULL;
	struct proc *pa, *pb;
	pid_t child;

	CHECK(pc != NULL, "proc_cache__new");
	child = fork();
	if (child == 0) {
		pause();
		_exit(0);
	}
	CHECK(child > 0, "fork");
	pa = proc_cache__get(pc, getpid());
	pb = proc_cache__get(pc, child);
	CHECK(pa && pb, "proc_cache__get");
	ma = pa ? vdso_map(pa) : NULL;
	mb = pb ? vdso_map(pb) : NULL;
	CHECK(ma && mb, "no [vdso] mapping");
	if (ma && mb) {
		a = proc_cache__map_elf(pc, pa, ma);
		b = proc_cache__map_elf(pc, pb, mb);
	}
	CHECK(a != NULL, "cannot load this process's [vdso]");
	CHECK(a == b, "the child's [vdso] is another ELF: its symbols would be read again");
	kill(child, SIGKILL);
	waitpid(child, NULL, 0);
	proc_cache__free(pc);
}

int main(void)
{
	char cmd[128];

	snprintf(tmpdir, sizeof(tmpdir), "/tmp/mlprof-test-proc-XXXXXX");
	if (!mkdtemp(tmpdir)) {
		perror("mkdtemp");
		return 2;
	}
	test_fake_maps();
	test_retired_trim();
	test_real_processes();
	test_vdso_shared();
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
	if (system(cmd) != 0)
		fprintf(stderr, "cannot remove %s\n", tmpdir);
	return check_done("proc");
}
