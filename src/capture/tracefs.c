// SPDX-License-Identifier: Apache-2.0
/* Makes sure the kernel's tracefs is mounted before tracepoints are attached. */
#define LOG_MODULE "tracefs"
#include "util/log.h"

#include "capture/tracefs.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>

/* stat, not access(2): access checks the real uid without capabilities (CAP_DAC_READ_SEARCH) */
static int has_events(const char *dir)
{
	char path[64];
	struct stat st;

	snprintf(path, sizeof(path), "%s/events", dir);
	return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

/* See tracefs.h. */
int tracefs__ensure(void)
{
	int err;

	if (has_events(TRACEFS_DIR) || has_events(TRACEFS_DEBUGFS_DIR))
		return 0;
	if (mount("nodev", TRACEFS_DIR, "tracefs", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL))
		err = errno;
	else if (!has_events(TRACEFS_DIR))
		err = ENOENT;
	else {
		pr_info("tracefs was not mounted: mounted it at %s", TRACEFS_DIR);
		return 0;
	}
	pr_err("tracefs is not mounted and mounting it at %s failed: %s (mount it first: mount -t "
	       "tracefs nodev %s)",
	       TRACEFS_DIR, strerror(err), TRACEFS_DIR);
	return -err;
}
