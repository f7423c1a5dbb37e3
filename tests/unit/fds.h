/* SPDX-License-Identifier: Apache-2.0 */
/* This process's open file descriptors, for unit tests that check none is leaked or kept. */
#ifndef MLPROF_TEST_FDS_H
#define MLPROF_TEST_FDS_H

#include <dirent.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

/*
 * Open descriptors of this process (the one that reads /proc/self/fd included) whose link
 * target starts with prefix and ends with suffix; prefix NULL: all of them. -1 when
 * /proc/self/fd cannot be read.
 */
static inline int count_fds(const char *prefix, const char *suffix)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *de;
	int n = 0;

	if (!d)
		return -1;
	while ((de = readdir(d))) {
		char path[320], target[256];
		size_t pl = prefix ? strlen(prefix) : 0, sl = suffix ? strlen(suffix) : 0;
		ssize_t len;

		if (de->d_name[0] == '.')
			continue;
		if (!prefix) {
			n++;
			continue;
		}
		snprintf(path, sizeof(path), "/proc/self/fd/%s", de->d_name);
		len = readlink(path, target, sizeof(target) - 1);
		if (len < (ssize_t)(pl + sl))
			continue;
		target[len] = '\0';
		n += !strncmp(target, prefix, pl) &&
		     !strcmp(target + len - sl, suffix ? suffix : "");
	}
	closedir(d);
	return n;
}

#endif
