// SPDX-License-Identifier: Apache-2.0
/* libFuzzer target: /proc/PID/cgroup parsing (src/cgroup.c): container id, pod uid, path. */
#include <stdint.h>
#include <string.h>

#include "agent/cgroup.h"
#include "fuzz_util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct cgroup_info ci;
	size_t n;

	fuzz__quiet();
	labels__parse_cgroup((const char *)data, size, &ci);
	/* every field NUL-terminated inside its array, ids in their documented shape */
	if (strnlen(ci.path, sizeof(ci.path)) == sizeof(ci.path) ||
	    strnlen(ci.pod_uid, sizeof(ci.pod_uid)) == sizeof(ci.pod_uid))
		__builtin_trap();
	n = strnlen(ci.container_id, sizeof(ci.container_id));
	if (n != 0 && n != 64)
		__builtin_trap();
	for (size_t i = 0; i < n; i++)
		if (!((ci.container_id[i] >= '0' && ci.container_id[i] <= '9') ||
		      (ci.container_id[i] >= 'a' && ci.container_id[i] <= 'f')))
			__builtin_trap();
	n = strlen(ci.pod_uid);
	if (n != 0 && n != 36)
		__builtin_trap();
	return 0;
}
