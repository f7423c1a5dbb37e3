/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The unwinder's state, data only, shared by unwind.c (the walk: cached rules, the
 * frame-pointer and scanning fallbacks, libunwind's steps) and unwind_space.c (address
 * spaces, unwind tables, and the accessors libunwind reads them through).
 */
#ifndef MLPROF_UNWIND_STATE_H
#define MLPROF_UNWIND_STATE_H

#include <libunwind.h>
#include <linux/types.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "unwind/unwind_cfi.h"
#include "unwind/unwind_types.h"

struct mlprof_sample;
struct proc;
struct proc_cache;
struct unwind_fp;
struct unwind_table;

/* Per-process libunwind address spaces kept (each holds libunwind's register-state cache). */
#define MAX_SPACES 64
/* Objects (ELF images) remembered per address space for memory reads outside the stack. */
#define MAX_OBJS 128
/* Parsed unwind tables kept across processes (each holds a reference on its ELF file). */
#define MAX_TABLES 512
/* Reads this far above the stack copy are taken for stack reads (copy too short). */
#define STACK_SLACK (8ull << 20)
/*
 * Code this far past an ELF entry point (e_entry) with no FDE is taken for the process's
 * first frame: ld.so's _start (RTLD_START) has no CFI and calls _dl_start, then jumps to
 * the program, all within its first 0x3d bytes.
 */
#define ENTRY_SPAN 64
/*
 * Unwind rules kept by (table, pc), direct-mapped: a frame seen before is stepped without
 * libunwind (whose register-state cache takes a lock and two sigprocmask calls a step).
 */
#define RULE_SLOTS 65536
/*
 * The frames each thread (ECHO_SLOTS of them, by tid) was last stepped through: the next sample of
 * a thread mostly repeats them (the same callers at the same stack addresses), so their
 * step-cache slots and the stack words they read are prefetched together at its start, not
 * missed one after another as each step learns where the next one is.
 */
#define ECHO_FRAMES 64

/* One ELF image placed in a process: runtime = vaddr + bias. */
struct uw_obj {
	uint64_t lo, hi; /* runtime extent */
	uint64_t bias;
	struct unwind_table *t;
};

/* Per-process libunwind state. */
struct uw_space {
	pid_t pid;
	const struct proc *p;
	uint64_t gen;
	unw_addr_space_t as;
	struct uw_obj objs[MAX_OBJS];
	size_t nobjs, last_obj;
	uint64_t last_use;
};

/* One cached rule: the table's address keys it (all tables go at once, with the cache). */
struct rule_slot {
	const struct unwind_table *t;
	uint64_t vaddr;
	struct cfi_rule r;
};

/* A CFI_RULE rule cached by (gen, pc); gen 0: empty. */
struct step_slot {
	uint64_t gen, pc;
	struct cfi_rule r;
};

/* A scan's result by (gen, pc); gen 0: empty. off: the return address's slot above sp. */
struct scan_hint {
	uint64_t gen, pc;
	uint64_t off; /* of the return address from the stack pointer */
	uint64_t ra;  /* the return address that was there, checked whole */
};

/* The frames a thread's last unwind stepped through: the pc each was stepped at, its cfa. */
struct echo {
	uint64_t gen;
	uint32_t tid, n;
	uint64_t pc[ECHO_FRAMES], cfa[ECHO_FRAMES];
};

struct unwinder {
	struct proc_cache *pc;
	struct rule_slot *rules; /* RULE_SLOTS */
	struct step_slot *steps; /* STEP_SLOTS */
	struct scan_hint *hints; /* SCAN_HINT_SLOTS */
	struct echo *echoes;	 /* ECHO_SLOTS */
	struct uw_space spaces[MAX_SPACES];
	size_t nspaces;
	struct unwind_table *tables[MAX_TABLES];
	size_t ntables;
	uint64_t tick;
	uint64_t dbg_bytes; /* held in translated .debug_frame images and indexes */
	struct unwind_fp *fp;
	struct unwind_stats stats;
};

/* State of one unwinder__unwind call, handed to the accessors as their arg. */
struct uw_call {
	struct unwinder *u;
	struct uw_space *sp;
	struct proc *p;
	const struct mlprof_sample *s;
	const __u64 *regs; /* registers of the first frame: the sample's, or where FP left off */
	uint64_t stack_lo, stack_len;
	bool stack_cut; /* a read hit the stack above the copy */
	bool no_info;	/* find_proc_info found nothing during this step */
	bool at_entry;	/* ... and the pc was at an ELF entry point: the outermost frame */
	uint64_t no_info_ip;
	uint64_t scan_pc;  /* the pc of the frame a scan looks for the return address of */
	struct echo *echo; /* the thread's frames, rewritten as this unwind steps */
};

#endif
