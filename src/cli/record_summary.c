// SPDX-License-Identifier: Apache-2.0
/* The summary `mlprof record` prints at the end: samples, health of each event kind, top. */
#include "cli/record_summary.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pipeline/event_kind.h"
#define LOG_MODULE "record"
#include "capture/sampler.h"
#include "pipeline/pipeline.h"
#include "profile/calibrate.h"
#include "profile/profile.h"
#include "unwind/unwind.h"
#include "util/log.h"

struct leaf_count {
	char *name;
	int64_t count;
};

struct summary_ctx {
	const struct profile *prof;
	struct leaf_count *leaves;
	size_t n, cap;
};

static int collect_leaf(const struct profile_sample_view *s, void *ctx)
{
	struct summary_ctx *sc = ctx;
	char buf[512];
	const char *name;

	if (s->n_locations == 0)
		return 0;
	name = profile__location_name(sc->prof, s->location_ids[0], buf, sizeof(buf));
	for (size_t i = 0; i < sc->n; i++) {
		if (strcmp(sc->leaves[i].name, name) == 0) {
			sc->leaves[i].count += s->values[0];
			return 0;
		}
	}
	if (sc->n == sc->cap) {
		size_t cap = sc->cap ? sc->cap * 2 : 64;
		struct leaf_count *nl = realloc(sc->leaves, cap * sizeof(*nl));

		if (!nl)
			return -ENOMEM;
		sc->leaves = nl;
		sc->cap = cap;
	}
	sc->leaves[sc->n].name = strdup(name);
	if (!sc->leaves[sc->n].name)
		return -ENOMEM;
	sc->leaves[sc->n++].count = s->values[0];
	return 0;
}

static int cmp_leaf(const void *a, const void *b)
{
	const struct leaf_count *x = a, *y = b;

	if (x->count != y->count)
		return x->count < y->count ? 1 : -1;
	return strcmp(x->name, y->name);
}

/* One line on the off-CPU profile: time, how it was sampled, what was lost. */
static void print_offcpu(const struct pipeline_stats *ps, const struct profile *prof)
{
	const uint64_t *b = ps->bpf;

	fprintf(stderr,
		"mlprof: off-CPU: %.3f s in %zu stacks; %llu switch-outs, %llu captured (sampled, "
		"weighted), %llu shorter than the minimum",
		(double)profile__total(prof, 0) / 1e9, profile__n_samples(prof),
		(unsigned long long)b[MLPROF_STAT_OFFCPU_SWITCHES],
		(unsigned long long)b[MLPROF_STAT_OFFCPU_CAPTURED],
		(unsigned long long)b[MLPROF_STAT_OFFCPU_SHORT]);
	if (b[MLPROF_STAT_OFFCPU_CAPPED] || b[MLPROF_STAT_OFFCPU_END_LOST] ||
	    ps->offcpu_unmatched || ps->offcpu_dropped)
		fprintf(stderr,
			"; lost: %llu over the rate cap, %llu ends, %llu unmatched, %llu "
			"over the pending bound",
			(unsigned long long)b[MLPROF_STAT_OFFCPU_CAPPED],
			(unsigned long long)b[MLPROF_STAT_OFFCPU_END_LOST],
			(unsigned long long)ps->offcpu_unmatched,
			(unsigned long long)ps->offcpu_dropped);
	fputc('\n', stderr);
}

struct kcount {
	char *name;
	uint64_t count;
};

struct cuda_summary {
	uint64_t calls[MLPROF_SK__COUNT];
	uint64_t frees, tensor_frees;
	struct kcount *k;
	size_t n, cap;
};

