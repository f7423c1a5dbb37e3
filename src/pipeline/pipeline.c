// SPDX-License-Identifier: Apache-2.0
/*
 * The sampling pipeline: BPF records -> unwinding -> symbolization -> frames to a sink.
 * Here: its lifecycle, the records' dispatch, stage 1 (a sample's stack unwound) and the
 * processes that exited; stage 2 is name_stage.c, samples waiting for an end intervals.c,
 * the exact CUDA counts cuda_counts.c.
 */
#include "pipeline/pipeline.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "capture/sampler.h"
#include "memory/memtrack.h"
#include "pipeline/cuda_counts.h"
#include "pipeline/frame_cache.h"
#include "pipeline/intervals.h"
#include "pipeline/name_stage.h"
#include "pipeline/pipeline_state.h"
#include "pipeline/stack_queue.h"
#include "runtimes/cuda/cuda.h"
#include "runtimes/python/python.h"
#include "runtimes/python/python_code.h"
#include "symbolize/dwarf_lines.h"
#include "symbolize/proc.h"
#include "symbolize/symcache.h"
#include "unwind/unwind.h"
#include "unwind/unwound.h"
#include "util/clock.h"

#define LOG_MODULE "pipeline"
#include "util/log.h"

/* Memory in use by site: entries (one per allocation or sampled fault) and stacks. */
#define MEM_MAX_ENTRIES 262144
/* Defaults of the process and symbol cache bounds (pipeline_config's 0). */
#define PIPELINE_MAX_PROCS	4096
#define PIPELINE_SYMCACHE_BYTES (32u << 20)
#define MEM_MAX_STACK_BYTES	(16u << 20)
/* Named frames kept by (maps generation, pc). */
#define FRAME_CACHE_SLOTS 16384
/*
 * Samples waiting for a symbol index being built (a library seen for the first time): at
 * most this many, this many bytes, this long (name_stage.c); beyond, the oldest go out with
 * the frames of files still being indexed unnamed (mapping + address, counted).
 */
#define SYMWAIT_MAX	  65536
#define SYMWAIT_MAX_BYTES (8u << 20)
/*
 * A process held at a CUDA/NCCL library mmap is continued after this long even when its
 * probes are not attached yet (a consumer that far behind must not stall the job).
 */
#define PIPELINE_HOLD_MAX_NS (2ull * 1000 * 1000 * 1000)

/*
 * Looks at a process's mappings (again when they changed): interpreters for the Python
 * walker, CUDA/NCCL libraries to probe.
 */
static void inspect_proc(struct pipeline *pl, struct proc *p)
{
	if (pl->py) {
		struct mlprof_py_proc pycfg;

		if (python__check(pl->py, p, &pycfg) == 1)
			sampler__set_python(pl->sampler, p->pid, &pycfg);
	}
	if (pl->cuda)
		cuda__check(pl->cuda, p);
	if (pl->heap)
		heap__check(pl->heap, p);
	if (pl->steps)
		steps__check(pl->steps, p);
}

/* Stage 1: the record's user stack to program counters (needs the stack copy). */
static void unwind_stage(struct pipeline *pl, const struct mlprof_sample *s, size_t size,
			 struct unwound *u)
{
	struct proc *p;
	size_t pyoff = sizeof(*s) + MLPROF_PY_FRAMES_OFF(s->ustack_len);

	memcpy(&u->hdr, s, sizeof(*s));
	u->end = UNWIND_END_NO_REGS;
	u->have_proc = false;
	u->phase = 0;
	u->nu = 0;
	u->pcs = pl->pcs;
	u->py = NULL;
	if (s->py_nframes && s->py_nframes <= MLPROF_MAX_PYFRAMES &&
	    pyoff + (size_t)s->py_nframes * sizeof(struct mlprof_py_frame) <= size)
		u->py = (const void *)((const uint8_t *)s + pyoff);
	else
		u->hdr.py_nframes = 0;
	if ((s->flags & MLPROF_SF_KTHREAD) || s->pid == 0)
		return;
	p = proc_cache__get(pl->procs, (pid_t)s->pid);
	if (!p) {
		u->end = UNWIND_END_NO_INFO;
		return;
	}
	u->have_proc = true;
	inspect_proc(pl, p);
	u->nu = unwinder__unwind(pl->unwinder, p, s, pl->pcs,
				 PIPELINE_MAX_FRAMES - MLPROF_MAX_KSTACK, &u->end);
	if (u->nu < 0)
		u->nu = 0;
}

