/* SPDX-License-Identifier: Apache-2.0 */
/* File-system helpers shared by the outputs (profile files, spool). */
#ifndef MLPROF_FSUTIL_H
#define MLPROF_FSUTIL_H

#include <sys/types.h>

/*
 * mkdir -p: creates dir and its missing parents (parents 0755, dir itself leaf_mode) and
 * checks that dir is a directory the caller can write. 0 or -errno.
 */
int fsutil__mkdir_p(const char *dir, mode_t leaf_mode);

/* The last component of path (what follows its last '/'; path itself without one). */
const char *fsutil__base_name(const char *path);

#endif
