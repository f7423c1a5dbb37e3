/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The CUDA profiles of a recording calibrated to BPF's exact counts: kernel launches per
 * process and kernel, graph launches and NCCL calls per process. Their stacks are sampled
 * (--cuda-rate) and captures can be lost (ring buffer full, the per-CPU cap); the counts are
 * not.
 */
#ifndef MLPROF_CUDA_CALIBRATE_H
#define MLPROF_CUDA_CALIBRATE_H

#include <stddef.h>
#include <stdint.h>

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

/*
 * The agent's window (pipeline_config.cuda_count_window_ns): takes the exact counts of
 * window and calibrates each profile prof[i] of kind kind[i] (launches, graph launches,
 * NCCL; others are left alone) to the counts of the processes it has samples of (a series
 * holds one service's). total sums what changed; total->unplaced counts the calls of
 * processes no profile had a sample of. Returns 0 or -ENOMEM.
 */
int cuda_calibrate__window(struct pipeline *pl, uint64_t window, struct profile *const *prof,
			   const enum mlprof_sample_kind *kind, size_t n,
			   struct calib_stats *total);

#endif
