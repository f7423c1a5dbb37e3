// SPDX-License-Identifier: Apache-2.0
/* The files behind processes' mappings: opened safely, shared by (dev, inode); the [vdso]. */
#define LOG_MODULE "proc"
#include "util/log.h"

#include "symbolize/proc_files.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include "symbolize/elf.h"
#include "symbolize/foreign_file.h"
#include "symbolize/proc_state.h"

/* Largest [vdso] image we copy out of a process. */
#define VDSO_MAX (256 * 1024)

/* See proc_files.h. */
void proc_files__unref(struct proc_cache *pc, struct elf_entry *e)
{
	if (e && e->refs)
		e->refs--;
}

static void elf_entry_remove(struct proc_cache *pc, size_t idx)
{
	struct elf_entry *e = pc->elfs[idx];

	elf_file__put(e->ef);
	free(e);
	pc->elfs[idx] = pc->elfs[--pc->nelfs];
	pc->stats.elf_files = pc->nelfs;
}

/* Makes room for one more entry; returns false when every entry is in use. */
static bool elf_make_room(struct proc_cache *pc)
{
	size_t victim = SIZE_MAX;

	if (pc->nelfs < pc->cfg.max_elf_files)
		return true;
	for (size_t i = 0; i < pc->nelfs; i++) {
		if (pc->elfs[i]->refs)
			continue;
		if (victim == SIZE_MAX || pc->elfs[i]->last_use < pc->elfs[victim]->last_use)
			victim = i;
	}
	if (victim == SIZE_MAX)
		return false;
	elf_entry_remove(pc, victim);
	pc->stats.elf_evictions++;
	return true;
}

/* See proc_files.h. */
bool proc_map__deleted(const struct proc_map *m)
{
	static const char suffix[] = " (deleted)";
	size_t n = strlen(m->path), s = sizeof(suffix) - 1;

	return n > s && strcmp(m->path + n - s, suffix) == 0;
}

