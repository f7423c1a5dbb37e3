// SPDX-License-Identifier: Apache-2.0
/* The training phase a stack's Python frames show (optimizer step, DataLoader next). */
#include "pipeline/phase_frames.h"

#include <string.h>

#include "runtimes/torch/steps.h"

/* See phase_frames.h. */
int phase_frames__classify(const struct frame *frames, int n)
{
	int best = -1;

	for (int i = 0; i < n; i++) {
		const struct frame *f = &frames[i];
		size_t len;

		if (f->kind != FRAME_PYTHON || !f->file || !f->function)
			continue;
		len = strlen(f->function);
		if (strstr(f->file, "/torch/utils/data/") && len >= 8 &&
		    !strcmp(f->function + len - 8, "__next__"))
			return STEP_DATA_WAIT; /* the first phase: nothing comes before it */
		/* a step of an optimizer (AdamW.step, the wrapper of Optimizer.step), not the
		 * import of its module */
		if (strstr(f->file, "/torch/optim/") && strstr(f->function, "step"))
			best = STEP_OPTIMIZER;
	}
	return best;
}
