/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The training phase a stack's Python frames show, for PyTorch processes whose scopes are
 * not probed (runtimes/torch/steps.h, steps__phase_by_frames): in an optimizer's step (a
 * frame of torch/optim/ whose function names a step) or in a DataLoader's __next__
 * (torch/utils/data/).
 */
#ifndef MLPROF_PHASE_FRAMES_H
#define MLPROF_PHASE_FRAMES_H

#include "profile/frame.h"

/* STEP_DATA_WAIT, STEP_OPTIMIZER (the first of the two in phase order), or -1. */
int phase_frames__classify(const struct frame *frames, int n);

#endif
