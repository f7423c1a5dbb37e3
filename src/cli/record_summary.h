/* SPDX-License-Identifier: Apache-2.0 */
/* The summary `mlprof record` prints at the end: samples, health of each event kind, top. */
#ifndef MLPROF_RECORD_SUMMARY_H
#define MLPROF_RECORD_SUMMARY_H

#include <stdbool.h>
#include <stdint.h>

#include <mlprof/sample.h>

struct calib_stats;
struct pipeline;
struct profile;

struct record_summary {
	struct profile *const *prof; /* [MLPROF_SK__COUNT], NULL for kinds not collected */
	struct pipeline *pl;
	double secs;
	unsigned int freq_hz;
	uint32_t ustack_bytes;
	unsigned long memory_sample_kib;
	unsigned long cuda_tensor_sample_kib;
	bool cuda; /* CUDA/NCCL probes were on */
	/* [MLPROF_SK__COUNT]: how the CUDA profiles were calibrated to the exact counts */
	const struct calib_stats *calib;
};

/* Prints the summary on stderr. */
void record_summary__print(const struct record_summary *rs);

#endif