/* See proc_files.h. */
int proc_cache__open_map(struct proc_cache *pc, pid_t pid, const struct proc_map *m, char *name,
			 size_t len)
{
	int fd, err;

	if (!pc || !m || !name || len < 2)
		return -EINVAL;
	if (foreign_file__on_fuse(&pc->fuse, pc->proc_root, pid, m->dev_major, m->dev_minor)) {
		pc->stats.fuse_skipped++;
		snprintf(name, len, "%s", m->path);
		return -EREMOTE;
	}
	snprintf(name, len, "%s/%d/map_files/%" PRIx64 "-%" PRIx64, pc->proc_root, (int)pid,
		 m->start, m->end);
	fd = open(name, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	if (fd >= 0)
		return fd;
	err = -errno;
	if (m->path[0] != '/')
		return err;
	if (proc_map__deleted(m)) {
		pc->stats.deleted_skipped++;
		pr_debug("%s of %d: deleted and map_files unreadable (%s): skipped", m->path,
			 (int)pid, strerror(-err));
		return -ENOENT;
	}
	fd = foreign_file__open_in_root(pc->proc_root, pid, m->path, m->dev_major, m->dev_minor,
					m->inode, name, len);
	if (fd == -ESTALE)
		pc->stats.files_rejected++;
	return fd;
}

/* Opens the ELF file behind m (proc_cache__open_map); NULL with errno set. */
static struct elf_file *open_map_file(struct proc_cache *pc, struct proc_entry *e,
				      const struct proc_map *m)
{
	char name[4608];
	struct elf_file *ef;
	int fd, err;

	fd = proc_cache__open_map(pc, e->p.pid, m, name, sizeof(name));
	if (fd < 0) {
		errno = -fd;
		return NULL;
	}
	ef = elf_file__open_fd(fd, name);
	err = errno;
	if (!ef)
		pr_debug("cannot open %s: %s", name, strerror(err));
	close(fd);
	errno = err;
	return ef;
}

static struct elf_file *load_vdso(struct proc_cache *pc, struct proc_entry *e,
				  const struct proc_map *m)
{
	size_t len = (size_t)(m->end - m->start);
	struct elf_file *ef = NULL;
	struct iovec local, remote;
	char path[320];
	uint8_t *buf;
	ssize_t n;
	int fd;

	if (len > VDSO_MAX)
		return NULL;
	buf = malloc(len);
	if (!buf)
		return NULL;
	local.iov_base = buf;
	local.iov_len = len;
	remote.iov_base = (void *)(uintptr_t)m->start;
	remote.iov_len = len;
	/* process_vm_readv bypasses proc_root: only use it on the real /proc */
	n = strcmp(pc->proc_root, "/proc") == 0
		    ? process_vm_readv(e->p.pid, &local, 1, &remote, 1, 0)
		    : -1;
	if (n != (ssize_t)len) {
		snprintf(path, sizeof(path), "%s/%d/mem", pc->proc_root, (int)e->p.pid);
		fd = open(path, O_RDONLY | O_CLOEXEC);
		n = fd >= 0 ? pread(fd, buf, len, (off_t)m->start) : -1;
		if (fd >= 0)
			close(fd);
	}
	if (n != (ssize_t)len) {
		pr_debug("cannot read [vdso] of %d: %s", (int)e->p.pid, strerror(errno));
		free(buf);
		return NULL;
	}
	/* the same bytes as a vdso seen before (its ELF's own image): its symbols are shared */
	for (size_t i = 0; i < pc->nvdsos; i++) {
		size_t have = 0;
		const uint8_t *img = elf_file__data(pc->vdsos[i], &have);

		if (have == len && memcmp(img, buf, len) == 0) {
			free(buf);
			return elf_file__get(pc->vdsos[i]);
		}
	}
	ef = elf_file__open_mem(buf, len, "[vdso]");
	free(buf);
	if (ef && pc->nvdsos < VDSO_SHARED)
		pc->vdsos[pc->nvdsos++] = elf_file__get(ef);
	return ef;
}

/* See proc_files.h. */
struct elf_file *proc_cache__map_elf(struct proc_cache *pc, struct proc *p,
				     const struct proc_map *m)
{
	struct proc_entry *e = (struct proc_entry *)p;
	struct map_set *ms = e->cur;
	struct elf_entry *ent = NULL;
	struct elf_file *ef;
	size_t idx;

	/* m must belong to the current set (borrowed pointers into retired sets get NULL) */
	if (!ms || m < ms->maps || m >= ms->maps + ms->n)
		return NULL;
	idx = (size_t)(m - ms->maps);
	if (ms->state[idx] == ELF_OK) {
		if (ms->elfs[idx]) {
			ms->elfs[idx]->last_use = ++pc->tick;
			return ms->elfs[idx]->ef;
		}
		return e->vdso;
	}
	if (ms->state[idx] == ELF_FAILED)
		return NULL;
	ms->state[idx] = ELF_FAILED;

	if (strcmp(m->path, "[vdso]") == 0) {
		if (!e->vdso_tried) {
			e->vdso_tried = true;
			e->vdso = load_vdso(pc, e, m);
		}
		if (!e->vdso) {
			pc->stats.lookups_failed++;
			return NULL;
		}
		ms->state[idx] = ELF_OK;
		ms->maps[idx].fm.build_id = elf_file__build_id(e->vdso);
		return e->vdso;
	}
	if (m->path[0] != '/' || m->inode == 0)
		return NULL;

	for (size_t i = 0; i < pc->nelfs; i++) {
		struct elf_entry *x = pc->elfs[i];

		if (x->inode == m->inode && x->major == m->dev_major && x->minor == m->dev_minor) {
			ent = x;
			break;
		}
	}
	if (!ent) {
		if (!elf_make_room(pc)) {
			pc->stats.lookups_failed++;
			return NULL;
		}
		ef = open_map_file(pc, e, m);
		if (!ef) {
			pc->stats.lookups_failed++;
			return NULL;
		}
		ent = calloc(1, sizeof(*ent));
		if (!ent) {
			elf_file__put(ef);
			return NULL;
		}
		ent->inode = m->inode;
		ent->major = m->dev_major;
		ent->minor = m->dev_minor;
		ent->ef = ef;
		pc->elfs[pc->nelfs++] = ent;
		pc->stats.elf_files = pc->nelfs;
	}
	ent->refs++;
	ent->last_use = ++pc->tick;
	ms->elfs[idx] = ent;
	ms->state[idx] = ELF_OK;
	ms->maps[idx].fm.build_id = elf_file__build_id(ent->ef);
	return ent->ef;
}

/* See proc_files.h. */
int proc_map__to_vaddr(const struct proc_map *m, struct elf_file *ef, uint64_t addr,
		       uint64_t *vaddr)
{
	if (!m || !ef || addr < m->start || addr >= m->end)
		return -EINVAL;
	return elf_file__offset_to_vaddr(ef, m->offset, addr - m->start + m->offset, vaddr);
}

/* See proc_files.h. */
int proc_cache__open_verified(struct proc_cache *pc, const struct proc *p, const struct proc_map *m,
			      const struct elf_file *ef)
{
	struct elf_identity id, now;
	char name[4608];
	struct stat st;
	bool ok;
	int fd;

	if (proc_map__deleted(m) || !elf_file__identity(ef, &id))
		return -ESTALE;
	fd = proc_cache__open_map(pc, p->pid, m, name, sizeof(name));
	if (fd < 0)
		return fd;
	ok = !fstat(fd, &st) && S_ISREG(st.st_mode) && st.st_nlink > 0;
	if (ok) {
		now = elf_identity__from_stat(&st);
		ok = elf_identity__equal(&now, &id);
	}
	if (!ok) {
		close(fd);
		return -ESTALE;
	}
	return fd;
}

/* See proc_files.h. */
void proc_files__gc(struct proc_cache *pc)
{
	for (size_t i = pc->nelfs; i-- > 0;)
		if (!pc->elfs[i]->refs)
			elf_entry_remove(pc, i);
}

/* See proc_files.h. */
void proc_files__free(struct proc_cache *pc)
{
	while (pc->nelfs)
		elf_entry_remove(pc, pc->nelfs - 1);
	for (size_t i = 0; i < pc->nvdsos; i++)
		elf_file__put(pc->vdsos[i]);
	free(pc->elfs);
	pc->elfs = NULL;
	pc->nvdsos = 0;
}
