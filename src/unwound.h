/* SPDX-License-Identifier: Apache-2.0 */
/* A sample after unwinding: the record's fixed part and its user stack as program counters. */
#ifndef MLPROF_UNWOUND_H
#define MLPROF_UNWOUND_H

#include <stdbool.h>

#include <mlprof/python.h>
#include <mlprof/sample.h>

#include "unwind.h"

/*
 * What unwinding leaves for symbolization, without the stack copy: samples that wait for
 * their value (off-CPU, synchronize) and allocations still in use are kept in this form.
 */
struct unwound {
	struct mlprof_sample hdr; /* ustack_len and py_nframes of the original record */
	enum unwind_end end;
	bool have_proc;
	int nu;
	const uint64_t *pcs;		  /* nu program counters, leaf first */
	const struct mlprof_py_frame *py; /* hdr.py_nframes walker frames, or NULL */
};

#endif
