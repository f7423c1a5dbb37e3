/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Opening the files another process maps, as it sees them, without trusting it (a profiled
 * process may be hostile): inside its root, only the very file it maps, never on a FUSE
 * mount (proc.c's proc_cache__open_map uses these after /proc/PID/map_files).
 */
#ifndef MLPROF_FOREIGN_FILE_H
#define MLPROF_FOREIGN_FILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* Devices whose FUSE-ness is remembered, direct-mapped by device. */
#define FUSE_SLOTS 64

/* foreign_file__on_fuse's answers (zeroed: none known). */
struct fuse_devs {
	struct fuse_dev {
		bool known, fuse;
		uint64_t dev, when;
	} slot[FUSE_SLOTS];
};

/*
 * Opens path (as process pid's maps give it) inside the process's root
 * (proc_root/PID/root): openat2(RESOLVE_IN_ROOT) keeps symlinks and ".." inside that root
 * (magic links refused), O_NONBLOCK keeps a FIFO or a device from blocking, and only a
 * regular file that is the mapped one (device major:minor and inode as the maps line gives
 * them; overlayfs and btrfs report other devices) is accepted. name receives the path, for
 * messages. Returns the fd (the caller closes it) or -errno: -ESTALE when the file found is
 * not the mapped one.
 */
int foreign_file__open_in_root(const char *proc_root, pid_t pid, const char *path, uint32_t major,
			       uint32_t minor, uint64_t inode, char *name, size_t len);
/*
 * Whether device major:minor (an anonymous device: major 0) is a FUSE mount, from the
 * mount table of process pid, which procfs writes without asking any file system. A FUSE
 * file is never opened: a stopped or hostile FUSE server would block the open (and every
 * later page read) of the thread that profiles the whole host. Answers are kept in fd for a
 * minute; the first FUSE answer for a device is logged.
 */
bool foreign_file__on_fuse(struct fuse_devs *fd, const char *proc_root, pid_t pid, uint32_t major,
			   uint32_t minor);

#endif
