/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Address spaces of the unwinder (unwind_space.c): the objects of a process, the unwind
 * tables, and libunwind's accessors over them. Pointers into a space stay valid during one
 * unwind: caches are trimmed only by unwind_space__make_room, before an unwind starts.
 */
#ifndef MLPROF_UNWIND_SPACE_H
#define MLPROF_UNWIND_SPACE_H

#include <libunwind.h>
#include <stdbool.h>
#include <stdint.h>

#include "unwind/unwind_state.h"

struct proc_map;

/* The accessors every address space is created with (arg: the unwind's struct uw_call). */
extern unw_accessors_t unwind_space__accessors;

/*
 * p's address space (the least recently used one is taken over when all are in use), its
 * objects dropped when p is another process or its maps changed; NULL without one.
 */
struct uw_space *unwind_space__get(struct unwinder *u, struct proc *p);
/*
 * Trims the caches before an unwind starts, the only time nothing points into them:
 * find_proc_info and the memory accessors keep object and table pointers across
 * libunwind's nested reads, which may look up further objects. Tables go all at once
 * (objects in every space point at them, rarely needed); a space's objects go when it
 * has less than OBJ_HEADROOM free.
 */
void unwind_space__make_room(struct unwinder *u, struct uw_space *sp);
/* Registers (or finds) the object behind map m; NULL when it has no usable ELF. */
struct uw_obj *unwind_space__obj_for_map(struct uw_call *call, const struct proc_map *m);
/* Translates t's .debug_frame on first need, within a total bound. True when ready. */
bool unwind_space__debug_frame(struct unwinder *u, struct unwind_table *t);

#endif
