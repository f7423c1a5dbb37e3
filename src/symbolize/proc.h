/* SPDX-License-Identifier: Apache-2.0 */
/* Per-process memory maps, following exec, exit and new mappings, with shared ELF handles. */
#ifndef MLPROF_PROC_H
#define MLPROF_PROC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "profile/frame.h"
#include "symbolize/proc_maps.h"

struct elf_file;
struct proc_cache;

struct proc {
	pid_t pid;
	bool dead;     /* the process exited; kept until proc_cache__gc (or keep_dead) */
	char comm[16]; /* process name (main thread comm) */
	char root[32]; /* "/proc/PID/root" prefix for files of this process */
	size_t n_maps;
	struct proc_map *maps; /* sorted by start */
	uint64_t gen;	       /* changes whenever maps are replaced (exec, re-read); unique
				* across the cache, so users can drop caches keyed on it */
	uint64_t image;	       /* changes only when the process image does (exec, a new entry
				* for the pid): keys what stays valid across mmaps and dlopens */
	/* the frame ident (profile/frame.h) of native frames named from this generation of
	 * maps at symbol epoch ident_epoch; 0 until whoever names them sets it */
	uint64_t ident, ident_epoch;
};

struct proc_cache_config {
	size_t max_procs;      /* bound on cached processes (LRU beyond it) */
	size_t max_elf_files;  /* bound on open ELF files shared by (dev, inode) */
	uint64_t max_bytes;    /* bound on map-set bytes (0: 32 MiB; evicts LRU processes) */
	const char *proc_root; /* "/proc" (tests may point elsewhere) */
};

struct proc_cache_stats {
	uint64_t procs, elf_files, maps_reads, proc_evictions, elf_evictions, lookups_failed;
	uint64_t rereads_unchanged; /* re-reads on a miss that found the same maps */
	uint64_t files_rejected;    /* a path in a process's root was not the mapped regular file */
	uint64_t deleted_skipped;   /* "(deleted)" mappings left unopened (map_files unreadable) */
	uint64_t maps_truncated;    /* maps reads cut by the per-process bounds */
	uint64_t misses_checked;    /* misses answered by one PROCMAP_QUERY (no re-read) */
	uint64_t misses_in_gaps;    /* misses in a stretch such a query found without code */
	uint64_t fuse_skipped;	    /* files on FUSE mounts left unopened */
	uint64_t byte_evictions;    /* processes evicted by max_bytes (also in proc_evictions) */
	uint64_t bytes;		    /* held by map sets now */
	uint64_t trims;		    /* processes at RETIRED_MAX freed early (proc_cache__trim) */
};

struct proc_cache *proc_cache__new(const struct proc_cache_config *cfg);
void proc_cache__free(struct proc_cache *pc);

/*
 * Returns the cached process, reading /proc/PID/maps when first seen. Returns NULL with
 * errno = ESRCH when the process is gone and was never seen. The pointer stays valid
 * until the next proc_cache__gc().
 */
struct proc *proc_cache__get(struct proc_cache *pc, pid_t pid);

/*
 * Finds the executable mapping containing addr. When none does and the process is
 * alive, re-reads the maps once (new dlopen'ed objects) subject to a rate limit.
 */
const struct proc_map *proc_cache__find_map(struct proc_cache *pc, struct proc *p, uint64_t addr);
/* Same, from the maps read so far only (never re-reads): for guesses such as stack words. */
const struct proc_map *proc_cache__find_map_cached(struct proc *p, uint64_t addr);

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

/*
 * Reads the maps of a cached, live process again now (a library was just mapped). No-op
 * for processes not cached yet: proc_cache__get() reads them.
 */
void proc_cache__refresh(struct proc_cache *pc, pid_t pid);
/* Lifecycle notifications from the sampler's events. */
void proc_cache__on_exec(struct proc_cache *pc, pid_t pid);
void proc_cache__on_exit(struct proc_cache *pc, pid_t pid);
/* Frees dead processes (not kept ones) and unused ELF files; call between profile windows. */
void proc_cache__gc(struct proc_cache *pc);
/*
 * Keeps the dead process pid (its maps, its open files) past proc_cache__gc while keep is
 * true: samples of it still wait for an index. A new image under the pid (on_exec) ends it;
 * the cache's own bounds may still evict it. No-op for a live or unknown pid.
 */
void proc_cache__keep_dead(struct proc_cache *pc, pid_t pid, bool keep);
/*
 * True when a process replaced its maps RETIRED_MAX times since the last gc (an import of
 * PyTorch maps ~80 libraries within a second or two) and its maps are no longer re-read.
 */
bool proc_cache__retired_full(const struct proc_cache *pc);
/*
 * When a process is at that bound (else nothing): frees replaced map sets (not dead
 * processes), so that their processes re-read again. Call where proc_cache__gc could be.
 */
void proc_cache__trim(struct proc_cache *pc);
void proc_cache__stats(const struct proc_cache *pc, struct proc_cache_stats *out);

#endif
