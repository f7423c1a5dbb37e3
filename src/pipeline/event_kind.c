// SPDX-License-Identifier: Apache-2.0
/* The table of event kinds shared by record and the agent. */
#include "pipeline/event_kind.h"

#include <stddef.h>
#include <string.h>

#include <mlprof/cuda.h>

static int offcpu_labels(const struct sample_info *info, struct profile_label *out)
{
	out[0] = (struct profile_label){
		.key = "offcpu_reason",
		.str = info->aux1 == MLPROF_OFFCPU_PREEMPTED ? "preempted" : "blocked",
	};
	return 1;
}

static int memcpy_labels(const struct sample_info *info, struct profile_label *out)
{
	static const char *const dirs[] = {"host_to_host", "host_to_device", "device_to_host",
					   "device_to_device", "default"};

	out[0] = (struct profile_label){
		.key = "direction",
		.str = info->aux1 < 5 ? dirs[info->aux1] : "unknown",
	};
	return 1;
}

static int nccl_labels(const struct sample_info *info, struct profile_label *out)
{
	static const char *const colls[] = {"",		 "allreduce", "allgather", "reducescatter",
					    "broadcast", "reduce",    "send",	   "recv",
					    "alltoall"};
	static const char *const ops[] = {"sum", "prod", "max", "min", "avg"};
	static const char *const dtypes[] = {"int8",	"uint8",    "int32",	"uint32",
					     "int64",	"uint64",   "float16",	"float32",
					     "float64", "bfloat16", "fp8_e4m3", "fp8_e5m2"};
	uint32_t coll = info->aux1 & 0xff, op = (info->aux1 >> 8) & 0xff;
	uint32_t dt = (info->aux1 >> 16) & 0xff;
	int n = 0;

	out[n++] = (struct profile_label){
		.key = "nccl_op",
		.str = coll < sizeof(colls) / sizeof(colls[0]) ? colls[coll] : "unknown",
	};
	out[n++] = (struct profile_label){
		.key = "nccl_dtype",
		.str = dt < sizeof(dtypes) / sizeof(dtypes[0]) ? dtypes[dt] : "unknown",
	};
	/* reductions also say which: allreduce_sum */
	if (op < sizeof(ops) / sizeof(ops[0]) && coll != MLPROF_NCCL_ALLGATHER)
		out[0].str = coll == MLPROF_NCCL_ALLREDUCE	 ? (op == 0   ? "allreduce_sum"
								    : op == 4 ? "allreduce_avg"
									      : "allreduce")
			     : coll == MLPROF_NCCL_REDUCESCATTER ? "reducescatter"
								 : out[0].str;
	return n;
}

/* NCCL: calls (weighted), and bytes (weighted by BPF into aux[0]). */
static void nccl_values(const struct sample_info *info, int64_t *out)
{
	out[0] = info->value;
	out[1] = (int64_t)info->aux0;
}

/* Device memory: bytes allocated in the window, or (snapshot) still in use at its end. */
static void alloc_values(const struct sample_info *info, int64_t *out)
{
	out[0] = info->inuse ? 0 : info->value;
	out[1] = info->inuse ? info->value : 0;
}

/*
 * Heap: objects and bytes allocated in the window, or (snapshot) still in use at its end.
 * value: weighted bytes; aux1: the size asked for, so objects = bytes / size. One sampled
 * allocation stands for 1/p objects (p its sampling probability, e.g. 1.16 for 1 MiB at
 * 512 KiB): rounded at random (up with the fraction's probability; aux0, the capture's
 * time, or a tensor's address, is the random source), so that the sum stays unbiased; rounding each
 * to the nearest counted 13% too few 1 MiB allocations. A snapshot's value is already the sum of
 * its stack's blocks (one size per stack): rounded once.
 */