static void sum_count(void *ctx, pid_t pid, enum mlprof_sample_kind kind, uint64_t what,
		      const char *name, uint64_t count)
{
	struct cuda_summary *cs = ctx;

	(void)pid;
	if (kind == MLPROF_SK_CUDA_ALLOC && what == 1)
		cs->frees += count;
	else if (kind == MLPROF_SK_CUDA_TENSOR && what == 1)
		cs->tensor_frees += count;
	else if ((unsigned int)kind < MLPROF_SK__COUNT)
		cs->calls[kind] += count;
	if (kind != MLPROF_SK_CUDA_LAUNCH || !name)
		return;
	for (size_t i = 0; i < cs->n; i++)
		if (!strcmp(cs->k[i].name, name)) {
			cs->k[i].count += count;
			return;
		}
	if (cs->n == cs->cap) {
		size_t cap = cs->cap ? cs->cap * 2 : 16;
		struct kcount *k = realloc(cs->k, cap * sizeof(*k));

		if (!k)
			return;
		cs->k = k;
		cs->cap = cap;
	}
	cs->k[cs->n].name = strdup(name);
	if (cs->k[cs->n].name)
		cs->k[cs->n++].count = count;
}

static int cmp_kcount(const void *a, const void *b)
{
	const struct kcount *x = a, *y = b;

	return x->count < y->count ? 1 : x->count > y->count ? -1 : strcmp(x->name, y->name);
}

/* Processes stopped at a CUDA/NCCL library mmap until its probes were attached. */
static void print_holds(const struct hold_stats *h)
{
	uint64_t n = h->held + h->overdue;

	if (!n)
		return;
	fprintf(stderr,
		"mlprof: cuda: %llu holds at a CUDA/NCCL library mmap (the process stopped until "
		"the library's probes were attached; %.1f ms on average, longest %.1f ms%s)\n",
		(unsigned long long)n, (double)h->total_ns / 1e6 / (double)n,
		(double)h->max_ns / 1e6,
		h->overdue ? "; some continued at the 2 s deadline, unprobed" : "");
}

/* PyTorch backward passes whose worker threads' samples were shown under their caller. */
static void print_backward(const struct backward_stats *b)
{
	if (!b->passes)
		return;
	fprintf(stderr,
		"mlprof: torch: %llu backward passes; %llu samples of their autograd worker "
		"threads shown under the caller of backward() (%llu passes forgotten: more "
		"processes in a pass at once than tracked)\n",
		(unsigned long long)b->passes, (unsigned long long)b->grafted,
		(unsigned long long)b->evicted);
}

