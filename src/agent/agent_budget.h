/* SPDX-License-Identifier: Apache-2.0 */
/* The agent's memory bounds, added up, against the memory limit of its own cgroup. */
#ifndef MLPROF_AGENT_BUDGET_H
#define MLPROF_AGENT_BUDGET_H

#include <stddef.h>
#include <stdint.h>

/* Code, libraries, thread stacks, TLS and allocator slack: measured ~15 MiB, with margin. */
#define AGENT_BASE_BYTES (24u << 20)

struct agent_budget {
	uint64_t pipeline; /* pipeline__bound_bytes() */
	uint64_t windows;  /* two open windows */
	uint64_t queue;	   /* the exporter's queue at its hard bound */
	uint64_t base;	   /* AGENT_BASE_BYTES */
	uint64_t total;
	uint64_t limit; /* the cgroup's memory limit (0: none) */
};

/*
 * The memory limit of the cgroup that holds this process: the smallest memory.max (cgroup
 * v2) or memory.limit_in_bytes (v1) on the path from its cgroup up to the root; 0 when
 * there is none. proc_cgroup is /proc/self/cgroup and sys_root /sys/fs/cgroup (tests pass
 * a tree of their own).
 */
uint64_t agent_budget__cgroup_limit(const char *proc_cgroup, const char *sys_root);

/*
 * Fills b and checks it: 0 when the bounds fit the limit (or there is none), -E2BIG with a
 * one-line explanation in err when they cannot.
 */
int agent_budget__check(struct agent_budget *b, char *err, size_t errlen);

#endif