/*
 * The per-process state an exited process kept for its parked samples goes; its exact CUDA
 * counts are taken from BPF, named now that its indexes are built (or waited long enough).
 */
static void forget_exited(struct pipeline *pl, pid_t pid)
{
	proc_cache__keep_dead(pl->procs, pid, false);
	if (pl->cuda) {
		cuda_counts__keep_exited(pl, pid);
		cuda__forget(pl->cuda, pid);
	}
	if (pl->py)
		python__forget(pl->py, pid);
}

/*
 * Drops the state of exited processes whose parked samples are all out (all: force them out
 * first, at the drain). Returns 0 or the sink's error.
 */
static int sweep_exited(struct pipeline *pl, bool all)
{
	size_t k = 0;
	int err = 0;

	for (size_t i = 0; i < pl->nexited; i++) {
		pid_t pid = pl->exited[i];

		if (all)
			err = name_stage__flush_pid(pl, (uint32_t)pid) ?: err;
		if (name_stage__has_parked(pl, (uint32_t)pid) ||
		    (!all && cuda_counts__wait_index(pl, pid))) {
			pl->exited[k++] = pid;
			continue;
		}
		forget_exited(pl, pid);
	}
	pl->nexited = k;
	return err;
}

/* Takes pid off the exited list (its pid is being reused): forced out, state dropped. */
static int reuse_exited(struct pipeline *pl, uint32_t pid)
{
	int err = 0;

	for (size_t i = 0; i < pl->nexited; i++) {
		if ((uint32_t)pl->exited[i] != pid)
			continue;
		err = name_stage__flush_pid(pl, pid);
		forget_exited(pl, (pid_t)pid);
		pl->exited[i] = pl->exited[--pl->nexited];
		break;
	}
	return err;
}

/* See pipeline.h. */
struct steps *pipeline__steps(const struct pipeline *pl)
{
	return pl->steps;
}

/* See pipeline.h. */
int pipeline__cuda_counts(struct pipeline *pl, pipeline_count_cb cb, void *ctx)
{
	return cuda_counts__all(pl, cb, ctx);
}

/* See pipeline.h. */
int pipeline__cuda_counts_take(struct pipeline *pl, uint64_t window, pipeline_count_cb cb,
			       void *ctx)
{
	return cuda_counts__take(pl, window, cb, ctx);
}

struct snap_ctx {
	struct pipeline *pl;
	uint64_t time_ns;
};

static int snap_one(void *ctx, const struct unwound *u, int64_t inuse)
{
	struct snap_ctx *sc = ctx;

	return name_stage__emit(sc->pl, u, inuse, true, sc->time_ns);
}

/* In-use views of one process (pid) or of all (0). */
static int snapshot(struct pipeline *pl, uint32_t pid, uint64_t time_ns)
{
	struct snap_ctx sc = {.pl = pl, .time_ns = time_ns};
	int err;

	err = memtrack__for_each(pl->mem, MLPROF_SK_CUDA_ALLOC, pid, snap_one, &sc);
	if (!err)
		err = memtrack__for_each(pl->mem, MLPROF_SK_CUDA_TENSOR, pid, snap_one, &sc);
	if (!err)
		err = memtrack__for_each(pl->mem, MLPROF_SK_MEMORY, pid, snap_one, &sc);
	if (!err)
		err = memtrack__for_each(pl->mem, MLPROF_SK_HEAP, pid, snap_one, &sc);
	return err;
}

