// SPDX-License-Identifier: Apache-2.0
/* Capability check of the calling thread against what record and the agent need. */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <linux/capability.h>

#include "capture/privilege.h"

/*
 * Each need is met by its own capability or by a broader one the kernel also accepts
 * (bpf_capable(), perfmon_capable(), the DAC checks of generic_permission()).
 */
static const struct {
	int cap;
	int alt; /* -1: none */
	const char *name;
} needs[] = {
	{CAP_BPF, CAP_SYS_ADMIN, "CAP_BPF"},	     /* load programs, maps */
	{CAP_PERFMON, CAP_SYS_ADMIN, "CAP_PERFMON"}, /* perf events, kernel reads */
	{CAP_SYS_PTRACE, -1, "CAP_SYS_PTRACE"},	     /* other users' /proc/PID, memory */
	{CAP_DAC_READ_SEARCH, CAP_DAC_OVERRIDE, "CAP_DAC_READ_SEARCH"}, /* tracefs, any ELF */
};

static bool has(const uint32_t *eff, int cap)
{
	return cap >= 0 && (eff[cap / 32] >> (cap % 32)) & 1;
}

/* See privilege.h. */
int privilege__missing(char *missing, size_t len)
{
	struct __user_cap_header_struct hdr = {.version = _LINUX_CAPABILITY_VERSION_3};
	struct __user_cap_data_struct data[_LINUX_CAPABILITY_U32S_3] = {0};
	uint32_t eff[_LINUX_CAPABILITY_U32S_3];
	size_t off = 0;
	int err = 0;

	if (len)
		missing[0] = '\0';
	if (syscall(SYS_capget, &hdr, data) < 0) {
		err = -errno;
		goto cleanup;
	}
	for (int i = 0; i < _LINUX_CAPABILITY_U32S_3; i++)
		eff[i] = data[i].effective;
	for (size_t i = 0; i < sizeof(needs) / sizeof(needs[0]); i++) {
		int n;

		if (has(eff, needs[i].cap) || has(eff, needs[i].alt))
			continue;
		err = -EPERM;
		if (off >= len)
			continue;
		n = snprintf(missing + off, len - off, "%s%s", off ? ", " : "", needs[i].name);
		off += n > 0 ? (size_t)n : 0;
	}
cleanup:
	return err;
}
