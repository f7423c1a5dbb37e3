/* SPDX-License-Identifier: Apache-2.0 */
/* Loads and attaches the BPF CPU sampler and delivers its ring-buffer records. */
#ifndef MLPROF_SAMPLER_H
#define MLPROF_SAMPLER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <mlprof/cuda.h>
#include <mlprof/sample.h>

#include "capture/cuda_probes.h"

struct sampler;

struct sampler_config {
	unsigned int freq_hz;  /* cpu-clock sampling frequency per CPU */
	uint32_t ustack_bytes; /* user stack bytes copied per sample (<= MLPROF_MAX_USTACK) */
	bool filter_pids;      /* only pids added with sampler__add_pid (else whole host) */
	bool follow_children;  /* processes forked by filtered ones are filtered in too */
	bool skip_idle;	       /* drop samples of the idle task (pid 0) */
	size_t ringbuf_bytes;  /* ring buffer size (power of two) */
	pid_t self_pid;	       /* never sample this process (mlprof itself); 0 = none */
	bool batch;  /* wake the consumer only for new pids or a filling ring: the caller must
		      * poll with a timeout (sampler__poll) */
	bool offcpu; /* also sample threads leaving the CPU (sched_switch) */
	uint64_t offcpu_min_ns; /* shortest off-CPU interval reported */
	uint32_t offcpu_budget; /* off-CPU stack captures per CPU per 100 ms (sampling) */
	bool cuda;		/* load the CUDA/NCCL uprobe programs (attached per library) */
	uint32_t cuda_budget;	/* CUDA stack captures per CPU per 100 ms (sampling) */
	uint64_t cuda_count_window_ns; /* exact counts kept per window this long (0: one) */
	bool cuda_sync_intervals;      /* every synchronize call as an interval event (steps) */
	uint64_t cuda_tensor_sample;   /* mean bytes between sampled PyTorch tensor allocations
					* (0: MLPROF_TENSOR_SAMPLE_BYTES) */
	bool hold_cuda_maps;	       /* stop a process mapping a CUDA/NCCL library until
					* sampler__release (capture/hold.h) */
	bool memory;		       /* memory growth: anonymous write faults, releases */
	uint64_t memory_sample_bytes;  /* mean faulted bytes per captured stack */
	uint32_t memory_budget;	       /* memory stack captures per CPU per 100 ms (sampling) */
	uint64_t memory_max_faults;    /* page faults per CPU per second above which the fault
					* programs run in random slots (fault_duty.h); 0: always */
};

struct uprobe_link;

/* Called for every record: data starts with __u32 type (enum mlprof_event_type). */
typedef int (*sampler_event_cb)(void *ctx, const void *data, size_t size);

/*
 * Opens, configures, loads and attaches the sampler on every online CPU. Returns NULL with
 * errno set: EPERM (not root / no CAP_BPF+CAP_PERFMON), ENOSYS/EOPNOTSUPP (no BPF or BTF),
 * EINVAL (bad config). The reason is logged.
 */
struct sampler *sampler__new(const struct sampler_config *cfg, sampler_event_cb cb, void *ctx);
void sampler__free(struct sampler *s);

/* Adds a process to the kernel-side filter. Returns 0 or -errno. */
int sampler__add_pid(struct sampler *s, pid_t pid);
struct mlprof_py_proc;
/* Tells the Python frame walker how to read process pid's interpreter. Returns 0 or -errno. */
int sampler__set_python(struct sampler *s, pid_t pid, const struct mlprof_py_proc *cfg);

/*
 * Loads the CUDA/NCCL uprobe programs now (sampler__attach_probes otherwise loads them on
 * first use, which then takes ~0.2 s of verification). 0, or -errno (-ENOTSUP: CUDA probes
 * are off); a failure is remembered and not tried again.
 */
int sampler__cuda_load(struct sampler *s);

/*
 * Attaches the n probes of the ELF file at path (for every process that maps it; BPF
 * filters by pid), each with its return probe when it has one; the CUDA programs are
 * loaded on first use. All or nothing: returns the links (released with
 * uprobe_link__release) or NULL with errno set (ENOTSUP: CUDA probes are off or their
 * programs did not load).
 */
struct uprobe_link *sampler__attach_probes(struct sampler *s, const char *path,
					   const struct sampler_probe *probes, int n);

/*
 * Forgets process pid in the CUDA programs' tables (it exited or exec'd): its sampled
 * PyTorch tensors not freed, its backward pass in progress.
 */
void sampler__cuda_forget_pid(struct sampler *s, pid_t pid);

/*
 * Reads the exact CUDA call counts: cb(pid, kind, what, window, count) for each entry of a
 * window <= max_window (UINT64_MAX: all; of process pid only when pid > 0); with take,
 * those entries are deleted from the map. window: CLOCK_MONOTONIC ns / the config's
 * cuda_count_window_ns at the call (0 without windows).
 */
int sampler__cuda_counts(struct sampler *s, pid_t pid, bool take, uint64_t max_window,
			 sampler_count_cb cb, void *ctx);

/*
 * Continues process pid, held at a CUDA/NCCL library mmap (an MLPROF_EV_MAP_EXEC record
 * with MLPROF_PROC_HELD) once its probes are attached; a no-op for a process not held.
 */
void sampler__release(struct sampler *s, pid_t pid);
struct hold_stats;
/* Continues processes held longer than max_ns (call every poll). */
void sampler__hold_sweep(struct sampler *s, uint64_t max_ns);
/* The holds so far (zero when nothing is held: CUDA probes or holding off). */
void sampler__hold_stats(const struct sampler *s, struct hold_stats *out);

/* Waits up to timeout_ms and consumes all available records; returns count or -errno. */
int sampler__poll(struct sampler *s, int timeout_ms);
struct fault_duty_stats;
/* The page-fault programs' duty cycle (duty 1 when memory growth is off or always on). */
void sampler__memory_duty(struct sampler *s, struct fault_duty_stats *out);
/* Sums the per-CPU BPF counters into out[MLPROF_STAT__COUNT]. */
int sampler__stats(struct sampler *s, uint64_t *out);
const char *sampler__stat_name(enum mlprof_bpf_stat stat);
/* The ring buffer's size for a requested one (0: by CPU count), as the sampler makes it. */
size_t sampler__ringbuf_bytes(size_t want);

/*
 * Kernel memory of the BPF maps other than the ring buffer, charged to the agent's memory
 * cgroup, by estimate: hash maps are preallocated to their max_entries (LRU), the rest
 * grows with the CPU count (per-CPU maps and each object's scratch record). Measured from
 * /proc/PID/fdinfo's memlock: 16.4 MiB with the CPU, off-CPU and memory objects on 2 CPUs;
 * the CUDA object adds about 5 MiB.
 */
uint64_t sampler__maps_bound_bytes(void);

#endif
