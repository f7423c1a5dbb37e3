/* SPDX-License-Identifier: Apache-2.0 */
/* Places Python frames where their eval-loop activations sit in a native user stack. */
#ifndef MLPROF_PYTHON_STACK_H
#define MLPROF_PYTHON_STACK_H

#include <stdbool.h>

#include "profile/frame.h"

/* True when a native frame's function is CPython's eval loop (or its .cold part). */
bool python_stack__is_eval(const char *function);

struct python_merge_stats {
	unsigned int activations; /* Python activations placed on a native eval frame */
	unsigned int leftover;	  /* Python frames with no eval frame left (appended) */
	unsigned int bare_evals;  /* eval frames with no Python frames left (kept native) */
};

/*
 * Merges, leaf first: native[0..n_native) (user frames, possibly ending in a truncation
 * marker) and py[0..n_py) (Python frames, leaf first, act_end[i] set on the last frame of
 * each eval-loop activation). Each native eval frame is replaced by the Python frames of
 * the next activation; Python frames left over when the native stack runs out go after the
 * last native frame (before its truncation marker). With py_truncated (the Python chain
 * was cut at its depth limit) the stack ends in an explicit truncation frame once the
 * Python frames are used up. Writes at most max frames to out; returns the count.
 */
int python_stack__merge(const struct frame *native, int n_native, const struct frame *py,
			const bool *act_end, int n_py, bool py_truncated, struct frame *out,
			int max, struct python_merge_stats *st);

#endif
