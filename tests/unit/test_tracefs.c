// SPDX-License-Identifier: Apache-2.0
/* Root test: tracefs__ensure mounts tracefs where it is missing, and says so when it cannot. */
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <linux/capability.h>

#include "capture/tracefs.h"
#include "check.h"
#include "util/log.h"

static int has_events(const char *dir)
{
	char path[64];

	snprintf(path, sizeof(path), "%s/events", dir);
	return access(path, F_OK) == 0;
}

/* Unmounts every tracefs this mount namespace sees at the two places libbpf looks. */
static void unmount_tracefs(void)
{
	while (!umount2(TRACEFS_DIR, MNT_DETACH))
		;
	while (!umount2(TRACEFS_DEBUGFS_DIR, MNT_DETACH))
		;
}

static int drop_sys_admin(void)
{
	struct __user_cap_header_struct hdr = {.version = _LINUX_CAPABILITY_VERSION_3};
	struct __user_cap_data_struct data[_LINUX_CAPABILITY_U32S_3] = {0};

	if (syscall(SYS_capget, &hdr, data))
		return -errno;
	data[CAP_SYS_ADMIN / 32].effective &= ~(1u << (CAP_SYS_ADMIN % 32));
	return syscall(SYS_capset, &hdr, data) ? -errno : 0;
}

/* In a child: tracefs absent and CAP_SYS_ADMIN dropped: an error, not a mount. Exit code. */
static int child_without_sys_admin(void)
{
	if (drop_sys_admin())
		return 2;
	if (tracefs__ensure() != -EPERM)
		return 3;
	return has_events(TRACEFS_DIR) ? 4 : 0;
}

int main(void)
{
	int status = 0;
	pid_t pid;

	if (geteuid() != 0) {
		printf("SKIPPED: tracefs: needs root (mount namespaces, mount)\n");
		return 77;
	}
	log__setup(LOG_INFO, false);
	/* a private mount namespace: the host's tracefs stays as it is */
	if (unshare(CLONE_NEWNS) || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL)) {
		printf("SKIPPED: tracefs: cannot make a private mount namespace: %s\n",
		       strerror(errno));
		return 77;
	}
	unmount_tracefs();
	CHECK(!has_events(TRACEFS_DIR), "tracefs still visible after unmounting it");

	pid = fork();
	if (pid == 0)
		_exit(child_without_sys_admin());
	CHECK(pid > 0 && waitpid(pid, &status, 0) == pid, "fork/wait");
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0,
	      "without CAP_SYS_ADMIN: child status %d (2 capset, 3 not -EPERM, 4 mounted)", status);

	CHECK_INT(tracefs__ensure(), 0);
	CHECK(has_events(TRACEFS_DIR), "tracefs not mounted at " TRACEFS_DIR);
	/* the sched_switch id that libbpf reads to attach is there */
	CHECK(access(TRACEFS_DIR "/events/sched/sched_switch/id", R_OK) == 0, "no sched_switch id");
	/* mounted already: nothing to do */
	CHECK_INT(tracefs__ensure(), 0);
	return check_done("tracefs");
}
