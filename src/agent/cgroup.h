/* SPDX-License-Identifier: Apache-2.0 */
/* A process's container, from the text of /proc/PID/cgroup. */
#ifndef MLPROF_CGROUP_H
#define MLPROF_CGROUP_H

#include <stddef.h>

/* What a process's cgroup file says about its container. */
struct cgroup_info {
	char path[512];	       /* unified (v2) path, else the first v1 path; "" if none */
	char container_id[65]; /* 64 lowercase hex, "" when not in a container */
	char pod_uid[40];      /* Kubernetes pod uid (dashes), "" when unknown */
};

/*
 * Parses the text of /proc/PID/cgroup (v1 or v2, any runtime: containerd, CRI-O, Docker,
 * podman, systemd or cgroupfs drivers). Never fails: missing parts stay empty.
 */
void labels__parse_cgroup(const char *text, size_t len, struct cgroup_info *out);

#endif
