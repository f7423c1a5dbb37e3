// SPDX-License-Identifier: Apache-2.0
/* File-system helpers shared by the outputs (profile files, spool). */
#include "util/fsutil.h"

#include <errno.h>
#include <limits.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* See fsutil.h. */
int fsutil__mkdir_p(const char *dir, mode_t leaf_mode)
{
	char path[PATH_MAX];
	struct stat st;
	size_t len = strlen(dir), i;

	if (!len)
		return -EINVAL;
	if (len >= sizeof(path))
		return -ENAMETOOLONG;
	memcpy(path, dir, len + 1);
	for (i = 1; i < len; i++) {
		if (path[i] != '/')
			continue;
		path[i] = 0;
		if (mkdir(path, 0755) && errno != EEXIST)
			return -errno;
		path[i] = '/';
	}
	if (mkdir(path, leaf_mode) && errno != EEXIST)
		return -errno;
	if (stat(path, &st))
		return -errno;
	if (!S_ISDIR(st.st_mode))
		return -ENOTDIR;
	return access(path, W_OK | X_OK) ? -errno : 0;
}

/* See fsutil.h. */
const char *fsutil__base_name(const char *path)
{
	const char *slash = strrchr(path, '/');

	return slash ? slash + 1 : path;
}
