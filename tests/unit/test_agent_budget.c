// SPDX-License-Identifier: Apache-2.0
/* agent_budget: the cgroup memory limit (v1 and v2 trees of the test's own) and the check. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent/agent_budget.h"
#include "check.h"

static char root[64];

static void put(const char *rel, const char *text)
{
	char path[512], cmd[600];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", root, rel);
	snprintf(cmd, sizeof(cmd), "mkdir -p \"$(dirname '%s')\"", path);
	if (system(cmd) != 0)
		exit(2);
	f = fopen(path, "w");
	if (!f)
		exit(2);
	fputs(text, f);
	fclose(f);
}

int main(void)
{
	char pc[512], sys[512], err[512], cmd[128];
	struct agent_budget b = {0};

	snprintf(root, sizeof(root), "/tmp/test_budget.XXXXXX");
	if (!mkdtemp(root))
		return 2;
	snprintf(pc, sizeof(pc), "%s/cgroup", root);
	snprintf(sys, sizeof(sys), "%s/sys", root);

	/* v2: the smallest memory.max on the way up; "max" is no limit */
	put("cgroup", "0::/kubepods/pod1/ctr\n");
	put("sys/memory.max", "max\n");
	put("sys/kubepods/memory.max", "1073741824\n");
	put("sys/kubepods/pod1/memory.max", "402653184\n");
	put("sys/kubepods/pod1/ctr/memory.max", "max\n");
	CHECK_INT(agent_budget__cgroup_limit(pc, sys), 402653184);
	put("sys/kubepods/pod1/memory.max", "max\n");
	CHECK_INT(agent_budget__cgroup_limit(pc, sys), 1073741824);

	/* v1: memory controller line; the "unlimited" value is no limit */
	put("cgroup", "9:name=systemd:/\n4:cpu,memory:/process_api/x\n0::/\n");
	put("sys/memory/process_api/x/memory.limit_in_bytes", "9223372036854771712\n");
	put("sys/memory/process_api/memory.limit_in_bytes", "268435456\n");
	CHECK_INT(agent_budget__cgroup_limit(pc, sys), 268435456);
	put("sys/memory/process_api/memory.limit_in_bytes", "9223372036854771712\n");
	CHECK_INT(agent_budget__cgroup_limit(pc, sys), 0);
	/* no cgroup file: no limit */
	CHECK_INT(agent_budget__cgroup_limit("/nonexistent/cgroup", sys), 0);

	/* the check */
	b.pipeline = 150u << 20;
	b.windows = 64u << 20;
	b.queue = 32u << 20;
	b.base = AGENT_BASE_BYTES;
	b.limit = 384u << 20;
	CHECK_INT(agent_budget__check(&b, err, sizeof(err)), 0);
	CHECK_INT(b.total, (150u + 64 + 32 + 24) << 20);
	b.limit = 128u << 20;
	CHECK_INT(agent_budget__check(&b, err, sizeof(err)), -E2BIG);
	CHECK(strstr(err, "add up to 270 MiB") && strstr(err, "limit is 128 MiB") &&
		      !strchr(err, '\n'),
	      "%s", err);
	b.limit = 0;
	CHECK_INT(agent_budget__check(&b, err, sizeof(err)), 0);

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
	if (system(cmd) != 0)
		fprintf(stderr, "cannot remove %s\n", root);
	return check_done("agent_budget");
}
