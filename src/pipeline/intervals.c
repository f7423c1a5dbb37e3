// SPDX-License-Identifier: Apache-2.0
/*
 * Samples whose value comes later: an off-CPU interval, a synchronize call, a device or heap
 * allocation waits for its end record, then is emitted with what it measured.
 */
#include "pipeline/intervals.h"

#include <errno.h>

#include "memory/heap.h"
#include "memory/memtrack.h"
#include "pipeline/backward.h"
#include "pipeline/name_stage.h"
#include "pipeline/pipeline_state.h"
#include "pipeline/stack_queue.h"
#include "unwind/unwound.h"

/* See intervals.h. */
void intervals__add(struct pipeline *pl, const struct unwound *u)
{
	struct queued *e;
	int err;

	/* a thread has one open interval per kind: an older one lost its end (ring buffer full;
	 * kinds nest: cudaMalloc's driver allocating host memory) */
	for (e = pl->pend.tail; e; e = e->prev) {
		if (e->u.hdr.tid == u->hdr.tid && e->u.hdr.kind == u->hdr.kind) {
			stack_queue__drop(&pl->pend, e);
			pl->offcpu_unmatched++;
			break;
		}
	}
	/* full: the oldest go first */
	while ((err = stack_queue__push(&pl->pend, u, 0, false, 0, 0)) == -ENOSPC &&
	       pl->pend.head) {
		stack_queue__drop(&pl->pend, pl->pend.head);
		pl->offcpu_dropped++;
	}
	if (err)
		pl->offcpu_dropped++;
}

/*
 * A sampled heap allocation returned (value: the size asked for, 0 when it failed; aux:
 * the block, 0 when BPF could not track it): counted at the bytes it stands for, and kept
 * in the in-use view until its free.
 */
static int heap_end(struct pipeline *pl, struct queued *e, const struct mlprof_sample_end *oe)
{
	int64_t w = heap__weight(oe->value, pl->heap ? heap__sample_bytes(pl->heap) : 1);
	int err = 0;

	if (w) {
		pl->heap_allocs++;
		pl->heap_alloc_bytes += w;
		err = name_stage__emit(pl, &e->u, w, false, 0);
		if (oe->aux)
			memtrack__add(pl->mem, MLPROF_SK_HEAP, oe->aux, w, &e->u);
	}
	stack_queue__drop(&pl->pend, e);
	return err;
}

/* See intervals.h. */
int intervals__end(struct pipeline *pl, const struct mlprof_sample_end *oe)
{
	struct queued *e;
	int err = 0;

	if (pl->bwd && backward__end(pl->bwd, oe->pid, oe->tid, oe->seq))
		return 0;
	for (e = pl->pend.tail; e; e = e->prev)
		if (e->u.hdr.tid == oe->tid && e->u.hdr.aux[0] == oe->seq)
			break;
	if (!e) {
		pl->offcpu_unmatched++;
		return 0;
	}
	if (e->u.hdr.kind == MLPROF_SK_HEAP)
		return heap_end(pl, e, oe);
	if (oe->value)
		err = name_stage__emit(pl, &e->u, (int64_t)oe->value, false, 0);
	if (oe->value && oe->aux && e->u.hdr.kind == MLPROF_SK_CUDA_ALLOC)
		memtrack__add(pl->mem, MLPROF_SK_CUDA_ALLOC, oe->aux, (int64_t)oe->value, &e->u);
	stack_queue__drop(&pl->pend, e);
	return err;
}

/* See intervals.h. */
void intervals__drop_pid(struct pipeline *pl, uint32_t pid)
{
	struct queued *e = pl->pend.head, *next;

	for (; e; e = next) {
		next = e->next;
		if (e->u.hdr.pid == pid)
			stack_queue__drop(&pl->pend, e);
	}
}