static void heap_values(const struct sample_info *info, int64_t *out)
{
	double o = info->aux1 ? (double)info->value / (double)info->aux1 : 0.0;
	int64_t objects = (int64_t)o;

	if (info->inuse) {
		objects = (int64_t)(o + 0.5);
	} else if (o > (double)objects) {
		uint64_t r = info->aux0 * 0x9e3779b97f4a7c15ull;

		r ^= r >> 29;
		r *= 0xbf58476d1ce4e5b9ull;
		r ^= r >> 32;
		if ((double)(r >> 11) * 0x1.0p-53 < o - (double)objects)
			objects++;
	}
	if (info->value && !objects && info->inuse)
		objects = 1;
	out[0] = info->inuse ? 0 : objects;
	out[1] = info->inuse ? 0 : info->value;
	out[2] = info->inuse ? objects : 0;
	out[3] = info->inuse ? info->value : 0;
}

/* The values of a kind of allocations sampled by bytes (heap_values), in use until freed. */
#define SAMPLED_ALLOCATIONS                                                                        \
	.n_values = 4,                                                                             \
	.values = {{"alloc_objects", "count"},                                                     \
		   {"alloc_space", "bytes"},                                                       \
		   {"inuse_objects", "count"},                                                     \
		   {"inuse_space", "bytes"}},                                                      \
	.period_type = {"space", "bytes"}, .memory = true, .compute = heap_values

static const struct event_kind kinds[MLPROF_SK__COUNT] = {
	[MLPROF_SK_CPU] =
		{
			.kind = MLPROF_SK_CPU,
			.name = "cpu",
			.series_name = "process_cpu",
			.title = "CPU time",
			.n_values = 2,
			.values = {{"samples", "count"}, {"cpu", "nanoseconds"}},
			.period_type = {"cpu", "nanoseconds"},
			.scaled_by_period = true,
		},
	[MLPROF_SK_OFFCPU] =
		{
			.kind = MLPROF_SK_OFFCPU,
			.name = "offcpu",
			.series_name = "offcpu",
			.title = "off-CPU time (blocked or waiting for a CPU)",
			.n_values = 1,
			.values = {{"offcpu", "nanoseconds"}},
			.period_type = {"offcpu", "nanoseconds"},
			.labels = offcpu_labels,
		},
	[MLPROF_SK_CUDA_LAUNCH] =
		{
			.kind = MLPROF_SK_CUDA_LAUNCH,
			.name = "cuda_launches",
			.series_name = "cuda_launches",
			.title = "CUDA kernel launches by call site (leaf: the kernel)",
			.n_values = 1,
			.values = {{"cuda_launches", "count"}},
			.period_type = {"cuda_launches", "count"},
		},
	[MLPROF_SK_CUDA_SYNC] =
		{
			.kind = MLPROF_SK_CUDA_SYNC,
			.name = "cuda_sync",
			.series_name = "cuda_sync",
			.title = "CPU time blocked waiting for the GPU (synchronize calls)",
			.n_values = 1,
			.values = {{"cuda_sync_wait", "nanoseconds"}},
			.period_type = {"cuda_sync_wait", "nanoseconds"},
		},
	[MLPROF_SK_CUDA_MEMCPY] =
		{
			.kind = MLPROF_SK_CUDA_MEMCPY,
			.name = "cuda_memcpy",
			.series_name = "cuda_memcpy",
			.title = "host<->device copies (bytes)",
			.n_values = 1,
			.values = {{"memcpy_bytes", "bytes"}},
			.period_type = {"memcpy_bytes", "bytes"},
			.labels = memcpy_labels,
		},
	[MLPROF_SK_CUDA_ALLOC] =
		{
			.kind = MLPROF_SK_CUDA_ALLOC,
			.name = "cuda_memory",
			.series_name = "cuda_memory",
			.title = "GPU memory by allocation site",
			.n_values = 2,
			.values = {{"alloc_space", "bytes"}, {"inuse_space", "bytes"}},
			.period_type = {"space", "bytes"},
			.memory = true,
			.compute = alloc_values,
		},
	[MLPROF_SK_CUDA_GRAPH] =
		{
			.kind = MLPROF_SK_CUDA_GRAPH,
			.name = "cuda_graphs",
			.series_name = "cuda_graphs",
			.title = "CUDA graph launches",
			.n_values = 1,
			.values = {{"graph_launches", "count"}},
			.period_type = {"graph_launches", "count"},
		},
	[MLPROF_SK_NCCL] =
		{
			.kind = MLPROF_SK_NCCL,
			.name = "nccl",
			.series_name = "nccl",
			.title = "NCCL calls and bytes",
			.n_values = 2,
			.values = {{"nccl_calls", "count"}, {"nccl_bytes", "bytes"}},
			.period_type = {"nccl_calls", "count"},
			.labels = nccl_labels,
			.compute = nccl_values,
		},
	[MLPROF_SK_MEMORY] =
		{
			.kind = MLPROF_SK_MEMORY,
			.name = "memory",
			.series_name = "memory",
			.title =
				"memory growth: anonymous memory brought in by page faults, by the "
				"code that first touched it (not who holds it: --heap), and still "
				"in use",
			.n_values = 2,
			.values = {{"alloc_space", "bytes"}, {"inuse_space", "bytes"}},
			.period_type = {"space", "bytes"},
			.memory = true,
			.compute = alloc_values,
		},
	[MLPROF_SK_HEAP] =
		{
			.kind = MLPROF_SK_HEAP,
			.name = "heap",
			.series_name = "memory_heap",
			.title = "heap memory by allocation site (malloc & co, sampled by bytes): "
				 "allocated, and still in use",
			SAMPLED_ALLOCATIONS,
		},
	[MLPROF_SK_CUDA_TENSOR] =
		{
			.kind = MLPROF_SK_CUDA_TENSOR,
			.name = "cuda_tensors",
			.series_name = "cuda_tensors",
			.title = "PyTorch tensors' GPU memory by allocation site (its caching "
				 "allocator, sampled by bytes): allocated, and still in use",
			SAMPLED_ALLOCATIONS,
		},
	[MLPROF_SK_STEPS] =
		{
			.kind = MLPROF_SK_STEPS,
			.name = "steps",
			.series_name = "ml_steps",
			.title = "training steps' wall time by stack and ml_phase (PyTorch "
				 "training threads: CPU samples, and off-CPU time with --off-cpu)",
			.n_values = 1,
			.values = {{"wall", "nanoseconds"}},
			.period_type = {"wall", "nanoseconds"},
		},
};

