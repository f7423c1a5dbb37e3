/* SPDX-License-Identifier: Apache-2.0 */
/* gzip in memory (pprof files and uploads are gzip-compressed protobuf). */
#ifndef MLPROF_GZIP_H
#define MLPROF_GZIP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* True when p starts with the gzip magic bytes. */
static inline bool gzip__is_gzip(const uint8_t *p, size_t len)
{
	return len >= 2 && p[0] == 0x1f && p[1] == 0x8b;
}

/*
 * Compresses in (level 6, the zlib default) into a malloc'd gzip stream *out of *out_len
 * bytes (caller frees). Returns 0, -ENOMEM, -EFBIG (input over 4 GiB) or -EIO.
 */
int gzip__compress(const uint8_t *in, size_t len, uint8_t **out, size_t *out_len);

/*
 * Inflates the gzip stream in into a malloc'd buffer *out of *out_len bytes (caller frees),
 * at most max bytes. Returns 0, -E2BIG (over max), -EBADMSG (not gzip, corrupt or
 * truncated) or -ENOMEM.
 */
int gzip__decompress(const uint8_t *in, size_t len, size_t max, uint8_t **out, size_t *out_len);

#endif
