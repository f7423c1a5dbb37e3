// SPDX-License-Identifier: Apache-2.0
/*
 * Samples whose value comes later: an off-CPU interval, a synchronize call, a device or heap
 * allocation waits for its end record, then is emitted with what it measured.
 */
#include "pipeline/intervals.h"

#include <stdlib.h>

#include "memory/heap.h"
#include "memory/memtrack.h"
#include "pipeline/backward.h"
#include "pipeline/name_stage.h"
#include "pipeline/pipeline_state.h"
#include "unwind/unwound.h"

/* Samples waiting for the end of their interval: at most this many. */
#define PENDING_MAX 8192

/* An off-CPU sample waiting for its interval to end (FIFO list, oldest first). */
struct pending {
	struct pending *next, *prev;
	size_t bytes;
	struct unwound u;
	uint64_t data[]; /* pcs, then Python frames */
};

/* Takes e off the pending list and frees it. */
static void pending_unlink(struct pipeline *pl, struct pending *e)
{
	if (e->prev)
		e->prev->next = e->next;
	else
		pl->pend_head = e->next;
	if (e->next)
		e->next->prev = e->prev;
	else
		pl->pend_tail = e->prev;
	pl->pend_bytes -= e->bytes;
	pl->pend_count--;
	free(e);
}

/* See intervals.h. */
void intervals__add(struct pipeline *pl, const struct unwound *u)
{
	size_t bytes = sizeof(struct pending) + unwound__data_bytes(u);
	struct pending *e;

	/* a thread has one open interval per kind: an older one lost its end (ring buffer full;
	 * kinds nest: cudaMalloc's driver allocating host memory) */
	for (e = pl->pend_tail; e; e = e->prev) {
		if (e->u.hdr.tid == u->hdr.tid && e->u.hdr.kind == u->hdr.kind) {
			pending_unlink(pl, e);
			pl->offcpu_unmatched++;
			break;
		}
	}
	while (pl->pend_head &&
	       (pl->pend_bytes + bytes > PENDING_MAX_BYTES || pl->pend_count >= PENDING_MAX)) {
		pending_unlink(pl, pl->pend_head);
		pl->offcpu_dropped++;
	}
	e = malloc(bytes);
	if (!e) {
		pl->offcpu_dropped++;
		return;
	}
	e->bytes = bytes;
	unwound__copy(&e->u, e->data, u);
	e->next = NULL;
	e->prev = pl->pend_tail;
	if (pl->pend_tail)
		pl->pend_tail->next = e;
	else
		pl->pend_head = e;
	pl->pend_tail = e;
	pl->pend_bytes += bytes;
	pl->pend_count++;
}

/*
 * A sampled heap allocation returned (value: the size asked for, 0 when it failed; aux:
 * the block, 0 when BPF could not track it): counted at the bytes it stands for, and kept
 * in the in-use view until its free.
 */
static int heap_end(struct pipeline *pl, struct pending *e, const struct mlprof_sample_end *oe)
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
	pending_unlink(pl, e);
	return err;
}

/* See intervals.h. */
int intervals__end(struct pipeline *pl, const struct mlprof_sample_end *oe)
{
	struct pending *e;
	int err = 0;

	if (pl->bwd && backward__end(pl->bwd, oe->pid, oe->tid, oe->seq))
		return 0;
	for (e = pl->pend_tail; e; e = e->prev)
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
	pending_unlink(pl, e);
	return err;
}

/* See intervals.h. */
void intervals__drop_pid(struct pipeline *pl, uint32_t pid)
{
	struct pending *e = pl->pend_head, *next;

	for (; e; e = next) {
		next = e->next;
		if (e->u.hdr.pid == pid)
			pending_unlink(pl, e);
	}
}

/* See intervals.h. */
void intervals__clear(struct pipeline *pl)
{
	while (pl->pend_head)
		pending_unlink(pl, pl->pend_head);
}
