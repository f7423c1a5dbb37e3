/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Bounds what the memory-growth page-fault programs cost at very high fault rates. Any BPF
 * program on a page-fault tracepoint costs every page fault of the machine its dispatch
 * (60-110 ns here, more than the program), whatever the program then does: sampling by
 * bytes bounds the captures, not that. Above a fault rate, the programs are attached only
 * in random time slots, each one with probability d, and what they capture then is
 * weighted by 1/d: an unbiased estimate whose cost follows the rate cap, not the fault
 * rate. Below it (nearly every job) they stay attached and nothing changes. The rate is the
 * machine's page faults per busy CPU (/proc/stat): the faults the programs saw (a counter
 * they keep, read through a callback) over the time they were attached. /proc/vmstat, which
 * the kernel formats anew at each read (20-50 us here), is not read; /proc/stat only while
 * the faults could be over the cap on one CPU.
 */
#ifndef MLPROF_FAULT_DUTY_H
#define MLPROF_FAULT_DUTY_H

#include <stdint.h>

struct bpf_link;
struct bpf_program;

/* The page faults the programs have seen so far (while attached), for the rate. */
typedef uint64_t (*fault_duty_count_cb)(void *ctx);

struct fault_duty_config {
	uint64_t max_rate;	   /* page faults per busy CPU per second seen whole (0: always) */
	unsigned int slot_ms;	   /* slot length (0: 20 ms) */
	double min_duty;	   /* lowest fraction of slots attached (0: 1/4) */
	fault_duty_count_cb count; /* required */
	void *count_ctx;
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
 * attached; cfg->count counts the faults the programs see. Returns NULL with errno set; the
 * links are then still the caller's.
 */
struct fault_duty *fault_duty__start(struct bpf_program *const *progs, struct bpf_link **links,
				     int n, volatile uint32_t *weight, uint32_t weight_one,
				     const struct fault_duty_config *cfg);
/* Stops the thread and destroys the links it holds. */
void fault_duty__stop(struct fault_duty *d);
void fault_duty__stats(struct fault_duty *d, struct fault_duty_stats *out);
/*
 * Called at each poll of the consumer (any thread, cheap): while the rate is far below the
 * cap the duty thread sleeps long; this looks at the fault count (at most ten times a
 * second) and wakes it when the faults mount.
 */
void fault_duty__tick(struct fault_duty *d);

#endif
