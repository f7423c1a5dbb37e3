/* SPDX-License-Identifier: Apache-2.0 */
/*
 * For the capture folder's other BPF objects (heap_probes.c): what they share with the
 * sampler's cpu object so that their records look like its own.
 */
#ifndef MLPROF_SAMPLER_SHARE_H
#define MLPROF_SAMPLER_SHARE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct bpf_map;
struct sampler;

/* The capture knobs of bpf/capture.bpf.h, as the cpu object has them. */
struct sampler_knobs {
	uint32_t filter_mode;
	bool follow_children, skip_idle;
	uint32_t self_pid, ustack_bytes, wakeup_bytes;
};

void sampler__knobs(const struct sampler *s, struct sampler_knobs *out);

/*
 * Every extra BPF object shares the cpu object's capture state: its ring buffer, pid
 * filter, Python walker maps, thread stack mappings and counters (its scratch record stays
 * its own: programs of different objects may nest on a CPU). Returns 0 or -errno (logged).
 */
int sampler__share_maps(struct sampler *s, const char *what, struct bpf_map *scratch,
			struct bpf_map *rb, struct bpf_map *pids, struct bpf_map *pids_gen,
			struct bpf_map *py_procs, struct bpf_map *stats, struct bpf_map *py_known,
			struct bpf_map *stack_vmas);

/*
 * Walks BPF map fd (keys of key_size bytes, at most 64): visit(key) returns 1 for the keys
 * to delete, which are deleted after the walk (deleting while walking restarts it).
 * 0 or -EINVAL.
 */
int sampler__map_walk(int fd, size_t key_size, int (*visit)(const void *key, void *ctx), void *ctx);

/*
 * The objects that send training-step scopes (bpf/scope.bpf.h) share the cpu object's
 * scope_runs map: 0 or -errno (logged).
 */
int sampler__share_scope_runs(struct sampler *s, struct bpf_map *scope_runs);

/*
 * Attaches the cpu object's on_scope_switch (once; a failure is logged and scope CPU times
 * stay at the scheduler's tick resolution). Called when PyTorch scopes are first probed.
 */
void sampler__scope_cpu_start(struct sampler *s);

/* Sets skeleton o's capture knobs and maps like the cpu object's; 0 or -errno. */
#define sampler_share_capture(s, o, what)                                                          \
	({                                                                                         \
		struct sampler_knobs k_;                                                           \
		sampler__knobs(s, &k_);                                                            \
		(o)->rodata->filter_mode = k_.filter_mode;                                         \
		(o)->rodata->follow_children = k_.follow_children;                                 \
		(o)->rodata->skip_idle = k_.skip_idle;                                             \
		(o)->rodata->self_pid = k_.self_pid;                                               \
		(o)->rodata->ustack_bytes = k_.ustack_bytes;                                       \
		(o)->rodata->wakeup_bytes = k_.wakeup_bytes;                                       \
		sampler__share_maps(s, what, (o)->maps.scratch, (o)->maps.rb, (o)->maps.pids,      \
				    (o)->maps.pids_gen, (o)->maps.py_procs, (o)->maps.stats,       \
				    (o)->maps.py_known, (o)->maps.stack_vmas);                     \
	})

#endif
