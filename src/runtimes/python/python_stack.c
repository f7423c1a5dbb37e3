// SPDX-License-Identifier: Apache-2.0
/* Places Python frames where their eval-loop activations sit in a native user stack. */
#include "runtimes/python/python_stack.h"

#include <string.h>

#define EVAL_NAME "_PyEval_EvalFrameDefault"

/* See python_stack.h. */
bool python_stack__is_eval(const char *function)
{
	size_t n = sizeof(EVAL_NAME) - 1;

	/* (called for every native frame of every sample: most names differ at once) */
	return function && function[0] == '_' && function[1] == 'P' &&
	       strncmp(function, EVAL_NAME, n) == 0 && (function[n] == '\0' || function[n] == '.');
}

static const struct frame py_depth_marker = {
	.kind = FRAME_TRUNCATED,
	.function = "[truncated: python stack deeper than the frame limit]",
};

/* See python_stack.h. */
int python_stack__merge(const struct frame *native, int n_native, const struct frame *py,
			const bool *act_end, int n_py, bool py_truncated, struct frame *out,
			int max, struct python_merge_stats *st)
{
	int k = 0, j = 0, i, tail = n_native, evals = 0, acts = 0, skip = 0;

	memset(st, 0, sizeof(*st));
	/* a trailing truncation marker stays last */
	if (tail > 0 && native[tail - 1].kind == FRAME_TRUNCATED)
		tail--;
	/*
	 * A complete native stack with more eval-loop activations than the Python chain has:
	 * the innermost activation has just started or is returning and has no frame linked.
	 * Only the innermost can lack one, so match from the root: those leaf-side eval frames
	 * stay native.
	 */
	if (tail == n_native && !py_truncated) {
		for (i = 0; i < tail; i++)
			evals += python_stack__is_eval(native[i].function);
		for (int q = 0; q < n_py; q++)
			acts += act_end[q] || q == n_py - 1;
		if (evals > acts)
			skip = evals - acts;
	}
	for (i = 0; i < tail && k < max; i++) {
		if (!python_stack__is_eval(native[i].function)) {
			out[k++] = native[i];
			continue;
		}
		if (skip > 0) {
			skip--;
			st->bare_evals++;
			out[k++] = native[i];
			continue;
		}
		if (j < n_py) {
			st->activations++;
			while (j < n_py && k < max) {
				out[k++] = py[j];
				if (act_end[j++])
					break;
			}
			continue;
		}
		if (py_truncated && n_py > 0) {
			/* the rest of the stack is older than what was read: end here */
			if (k < max)
				out[k++] = py_depth_marker;
			return k;
		}
		st->bare_evals++;
		out[k++] = native[i];
	}
	st->leftover = (unsigned int)(n_py - j);
	while (j < n_py && k < max)
		out[k++] = py[j++];
	if (py_truncated && n_py > 0 && k < max && tail == n_native) {
		out[k++] = py_depth_marker;
		return k;
	}
	for (i = tail; i < n_native && k < max; i++)
		out[k++] = native[i];
	return k;
}
