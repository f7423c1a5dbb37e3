/* SPDX-License-Identifier: Apache-2.0 */
/* The process cache's public data: a cached process, the cache's bounds and counters. */
#ifndef MLPROF_PROC_TYPES_H
#define MLPROF_PROC_TYPES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "symbolize/proc_maps.h"

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

#endif
