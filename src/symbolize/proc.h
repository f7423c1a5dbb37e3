/* SPDX-License-Identifier: Apache-2.0 */
/* Per-process memory maps, following exec, exit and new mappings, with shared ELF handles. */
#ifndef MLPROF_PROC_H
#define MLPROF_PROC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "profile/frame.h"
#include "symbolize/proc_maps.h"
#include "symbolize/proc_types.h"

struct elf_file;
struct proc_cache;

struct proc_cache *proc_cache__new(const struct proc_cache_config *cfg);
void proc_cache__free(struct proc_cache *pc);

/*
 * Returns the cached process, reading /proc/PID/maps when first seen. Returns NULL with
 * errno = ESRCH when the process is gone and was never seen. The pointer stays valid
 * until the next proc_cache__gc().
 */
struct proc *proc_cache__get(struct proc_cache *pc, pid_t pid);

/*
 * Finds the executable mapping containing addr. When none does and the process is
 * alive, re-reads the maps once (new dlopen'ed objects) subject to a rate limit.
 */
const struct proc_map *proc_cache__find_map(struct proc_cache *pc, struct proc *p, uint64_t addr);
/* Same, from the maps read so far only (never re-reads): for guesses such as stack words. */
const struct proc_map *proc_cache__find_map_cached(struct proc *p, uint64_t addr);

/*
 * Reads the maps of a cached, live process again now (a library was just mapped). No-op
 * for processes not cached yet: proc_cache__get() reads them.
 */
void proc_cache__refresh(struct proc_cache *pc, pid_t pid);
/* Lifecycle notifications from the sampler's events. */
void proc_cache__on_exec(struct proc_cache *pc, pid_t pid);
void proc_cache__on_exit(struct proc_cache *pc, pid_t pid);
/* Frees dead processes (not kept ones) and unused ELF files; call between profile windows. */
void proc_cache__gc(struct proc_cache *pc);
/*
 * Keeps the dead process pid (its maps, its open files) past proc_cache__gc while keep is
 * true: samples of it still wait for an index. A new image under the pid (on_exec) ends it;
 * the cache's own bounds may still evict it. No-op for a live or unknown pid.
 */
void proc_cache__keep_dead(struct proc_cache *pc, pid_t pid, bool keep);
/*
 * True when a process replaced its maps RETIRED_MAX times since the last gc (an import of
 * PyTorch maps ~80 libraries within a second or two) and its maps are no longer re-read.
 */
bool proc_cache__retired_full(const struct proc_cache *pc);
/*
 * When a process is at that bound (else nothing): frees replaced map sets (not dead
 * processes), so that their processes re-read again. Call where proc_cache__gc could be.
 */
void proc_cache__trim(struct proc_cache *pc);
void proc_cache__stats(const struct proc_cache *pc, struct proc_cache_stats *out);

#endif
