/* SPDX-License-Identifier: Apache-2.0 */
/* The capabilities `mlprof record` and `mlprof agent` need, checked before anything starts. */
#ifndef MLPROF_PRIVILEGE_H
#define MLPROF_PRIVILEGE_H

#include <stddef.h>

/* What to grant instead of root (README "Least privilege"; deploy/ sets exactly these). */
#define PRIVILEGE_CAPS "CAP_BPF, CAP_PERFMON, CAP_SYS_PTRACE and CAP_DAC_READ_SEARCH"

/* Room for the names of every missing capability, comma separated. */
#define PRIVILEGE_MISSING_MAX 96

/*
 * Checks the calling thread's effective capabilities against PRIVILEGE_CAPS, as the kernel
 * does: CAP_SYS_ADMIN also grants BPF and perf events, CAP_DAC_OVERRIDE also reading any
 * file. Returns 0 when all are held; -EPERM when some are not, with their names ("CAP_BPF,
 * CAP_SYS_PTRACE") written to missing (len bytes, NUL-terminated, PRIVILEGE_MISSING_MAX is
 * enough); another -errno when the set cannot be read (missing is then "").
 */
int privilege__missing(char *missing, size_t len);

#endif
