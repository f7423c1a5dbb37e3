/* SPDX-License-Identifier: Apache-2.0 */
/* Helpers shared by the libFuzzer targets: quiet logs, a private scratch directory. */
#ifndef MLPROF_FUZZ_UTIL_H
#define MLPROF_FUZZ_UTIL_H

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/log.h"

/* Errors only: a parser logging every rejected input would slow the fuzzer down. */
static inline void fuzz__quiet(void)
{
	static bool done;

	if (!done) {
		log__setup(LOG_ERROR, false);
		done = true;
	}
}

static inline int fuzz__rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	remove(path);
	return 0;
}

static char fuzz__dir[64];

static inline void fuzz__rm_tmpdir(void)
{
	nftw(fuzz__dir, fuzz__rm_one, 8, FTW_DEPTH | FTW_PHYS);
}

/*
 * A scratch directory of this process (tmpfs when there is one), created once; the
 * fuzzer's parallel jobs each get their own, removed at exit. Aborts when it cannot be made: a
 * target without it would test nothing.
 */
static inline const char *fuzz__tmpdir(void)
{
	char *dir = fuzz__dir;

	if (!dir[0]) {
		const char *base = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";

		snprintf(dir, sizeof(fuzz__dir), "%s/mlprof-fuzz-XXXXXX", base);
		if (!mkdtemp(dir)) {
			perror("fuzz: mkdtemp");
			abort();
		}
		atexit(fuzz__rm_tmpdir);
	}
	return dir;
}

/* Replaces path with exactly len bytes of data; aborts on failure (a full tmpfs). */
static inline void fuzz__write_file(const char *path, const void *data, size_t len)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	const uint8_t *p = data;

	if (fd < 0) {
		perror("fuzz: open");
		abort();
	}
	while (len) {
		ssize_t w = write(fd, p, len);

		if (w <= 0) {
			perror("fuzz: write");
			abort();
		}
		p += w;
		len -= (size_t)w;
	}
	close(fd);
}

/* Splits the input: takes a little-endian u16 (0 when the input is too short). */
static inline uint16_t fuzz__take_u16(const uint8_t **data, size_t *size)
{
	uint16_t v;

	if (*size < 2)
		return 0;
	v = (uint16_t)((*data)[0] | (*data)[1] << 8);
	*data += 2;
	*size -= 2;
	return v;
}

#endif
