/* SPDX-License-Identifier: Apache-2.0 */
/* `mlprof record`'s command line: its options, their parsing and checks before recording. */
#ifndef MLPROF_RECORD_OPTS_H
#define MLPROF_RECORD_OPTS_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include <mlprof/sample.h>

#include "pipeline/pipeline_config.h"
#include "profile/output.h"
#include "runtimes/cuda/cuda.h"

#define MAX_OUTPUTS 8
#define MAX_PIDS    256
struct record_output {
	const char *path;
	enum output_format fmt;
};

struct record_opts {
	unsigned int freq_hz;
	double duration_s; /* 0 = until the command exits / Ctrl-C */
	struct record_output outputs[MAX_OUTPUTS];
	int n_outputs;
	bool format_set;
	enum output_format format;
	pid_t pids[MAX_PIDS];
	int n_pids;
	bool all;
	char **cmd;
	uint32_t ustack_bytes;
	bool kernel_frames;
	bool python;			  /* read Python frames (default on) */
	enum pipeline_lines source_lines; /* native source lines from DWARF */
	bool offcpu;			  /* also profile off-CPU time */
	unsigned long offcpu_min_us;
	unsigned long offcpu_rate;	 /* off-CPU stack captures per CPU per second */
	struct cuda_config cuda;	 /* CUDA/NCCL probe families (default: all) */
	unsigned long cuda_rate;	 /* CUDA stack captures per CPU per second */
	unsigned long memory_rate;	 /* memory-growth stack captures per CPU per second */
	unsigned long memory_max_faults; /* faults per busy CPU per second seen whole */
	bool memory;			 /* memory-growth profile (default on) */
	bool heap;			 /* heap profile by allocation site (--heap) */
	bool no_steps;			 /* no PyTorch training-step breakdown */
	unsigned long steps_max_scopes;	 /* scope events a second per process seen whole */
	unsigned long heap_sample_kib;
	unsigned long cuda_tensor_sample_kib;
	bool cuda_no_hold; /* --no-cuda-hold */
	unsigned long memory_sample_kib;
	bool quiet;
	const char *title;
};

/*
 * Parses argv into o (zeroed by the caller) and sets the log level. Returns 0, 1 when
 * --help was printed (exit 0), or < 0 after a one-line usage error (exit 2).
 */
int record_opts__parse(int argc, char **argv, struct record_opts *o);
/*
 * Checks before anything is recorded: every output writable (their formats resolved, the
 * default outputs filled in), every -p PID alive, the command found and executable. Returns 0
 * or the exit status after a one-line error: 2, or the shell's 127 (not found) / 126.
 */
int record_opts__check(struct record_opts *o);
/* True when o collects event kind k. */
bool record_opts__kind_enabled(const struct record_opts *o, enum mlprof_sample_kind k);

#endif
