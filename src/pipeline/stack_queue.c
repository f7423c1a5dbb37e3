// SPDX-License-Identifier: Apache-2.0
/* A bounded FIFO of copied unwound stacks (see stack_queue.h). */
#include "pipeline/stack_queue.h"

#include <errno.h>
#include <stdlib.h>

/* See stack_queue.h. */
void stack_queue__init(struct stack_queue *q, size_t max_count, size_t max_bytes)
{
	*q = (struct stack_queue){.max_count = max_count, .max_bytes = max_bytes};
}

/* See stack_queue.h. */
void stack_queue__clear(struct stack_queue *q)
{
	while (q->head) {
		stack_queue__drop(q, q->head);
	}
}

/* See stack_queue.h. */
int stack_queue__push(struct stack_queue *q, const struct unwound *u, int64_t value, bool inuse,
		      uint64_t time_ns, uint64_t parked_ns)
{
	size_t bytes = sizeof(struct queued) + unwound__data_bytes(u);
	struct queued *e;

	if (q->count >= q->max_count || q->bytes + bytes > q->max_bytes)
		return -ENOSPC;
	e = malloc(bytes);
	if (!e)
		return -ENOMEM;
	e->bytes = bytes;
	e->value = value;
	e->inuse = inuse;
	e->time_ns = time_ns;
	e->parked_ns = parked_ns;
	unwound__copy(&e->u, e->data, u);
	e->next = NULL;
	e->prev = q->tail;
	if (q->tail)
		q->tail->next = e;
	else
		q->head = e;
	q->tail = e;
	q->count++;
	q->bytes += bytes;
	return 0;
}

/* See stack_queue.h. */
void stack_queue__take(struct stack_queue *q, struct queued *e)
{
	if (e->prev)
		e->prev->next = e->next;
	else
		q->head = e->next;
	if (e->next)
		e->next->prev = e->prev;
	else
		q->tail = e->prev;
	e->next = e->prev = NULL;
	q->count--;
	q->bytes -= e->bytes;
}

/* See stack_queue.h. */
void stack_queue__drop(struct stack_queue *q, struct queued *e)
{
	stack_queue__take(q, e);
	free(e);
}