/* CUDA/NCCL lines: exact call counts from BPF, the top kernels, what the profiles hold. */
static void print_cuda(const struct record_summary *rs, const struct pipeline_stats *ps)
{
	struct profile *const *prof = rs->prof;
	struct pipeline *pl = rs->pl;
	const struct calib_stats *calib = rs->calib;
	unsigned long tensor_sample_kib = rs->cuda_tensor_sample_kib;
	struct cuda_summary cs = {0};
	const struct profile *mem = prof[MLPROF_SK_CUDA_ALLOC];

	if (pipeline__cuda_counts(pl, sum_count, &cs) || !(ps->bpf[MLPROF_STAT_CUDA_EVENTS])) {
		/* nothing to say for programs that do not use CUDA */
		if (ps->cuda.libs_attached || ps->cuda.libs_detached)
			fprintf(stderr,
				"mlprof: cuda: CUDA/NCCL libraries probed, no calls seen\n");
		print_holds(&ps->hold);
		print_backward(&ps->backward);
		free(cs.k);
		return;
	}
	fprintf(stderr,
		"mlprof: cuda: %llu kernel launches, %llu graph launches, %llu synchronize calls "
		"(%.3f s blocked), %llu copies, %llu allocations, %llu frees, %llu NCCL calls "
		"(exact counts; stacks sampled: %llu captured)\n",
		(unsigned long long)cs.calls[MLPROF_SK_CUDA_LAUNCH],
		(unsigned long long)cs.calls[MLPROF_SK_CUDA_GRAPH],
		(unsigned long long)cs.calls[MLPROF_SK_CUDA_SYNC],
		prof[MLPROF_SK_CUDA_SYNC]
			? (double)profile__total(prof[MLPROF_SK_CUDA_SYNC], 0) / 1e9
			: 0.0,
		(unsigned long long)cs.calls[MLPROF_SK_CUDA_MEMCPY],
		(unsigned long long)cs.calls[MLPROF_SK_CUDA_ALLOC], (unsigned long long)cs.frees,
		(unsigned long long)cs.calls[MLPROF_SK_NCCL],
		(unsigned long long)ps->bpf[MLPROF_STAT_CUDA_CAPTURED]);
	if (mem && (cs.calls[MLPROF_SK_CUDA_ALLOC] || cs.frees))
		fprintf(stderr,
			"mlprof: cuda: GPU memory: %lld bytes allocated, %lld bytes still in use "
			"at "
			"the end (or when their process exited)\n",
			(long long)profile__total(mem, 0), (long long)profile__total(mem, 1));
	qsort(cs.k, cs.n, sizeof(*cs.k), cmp_kcount);
	for (size_t i = 0; i < cs.n && i < 5; i++)
		fprintf(stderr, "  %10llu  %s\n", (unsigned long long)cs.k[i].count, cs.k[i].name);
	for (size_t i = 0; i < cs.n; i++)
		free(cs.k[i].name);
	free(cs.k);
	if (cs.calls[MLPROF_SK_CUDA_TENSOR] || cs.tensor_frees) {
		const struct profile *t = prof[MLPROF_SK_CUDA_TENSOR];

		fprintf(stderr,
			"mlprof: cuda: PyTorch tensors (caching allocator): %llu allocations, %llu "
			"frees (exact counts); sampled every %lu KiB on average: %.1f MiB "
			"allocated, %.1f MiB still in use at the end (or when their process "
			"exited)\n",
			(unsigned long long)cs.calls[MLPROF_SK_CUDA_TENSOR],
			(unsigned long long)cs.tensor_frees, tensor_sample_kib,
			t ? (double)profile__total(t, 1) / 1048576.0 : 0.0,
			t ? (double)profile__total(t, 3) / 1048576.0 : 0.0);
	}
	print_holds(&ps->hold);
	print_backward(&ps->backward);
	if (calib && (calib[MLPROF_SK_CUDA_LAUNCH].groups || calib[MLPROF_SK_CUDA_LAUNCH].added)) {
		const struct calib_stats *c = &calib[MLPROF_SK_CUDA_LAUNCH];

		fprintf(stderr,
			"mlprof: cuda: launch stacks calibrated to the exact counts: %zu kernels, "
			"sampled weights %lld -> %lld launches",
			c->groups + c->added, (long long)c->before, (long long)c->after);
		if (c->added)
			fprintf(stderr,
				" (%zu kernels with no stack captured: [stack not captured])",
				c->added);
		fputc('\n', stderr);
	}
}