/* See pipeline.h. */
int pipeline__snapshot(struct pipeline *pl, uint64_t time_ns)
{
	return snapshot(pl, 0, time_ns);
}

/* See pipeline.h. */
int64_t pipeline__inuse(struct pipeline *pl, enum mlprof_sample_kind kind, pid_t pid)
{
	return memtrack__inuse(pl->mem, (uint32_t)kind, (uint32_t)pid);
}

/* Mean bytes between two sampled PyTorch tensor allocations. */
static uint64_t tensor_sample(const struct pipeline *pl)
{
	return pl->cfg.cuda_tensor_sample ? pl->cfg.cuda_tensor_sample : MLPROF_TENSOR_SAMPLE_BYTES;
}

static int handle_sample(struct pipeline *pl, const struct mlprof_sample *s, size_t size)
{
	struct unwound u;

	if (size < sizeof(*s) || size < sizeof(*s) + s->ustack_len)
		return 0; /* malformed record: the sampler never produces these */
	unwind_stage(pl, s, size, &u);
	if (s->kind == MLPROF_SK_BACKWARD) { /* a backward pass's caller: no profile of its own */
		if (pl->bwd)
			backward__begin(pl->bwd, &u);
		return 0;
	}
	if (pl->bwd)
		backward__graft(pl->bwd, &u);
	u.phase = pl->steps ? (uint8_t)steps__phase_of(pl->steps, (pid_t)s->pid, (pid_t)s->tid,
						       s->kind == MLPROF_SK_CPU, s->time_ns)
			    : 0;
	if (s->flags & MLPROF_SF_HAS_END) {
		intervals__add(pl, &u);
		return 0;
	}
	/* a sampled tensor stands for the bytes its sampling probability says, and stays in
	 * the in-use view until its free */
	if (s->kind == MLPROF_SK_CUDA_TENSOR) {
		int64_t w = heap__weight(s->value, tensor_sample(pl));

		memtrack__add(pl->mem, MLPROF_SK_CUDA_TENSOR, s->aux[0], w, &u);
		return name_stage__emit(pl, &u, w, false, 0);
	}
	/* sampled memory growth stays in the in-use view until its pages are given back */
	if (s->kind == MLPROF_SK_MEMORY)
		memtrack__add(pl->mem, MLPROF_SK_MEMORY, s->aux[0], (int64_t)s->value, &u);
	return name_stage__emit(pl, &u, (int64_t)s->value, false, 0);
}

/*
 * A process mapped a file executable (a library loaded, dlopen): read its maps again now
 * and look for interpreters and CUDA/NCCL libraries before the new code runs.
 */
static void on_map_exec(struct pipeline *pl, pid_t pid)
{
	struct proc *p;

	pl->proc_events++;
	/* also without Python or CUDA: the new code may sit in a stretch remembered as empty */
	proc_cache__refresh(pl->procs, pid);
	/*
	 * Past its bound of replaced map sets (torch's import) a process re-reads only at a
	 * trim, which does the refresh just asked for: now, so that the library is inspected
	 * (a process held at a CUDA library's mmap waits for it). Between two records nothing
	 * borrowed from the process cache is in use either.
	 */
	proc_cache__trim(pl->procs);
	p = proc_cache__get(pl->procs, pid);
	if (p)
		inspect_proc(pl, p);
}

