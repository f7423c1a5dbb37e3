/* SPDX-License-Identifier: Apache-2.0 */
/* Agent windows: samples into per-series profiles, one window at a time, handed to export. */
#ifndef MLPROF_AGENT_WINDOW_H
#define MLPROF_AGENT_WINDOW_H

#include <stdint.h>

struct agent;
struct frame;
struct sample_info;
struct window;

/* Frees window w's series and makes it the empty window number idx. */
void agent_window__reset(struct window *w, uint64_t idx);
/*
 * Encodes and hands every series of w (dur_ns long) to the exporter, then empties w for
 * window next_idx. Failures are counted, never fatal.
 */
void agent_window__flush(struct agent *a, struct window *w, uint64_t next_idx, int64_t dur_ns);
/* Sends window 0 and makes window 1 current; also the pipeline and label cache's gc. */
void agent_window__rotate(struct agent *a);
/* The pipeline sink (ctx is the agent): adds one sample to its series. Always 0. */
int agent_window__sink(void *ctx, const struct sample_info *info, const struct frame *frames,
		       int n_frames);

#endif