/* One line on Python-stack health when Python processes were seen. */
static void print_python_health(const struct pipeline_stats *ps)
{
	const struct python_stats *py = &ps->python;
	uint64_t procs = 0, walked;
	const uint64_t *b = ps->bpf;

	for (int v = PY_MINOR_MIN; v <= PY_MINOR_MAX; v++)
		procs += py->procs[v];
	if (!procs && !py->procs_unsupported)
		return;
	fprintf(stderr, "mlprof: python: %llu processes", (unsigned long long)procs);
	for (int v = PY_MINOR_MIN, first = 1; v <= PY_MINOR_MAX; v++) {
		if (!py->procs[v])
			continue;
		fprintf(stderr, "%s3.%d: %llu", first ? " (" : ", ", v,
			(unsigned long long)py->procs[v]);
		first = 0;
	}
	if (procs)
		fprintf(stderr, ")");
	if (py->procs_unsupported)
		fprintf(stderr, ", %llu unsupported (native frames only)",
			(unsigned long long)py->procs_unsupported);
	walked = b[MLPROF_STAT_PY_SAMPLES] + b[MLPROF_STAT_PY_NO_TSTATE] +
		 b[MLPROF_STAT_PY_NO_FRAME] + b[MLPROF_STAT_PY_TID_MISMATCH];
	fprintf(stderr, "; %llu of %llu CPU samples with Python frames",
		(unsigned long long)ps->py_cpu_samples, (unsigned long long)ps->cpu_samples);
	if (walked)
		fprintf(stderr, " (walks of all kinds: %.1f%% found frames)",
			100.0 * (double)b[MLPROF_STAT_PY_SAMPLES] / (double)walked);
	fprintf(stderr, ", %llu frames named, %llu unreadable", (unsigned long long)py->frames,
		(unsigned long long)py->frames_failed);
	if (py->frames_failed)
		fprintf(stderr,
			" (%llu code objects freed or replaced before they were read, %llu in "
			"unreadable memory, %llu not code objects, %llu with unreadable names, "
			"%llu "
			"out of memory)",
			(unsigned long long)py->frames_failed_by[PYCODE_FAIL_STALE],
			(unsigned long long)py->frames_failed_by[PYCODE_FAIL_READ],
			(unsigned long long)py->frames_failed_by[PYCODE_FAIL_TYPE],
			(unsigned long long)py->frames_failed_by[PYCODE_FAIL_STRING],
			(unsigned long long)py->frames_failed_by[PYCODE_FAIL_NOMEM]);
	if (py->configs_repushed || py->procs_evicted)
		fprintf(stderr,
			"; %llu walker configurations pushed again (the kernel's table of Python "
			"processes evicted them), %llu processes evicted from mlprof's",
			(unsigned long long)py->configs_repushed,
			(unsigned long long)py->procs_evicted);
	if (py->code.lt_too_large || py->code.lt_over_budget)
		fprintf(stderr,
			"; lines: %llu line tables over 1 MiB not read, %llu frames shown at "
			"their first line (per-sample line-table budget spent)",
			(unsigned long long)py->code.lt_too_large,
			(unsigned long long)py->code.lt_over_budget);
	if (b[MLPROF_STAT_PY_NO_TSTATE] || b[MLPROF_STAT_PY_NO_FRAME] ||
	    b[MLPROF_STAT_PY_READ_ERR] || b[MLPROF_STAT_PY_TRUNCATED] ||
	    b[MLPROF_STAT_PY_TID_MISMATCH])
		fprintf(stderr,
			"; walks: %llu threads without a thread state, %llu idle, %llu read "
			"errors, %llu deeper than %d frames, %llu thread mismatches",
			(unsigned long long)b[MLPROF_STAT_PY_NO_TSTATE],
			(unsigned long long)b[MLPROF_STAT_PY_NO_FRAME],
			(unsigned long long)b[MLPROF_STAT_PY_READ_ERR],
			(unsigned long long)b[MLPROF_STAT_PY_TRUNCATED], MLPROF_MAX_PYFRAMES,
			(unsigned long long)b[MLPROF_STAT_PY_TID_MISMATCH]);
	fputc('\n', stderr);
}

/* Symbol indexes: how many were built and whether any sample waited for one. */
static void print_symbols(const struct pipeline_stats *ps)
{
	const struct symcache_stats *s = &ps->sym;

	fprintf(stderr,
		"mlprof: symbols: %llu indexes built (%llu rebuilt after eviction), %llu KiB "
		"held; %llu samples waited for an index (%llu emitted with raw addresses)\n",
		(unsigned long long)s->builds, (unsigned long long)s->rebuilds,
		(unsigned long long)(s->bytes >> 10), (unsigned long long)ps->symwait_parked,
		(unsigned long long)ps->symwait_forced);
	if (s->builds)
		pr_info("symbol indexing: %.1f ms of CPU in all; the largest index (%llu symbols) "
			"took at most %.1f ms; %llu names demangled (%llu KiB, %llu evicted)",
			(double)s->build_cpu_ns / 1e6, (unsigned long long)s->build_max_syms,
			(double)s->build_max_cpu_ns / 1e6, (unsigned long long)s->demangled,
			(unsigned long long)(s->demangle_bytes >> 10),
			(unsigned long long)s->demangle_evictions);
}

/* Frames of code without unwind info (Go, no CFI) walked by frame pointer, where there were. */
static void print_fp_fallback(const struct pipeline_stats *ps)
{
	const struct unwind_stats *u = &ps->unwind;

	if (!u->fp_frames && !u->scan_frames && !u->fp_failed[UNWIND_FP_FAIL_BAD_POINTER] &&
	    !u->fp_failed[UNWIND_FP_FAIL_OUTSIDE_STACK])
		return;
	fprintf(stderr,
		"mlprof: code without unwind info: %llu frames recovered by frame pointer (%llu "
		"placed by Go stack deltas), %llu by a return address found on the stack (%llu "
		"where the last scan from the same pc had found it); chains stopped at %llu bad "
		"frame pointers, %llu beyond the stack copy\n",
		(unsigned long long)u->fp_frames, (unsigned long long)u->fp_go_frames,
		(unsigned long long)u->scan_frames, (unsigned long long)u->scan_hinted,
		(unsigned long long)u->fp_failed[UNWIND_FP_FAIL_BAD_POINTER],
		(unsigned long long)u->fp_failed[UNWIND_FP_FAIL_OUTSIDE_STACK]);
}