/* See event_kind.h. */
const struct event_kind *event_kind__get(enum mlprof_sample_kind kind)
{
	if ((unsigned int)kind >= MLPROF_SK__COUNT || !kinds[kind].name)
		return NULL;
	return &kinds[kind];
}

/* See event_kind.h. */
const struct event_kind *event_kind__by_name(const char *name)
{
	for (int k = 0; k < MLPROF_SK__COUNT; k++)
		if (kinds[k].name && strcmp(kinds[k].name, name) == 0)
			return &kinds[k];
	return NULL;
}

/* See event_kind.h. */
void event_kind__profile_config(const struct event_kind *ek, unsigned int freq_hz,
				struct profile_config *out)
{
	out->n_sample_types = ek->n_values;
	for (int i = 0; i < ek->n_values; i++)
		out->sample_types[i] = ek->values[i];
	out->period_type = ek->period_type;
	out->period = ek->scaled_by_period && freq_hz ? 1000000000ll / freq_hz : 1;
}

/* See event_kind.h. */
void event_kind__sample(const struct event_kind *ek, const struct sample_info *info, int64_t period,
			int64_t *values, struct profile_label *labels, int *n_labels)
{
	if (ek->compute) {
		ek->compute(info, values);
	} else {
		values[0] = info->value;
		if (ek->n_values > 1)
			values[1] = ek->scaled_by_period ? info->value * period : info->value;
	}
	if (ek->labels)
		*n_labels += ek->labels(info, labels + *n_labels);
}
