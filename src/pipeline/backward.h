/* SPDX-License-Identifier: Apache-2.0 */
/*
 * PyTorch backward passes: on a GPU, loss.backward() waits in the autograd engine while
 * the engine's worker threads (pt_autograd_N) run the graph and launch its kernels, so their
 * stacks never reach Python. The stack of the thread that entered Engine::execute is kept
 * for the pass (MLPROF_SK_BACKWARD, ended at its return) and the workers' samples in the
 * meantime are shown under it: backward's kernels, copies and CPU time under the line that
 * called backward().
 */
#ifndef MLPROF_BACKWARD_H
#define MLPROF_BACKWARD_H

#include <stdbool.h>
#include <stdint.h>

#include "unwind/unwound.h"

struct backward;

struct backward_stats {
	uint64_t passes;  /* backward passes seen (their caller's stack kept) */
	uint64_t grafted; /* worker samples shown under their pass's caller */
	uint64_t evicted; /* passes forgotten before their end: the table was full */
};

/* max_pcs: the most program counters a sample may carry (the grafted one too). */
struct backward *backward__new(int max_pcs);
void backward__free(struct backward *b);

/* A pass began: u is its MLPROF_SK_BACKWARD capture (aux[0] = its sequence). */
void backward__begin(struct backward *b, const struct unwound *u);

/* A pass of process pid, begun by thread tid with sequence seq, ended. False: not a pass. */
bool backward__end(struct backward *b, uint32_t pid, uint32_t tid, uint64_t seq);

/*
 * If u is a sample of an autograd worker thread of a process with a pass in progress,
 * makes u that sample with the pass caller's stack below its own (program counters and
 * Python frames in b's buffers, valid until the next call) and returns true.
 */
bool backward__graft(struct backward *b, struct unwound *u);

/* Process pid exited: its pass (if any) is over. */
void backward__forget(struct backward *b, uint32_t pid);

void backward__stats(const struct backward *b, struct backward_stats *out);

#endif
