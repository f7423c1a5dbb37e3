// SPDX-License-Identifier: Apache-2.0
/* gzip compression and bounded decompression of in-memory buffers (zlib). */
#include "util/gzip.h"

#include <errno.h>
#include <stdlib.h>
#include <zlib.h>

/* See gzip.h. */
int gzip__compress(const uint8_t *in, size_t len, uint8_t **out, size_t *out_len)
{
	z_stream zs = {0};
	uint8_t *buf = NULL;
	size_t cap;
	int err;

	if (deflateInit2(&zs, 6, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY) != Z_OK)
		return -ENOMEM;
	cap = deflateBound(&zs, (uLong)len) + 32;
	if (len > UINT32_MAX || cap > UINT32_MAX) {
		err = -EFBIG;
		goto cleanup;
	}
	buf = malloc(cap);
	if (!buf) {
		err = -ENOMEM;
		goto cleanup;
	}
	zs.next_in = (Bytef *)in;
	zs.avail_in = (uInt)len;
	zs.next_out = buf;
	zs.avail_out = (uInt)cap;
	if (deflate(&zs, Z_FINISH) != Z_STREAM_END) {
		err = -EIO;
		goto cleanup;
	}
	*out = buf;
	*out_len = zs.total_out;
	buf = NULL;
	err = 0;
cleanup:
	deflateEnd(&zs);
	free(buf);
	return err;
}

/* See gzip.h. */
int gzip__decompress(const uint8_t *in, size_t len, size_t max, uint8_t **out, size_t *out_len)
{
	z_stream zs = {0};
	size_t cap = len * 4 + 1024;
	uint8_t *buf, *nb;
	int zr, err = 0;

	if (len > UINT32_MAX)
		return -EBADMSG;
	buf = malloc(cap);
	if (!buf)
		return -ENOMEM;
	if (inflateInit2(&zs, 16 + MAX_WBITS) != Z_OK) {
		free(buf);
		return -ENOMEM;
	}
	zs.next_in = (Bytef *)in;
	zs.avail_in = (uInt)len;
	do {
		if (zs.total_out == cap) {
			if (cap >= max) {
				err = -E2BIG;
				goto cleanup;
			}
			cap *= 2;
			nb = realloc(buf, cap);
			if (!nb) {
				err = -ENOMEM;
				goto cleanup;
			}
			buf = nb;
		}
		zs.next_out = buf + zs.total_out;
		zs.avail_out = (uInt)(cap - zs.total_out);
		zr = inflate(&zs, Z_NO_FLUSH);
	} while (zr == Z_OK);
	if (zr != Z_STREAM_END) {
		err = -EBADMSG;
		goto cleanup;
	}
	*out = buf;
	*out_len = zs.total_out;
	buf = NULL;
cleanup:
	inflateEnd(&zs);
	free(buf);
	return err;
}