/*
 * One PyTorch process's training steps: count, step time, the share of each phase, and a
 * verdict where data loading crosses the thresholds PyTorch's and XProf's tools use (more
 * than 5% of the step: moderate, more than 20%: high).
 */
static void print_steps(void *ctx, const struct steps_proc *sp)
{
	const uint64_t *by = sp->phase_ns;
	double wall = (double)sp->wall_ns, data;

	(void)ctx;
	if (!sp->steps) {
		/* no scope probed: the shares from the main thread's samples' Python frames */
		wall = (double)steps_proc__frames_total(sp);
		if (wall <= 0)
			return;
		by = sp->frames_ns;
		fprintf(stderr,
			"mlprof: steps: pid %d (%s): no step boundaries (no record_function scope "
			"was probed: this torch opens them through functions mlprof does not "
			"probe, "
			"as Debian's python3-torch 1.13 does); from the main thread's Python "
			"frames, "
			"%.2f s of %s",
			(int)sp->pid, sp->comm[0] ? sp->comm : "?", wall / 1e9,
			sp->frames_offcpu ? "CPU and off-CPU time"
					  : "CPU time (--off-cpu for waits)");
	} else {
		double mean = wall / (double)sp->steps / 1e6;
		int dec = mean < 10 ? 2 : 1; /* two decimals under 10 ms: a 1 ms step to 1% */

		fprintf(stderr,
			"mlprof: steps: pid %d (%s): %llu steps, %.*f ms each on average "
			"(p50 %.*f, p99 %.*f)",
			(int)sp->pid, sp->comm[0] ? sp->comm : "?", (unsigned long long)sp->steps,
			dec, mean, dec, (double)sp->p50_ns / 1e6, dec, (double)sp->p99_ns / 1e6);
	}
	for (int ph = 0; ph < STEP_PHASE__COUNT; ph++)
		fprintf(stderr, "%s %s %.1f%%", ph ? "," : ";",
			steps__phase_name((enum step_phase)ph), 100.0 * (double)by[ph] / wall);
	data = 100.0 * (double)by[STEP_DATA_WAIT] / wall;
	if (data > 20.0)
		fprintf(stderr,
			" - waiting for data is a high share of each step: the input "
			"pipeline is the bottleneck (more DataLoader workers, prefetching)");
	else if (data > 5.0)
		fprintf(stderr, " - waiting for data is a moderate share of each step");
	fputc('\n', stderr);
}

/* The heap profile: what was sampled, allocated and is still in use, and what was lost. */
static void print_heap(const struct pipeline_stats *ps, const struct profile *h)
{
	fprintf(stderr,
		"mlprof: heap: %llu allocations sampled (one per %llu KiB allocated on average, "
		"%s), standing for %.1f MiB in %lld objects; %.1f MiB in %lld objects still in "
		"use at the end or at process exit; %llu frees of sampled blocks\n",
		(unsigned long long)ps->heap_allocs,
		(unsigned long long)(ps->heap.sample_bytes >> 10), ps->heap.mode,
		h ? (double)profile__total(h, 1) / 1048576.0 : 0.0,
		h ? (long long)profile__total(h, 0) : 0LL,
		h ? (double)profile__total(h, 3) / 1048576.0 : 0.0,
		h ? (long long)profile__total(h, 2) : 0LL, (unsigned long long)ps->heap_frees);
	fprintf(stderr,
		"mlprof: heap: allocator probed in %llu processes (%llu without an allocator, %llu "
		"failed, %llu over the process bound); %llu sampled blocks untracked (live table "
		"full), %llu ends or frees lost (ring buffer full)\n",
		(unsigned long long)ps->heap.procs_total, (unsigned long long)ps->heap.no_allocator,
		(unsigned long long)ps->heap.attach_failed,
		(unsigned long long)ps->heap.procs_limit,
		(unsigned long long)ps->bpf[MLPROF_STAT_HEAP_LIVE_FULL],
		(unsigned long long)ps->bpf[MLPROF_STAT_HEAP_LOST]);
}

