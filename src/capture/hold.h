/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Processes held at a CUDA/NCCL library mmap (bpf/cpu.bpf.c stops them with SIGSTOP so that
 * the library's probes are attached before it runs): continued once user space is done, by
 * a deadline if it is slow, at exit, and by a guard process if mlprof dies.
 */
#ifndef MLPROF_HOLD_H
#define MLPROF_HOLD_H

#include <stdint.h>
#include <sys/types.h>

struct hold;

struct hold_stats {
	uint64_t held;	   /* processes continued after their probes were attached */
	uint64_t overdue;  /* ... continued by the deadline (user space was late) */
	uint64_t at_exit;  /* ... continued when mlprof stopped */
	uint64_t max_ns;   /* longest hold, stop to continue */
	uint64_t total_ns; /* all holds together */
};

/*
 * Takes over the held map (tgid -> stop time, bpf/cpu.bpf.c's "held"; map_fd stays the
 * caller's) and starts the guard process, which continues every process in the map when
 * this process dies. NULL with errno on failure (then nothing may be held).
 */
struct hold *hold__new(int map_fd);
/* Continues every held process, stops the guard and frees h. */
void hold__free(struct hold *h);
/* Continues process pid (its probes are in place). */
void hold__release(struct hold *h, pid_t pid);
/* Continues processes held for longer than max_ns (call every poll: it walks the map at most
 * every max_ns / 10). */
void hold__sweep(struct hold *h, uint64_t max_ns);
void hold__stats(const struct hold *h, struct hold_stats *out);

#endif
