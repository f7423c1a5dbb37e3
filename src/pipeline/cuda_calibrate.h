/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The CUDA profiles of a recording calibrated to BPF's exact counts: kernel launches per
 * process and kernel, graph launches and NCCL calls per process. Their stacks are sampled
 * (--cuda-rate) and captures can be lost (ring buffer full, the per-CPU cap); the counts are
 * not.
 */
#ifndef MLPROF_CUDA_CALIBRATE_H
#define MLPROF_CUDA_CALIBRATE_H

#include <mlprof/sample.h>

#include "profile/calibrate.h"

struct pipeline;
struct profile;

/*
 * Calibrates prof[MLPROF_SK_CUDA_LAUNCH], [MLPROF_SK_CUDA_GRAPH] and [MLPROF_SK_NCCL] (those
 * not NULL) to pl's exact counts; out[kind] says what changed (may be NULL). Call once,
 * after the last sample was emitted. Returns 0 or -ENOMEM.
 */
int cuda_calibrate__profiles(struct pipeline *pl, struct profile *const prof[MLPROF_SK__COUNT],
			     struct calib_stats out[MLPROF_SK__COUNT]);

#endif
