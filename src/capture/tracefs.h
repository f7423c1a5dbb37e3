/* SPDX-License-Identifier: Apache-2.0 */
/* Makes sure the kernel's tracefs is mounted before tracepoints are attached. */
#ifndef MLPROF_TRACEFS_H
#define MLPROF_TRACEFS_H

/* Where tracefs is looked for and, if absent there and under debugfs, mounted. */
#define TRACEFS_DIR	    "/sys/kernel/tracing"
#define TRACEFS_DEBUGFS_DIR "/sys/kernel/debug/tracing"

/*
 * libbpf attaches tracepoints by the ids under tracefs' events/ directory. Hosts and
 * containers do not always have tracefs mounted (seen on a VM here: /sys/kernel/tracing
 * empty). Returns 0 when tracefs is there (at TRACEFS_DIR or under debugfs) or has just been
 * mounted at TRACEFS_DIR (logged once); -errno after one log line saying how to mount it
 * when it is absent and mounting fails (mounting needs CAP_SYS_ADMIN).
 */
int tracefs__ensure(void);

#endif
