/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The files behind a process's mappings (proc_files.c): opened without trusting the process,
 * one ELF handle per (device, inode) shared by every process that maps it, the [vdso] read
 * out of the process.
 */
#ifndef MLPROF_PROC_FILES_H
#define MLPROF_PROC_FILES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "symbolize/proc_types.h"

struct elf_entry;
struct elf_file;
struct proc_cache;

/*
 * Opens the very file map m of process pid maps: /proc/PID/map_files/START-END (needs
 * CAP_SYS_ADMIN or CAP_CHECKPOINT_RESTORE), else m's path inside the process's root
 * without leaving it, accepted only when it is a regular file with m's device and inode
 * (never for a "(deleted)" mapping: whatever sits at that path now is another file).
 * Files on FUSE mounts are never opened (-EREMOTE): a stalled FUSE server would block.
 * Returns an fd the caller closes (name: its path, for messages) or -errno.
 */
int proc_cache__open_map(struct proc_cache *pc, pid_t pid, const struct proc_map *m, char *name,
			 size_t len);

/*
 * Returns the ELF file behind a map (opened lazily through /proc/PID/map_files, else
 * inside /proc/PID/root without leaving it and only when the file found there is the
 * mapped one; shared by dev+inode across processes), or NULL when the mapping is not an
 * ELF file or cannot be opened safely. The reference is borrowed: valid until
 * proc_cache__gc().
 */
struct elf_file *proc_cache__map_elf(struct proc_cache *pc, struct proc *p,
				     const struct proc_map *m);

/*
 * Opens, for attaching uprobes, the very file whose symbols were read (ef): the kernel
 * places a uprobe in whichever file a path names when it resolves it, so probes go through
 * an fd of the checked file (/proc/self/fd/N), never through a path resolved again, which
 * a process could point at another library (a symlink named like its deleted mapping) to
 * have breakpoints written into code other processes run. Deleted or replaced files (other
 * device, inode, size or change time than ef) are refused. Returns the fd or -errno.
 */
int proc_cache__open_verified(struct proc_cache *pc, const struct proc *p, const struct proc_map *m,
			      const struct elf_file *ef);

/* True when the file m maps was deleted (its maps path ends in " (deleted)"). */
bool proc_map__deleted(const struct proc_map *m);
/* ELF virtual address for a runtime address inside map m (uses PT_LOAD + file offset). */
int proc_map__to_vaddr(const struct proc_map *m, struct elf_file *ef, uint64_t addr,
		       uint64_t *vaddr);

/* For proc.c: a map set no longer points at entry e (NULL: none). */
void proc_files__unref(struct proc_cache *pc, struct elf_entry *e);
/* For proc.c's gc: closes the ELF files no map set points at. */
void proc_files__gc(struct proc_cache *pc);
/* For proc.c's free: closes every ELF file and [vdso] image. */
void proc_files__free(struct proc_cache *pc);

#endif
