// SPDX-License-Identifier: Apache-2.0
/* The agent's memory bounds against its cgroup's memory limit (see agent_budget.h). */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/agent_budget.h"

/* v1 reports "no limit" as a huge page-aligned number */
#define V1_UNLIMITED (1ull << 62)

/* The value in path ("max" or a number of bytes); 0 when absent or unlimited. */
static uint64_t read_limit(const char *path)
{
	char buf[64];
	unsigned long long v;
	FILE *f = fopen(path, "re");
	bool ok;

	if (!f)
		return 0;
	ok = fgets(buf, sizeof(buf), f) != NULL;
	fclose(f);
	if (!ok || !strncmp(buf, "max", 3) || sscanf(buf, "%llu", &v) != 1 || v >= V1_UNLIMITED)
		return 0;
	return v;
}

/* The smallest limit from dir/rel up to dir (file: the limit file's name). */
static uint64_t walk_up(const char *dir, const char *rel, const char *file)
{
	char path[4096], cg[2048];
	uint64_t best = 0;

	snprintf(cg, sizeof(cg), "%s", rel);
	for (;;) {
		uint64_t v;
		char *slash;

		snprintf(path, sizeof(path), "%s%s%s/%s", dir, cg[0] == '/' ? "" : "/", cg, file);
		v = read_limit(path);
		if (v && (!best || v < best))
			best = v;
		slash = strrchr(cg, '/');
		if (!slash || !cg[0] || !strcmp(cg, "/"))
			break;
		if (slash == cg)
			slash[1] = '\0'; /* "/a" -> "/" */
		else
			*slash = '\0';
	}
	return best;
}

/* See agent_budget.h. */
uint64_t agent_budget__cgroup_limit(const char *proc_cgroup, const char *sys_root)
{
	char line[4096], dir[4096];
	uint64_t best = 0;
	FILE *f = fopen(proc_cgroup, "re");

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f)) {
		char *ctl = strchr(line, ':'), *path, *nl;
		uint64_t v = 0;

		if (!ctl || !(path = strchr(ctl + 1, ':')))
			continue;
		ctl++;
		*path++ = '\0';
		nl = strchr(path, '\n');
		if (nl)
			*nl = '\0';
		if (!*ctl) { /* v2: "0::/path" */
			v = walk_up(sys_root, path, "memory.max");
		} else {
			for (char *t = strtok(ctl, ","); t; t = strtok(NULL, ","))
				if (!strcmp(t, "memory")) {
					snprintf(dir, sizeof(dir), "%s/memory", sys_root);
					v = walk_up(dir, path, "memory.limit_in_bytes");
				}
		}
		if (v && (!best || v < best))
			best = v;
	}
	fclose(f);
	return best;
}

/* See agent_budget.h. */
int agent_budget__check(struct agent_budget *b, char *err, size_t errlen)
{
	b->total = b->pipeline + b->windows + b->queue + b->base;
	if (!b->limit || b->total <= b->limit)
		return 0;
	snprintf(err, errlen,
		 "the memory bounds add up to %" PRIu64
		 " MiB (caches, BPF maps and ring buffer %" PRIu64 ", profile windows %" PRIu64
		 ", export queue %" PRIu64 ", base %" PRIu64
		 ") but this cgroup's memory limit is %" PRIu64
		 " MiB: lower --symcache-bytes or --max-procs, or raise the limit",
		 b->total >> 20, b->pipeline >> 20, b->windows >> 20, b->queue >> 20, b->base >> 20,
		 b->limit >> 20);
	return -E2BIG;
}