static int on_event(void *ctx, const void *data, size_t size)
{
	struct pipeline *pl = ctx;
	const struct mlprof_proc_event *pe = data;
	uint32_t type;
	int err = 0;

	if (size < sizeof(type))
		return 0;
	memcpy(&type, data, sizeof(type));
	switch (type) {
	case MLPROF_EV_SAMPLE:
		err = handle_sample(pl, data, size);
		break;
	case MLPROF_EV_SAMPLE_END:
		if (size >= sizeof(struct mlprof_sample_end))
			err = intervals__end(pl, data);
		break;
	case MLPROF_EV_MEM_RELEASE:
		if (size >= sizeof(struct mlprof_mem_release)) {
			const struct mlprof_mem_release *mr = data;

			memtrack__free_range(pl->mem, MLPROF_SK_MEMORY, mr->pid, mr->start,
					     mr->len);
		}
		break;
	case MLPROF_EV_MAP_EXEC:
		if (size >= sizeof(*pe)) {
			on_map_exec(pl, (pid_t)pe->pid);
			/* stopped at a CUDA/NCCL library's mmap: its probes are in place now */
			if (pe->pad & MLPROF_PROC_HELD)
				sampler__release(pl->sampler, (pid_t)pe->pid);
		}
		break;
	case MLPROF_EV_CUDA_NAME:
		if (size >= sizeof(struct mlprof_cuda_name) && pl->cuda)
			cuda__on_name(pl->cuda, data);
		break;
	case MLPROF_EV_CUDA_FREE:
		if (size >= sizeof(struct mlprof_free)) {
			const struct mlprof_free *cf = data;

			memtrack__free_at(pl->mem, MLPROF_SK_CUDA_ALLOC, cf->pid, cf->ptr);
		}
		break;
	case MLPROF_EV_TENSOR_FREE:
		if (size >= sizeof(struct mlprof_free)) {
			const struct mlprof_free *tf = data;

			memtrack__free_at(pl->mem, MLPROF_SK_CUDA_TENSOR, tf->pid, tf->ptr);
		}
		break;
	case MLPROF_EV_TORCH_SCOPE:
		if (size >= MLPROF_TORCH_SCOPE_UNNAMED_SIZE && pl->steps) {
			/* an exit has no name field */
			struct mlprof_torch_scope e = {0};

			memcpy(&e, data, size < sizeof(e) ? size : sizeof(e));
			steps__on_scope(pl->steps, &e);
		}
		break;
	case MLPROF_EV_HEAP_FREE:
		if (size >= sizeof(struct mlprof_free)) {
			const struct mlprof_free *hf = data;

			pl->heap_frees++;
			memtrack__free_at(pl->mem, MLPROF_SK_HEAP, hf->pid, hf->ptr);
		}
		break;
	case MLPROF_EV_EXEC:
		if (size >= sizeof(*pe)) {
			/* parked samples of the old image go out while its maps are known */
			err = reuse_exited(pl, pe->pid);
			if (pl->wait.count)
				err = name_stage__flush_pid(pl, pe->pid) ?: err;
			/* the old image's memory went with it: nothing of it is in use any more */
			memtrack__drop_pid(pl->mem, pe->pid);
			if (pl->heap)
				heap__on_exec(pl->heap, (pid_t)pe->pid);
			if (pl->py)
				python__forget(pl->py, (pid_t)pe->pid);
			proc_cache__on_exec(pl->procs, (pid_t)pe->pid);
			pl->proc_events++;
		}
		break;
	case MLPROF_EV_EXIT:
		if (size >= sizeof(*pe)) {
			/* dead first: its maps must not be re-read (empty) while we name things */
			proc_cache__on_exit(pl->procs, (pid_t)pe->pid);
			intervals__drop_pid(pl, pe->pid);
			/* what it held when it ended is its last in-use view (a leak report) */
			err = snapshot(pl, pe->pid, pe->time_ns);
			memtrack__drop_pid(pl->mem, pe->pid);
			if (pl->heap)
				heap__forget(pl->heap, (pid_t)pe->pid);
			if (pl->steps)
				steps__exited(pl->steps, (pid_t)pe->pid);
			backward__forget(pl->bwd, pe->pid);
			/* samples still waiting for an index keep its state until they are out, and
			 * so do CUDA counts whose kernel names wait for one */
			if ((name_stage__has_parked(pl, pe->pid) ||
			     cuda_counts__wait_index(pl, (pid_t)pe->pid)) &&
			    pl->nexited < EXITED_MAX) {
				pl->exited[pl->nexited++] = (pid_t)pe->pid;
				/* (its maps outlive gc until then) */
				proc_cache__keep_dead(pl->procs, (pid_t)pe->pid, true);
			} else
				forget_exited(pl, (pid_t)pe->pid);
			pl->proc_events++;
		}
		break;
	case MLPROF_EV_FORK:
		/* a new process: if its pid was used before, the cached maps are someone else's */
		if (size >= sizeof(*pe)) {
			err = reuse_exited(pl, pe->pid);
			if (pl->wait.count)
				err = name_stage__flush_pid(pl, pe->pid) ?: err;
			if (pl->py)
				python__forget(pl->py, (pid_t)pe->pid);
			proc_cache__on_exec(pl->procs, (pid_t)pe->pid);
			pl->proc_events++;
		}
		break;
	default:
		pl->proc_events++;
		break;
	}
	if (err < 0) {
		pl->sink_err = err;
		return err; /* stops ring_buffer__poll */
	}
	return 0;
}

