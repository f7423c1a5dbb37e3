/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Exact CUDA/NCCL call counts (BPF's counts map, MLPROF_SK_CUDA_*): each launch's count
 * named by the kernel it launched; those of exited processes kept, named when they exited.
 */
#ifndef MLPROF_CUDA_COUNTS_H
#define MLPROF_CUDA_COUNTS_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "pipeline/pipeline_config.h"

struct pipeline;

/* pipeline__cuda_counts (see pipeline.h). */
int cuda_counts__all(struct pipeline *pl, pipeline_count_cb cb, void *ctx);
/* pipeline__cuda_counts_take (see pipeline.h). */
int cuda_counts__take(struct pipeline *pl, uint64_t window, pipeline_count_cb cb, void *ctx);
/*
 * Whether a launch count of exited process pid cannot be named yet because the index of
 * the file holding its host stub is still being built (then the pid waits on the exited
 * list, like a process with parked samples).
 */
bool cuda_counts__wait_index(struct pipeline *pl, pid_t pid);
/* Takes exited process pid's counts from BPF and keeps them, named now (bounded: DONE_MAX). */
void cuda_counts__keep_exited(struct pipeline *pl, pid_t pid);
/* Frees the kept counts. */
void cuda_counts__clear(struct pipeline *pl);

#endif
