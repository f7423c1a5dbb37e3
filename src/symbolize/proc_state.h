/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The process cache's state, data only, shared by proc.c (processes and their map sets) and
 * proc_files.c (the files behind the mappings).
 */
#ifndef MLPROF_PROC_STATE_H
#define MLPROF_PROC_STATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "symbolize/foreign_file.h"
#include "symbolize/proc_types.h"
#include "util/lru.h"

/*
 * Stretches of a process's address space that PROCMAP_QUERY found without executable
 * mappings, remembered so that the garbage pcs of broken stacks (heap pointers, small
 * integers) do not cost a query each: forgotten when the maps change and after NOEXEC_TTL_NS
 * (code made executable by mprotect comes with no event).
 */
#define NOEXEC_GAPS 4
/*
 * Distinct [vdso] images kept, shared by content: every process of a kernel maps the same
 * one (a second shows up with 32-bit processes or after a checkpoint/restore), so one
 * symbol table serves them all instead of one per process.
 */
#define VDSO_SHARED 4

enum elf_state { ELF_UNTRIED = 0, ELF_OK, ELF_FAILED };

/* One open ELF file shared by every mapping of the same (dev, inode). */
struct elf_entry {
	uint64_t inode;
	uint32_t major, minor;
	struct elf_file *ef;
	size_t refs;	   /* map sets (cached or retired) that point at this entry */
	uint64_t last_use; /* LRU tick */
};

/* One parse of /proc/PID/maps: the maps array, their strings and their ELF handles. */
struct map_set {
	struct proc_map *maps;
	size_t n;
	char *strs;		 /* NUL-separated paths the maps point into */
	struct elf_entry **elfs; /* per map; counted in elf_entry.refs */
	uint8_t *state;		 /* per map: enum elf_state */
	struct map_set *next;	 /* retired chain */
	size_t bytes;		 /* what this set holds (counted in proc_cache.bytes) */
};

struct proc_entry {
	struct proc p; /* public part, first */
	struct proc_entry *hnext;
	struct lru_node lru;
	struct map_set *cur;
	struct map_set *retired;
	size_t n_retired;
	bool maps_valid; /* false after exec: next get re-reads */
	uint64_t last_read_ns;
	uint64_t reread_ns;    /* current miss re-read interval (backoff) */
	uint64_t read_cost_ns; /* what the last re-read of the maps took */
	unsigned same_rereads; /* re-reads in a row that found the same maps */
	size_t last_hit;
	struct noexec_gap {
		uint64_t lo, hi, until_ns; /* [lo, hi) held no executable mapping */
	} gaps[NOEXEC_GAPS];
	unsigned gap_next;
	uint64_t diag_ns; /* last miss described (diag_miss) */
	int query_fd;	  /* its maps, open for PROCMAP_QUERY (query_fd_get); -1 when not */
	struct elf_file *vdso;
	bool vdso_tried;
	bool refresh_pending;	  /* a refresh came at RETIRED_MAX: done at the trim */
	bool kept;		  /* dead but kept past gc (proc_cache__keep_dead) */
	struct proc_entry *gnext; /* graveyard chain (evicted, freed at gc) */
	uint64_t grave_bytes;	  /* entry_bytes when buried (counted in grave_bytes) */
};

struct proc_cache {
	struct proc_cache_config cfg;
	char proc_root[256];
	struct proc_entry **buckets;
	size_t nbuckets;
	size_t nprocs;
	uint64_t bytes;	       /* held by map sets (see struct map_set) */
	uint64_t grave_bytes;  /* ... of which by buried entries (freed at gc) */
	bool no_query;	       /* PROCMAP_QUERY unsupported: maps are read as text */
	unsigned diag_logged;  /* misses in executable memory logged (diag_miss) */
	unsigned query_fds;    /* entries holding a query_fd (at most QUERY_FDS_MAX) */
	bool retired_full;     /* a process stopped re-reading at RETIRED_MAX (trim) */
	struct fuse_devs fuse; /* FUSE mounts met (foreign_file__on_fuse) */
	struct lru_list lru;   /* cached processes, most recently used at head */
	struct proc_entry *graveyard;
	size_t ngrave;
	struct elf_entry **elfs;
	size_t nelfs;
	struct elf_file *vdsos[VDSO_SHARED]; /* one reference held here on each */
	size_t nvdsos;
	uint64_t tick;
	uint64_t gen;
	struct proc_cache_stats stats;
};

#endif