/*
 * The process cache: map sets bounded by bytes (proc_cache_config.max_bytes; evicted ones
 * are freed at the next gc, so up to twice that), plus each entry's own struct.
 */
#define PROC_MAPS_BYTES	 (32ull << 20)
#define PROC_ENTRY_BYTES 1024u

/* See pipeline.h. */
uint64_t pipeline__bound_bytes(const struct pipeline_config *cfg)
{
	uint64_t b = sampler__ringbuf_bytes(cfg->ringbuf_bytes) + sampler__maps_bound_bytes();

	b += cfg->symcache_bytes ? cfg->symcache_bytes : PIPELINE_SYMCACHE_BYTES;
	b += SYMCACHE_DEMANGLE_BYTES + frame_cache__bound_bytes(FRAME_CACHE_SLOTS) +
	     SYMWAIT_MAX_BYTES;
	b += 2 * PROC_MAPS_BYTES +
	     (uint64_t)(cfg->max_procs ? cfg->max_procs : PIPELINE_MAX_PROCS) * PROC_ENTRY_BYTES;
	if (cfg->python)
		b += cfg->python_cache_bytes ? cfg->python_cache_bytes : PYCODE_DEFAULT_MAX_BYTES;
	if (cfg->source_lines != PIPELINE_LINES_OFF)
		b += DL_DEFAULT_MAX_BYTES;
	if (cfg->offcpu || cfg->cuda.sync || cfg->cuda.memory || cfg->heap)
		b += PENDING_MAX_BYTES;
	b += memtrack__bound_bytes(MEM_MAX_ENTRIES, MEM_MAX_STACK_BYTES);
	if (cfg->steps)
		b += steps__bound_bytes();
	return b;
}

struct pipeline *pipeline__new(const struct pipeline_config *cfg, pipeline_sink_cb sink, void *ctx)
{
	struct pipeline *pl;
	struct sampler_config scfg = {0};
	struct proc_cache_config pcfg = {0};
	struct symcache_config sym_cfg = {0};
	int err = 0;

	pl = calloc(1, sizeof(*pl));
	if (!pl)
		return NULL;
	pl->cfg = *cfg;
	pl->sink = sink;
	pl->sink_ctx = ctx;