/* See record_summary.h. */
void record_summary__print(const struct record_summary *rs)
{
	struct profile *const *prof = rs->prof;
	struct pipeline *pl = rs->pl;
	struct pipeline_stats ps;
	struct summary_ctx sc = {.prof = prof[MLPROF_SK_CPU]};
	int64_t total = profile__total(prof[MLPROF_SK_CPU], 0);
	uint64_t complete, drops;

	pipeline__stats(pl, &ps);
	for (int i = 0; i < MLPROF_STAT__COUNT; i++)
		if (ps.bpf[i])
			pr_debug("BPF counter %s: %llu",
				 sampler__stat_name((enum mlprof_bpf_stat)i),
				 (unsigned long long)ps.bpf[i]);
	drops = ps.bpf[MLPROF_STAT_RB_FULL];
	complete = ps.unwind_ends[UNWIND_END_COMPLETE];
	fprintf(stderr, "mlprof: %lld samples in %.1f s at %u Hz", (long long)total, rs->secs,
		rs->freq_hz);
	fprintf(stderr, ", %llu dropped (ring buffer full)", (unsigned long long)drops);
	if (ps.samples)
		fprintf(stderr, ", %.1f%% user stacks complete",
			100.0 * (double)complete / (double)(ps.samples ? ps.samples : 1));
	/* the consumer's CPU and the symbol index builder's, over every sample delivered */
	if (ps.samples)
		fprintf(stderr, ", %.1f us CPU/sample",
			(double)(ps.cpu_ns + ps.sym.build_cpu_ns) / 1000.0 / (double)ps.samples);
	fputc('\n', stderr);
	print_symbols(&ps);
	/*
	 * A copy cut at --stack-size only costs frames when the unwinder needed the bytes
	 * beyond it: say how many chains lost their outer frames, and what to do about it.
	 */
	if (ps.unwind_ends[UNWIND_END_STACK_CUT])
		fprintf(stderr,
			"mlprof: %llu stacks (%.1f%% of all captured) miss their outermost frames: "
			"the stack was deeper than the %u bytes copied (raise --stack-size, max "
			"%u)\n",
			(unsigned long long)ps.unwind_ends[UNWIND_END_STACK_CUT],
			100.0 * (double)ps.unwind_ends[UNWIND_END_STACK_CUT] /
				(double)(ps.samples ? ps.samples : 1),
			rs->ustack_bytes, (unsigned int)MLPROF_MAX_USTACK);
	if (ps.bpf[MLPROF_STAT_USTACK_ERR])
		fprintf(stderr,
			"mlprof: %llu stacks have at most their innermost user frame: their stack "
			"memory could not be read\n",
			(unsigned long long)ps.bpf[MLPROF_STAT_USTACK_ERR]);
	print_fp_fallback(&ps);
	if (ps.proc_lookups_failed)
		pr_info("maps: %llu code addresses in no mapping known (maps read %llu times, %llu "
			"found unchanged; %llu answered by PROCMAP_QUERY: no code there, %llu in "
			"stretches known to hold none; %llu early re-reads of processes at their "
			"bound "
			"of replaced map sets)",
			(unsigned long long)ps.proc_lookups_failed,
			(unsigned long long)ps.proc_maps_reads,
			(unsigned long long)ps.proc_rereads_unchanged,
			(unsigned long long)ps.proc_misses_checked,
			(unsigned long long)ps.proc_misses_in_gaps,
			(unsigned long long)ps.proc_trims);
	print_python_health(&ps);
	if (prof[MLPROF_SK_OFFCPU])
		print_offcpu(&ps, prof[MLPROF_SK_OFFCPU]);
	if (rs->cuda)
		print_cuda(rs, &ps);
	if (prof[MLPROF_SK_MEMORY]) {
		const struct profile *m = prof[MLPROF_SK_MEMORY];

		fprintf(stderr,
			"mlprof: memory: %.1f MiB of anonymous memory brought in (sampled every "
			"%lu KiB), %.1f MiB still in use at the end or at process exit (%llu "
			"entries "
			"tracked now, %llu dropped by the bound)\n",
			(double)profile__total(m, 0) / 1048576.0, rs->memory_sample_kib,
			(double)profile__total(m, 1) / 1048576.0,
			(unsigned long long)ps.mem.entries, (unsigned long long)ps.mem.dropped);
		/* (an attach takes a little of the first slot: not a duty cycle) */
		if ((double)ps.mem_duty.on_ns < 0.995 * (double)ps.mem_duty.total_ns)
			fprintf(stderr,
				"mlprof: memory: page faults watched %.0f%% of the time (random 20 "
				"ms "
				"slots, weighted: the fault rate was over --memory-max-faults, "
				"%.0f/s per busy CPU at the end)\n",
				100.0 * (double)ps.mem_duty.on_ns / (double)ps.mem_duty.total_ns,
				ps.mem_duty.fault_rate);
	}
	if (ps.heap_on)
		print_heap(&ps, prof[MLPROF_SK_HEAP]);
	if (pipeline__steps(pl)) {
		struct steps_stats ss;

		steps__for_each(pipeline__steps(pl), print_steps, NULL);
		steps__settle(pipeline__steps(pl));
		steps__stats(pipeline__steps(pl), &ss);
		if (ss.duty.cycled_ns)
			fprintf(stderr,
				"mlprof: steps: probes attached %.0f%% of the time (random 0.5 s "
				"slots: the busiest process sent up to %.0f scope events a second, "
				"over "
				"--steps-max-scopes %llu; each costs it ~2 us): the steps above "
				"were "
				"timed in those slots, their shares and times stand for the run, "
				"their count for that part of it\n",
				ss.duty.total_ns
					? 100.0 * (double)ss.duty.on_ns / (double)ss.duty.total_ns
					: 100.0,
				ss.duty.peak_rate, (unsigned long long)ss.duty.max_rate);
		if (ss.files_without_sites)
			fprintf(stderr,
				"mlprof: steps: none found in %llu libtorch_cpu file%s: no "
				"record_function entry point to probe (a stripped build such as "
				"Debian's python3-torch 1.13); CPU and off-CPU profiles are "
				"unaffected\n",
				(unsigned long long)ss.files_without_sites,
				ss.files_without_sites == 1 ? "" : "s");
		/* probed, yet not one scope: say why there is no steps line (workers,
		 * launchers and inference without steps are normal next to a training one) */
		if (ss.procs_without_steps && ss.files_probed && !ss.scopes)
			fprintf(stderr,
				"mlprof: steps: %llu PyTorch process%s without a training step: no "
				"record_function scope was seen (no DataLoader or optimizer ran, "
				"or this torch opens its scopes through functions mlprof does not "
				"probe, as Debian's python3-torch 1.13 does)\n",
				(unsigned long long)ss.procs_without_steps,
				ss.procs_without_steps == 1 ? "" : "es");
	}
	for (int k = 0; k < MLPROF_SK__COUNT; k++)
		if (prof[k] && profile__dropped(prof[k]))
			fprintf(stderr,
				"mlprof: %llu %s samples dropped: profile memory bound reached\n",
				(unsigned long long)profile__dropped(prof[k]),
				event_kind__get((enum mlprof_sample_kind)k)->name);
	if (total <= 0)
		return;
	if (profile__for_each_sample(prof[MLPROF_SK_CPU], collect_leaf, &sc) == 0 && sc.n) {
		qsort(sc.leaves, sc.n, sizeof(*sc.leaves), cmp_leaf);
		fprintf(stderr, "mlprof: top functions (self):\n");
		for (size_t i = 0; i < sc.n && i < 10; i++)
			fprintf(stderr, "  %6.2f%%  %7lld  %s\n",
				100.0 * (double)sc.leaves[i].count / (double)total,
				(long long)sc.leaves[i].count, sc.leaves[i].name);
	}
	for (size_t i = 0; i < sc.n; i++)
		free(sc.leaves[i].name);
	free(sc.leaves);
}
