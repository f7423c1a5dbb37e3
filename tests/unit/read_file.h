/* SPDX-License-Identifier: Apache-2.0 */
/* A whole file read into memory, for unit tests that corrupt copies of real files. */
#ifndef MLPROF_TEST_READ_FILE_H
#define MLPROF_TEST_READ_FILE_H

#include <stdio.h>
#include <stdlib.h>

/* The file's bytes (malloc'd, *len of them), or NULL when it cannot be read or is empty. */
static inline void *read_file(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	void *buf = NULL;
	long n;

	if (!f)
		return NULL;
	if (fseek(f, 0, SEEK_END) == 0 && (n = ftell(f)) > 0 && fseek(f, 0, SEEK_SET) == 0) {
		buf = malloc((size_t)n);
		if (buf && fread(buf, 1, (size_t)n, f) != (size_t)n) {
			free(buf);
			buf = NULL;
		}
		*len = (size_t)n;
	}
	fclose(f);
	return buf;
}

#endif