	pcfg.max_procs = cfg->max_procs ? cfg->max_procs : PIPELINE_MAX_PROCS;
	pcfg.max_elf_files = 1024;
	pcfg.max_bytes = PROC_MAPS_BYTES;
	pcfg.proc_root = "/proc";
	pl->procs = proc_cache__new(&pcfg);
	pl->mem = memtrack__new(MEM_MAX_ENTRIES, MEM_MAX_STACK_BYTES);
	pl->bwd = backward__new(PIPELINE_MAX_FRAMES - MLPROF_MAX_KSTACK);
	sym_cfg.max_bytes = cfg->symcache_bytes ? cfg->symcache_bytes : PIPELINE_SYMCACHE_BYTES;
	sym_cfg.debug_dirs = "/usr/lib/debug";
	sym_cfg.no_source_lines = cfg->source_lines == PIPELINE_LINES_OFF;
	sym_cfg.max_dwarf_bytes = cfg->source_lines == PIPELINE_LINES_ALL ? 1ull << 30 : 1ull << 20;
	sym_cfg.background = true; /* never index a file on the ring buffer's thread */
	pl->syms = symcache__new(&sym_cfg);
	pl->fcache = frame_cache__new(FRAME_CACHE_SLOTS);
	stack_queue__init(&pl->wait, SYMWAIT_MAX, SYMWAIT_MAX_BYTES);
	stack_queue__init(&pl->pend, PENDING_MAX, PENDING_MAX_BYTES);
	if (!pl->procs || !pl->syms || !pl->mem || !pl->fcache) {
		err = -errno;
		pr_err("cannot create caches: %s", strerror(errno));
		goto cleanup;
	}
	if (cfg->python) {
		struct python_config pycfg = {
			.code_cache_bytes = cfg->python_cache_bytes,
			.force_thread_list = getenv("MLPROF_PY_TSTATE") &&
					     strcmp(getenv("MLPROF_PY_TSTATE"), "list") == 0,
		};

		pl->py = python__new(&pycfg, pl->procs);
		if (!pl->py) {
			err = -errno;
			pr_err("cannot create the Python support: %s", strerror(errno));
			goto cleanup;
		}
	}
	pl->unwinder = unwinder__new(pl->procs);
	if (!pl->unwinder) {
		err = -errno;
		pr_err("cannot create unwinder: %s", strerror(errno));
		goto cleanup;
	}
	scfg.freq_hz = cfg->freq_hz;
	scfg.ustack_bytes = cfg->ustack_bytes ? cfg->ustack_bytes : MLPROF_DEFAULT_USTACK;
	scfg.filter_pids = cfg->filter_pids;
	scfg.follow_children = cfg->follow_children;
	scfg.skip_idle = true;
	scfg.ringbuf_bytes = cfg->ringbuf_bytes;
	scfg.self_pid = getpid();
	scfg.batch = true; /* pipeline__poll is always called with a timeout */
	scfg.offcpu = cfg->offcpu;
	scfg.offcpu_min_ns = cfg->offcpu_min_ns;
	scfg.offcpu_budget = cfg->offcpu_budget;
	scfg.cuda = cfg->cuda_on;
	scfg.cuda_budget = cfg->cuda_budget;
	scfg.cuda_count_window_ns = cfg->cuda_count_window_ns;
	scfg.cuda_sync_intervals = cfg->steps;
	scfg.cuda_tensor_sample = tensor_sample(pl);
	scfg.hold_cuda_maps = !cfg->cuda_no_hold;
	scfg.memory = cfg->memory;
	scfg.memory_sample_bytes = cfg->memory_sample_bytes;
	scfg.memory_budget = cfg->memory_budget;
	scfg.memory_max_faults = cfg->memory_max_faults;
	pl->sampler = sampler__new(&scfg, on_event, pl);
	if (!pl->sampler) {
		err = -errno;
		goto cleanup;
	}
	if (cfg->cuda_on) {
		pl->cuda = cuda__new(&cfg->cuda, pl->procs, pl->sampler);
		if (!pl->cuda) {
			err = -errno;
			goto cleanup;
		}
		/* (a failure is logged and remembered: CUDA profiles are then off, as before) */
		if (cfg->cuda_preload)
			sampler__cuda_load(pl->sampler);
	}
	if (cfg->steps) {
		pl->steps = steps__new(pl->procs, pl->sampler, cfg->steps_max_scopes);
		if (!pl->steps) {
			err = -errno;
			goto cleanup;
		}
	}
	if (cfg->heap) {
		pl->heap = heap__new(&cfg->heap_cfg, pl->procs, pl->sampler);
		if (!pl->heap) {
			err = -errno;
			goto cleanup;
		}
	}
	if (cfg->kernel_frames) {
		pl->ksyms = ksyms__load("/proc/kallsyms");
		pl->kident = frame__new_ident();
		if (!pl->ksyms)
			pr_warn("kernel symbols unavailable (%s): kernel frames stay unnamed",
				strerror(errno));
	}
	for (int i = 0; i < cfg->n_pids; i++) {
		err = pipeline__add_pid(pl, cfg->pids[i]);
		if (err) {
			pr_err("cannot filter pid %d: %s", cfg->pids[i], strerror(-err));
			goto cleanup;
		}
	}
	return pl;
cleanup:
	pipeline__free(pl);
	errno = -err;
	return NULL;
}

