/* SPDX-License-Identifier: Apache-2.0 */
/* A sample after unwinding: the record's fixed part and its user stack as program counters. */
#ifndef MLPROF_UNWOUND_H
#define MLPROF_UNWOUND_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <mlprof/python.h>
#include <mlprof/sample.h>

#include "unwind/unwind.h"

/*
 * What unwinding leaves for symbolization, without the stack copy: samples that wait for
 * their value (off-CPU, synchronize) and allocations still in use are kept in this form.
 */
struct unwound {
	struct mlprof_sample hdr; /* ustack_len and py_nframes of the original record */
	enum unwind_end end;
	bool have_proc;
	uint8_t phase; /* 1 + the training-step phase the thread was in (steps.h), 0: none */
	int nu;
	const uint64_t *pcs;		  /* nu program counters, leaf first */
	const struct mlprof_py_frame *py; /* hdr.py_nframes walker frames, or NULL */
};

/* Bytes of u's program counters and Python frames: what unwound__copy puts in data. */
static inline size_t unwound__data_bytes(const struct unwound *u)
{
	size_t np = u->py ? u->hdr.py_nframes : 0;

	return (size_t)u->nu * sizeof(uint64_t) + np * sizeof(struct mlprof_py_frame);
}

/*
 * Copies src into dst with its program counters and Python frames in data
 * (unwound__data_bytes(src) bytes, 8-byte aligned), so that dst outlives src's buffers.
 */
static inline void unwound__copy(struct unwound *dst, uint64_t *data, const struct unwound *src)
{
	size_t np = src->py ? src->hdr.py_nframes : 0;

	*dst = *src;
	memcpy(data, src->pcs, (size_t)src->nu * sizeof(uint64_t));
	dst->pcs = data;
	if (np) {
		memcpy(data + src->nu, src->py, np * sizeof(struct mlprof_py_frame));
		dst->py = (const void *)(data + src->nu);
	} else {
		dst->py = NULL;
	}
}

#endif
