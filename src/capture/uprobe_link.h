/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Uprobe links on one ELF file: many offsets attached at once (a kernel uprobe_multi link
 * per program where the kernel has them, 6.6+; else one perf-event link per offset), and
 * released off the calling thread.
 */
#ifndef MLPROF_UPROBE_LINK_H
#define MLPROF_UPROBE_LINK_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

struct bpf_program;
struct uprobe_link;

/* One probe: a file offset, the BPF cookie its programs read, and whether it also returns. */
struct uprobe_target {
	uint64_t off;
	uint64_t cookie;
	uint64_t ref_ctr_off; /* a USDT semaphore's file offset (the kernel counts attached
			       * probes there, so the program takes the probed path), or 0 */
	bool ret;	      /* the return program too */
};

/*
 * Whether this kernel has uprobe_multi links (its BTF has struct bpf_uprobe_multi_link).
 * Programs that use them must be loaded with uprobe_link__prepare first.
 * MLPROF_TEST_NO_UPROBE_MULTI=1 says no, so that tests cover the per-offset fallback.
 */
bool uprobe_link__multi_supported(void);

/* Marks prog (before its object is loaded) for uprobe_multi links. 0 or -errno. */
int uprobe_link__prepare(struct bpf_program *prog);

/*
 * Whether this kernel has uprobe sessions (Linux 6.13): one program at entry and return,
 * whose entry run decides (returning 1) that the return is not probed. Programs that use
 * them must be loaded with uprobe_link__prepare_session first.
 * MLPROF_TEST_NO_UPROBE_SESSION=1 says no, so that tests cover the entry+return fallback.
 */
bool uprobe_link__session_supported(void);
int uprobe_link__prepare_session(struct bpf_program *prog);

/*
 * Attaches entry at every target's offset of the ELF file at path, and ret (a return
 * program, may be NULL when no target wants it) at those with .ret, for every process
 * (the programs filter by pid) or, when pid > 0, for that process only (the kernel then
 * places no breakpoint in other processes). multi: the programs were prepared for
 * uprobe_multi links.
 * All or nothing: returns the link set (released with uprobe_link__release) or NULL with
 * errno set.
 */
struct uprobe_link *uprobe_link__attach(struct bpf_program *entry, struct bpf_program *ret,
					bool multi, const char *path,
					const struct uprobe_target *targets, int n, pid_t pid);

/* The same with one session program (uprobe_link__prepare_session) at every target. */
struct uprobe_link *uprobe_link__attach_session(struct bpf_program *prog, const char *path,
						const struct uprobe_target *targets, int n,
						pid_t pid);

/*
 * Detaches and frees l (NULL is ignored) on a detached thread of its own: each uprobe's
 * teardown waits for an RCU grace period under a kernel mutex (tens of ms; a uprobe_multi
 * link waits once for all its offsets, per-offset links once each, which for hundreds of
 * CUDA probes is seconds), so neither the ring-buffer consumer nor an exit waits for it
 * (links still open when the process exits are closed by the kernel).
 */
void uprobe_link__release(struct uprobe_link *l);

#endif