void pipeline__free(struct pipeline *pl)
{
	if (!pl)
		return;
	heap__free(pl->heap);
	steps__free(pl->steps);
	sampler__free(pl->sampler);
	stack_queue__clear(&pl->wait);
	stack_queue__clear(&pl->pend);
	memtrack__free(pl->mem);
	backward__free(pl->bwd);
	cuda_counts__clear(pl);
	cuda__free(pl->cuda);
	unwinder__free(pl->unwinder);
	python__free(pl->py);
	ksyms__free(pl->ksyms);
	symcache__free(pl->syms);
	{
		struct frame_cache_stats fs;

		frame_cache__stats(pl->fcache, &fs);
		pr_debug("frame cache: %llu lookups, %llu hits, %llu bytes, %llu puts over the "
			 "bound, %llu into a slot the sample used",
			 (unsigned long long)fs.lookups, (unsigned long long)fs.hits,
			 (unsigned long long)fs.bytes, (unsigned long long)fs.full,
			 (unsigned long long)fs.busy);
	}
	frame_cache__free(pl->fcache);
	proc_cache__free(pl->procs);
	free(pl);
}

int pipeline__add_pid(struct pipeline *pl, pid_t pid)
{
	struct proc *p;
	int err = sampler__add_pid(pl->sampler, pid);

	/* a running process may never be sampled (idle, blocked): look at it now */
	if (!err && (p = proc_cache__get(pl->procs, pid)))
		inspect_proc(pl, p);
	return err;
}

static uint64_t thread_cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

int pipeline__poll(struct pipeline *pl, int timeout_ms)
{
	uint64_t t0 = thread_cpu_ns();
	int n;

	pl->sink_err = 0;
	/* the step probes' duty cycle switches at its slots' ends (not once the capture ends) */
	if (pl->steps && !pl->ending) {
		int w = steps__wait_ms(pl->steps, clock__mono_ns());

		if (w >= 0 && (timeout_ms < 0 || w < timeout_ms))
			timeout_ms = w;
	}
	n = sampler__poll(pl->sampler, timeout_ms);
	if (pl->steps && !pl->ending)
		steps__tick(pl->steps, clock__mono_ns());
	sampler__hold_sweep(pl->sampler, PIPELINE_HOLD_MAX_NS);
	if (pl->wait.count && !pl->sink_err)
		pl->sink_err = name_stage__retry_parked(pl, 0, 0, false);
	if (pl->nexited && !pl->sink_err)
		pl->sink_err = sweep_exited(pl, false);
	/*
	 * A process that replaced its maps RETIRED_MAX times since the last gc (PyTorch's
	 * import) no longer re-reads them: the samples of a library it maps next had no mapping
	 * (numpy's OpenBLAS threads spinning right after their library was mapped: ~11% of a
	 * GPU training job's samples without a frame). Between polls nothing borrowed from the
	 * process cache is in use: free the replaced sets now, not at the next gc.
	 */
	proc_cache__trim(pl->procs);
	pl->cpu_ns += thread_cpu_ns() - t0;
	if (pl->sink_err)
		return pl->sink_err;
	return n;
}

/* See pipeline.h. */
void pipeline__ending(struct pipeline *pl)
{
	pl->ending = true;
}

/* See pipeline.h. */
int pipeline__flush_before(struct pipeline *pl, uint64_t time_ns)
{
	return pl->wait.count ? name_stage__retry_parked(pl, 0, time_ns, false) : 0;
}

