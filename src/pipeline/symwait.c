// SPDX-License-Identifier: Apache-2.0
/* Samples parked until the symbol indexes their native frames need are built: bounded FIFO. */
#include "pipeline/symwait.h"

#include <errno.h>
#include <stdlib.h>

/* See symwait.h. */
void symwait__init(struct symwait *sw, size_t max_count, size_t max_bytes)
{
	*sw = (struct symwait){.max_count = max_count, .max_bytes = max_bytes};
}

/* See symwait.h. */
void symwait__clear(struct symwait *sw)
{
	while (sw->head) {
		struct parked *e = sw->head;

		symwait__take(sw, e);
		free(e);
	}
}

/* See symwait.h. */
int symwait__park(struct symwait *sw, const struct unwound *u, int64_t value, bool inuse,
		  uint64_t time_ns, uint64_t parked_ns)
{
	size_t bytes = sizeof(struct parked) + unwound__data_bytes(u);
	struct parked *e;

	if (sw->count >= sw->max_count || sw->bytes + bytes > sw->max_bytes)
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
	e->prev = sw->tail;
	if (sw->tail)
		sw->tail->next = e;
	else
		sw->head = e;
	sw->tail = e;
	sw->count++;
	sw->bytes += bytes;
	return 0;
}

/* See symwait.h. */
void symwait__take(struct symwait *sw, struct parked *e)
{
	if (e->prev)
		e->prev->next = e->next;
	else
		sw->head = e->next;
	if (e->next)
		e->next->prev = e->prev;
	else
		sw->tail = e->prev;
	e->next = e->prev = NULL;
	sw->count--;
	sw->bytes -= e->bytes;
}
