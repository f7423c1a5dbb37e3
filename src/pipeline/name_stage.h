/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Stage 2 of the pipeline: a sample's frames named and handed to the sink (pipeline.c runs
 * stage 1, the unwinding, and calls these). Samples whose frames need a symbol index still
 * being built are parked (pl->wait, a stack_queue) and emitted once it is ready.
 */
#ifndef MLPROF_NAME_STAGE_H
#define MLPROF_NAME_STAGE_H

#include <stdbool.h>
#include <stdint.h>

struct frame;
struct mlprof_sample;
struct pipeline;
struct proc;
struct unwound;

/*
 * Names u's frames and hands the sample to the sink with value (its weight), inuse (an
 * in-use view's sample) and time_ns (0: the record's time); or parks it while an index it
 * needs is built. 0 or the sink's error.
 */
int name_stage__emit(struct pipeline *pl, const struct unwound *u, int64_t value, bool inuse,
		     uint64_t time_ns);
/*
 * Emits parked samples: those whose indexes are ready (when any became ready since the last
 * try), those parked longer than SYMWAIT_MAX_AGE_NS, those of pid (0: none) and those
 * whose time is before before_ns (0: none) now (the process exited or changed image, the
 * window closes), and all of them when force is set. 0 or the sink's error.
 */
int name_stage__retry_parked(struct pipeline *pl, uint32_t pid, uint64_t before_ns, bool force);
/*
 * A process changes its image (or its pid is reused): its parked samples go out now, while
 * its maps are known, with raw addresses for the frames of files still being indexed. No
 * wait for the builder here: the events behind this one (a new process's libraries to
 * probe before it calls them) must not be held up. 0 or the sink's error.
 */
int name_stage__flush_pid(struct pipeline *pl, uint32_t pid);
/* Whether a sample of pid is parked. */
bool name_stage__has_parked(const struct pipeline *pl, uint32_t pid);
/*
 * Names one native frame of p into f; pc is already adjusted to point into the call
 * instruction. f's strings last until the next sample (the name arena, the frame cache).
 * Sets pl->sym_missing when the file's index is still being built.
 */
void name_stage__native(struct pipeline *pl, struct proc *p, uint64_t pc, struct frame *f);
/*
 * A launch sample's leaf: the kernel it launched (FRAME_CUDA_KERNEL) into f; unnamed while
 * an index it needs is built (unless pl->force_emit).
 */
void name_stage__kernel_frame(struct pipeline *pl, struct proc *p, const struct mlprof_sample *s,
			      struct frame *f);

#endif
