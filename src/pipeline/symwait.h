/* SPDX-License-Identifier: Apache-2.0 */
/* Samples parked until the symbol indexes their native frames need are built: bounded FIFO. */
#ifndef MLPROF_SYMWAIT_H
#define MLPROF_SYMWAIT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "unwind/unwound.h"

/* A parked sample: the unwound stack and what emitting it takes. */
struct parked {
	struct parked *next, *prev;
	size_t bytes;
	int64_t value;
	bool inuse;
	uint64_t time_ns;   /* the emit's time argument (0: the sample's own) */
	uint64_t parked_ns; /* CLOCK_MONOTONIC when it was first parked */
	struct unwound u;
	uint64_t data[]; /* pcs, then Python frames */
};

struct symwait {
	struct parked *head, *tail; /* oldest first */
	size_t count, bytes;
	size_t max_count, max_bytes;
};

/* An empty queue holding at most max_count samples and max_bytes bytes. */
void symwait__init(struct symwait *sw, size_t max_count, size_t max_bytes);
/* Frees every parked sample. */
void symwait__clear(struct symwait *sw);
/*
 * Parks a copy of u (parked_ns: when it was parked first, kept across re-parks). Returns 0,
 * -ENOSPC when the queue is full (take the oldest out first), or -ENOMEM.
 */
int symwait__park(struct symwait *sw, const struct unwound *u, int64_t value, bool inuse,
		  uint64_t time_ns, uint64_t parked_ns);
/* Takes e off the queue; the caller frees it with free(). */
void symwait__take(struct symwait *sw, struct parked *e);

#endif
