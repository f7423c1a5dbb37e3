/* SPDX-License-Identifier: Apache-2.0 */
/* User-stack unwinding with libunwind's remote API over captured registers + stack bytes. */
#ifndef MLPROF_UNWIND_H
#define MLPROF_UNWIND_H

#include <stddef.h>
#include <stdint.h>

#include "unwind/unwind_types.h"

struct mlprof_sample;
struct proc;
struct proc_cache;
struct unwinder;

/* Creates an unwinder that resolves code through pc's maps. NULL with errno on failure. */
struct unwinder *unwinder__new(struct proc_cache *pc);
void unwinder__free(struct unwinder *u);

/*
 * Unwinds the user stack of sample s (registers + stack copy) for process p.
 * Writes up to max program counters, leaf first: pcs[0] is the interrupted ip, later
 * entries are return addresses (not adjusted). Code that no CFI covers (Go, code built
 * without unwind tables) is stepped through by frame pointer until CFI covers a pc again.
 * Returns the number written (>= 0) and sets *end; never fails for bad input, it stops
 * and says why.
 */
int unwinder__unwind(struct unwinder *u, struct proc *p, const struct mlprof_sample *s,
		     uint64_t *pcs, int max, enum unwind_end *end);
const char *unwind_end__str(enum unwind_end end);
/* "bad_pointer", "outside_stack": metric label values. */
const char *unwind_fp_fail__str(enum unwind_fp_fail f);

void unwinder__stats(const struct unwinder *u, struct unwind_stats *out);

#endif
