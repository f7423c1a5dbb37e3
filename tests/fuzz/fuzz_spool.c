// SPDX-License-Identifier: Apache-2.0
/*
 * libFuzzer target: the spool reader (src/spool.c) through spool__open + spool__read_oldest
 * over a scratch directory holding one spool file. The first input byte picks the form:
 *   even: the rest is the whole file (header, zstd frame and all);
 *   odd:  the rest is a payload, which the target wraps in a valid header (zstd-compressed,
 *         right length and CRC) so that the fuzzer reaches the payload decoder itself.
 * A record that reads back must be self-consistent; a corrupt file must be removed.
 */
#include <stdint.h>
#include <stdio.h>
#include <zlib.h>
#include <zstd.h>

#include "export/spool.h"
#include "fuzz_util.h"

#define HDR 16

static void put_u32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
	p[2] = (uint8_t)(v >> 16);
	p[3] = (uint8_t)(v >> 24);
}

/* Writes the spool file form of payload pl to path. */
static void write_wrapped(const char *path, const uint8_t *pl, size_t len)
{
	size_t bound = ZSTD_compressBound(len), z;
	uint8_t *file = malloc(HDR + bound);

	if (!file)
		abort();
	memcpy(file, "MLSP", 4);
	put_u32(file + 4, 1);
	put_u32(file + 8, (uint32_t)len);
	put_u32(file + 12, (uint32_t)crc32(0, pl, (uInt)len));
	z = ZSTD_compress(file + HDR, bound, pl, len, 1);
	if (ZSTD_isError(z))
		abort();
	fuzz__write_file(path, file, HDR + z);
	free(file);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static char dir[128], path[192];
	struct spool_record *r = NULL;
	struct spool_stats st;
	struct spool *s;
	volatile uint64_t sink = 0;
	int err;

	fuzz__quiet();
	if (size < 1)
		return 0;
	if (!dir[0]) {
		snprintf(dir, sizeof(dir), "%s/spool", fuzz__tmpdir());
		snprintf(path, sizeof(path), "%s/%020d.spool", dir, 7);
	}
	s = spool__open(dir, 0, 0); /* creates dir the first time */
	if (!s)
		abort();
	spool__close(s);
	if (data[0] & 1)
		write_wrapped(path, data + 1, size - 1);
	else
		fuzz__write_file(path, data + 1, size - 1);

	s = spool__open(dir, 0, 0);
	if (!s)
		abort();
	err = spool__read_oldest(s, &r);
	spool__stats(s, &st);
	if (err == 0) {
		if (r->order != 7 || r->item.n_labels < 0 || (r->item.pprof_len && !r->item.pprof))
			__builtin_trap();
		for (int i = 0; i < r->item.n_labels; i++)
			sink += strlen(r->item.labels[i].name) + strlen(r->item.labels[i].value);
		if (r->item.pprof_len)
			sink += r->item.pprof[r->item.pprof_len - 1];
		spool__record_free(r);
		spool__remove(s, 7);
	} else if (err != -ENOENT || st.corrupt != 1 || access(path, F_OK) == 0) {
		/* a file that does not read back is counted and removed, nothing else */
		__builtin_trap();
	}
	spool__close(s);
	unlink(path);
	(void)sink;
	return 0;
}
