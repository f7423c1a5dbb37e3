// SPDX-License-Identifier: Apache-2.0
/*
 * libFuzzer target: fitting a pprof to limits (src/pprof_limits.c): gzip inflation,
 * protobuf decoding and the trim. The limits are parameters of the same code; the target
 * uses small ones (16 samples, 4 KiB, fast path under 256 bytes, 1 MiB inflated) so that
 * every input that reaches the trim costs microseconds, not the milliseconds of 16001
 * samples (Pyroscope's limits are tested in unit.exporter). Profiles under the fast-path
 * size are not decoded, so the first input byte picks what the target does with the
 * rest, P:
 *   0: P as is (gzip or raw pprof);
 *   1: P followed by an unknown field padding it past the fast path (decoded; it fits
 *      unless P is large);
 *   2: byte 2 is n; the last n bytes of P are a Sample message body: the rest of P
 *      followed by 17 copies of that Sample, past the 16-sample limit, so that the trim
 *      runs on the fuzzer's samples.
 * A trimmed result must itself decode and fit the limits.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_util.h"
#include "profile.pb-c.h"
#include "profile/pprof_limits.h"
#include "util/gzip.h"

static const struct pprof_limits limits = {
	.max_bytes = 4096,
	.max_samples = 16,
	.fast_path_bytes = 256,
	.max_inflate = 1u << 20,
};

#define PAD_BYTES  256 /* == limits.fast_path_bytes */
#define N_COPIES   17  /* limits.max_samples + 1 */
#define MAX_SAMPLE 127 /* one-byte length prefix */

static uint8_t *build(const uint8_t *data, size_t size, size_t *out_len)
{
	uint8_t mode = data[0], n = 0;
	size_t len, cap;
	uint8_t *buf;

	data++;
	size--;
	if (mode == 2) {
		if (!size)
			return NULL;
		n = data[0] % (MAX_SAMPLE + 1);
		data++;
		size--;
		if (n > size)
			n = (uint8_t)size;
	}
	cap = size + PAD_BYTES + 16 + (size_t)N_COPIES * (2 + MAX_SAMPLE);
	buf = malloc(cap);
	if (!buf)
		return NULL;
	len = size - n;
	memcpy(buf, data, len);
	if (mode == 1) {
		/* field 1000, wire type 2, length PAD_BYTES (varint 0x80 0x02) */
		static const uint8_t tag[] = {0xc2, 0x3e, 0x80, 0x02};

		memcpy(buf + len, tag, sizeof(tag));
		memset(buf + len + sizeof(tag), 'x', PAD_BYTES);
		len += sizeof(tag) + PAD_BYTES;
	} else if (mode == 2) {
		for (int i = 0; i < N_COPIES; i++) {
			buf[len++] = 0x12; /* Profile.sample, length delimited */
			buf[len++] = n;
			memcpy(buf + len, data + size - n, n);
			len += n;
		}
	}
	*out_len = len;
	return buf;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	Perftools__Profiles__Profile *p = NULL;
	uint8_t *in = NULL, *out = NULL, *raw = NULL;
	size_t in_len = 0, out_len = 0, raw_len = 0;
	int err;

	fuzz__quiet();
	if (size < 1 || data[0] > 2)
		return 0;
	if (data[0] == 0) {
		in_len = size - 1;
		in = malloc(in_len ? in_len : 1);
		if (!in)
			return 0;
		memcpy(in, data + 1, in_len);
	} else {
		in = build(data, size, &in_len);
		if (!in)
			return 0;
	}
	err = pprof_limits__fit_to(&limits, in, in_len, &out, &out_len);
	if (err == 0 && out) {
		if (gzip__decompress(out, out_len, limits.max_inflate, &raw, &raw_len))
			__builtin_trap();
		p = perftools__profiles__profile__unpack(NULL, raw_len, raw);
		if (!p || raw_len > limits.max_bytes || p->n_sample > limits.max_samples)
			__builtin_trap();
		perftools__profiles__profile__free_unpacked(p, NULL);
	}
	free(raw);
	free(out);
	free(in);
	return 0;
}
