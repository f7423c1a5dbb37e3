/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Bounds what the memory-growth page-fault programs cost at very high fault rates. Any BPF
 * program on a page-fault tracepoint costs every page fault of the machine its dispatch
 * (60-110 ns here, more than the program), whatever the program then does: sampling by
 * bytes bounds the captures, not that. Above a fault rate, the programs are attached only
 * in random time slots, each one with probability d, and what they capture then is
 * weighted by 1/d: an unbiased estimate whose cost follows the rate cap, not the fault
 * rate. Below it (nearly every job) they stay attached and nothing changes. The rate is the
 * machine's page faults (/proc/vmstat) per busy CPU (/proc/stat), over each second.
 */
#ifndef MLPROF_FAULT_DUTY_H
#define MLPROF_FAULT_DUTY_H

#include <stdint.h>

struct bpf_link;
struct bpf_program;

struct fault_duty_config {
	uint64_t max_rate;    /* page faults per busy CPU per second seen whole (0: always) */
	unsigned int slot_ms; /* slot length (0: 20 ms) */
	double min_duty;      /* lowest fraction of slots attached (0: 1/4) */
};

struct fault_duty_stats {
	double duty;	      /* fraction of slots attached now (1: always) */
	double fault_rate;    /* page faults per busy CPU per second, as last measured */
	uint64_t total_ns;    /* time run */
	uint64_t on_ns;	      /* ... with the programs attached */
	uint64_t toggles;     /* attaches and detaches */
	uint64_t attach_errs; /* failed attaches (the slot stays detached) */
};

struct fault_duty;

#define FAULT_DUTY_MAX_PROGS 4

/*
 * Takes over the links of n attached programs (links[i] of progs[i]; NULL entries are
 * skipped) and runs the slots in a thread of its own. *weight is the fixed-point factor
 * (weight_one = 1) by which the BPF side multiplies each capture's weight: 1/d while
 * attached. Returns NULL with errno set; the links are then still the caller's.
 */
struct fault_duty *fault_duty__start(struct bpf_program *const *progs, struct bpf_link **links,
				     int n, volatile uint32_t *weight, uint32_t weight_one,
				     const struct fault_duty_config *cfg);
/* Stops the thread and destroys the links it holds. */
void fault_duty__stop(struct fault_duty *d);
void fault_duty__stats(struct fault_duty *d, struct fault_duty_stats *out);

/*
 * The fraction of slots to attach at a rate of page faults per busy CPU per second (the policy,
 * exposed for its unit test): 1 up to max_rate, then max_rate / rate, never below min_duty.
 */
double fault_duty__choose(double rate, uint64_t max_rate, double min_duty);

#endif
