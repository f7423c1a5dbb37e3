/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A bounded FIFO of copied unwound stacks waiting for something: their symbol indexes (a
 * sample parked until the files it needs are indexed, name_stage.c) or their end record
 * (an interval's sample, intervals.c).
 */
#ifndef MLPROF_STACK_QUEUE_H
#define MLPROF_STACK_QUEUE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "unwind/unwound.h"

/* A queued sample: the unwound stack and what its holder keeps with it. */
struct queued {
	struct queued *next, *prev;
	size_t bytes;
	int64_t value;
	bool inuse;
	uint64_t time_ns;   /* the emit's time argument (0: the sample's own) */
	uint64_t parked_ns; /* CLOCK_MONOTONIC when it was first parked (symbol waits) */
	struct unwound u;
	uint64_t data[]; /* pcs, then Python frames */
};

struct stack_queue {
	struct queued *head, *tail; /* oldest first */
	size_t count, bytes;
	size_t max_count, max_bytes;
};

/* An empty queue holding at most max_count samples and max_bytes bytes. */
void stack_queue__init(struct stack_queue *q, size_t max_count, size_t max_bytes);
/* Frees every queued sample. */
void stack_queue__clear(struct stack_queue *q);
/*
 * Queues a copy of u at the tail, with value, inuse, time_ns and parked_ns. Returns 0,
 * -ENOSPC when the queue is full (take the oldest out first), or -ENOMEM.
 */
int stack_queue__push(struct stack_queue *q, const struct unwound *u, int64_t value, bool inuse,
		      uint64_t time_ns, uint64_t parked_ns);
/* Takes e off the queue; the caller frees it with free(). */
void stack_queue__take(struct stack_queue *q, struct queued *e);
/* Takes e off the queue and frees it. */
void stack_queue__drop(struct stack_queue *q, struct queued *e);

#endif
