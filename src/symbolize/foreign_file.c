// SPDX-License-Identifier: Apache-2.0
/*
 * Opening the files another process maps, as it sees them, without trusting it: inside its
 * root, only the very file it maps, never on a FUSE mount.
 */
#define LOG_MODULE "proc"
#include "util/log.h"

#include "symbolize/foreign_file.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "util/clock.h"

/* How long a device's FUSE-ness is remembered (device numbers are reused after an unmount). */
#define FUSE_TTL_NS (60ull * 1000 * 1000 * 1000)

/*
 * True when the file open on fd is the one a mapping maps (device major:minor, inode, as the
 * maps line gives them: the file the kernel mapped). The maps line gives the device and
 * inode of the file the kernel mapped. On overlayfs (container images) that is the file in
 * the layer below, while fstat through the overlay reports the overlay's device and the
 * layer's inode number (with xino, layer bits on top); btrfs reports a per-subvolume
 * device: there the inode number alone must match.
 */
static bool same_file(int fd, const struct stat *st, uint32_t major, uint32_t minor, uint64_t inode)
{
	const uint64_t low48 = (1ull << 48) - 1;
	struct statfs sfs;

	if (st->st_dev == makedev(major, minor) && st->st_ino == inode)
		return true;
	if (fstatfs(fd, &sfs))
		return false;
	if ((unsigned long)sfs.f_type == OVERLAYFS_SUPER_MAGIC)
		return ((uint64_t)st->st_ino & low48) == (inode & low48);
	if ((unsigned long)sfs.f_type == BTRFS_SUPER_MAGIC)
		return st->st_ino == inode;
	return false;
}

/* See foreign_file.h. */
int foreign_file__open_in_root(const char *proc_root, pid_t pid, const char *path, uint32_t major,
			       uint32_t minor, uint64_t inode, char *name, size_t len)
{
	struct open_how how = {
		.flags = O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY,
		.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS,
	};
	char root[320];
	int rootfd, fd, err = 0;
	struct stat st;

	snprintf(root, sizeof(root), "%s/%d/root", proc_root, (int)pid);
	rootfd = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (rootfd < 0) {
		err = -errno;
		pr_debug("cannot open %s: %s", root, strerror(-err));
		return err;
	}
	fd = (int)syscall(SYS_openat2, rootfd, path, &how, sizeof(how));
	if ((size_t)snprintf(name, len, "%s/%d/root%s", proc_root, (int)pid, path) >= len)
		name[len - 1] = '\0';
	if (fd < 0) {
		err = -errno;
		pr_debug("cannot open %s: %s", name, strerror(-err));
	} else if (fstat(fd, &st)) {
		err = -errno;
		pr_debug("cannot stat %s: %s", name, strerror(-err));
	} else if (!S_ISREG(st.st_mode) || !same_file(fd, &st, major, minor, inode)) {
		err = -ESTALE;
		pr_debug("%s: not the file %d maps (%s)", name, (int)pid,
			 S_ISREG(st.st_mode) ? "other device/inode" : "not a regular file");
	}
	close(rootfd);
	if (err && fd >= 0)
		close(fd);
	return err ? err : fd;
}

/* See foreign_file.h. */
bool foreign_file__on_fuse(struct fuse_devs *fd, const char *proc_root, pid_t pid, uint32_t major,
			   uint32_t minor)
{
	uint64_t now = clock__mono_ns(), dev = (uint64_t)major << 32 | minor;
	struct fuse_dev *slot = &fd->slot[dev % FUSE_SLOTS];
	char path[320], line[4096];
	bool fuse = false;
	FILE *f;

	if (major != 0)
		return false;
	if (slot->known && slot->dev == dev && now - slot->when < FUSE_TTL_NS)
		return slot->fuse;
	snprintf(path, sizeof(path), "%s/%d/mountinfo", proc_root, (int)pid);
	f = fopen(path, "re");
	if (f) {
		while (fgets(line, sizeof(line), f)) {
			unsigned int ma, mi;
			const char *sep = strstr(line, " - ");

			/* "36 35 0:42 /root /mnt rw,relatime shared:1 - fuse.bindfs src rw,..." */
			if (!sep || sscanf(line, "%*u %*u %u:%u", &ma, &mi) != 2 || ma != major ||
			    mi != minor)
				continue;
			fuse = !strncmp(sep + 3, "fuse ", 5) || !strncmp(sep + 3, "fuse.", 5) ||
			       !strncmp(sep + 3, "fuseblk ", 8);
			break;
		}
		fclose(f);
	}
	if (fuse && !(slot->known && slot->dev == dev && slot->fuse))
		pr_info("files on the FUSE mount with device 0:%u (seen in pid %d) are not read: a "
			"stalled FUSE server would stall the profiler",
			minor, (int)pid);
	*slot = (struct fuse_dev){.known = true, .fuse = fuse, .dev = dev, .when = now};
	return fuse;
}
