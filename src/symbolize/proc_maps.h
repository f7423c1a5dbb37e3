/* SPDX-License-Identifier: Apache-2.0 */
/*
 * One read of a process's executable mappings from its open /proc/PID/maps: through
 * PROCMAP_QUERY (Linux 6.11+: the kernel walks only executable mappings, names a file only
 * when it changes), else from the text; bounded in mappings, path bytes and bytes read.
 * The input is another process's (untrusted): every line and field is checked.
 */
#ifndef MLPROF_PROC_MAPS_H
#define MLPROF_PROC_MAPS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "profile/frame.h"

/* One executable mapping of a process. */
struct proc_map {
	uint64_t start, end; /* [start, end) in the process */
	uint64_t offset;     /* file offset of start */
	uint64_t inode;
	uint32_t dev_major, dev_minor;
	bool exec;		 /* mapped executable */
	const char *path;	 /* as printed in /proc/PID/maps ("" anonymous, "[vdso]", ...) */
	struct frame_mapping fm; /* ready for frames (file/build id filled once the ELF is open) */
};

struct proc_maps {
	struct proc_map *maps; /* sorted by start, no overlaps; paths point into strs */
	size_t n;
	char *strs;	   /* NUL-separated paths (a run of one file's mappings shares one) */
	size_t bytes;	   /* what maps and strs hold */
	bool cut;	   /* a bound cut the read (mappings past it, or their paths, missing) */
	size_t bytes_read; /* of the maps file or of PROCMAP_QUERY answers */
};

/*
 * Reads the executable mappings from fd into out (maps and strs the caller's, released with
 * proc_maps__release). Uses PROCMAP_QUERY unless *no_query, and sets *no_query when the
 * kernel has none (then reads the text). 0; -ESRCH when there is no executable mapping (a
 * zombie, a process past exit); -ENOMEM; -errno of the read.
 */
int proc_maps__read(int fd, bool *no_query, struct proc_maps *out);
void proc_maps__release(struct proc_maps *m);

/*
 * One PROCMAP_QUERY on fd: true when an executable mapping covers addr, or when there is no
 * answer (unsure); false with *next the start of the next executable mapping above addr
 * (UINT64_MAX: none).
 */
bool proc_maps__exec_at(int fd, uint64_t addr, uint64_t *next);

/*
 * The kernel's view of the mapping covering addr (PROCMAP_QUERY, any permissions), written
 * into buf as "START-END rwx NAME". Returns whether it is executable; false with buf empty
 * when no mapping covers addr or there is no answer.
 */
bool proc_maps__describe(int fd, uint64_t addr, char *buf, size_t len);

#endif