/* See pipeline.h. */
int pipeline__drain(struct pipeline *pl, int timeout_ms)
{
	uint64_t t0;
	int err;

	if (!pl->wait.count && !pl->nexited)
		return 0;
	/* waiting for the builder is not the consumer's CPU time */
	symcache__wait(pl->syms, timeout_ms);
	t0 = thread_cpu_ns();
	err = name_stage__retry_parked(pl, 0, 0, false);
	if (!err)
		err = name_stage__retry_parked(pl, 0, 0, true);
	if (!err)
		err = sweep_exited(pl, true);
	pl->cpu_ns += thread_cpu_ns() - t0;
	return err;
}

void pipeline__gc(struct pipeline *pl)
{
	/*
	 * Exited processes whose samples still wait for an index stay (their maps kept): a short
	 * process whose samples all came in one batch had them forced out unnamed here while
	 * the index was still being built. They go when named, after SYMWAIT_MAX_AGE_NS, when
	 * their pid is reused, or at the drain.
	 */
	if (pl->nexited)
		sweep_exited(pl, false);
	if (pl->cuda)
		cuda__gc(pl->cuda);
	proc_cache__gc(pl->procs);
}

void pipeline__stats(struct pipeline *pl, struct pipeline_stats *out)
{
	struct symcache_stats ss;
	struct proc_cache_stats ps;

	memset(out, 0, sizeof(*out));
	sampler__stats(pl->sampler, out->bpf);
	sampler__memory_duty(pl->sampler, &out->mem_duty);
	out->steps_duty.duty = 1.0;
	if (pl->steps) {
		struct steps_stats sst;

		steps__stats(pl->steps, &sst);
		out->steps_duty = sst.duty;
	}
	out->samples = pl->samples;
	out->cpu_samples = pl->cpu_samples;
	out->py_cpu_samples = pl->py_cpu_samples;
	memcpy(out->unwind_ends, pl->unwind_ends, sizeof(out->unwind_ends));
	unwinder__stats(pl->unwinder, &out->unwind);
	out->frames_total = pl->frames_total;
	out->frames_unsymbolized = pl->frames_unsym;
	out->proc_events = pl->proc_events;
	out->cpu_ns = pl->cpu_ns;
	symcache__stats(pl->syms, &ss);
	out->sym = ss;
	out->symwait_parked = pl->wait_parked;
	out->symwait_now = pl->wait.count;
	out->symwait_forced = pl->wait_forced;
	out->symwait_frames_unnamed = pl->wait_frames_unnamed;
	proc_cache__stats(pl->procs, &ps);
	out->procs_cached = ps.procs;
	out->proc_evictions = ps.proc_evictions;
	out->proc_bytes = ps.bytes;
	out->proc_maps_truncated = ps.maps_truncated;
	out->proc_lookups_failed = ps.lookups_failed;
	out->proc_maps_reads = ps.maps_reads;
	out->proc_rereads_unchanged = ps.rereads_unchanged;
	out->proc_misses_checked = ps.misses_checked;
	out->proc_misses_in_gaps = ps.misses_in_gaps;
	out->proc_trims = ps.trims;
	out->elf_files = ps.elf_files;
	if (pl->py)
		python__stats(pl->py, &out->python);
	out->offcpu_pending = pl->pend.count;
	out->offcpu_pending_bytes = pl->pend.bytes;
	out->offcpu_unmatched = pl->offcpu_unmatched;
	out->offcpu_dropped = pl->offcpu_dropped;
	memtrack__stats(pl->mem, &out->mem);
	backward__stats(pl->bwd, &out->backward);
	out->heap_on = pl->heap != NULL;
	if (pl->heap)
		heap__stats(pl->heap, &out->heap);
	out->heap_allocs = pl->heap_allocs;
	out->heap_alloc_bytes = pl->heap_alloc_bytes;
	out->heap_frees = pl->heap_frees;
	if (pl->cuda)
		cuda__stats(pl->cuda, &out->cuda);
	sampler__hold_stats(pl->sampler, &out->hold);
}
