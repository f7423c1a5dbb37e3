/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The PyTorch scope BPF object (bpf/torch.bpf.c): loaded on first use, sharing the
 * sampler's ring buffer and pid filter; its probes are attached per libtorch_cpu file.
 */
#ifndef MLPROF_TORCH_PROBES_H
#define MLPROF_TORCH_PROBES_H

#include <stdbool.h>
#include <stdint.h>

struct sampler;
struct torch_probes;
struct uprobe_link;

struct torch_probes *torch_probes__new(struct sampler *s);
void torch_probes__free(struct torch_probes *tp);

/* Collective calls and waits for them probed at most (comm_off). */
#define TORCH_COMM_SITES 96

/* Where a libtorch_cpu file's scopes open and close (file offsets). */
struct torch_sites {
	uint64_t enter_off; /* record_function_enter (enter_rec) or record_function_enter_new */
	bool enter_rec;	    /* ... the first: an entry probe alone (else with its return) */
	uint64_t end_off;   /* an instruction with the closing RecordFunction in rdi */
	/* collective calls (c10d's dispatcher ops, any backend) and waits for them (Work::wait,
	 * DDP's finalize_backward), probed with their returns */
	uint64_t comm_off[TORCH_COMM_SITES];
	int n_comm;
};

/*
 * Attaches the scope probes at sites of the ELF file open as fd (kept open by the caller,
 * for attaching again), for every process (BPF filters by pid). The links
 * (uprobe_link__release) or NULL with errno set.
 */
struct uprobe_link *torch_probes__attach(struct torch_probes *tp, int fd,
					 const struct torch_sites *sites);

/*
 * Whether links can be released and attached again at will (uprobe_multi links: a release
 * waits for one grace period, tens of ms, not one per probe), for the steps' duty cycle.
 */
bool torch_probes__can_cycle(const struct torch_probes *tp);

/*
 * Called before attaching again after a time detached: the BPF side forgets the scopes
 * and waits it saw open before (their ends came while detached).
 */
void torch_probes__next_gen(struct torch_probes *tp);

#endif
