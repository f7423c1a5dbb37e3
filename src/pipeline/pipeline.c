// SPDX-License-Identifier: Apache-2.0
/* The sampling pipeline: BPF records -> unwinding -> symbolization -> frames to a sink. */
#include "pipeline/pipeline.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "capture/sampler.h"
#include "memory/memtrack.h"
#include "pipeline/frame_cache.h"
#include "pipeline/phase_frames.h"
#include "pipeline/symwait.h"
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

/* Off-CPU samples waiting for the end of their interval: bounded count and bytes. */
#define PENDING_MAX	  8192
#define PENDING_MAX_BYTES (16u << 20)

/* Exact CUDA counts kept for exited processes (for the end-of-run summary). */
#define DONE_MAX 65536

struct done_count {
	pid_t pid;
	uint32_t kind;
	uint64_t what, window, count;
	char *name;
};

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
 * most this many, this many bytes, this long; beyond, the oldest go out with the frames of
 * files still being indexed unnamed (mapping + address, counted).
 */
#define SYMWAIT_MAX	   65536
#define SYMWAIT_MAX_BYTES  (8u << 20)
#define SYMWAIT_MAX_AGE_NS (5ull * 1000 * 1000 * 1000)
/*
 * A process held at a CUDA/NCCL library mmap is continued after this long even when its
 * probes are not attached yet (a consumer that far behind must not stall the job).
 */
#define PIPELINE_HOLD_MAX_NS (2ull * 1000 * 1000 * 1000)
#define EXITED_MAX	     256
#define KMEMO_SLOTS	     512

/* Per-sample string scratch: symbol names are copied here so that all frames of one stack
 * stay valid together (symcache results live only until the next lookup). */
#define NAME_ARENA_BYTES (128 * 1024)

struct pipeline {
	struct pipeline_config cfg;
	pipeline_sink_cb sink;
	void *sink_ctx;
	struct sampler *sampler;
	struct proc_cache *procs;
	struct symcache *syms;
	struct frame_cache *fcache; /* named native frames by (maps generation, pc) */
	struct ksyms *ksyms;
	/* kernel pcs named last (the sampled paths repeat: a binary search of ~150k symbols
	 * was ~2% of the consumer), and the frame ident of every kernel frame */
	struct kmemo {
		uint64_t addr;
		const char *name;
	} kmemo[KMEMO_SLOTS];
	uint64_t kident;
	struct unwinder *unwinder;
	struct python *py;    /* NULL when Python frames are off */
	struct backward *bwd; /* PyTorch backward passes in progress (workers' samples) */
	struct cuda *cuda;    /* NULL when CUDA probes are off */
	int sink_err;

	/* samples parked until their symbol indexes are built */
	struct symwait wait;
	uint64_t wait_gen;	/* symcache__ready_gen when the parked samples were last tried */
	bool sym_missing;	/* a frame of the sample being emitted needs an index not built */
	bool force_emit;	/* emit even so (frames of files still indexed stay unnamed) */
	uint64_t parked_now_ns; /* parked_ns of the sample being re-emitted (0: a new one) */
	uint64_t wait_parked, wait_forced, wait_frames_unnamed;
	/*
	 * Exited processes whose parked samples still wait for an index: their maps stay
	 * (dead, until gc) and their Python and CUDA state is dropped only once the last one
	 * went out (forget_exited), so that a process that lived 50 ms is named all the same.
	 */
	pid_t exited[EXITED_MAX];
	size_t nexited;

	uint64_t samples, frames_total, frames_unsym, proc_events, cpu_ns;
	uint64_t cpu_samples, py_cpu_samples;
	struct pending *pend_head, *pend_tail;
	size_t pend_bytes, pend_count;
	uint64_t offcpu_unmatched, offcpu_dropped;
	struct memtrack *mem; /* memory in use by site (device allocations, growth, heap) */
	struct heap *heap;    /* heap probes per process; NULL when heap profiling is off */
	struct steps *steps;  /* PyTorch training steps; NULL when off */
	uint64_t heap_allocs, heap_frees;
	int64_t heap_alloc_bytes;
	/* exact CUDA counts of exited processes, named when they exited */
	struct done_count *done;
	size_t ndone, capdone;
	uint64_t done_dropped;
	char kname[512];
	struct proc *cur_proc; /* for name_addr() during kernel naming */
	uint64_t unwind_ends[6];

	uint64_t pcs[PIPELINE_MAX_FRAMES];
	struct frame ufr[PIPELINE_MAX_FRAMES + 2]; /* user frames before Python merging */
	struct frame frames[PIPELINE_MAX_FRAMES + MLPROF_MAX_PYFRAMES + 4];
	char names[NAME_ARENA_BYTES];
	size_t names_used;
};

static const char *arena_copy(struct pipeline *pl, const char *s)
{
	size_t len = strlen(s) + 1;
	char *dst;

	if (pl->names_used + len > sizeof(pl->names))
		return "[name arena full]";
	dst = pl->names + pl->names_used;
	memcpy(dst, s, len);
	pl->names_used += len;
	return dst;
}

static const char *truncation_reason(enum unwind_end end)
{
	switch (end) {
	case UNWIND_END_STACK_CUT:
		return "[truncated: stack copy limit]";
	case UNWIND_END_NO_INFO:
		return "[truncated: no unwind info]";
	case UNWIND_END_MAX_DEPTH:
		return "[truncated: max depth]";
	case UNWIND_END_BAD_FRAME:
		return "[truncated: unwind error]";
	case UNWIND_END_NO_REGS:
		return "[truncated: no user registers]";
	case UNWIND_END_COMPLETE:
		break;
	}
	return NULL;
}

static bool is_bpf_frame(const char *name)
{
	return strncmp(name, "bpf_prog_", 9) == 0 || strncmp(name, "bpf_trace_run", 13) == 0 ||
	       strncmp(name, "__bpf_trace_", 12) == 0 || strncmp(name, "__traceiter_", 12) == 0;
}

/* ksyms__lookup through the memo; NULL when pc has no symbol. */
static const char *kernel_name(struct pipeline *pl, uint64_t pc)
{
	struct kmemo *m = &pl->kmemo[(pc ^ pc >> 9 ^ pc >> 18) & (KMEMO_SLOTS - 1)];

	if (m->addr != pc || !pc) {
		m->addr = pc;
		m->name = ksyms__lookup(pl->ksyms, pc, NULL);
	}
	return m->name;
}

static int add_kernel_frames(struct pipeline *pl, const struct mlprof_sample *s, int n)
{
	uint32_t klen = s->kstack_len;

	if (!pl->cfg.kernel_frames)
		return n;
	if (klen > MLPROF_MAX_KSTACK)
		klen = MLPROF_MAX_KSTACK;
	for (uint32_t i = 0, leaf = 1; i < klen && n < PIPELINE_MAX_FRAMES; i++) {
		struct frame *f = &pl->frames[n];
		const char *name = pl->ksyms ? kernel_name(pl, s->kstack[i]) : NULL;

		/* stacks taken at a tracepoint start inside our own BPF program: not shown */
		if (leaf && name && is_bpf_frame(name))
			continue;
		leaf = 0;
		n++;
		memset(f, 0, sizeof(*f));
		f->kind = FRAME_KERNEL;
		f->addr = s->kstack[i];
		f->function = name ? arena_copy(pl, name) : "[unknown kernel]";
		f->ident = pl->kident; /* (an address's name never changes: one ident for all) */
	}
	return n;
}

/*
 * Names one native frame into f (strings owned by the caches). Returns true when the result
 * is final for this generation of the process's maps (it may be cached), false when the
 * file's index is still being built, no mapping holds pc (yet), or memory ran out.
 */
static bool resolve_native(struct pipeline *pl, struct proc *p, uint64_t pc, struct frame *f)
{
	const struct proc_map *m;
	struct elf_file *ef;
	struct sym_result res;
	uint64_t vaddr;
	int err;

	memset(f, 0, sizeof(*f));
	f->kind = FRAME_NATIVE;
	f->addr = pc;
	m = proc_cache__find_map(pl->procs, p, pc);
	if (!m)
		return false; /* not cached: a later miss may re-read the maps and find it */
	f->map = &m->fm;
	ef = proc_cache__map_elf(pl->procs, p, m);
	if (!ef || proc_map__to_vaddr(m, ef, pc, &vaddr) != 0)
		return true;
	err = symcache__lookup(pl->syms, ef, p->root, vaddr, &res);
	if (err == -EAGAIN || err == -EBUSY) {
		/* the file's index is being built: the sample waits for it (or goes unnamed) */
		pl->sym_missing = true;
		if (pl->force_emit)
			pl->wait_frames_unnamed++;
		return false;
	}
	if (err)
		return err == -ENOENT;
	f->function = res.name;
	if (res.file) {
		f->file = res.file;
		f->line = res.line;
		f->start_line = res.start_line;
	}
	return true;
}

/*
 * The frame ident of p's native frames named at symbol epoch: what a frame says is fixed by
 * (maps generation, epoch, pc), and the frame carries pc.
 */
static uint64_t native_ident(struct proc *p, uint64_t epoch)
{
	if (!p->ident || p->ident_epoch != epoch) {
		p->ident = frame__new_ident();
		p->ident_epoch = epoch;
	}
	return p->ident;
}

/* Names one native frame; pc is already adjusted to point into the call instruction. */
static void symbolize_native(struct pipeline *pl, struct proc *p, uint64_t pc, struct frame *f)
{
	uint64_t epoch = symcache__epoch(pl->syms); /* (names may get better: debuginfod) */
	bool final = frame_cache__get(pl->fcache, p->gen, epoch, pc, f), kept = final;

	pl->frames_total++;
	if (!final && resolve_native(pl, p, pc, f)) {
		final = true;
		epoch = symcache__epoch(pl->syms);
		kept = frame_cache__put(pl->fcache, p->gen, epoch, pc, f);
	}
	/* (not final: the file's index is being built, the frame may be named later) */
	f->ident = final ? native_ident(p, epoch) : 0;
	if (!f->function) {
		pl->frames_unsym++;
		return;
	}
	/* the frame cache's strings last the sample; the symbol cache's until its next lookup */
	if (kept)
		return;
	f->function = arena_copy(pl, f->function);
	if (f->file)
		f->file = arena_copy(pl, f->file);
}

/* An off-CPU sample waiting for its interval to end (FIFO list, oldest first). */
struct pending {
	struct pending *next, *prev;
	size_t bytes;
	struct unwound u;
	uint64_t data[]; /* pcs, then Python frames */
};

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

static void truncation_frame(struct frame *f, const char *why)
{
	memset(f, 0, sizeof(*f));
	f->kind = FRAME_TRUNCATED;
	f->function = why;
}

/* Stage 2: frames named (kernel, native, Python merged in) and handed to the sink. */
/* Symbolizes one address of the process for the CUDA kernel namer (NULL: unnamed). */
static const char *name_addr(void *ctx, uint64_t addr)
{
	struct pipeline *pl = ctx;
	struct frame f;

	if (!pl->cur_proc)
		return NULL;
	symbolize_native(pl, pl->cur_proc, addr, &f);
	return f.function;
}

/* A launch sample's leaf: the kernel it launched (FRAME_CUDA_KERNEL). */
static void kernel_frame(struct pipeline *pl, struct proc *p, const struct mlprof_sample *s,
			 struct frame *f)
{
	const char *fn_name = NULL;
	struct frame tmp;

	pl->cur_proc = p;
	if (p && s->aux[1] == MLPROF_CUDA_RT) {
		symbolize_native(pl, p, s->aux[0], &tmp);
		fn_name = tmp.function;
	}
	memset(f, 0, sizeof(*f));
	f->kind = FRAME_CUDA_KERNEL;
	if (pl->sym_missing && !pl->force_emit) {
		/* not named from a half-built view: the sample waits for the index */
		pl->cur_proc = NULL;
		return;
	}
	f->function = arena_copy(pl, cuda__kernel_name(pl->cuda, (pid_t)s->pid, s->aux[0],
						       (uint32_t)s->aux[1], fn_name, name_addr, pl,
						       pl->kname, sizeof(pl->kname)));
	pl->cur_proc = NULL;
}

/*
 * A launch whose handle has no name yet (made before the probes were attached): its caller
 * is the kernel's host stub (__device_stub__<mangled>), which names it, now and from then
 * on (the exact counts too).
 */
static void name_from_stub(struct pipeline *pl, const struct mlprof_sample *s, int n)
{
	static const char stub[] = "__device_stub__";
	const char *kname = pl->frames[0].function;

	if (pl->frames[0].kind != FRAME_CUDA_KERNEL || !kname || strncmp(kname, "[cuda kernel", 12))
		return;
	for (int i = 1; i < n && i < 8; i++) {
		const char *f = pl->frames[i].function;

		if (pl->frames[i].kind == FRAME_NATIVE && f &&
		    !strncmp(f, stub, sizeof(stub) - 1)) {
			cuda__learn_name(pl->cuda, (pid_t)s->pid, s->aux[0], f);
			cuda__display_name(f, pl->kname, sizeof(pl->kname));
			pl->frames[0].function = arena_copy(pl, pl->kname);
			return;
		}
	}
}

/*
 * Hands a sample to the sink, and a training thread's off-CPU sample a second time as
 * MLPROF_SK_STEPS: its wall time under its ml_phase label, so that one profile holds a
 * training step's whole time by phase. The CPU samples' part of it is the CPU profile's
 * samples that have an ml_phase, which the sink adds to its steps profile when it writes
 * them out (profile__add_selected), not sample by sample.
 */
static int emit_sample(struct pipeline *pl, struct sample_info *info, int n)
{
	int err = pl->sink(pl->sink_ctx, info, pl->frames, n);

	if (err || !info->ml_phase || info->inuse || info->kind != MLPROF_SK_OFFCPU)
		return err;
	info->kind = MLPROF_SK_STEPS;
	return info->value ? pl->sink(pl->sink_ctx, info, pl->frames, n) : 0;
}

static int emit_stage(struct pipeline *pl, const struct unwound *u, int64_t value, bool inuse,
		      uint64_t time_ns);

/* Emits a parked sample now, with whatever indexes are ready (the rest unnamed). */
static int emit_forced(struct pipeline *pl, struct parked *e)
{
	int err;

	symwait__take(&pl->wait, e);
	pl->force_emit = true;
	err = emit_stage(pl, &e->u, e->value, e->inuse, e->time_ns);
	pl->force_emit = false;
	free(e);
	return err;
}

/*
 * Keeps a sample whose frames need an index still being built, to emit it once the index
 * is ready (pipeline__poll tries again). A full queue sends its oldest out first; a sample
 * that cannot be kept goes out now, unnamed where it must.
 */
static int park(struct pipeline *pl, struct proc *p, const struct unwound *u, int64_t value,
		bool inuse, uint64_t time_ns)
{
	uint64_t first = pl->parked_now_ns ? pl->parked_now_ns : clock__mono_ns();
	int err = 0, perr;

	if (!pl->parked_now_ns) {
		pl->wait_parked++;
		/* its code objects are read now: the process may be gone when it is named */
		if (pl->py && u->py)
			python__warm(pl->py, p, u->py, u->hdr.py_nframes);
	}
	perr = symwait__park(&pl->wait, u, value, inuse, time_ns, first);
	/* (a re-parked sample was just taken out: it never needs room made) */
	while (perr == -ENOSPC && pl->wait.head && !pl->parked_now_ns) {
		err = emit_forced(pl, pl->wait.head) ?: err;
		perr = symwait__park(&pl->wait, u, value, inuse, time_ns, first);
	}
	if (perr) {
		pl->force_emit = true;
		err = emit_stage(pl, u, value, inuse, time_ns) ?: err;
		pl->force_emit = false;
	}
	return err;
}

/*
 * Emits parked samples: those whose indexes are ready (when any became ready since the last
 * try), those parked longer than SYMWAIT_MAX_AGE_NS, those of pid (0: none) and those
 * whose time is before before_ns (0: none) now (the process exited or changed image, the
 * window closes), and all of them when force is set.
 */
static int retry_parked(struct pipeline *pl, uint32_t pid, uint64_t before_ns, bool force)
{
	uint64_t gen = symcache__ready_gen(pl->syms), now = clock__mono_ns();
	bool ready = gen != pl->wait_gen;
	size_t n = pl->wait.count;
	struct parked *e, *next;
	int err = 0;

	pl->wait_gen = gen;
	/* re-parked samples go to the tail: only the n there now are looked at */
	for (e = pl->wait.head; n && e; n--, e = next) {
		next = e->next;
		uint64_t t = e->time_ns ? e->time_ns : e->u.hdr.time_ns;

		if (force || (pid && e->u.hdr.pid == pid) || t < before_ns ||
		    now - e->parked_ns > SYMWAIT_MAX_AGE_NS) {
			err = emit_forced(pl, e) ?: err;
			continue;
		}
		if (!ready)
			continue;
		symwait__take(&pl->wait, e);
		pl->parked_now_ns = e->parked_ns;
		err = emit_stage(pl, &e->u, e->value, e->inuse, e->time_ns) ?: err;
		pl->parked_now_ns = 0;
		free(e);
	}
	return err;
}

/*
 * A process changes its image (or its pid is reused): its parked samples go out now, while
 * its maps are known, with raw addresses for the frames of files still being indexed. No
 * wait for the builder here: the events behind this one (a new process's libraries to
 * probe before it calls them) must not be held up.
 */
static int flush_pid(struct pipeline *pl, uint32_t pid)
{
	return retry_parked(pl, pid, 0, false);
}

static bool has_parked(const struct pipeline *pl, uint32_t pid)
{
	for (const struct parked *e = pl->wait.head; e; e = e->next)
		if (e->u.hdr.pid == pid)
			return true;
	return false;
}

static void count_keep(void *ctx, uint32_t pid, uint32_t kind, uint64_t what, uint64_t window,
		       uint64_t count);

/*
 * Whether a launch count of exited process pid cannot be named yet because the index of
 * the file holding its host stub is still being built (then the pid waits on the exited
 * list, like a process with parked samples).
 */
struct name_check {
	struct pipeline *pl;
	bool pending;
};

static const char *count_name(struct pipeline *pl, uint32_t pid, uint32_t kind, uint64_t what);

static void check_one(void *ctx, uint32_t pid, uint32_t kind, uint64_t what, uint64_t window,
		      uint64_t count)
{
	struct name_check *nc = ctx;

	(void)window;
	(void)count;
	if (nc->pending || kind != MLPROF_SK_CUDA_LAUNCH)
		return;
	count_name(nc->pl, pid, kind, what);
	nc->pending = nc->pl->sym_missing;
	nc->pl->sym_missing = false;
}

static bool counts_wait_index(struct pipeline *pl, pid_t pid)
{
	struct name_check nc = {.pl = pl};

	/* no index being built: every name is final (and the counts map is not walked twice) */
	if (!pl->cuda || !symcache__wait(pl->syms, 0))
		return false;
	sampler__cuda_counts(pl->sampler, pid, false, UINT64_MAX, check_one, &nc);
	return nc.pending;
}

/*
 * The per-process state an exited process kept for its parked samples goes; its exact CUDA
 * counts are taken from BPF, named now that its indexes are built (or waited long enough).
 */
static void forget_exited(struct pipeline *pl, pid_t pid)
{
	if (pl->cuda) {
		sampler__cuda_counts(pl->sampler, pid, true, UINT64_MAX, count_keep, pl);
		cuda__forget(pl->cuda, pid);
	}
	if (pl->py)
		python__forget(pl->py, pid);
}

/*
 * Drops the state of exited processes whose parked samples are all out (all: force them out
 * first: their maps go at gc, a pid being reused). Returns 0 or the sink's error.
 */
static int sweep_exited(struct pipeline *pl, bool all)
{
	size_t k = 0;
	int err = 0;

	for (size_t i = 0; i < pl->nexited; i++) {
		pid_t pid = pl->exited[i];

		if (all)
			err = flush_pid(pl, (uint32_t)pid) ?: err;
		if (has_parked(pl, (uint32_t)pid) || (!all && counts_wait_index(pl, pid))) {
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
		err = flush_pid(pl, pid);
		forget_exited(pl, (pid_t)pid);
		pl->exited[i] = pl->exited[--pl->nexited];
		break;
	}
	return err;
}

static int emit_stage(struct pipeline *pl, const struct unwound *u, int64_t value, bool inuse,
		      uint64_t time_ns)
{
	const struct mlprof_sample *s = &u->hdr;
	struct sample_info info = {0};
	char thread_name[MLPROF_COMM_LEN + 1];
	struct proc *p = NULL;
	int n, nu = 0, phase;

	pl->names_used = 0;
	frame_cache__begin_sample(pl->fcache);
	pl->sym_missing = false;
	memcpy(thread_name, s->comm, MLPROF_COMM_LEN);
	thread_name[MLPROF_COMM_LEN] = '\0';

	p = u->have_proc ? proc_cache__get(pl->procs, (pid_t)s->pid) : NULL;
	n = 0;
	if (s->kind == MLPROF_SK_CUDA_LAUNCH && pl->cuda)
		kernel_frame(pl, p, s, &pl->frames[n++]);
	n = add_kernel_frames(pl, s, n);
	if (!(s->flags & MLPROF_SF_KTHREAD) && s->pid != 0) {
		const char *why;

		if (p) {
			frame_cache__prefetch(pl->fcache, p->gen, u->pcs, u->nu);
			for (int i = 0; i < u->nu; i++) {
				uint64_t pc = i == 0 ? u->pcs[i] : u->pcs[i] - 1;

				symbolize_native(pl, p, pc, &pl->ufr[nu++]);
			}
			if (pl->sym_missing && !pl->force_emit)
				return park(pl, p, u, value, inuse, time_ns);
			why = truncation_reason(u->end);
		} else {
			why = "[process exited before its maps were read]";
		}
		pl->unwind_ends[u->end]++;
		if (why)
			truncation_frame(&pl->ufr[nu++], why);
		if (pl->py && p && s->py_status == MLPROF_PY_NONE) {
			struct mlprof_py_proc cfg;

			if (python__lost_config(pl->py, p->pid, s->time_ns, &cfg))
				sampler__set_python(pl->sampler, p->pid, &cfg);
		}
		if (pl->py && p)
			n += python__frames(pl->py, p, u->py, s->py_nframes, s->py_status, pl->ufr,
					    nu, pl->frames + n,
					    (int)(sizeof(pl->frames) / sizeof(pl->frames[0])) - n -
						    1);
		else {
			memcpy(pl->frames + n, pl->ufr, (size_t)nu * sizeof(pl->ufr[0]));
			n += nu;
		}
	}
	if (pl->sym_missing && !pl->force_emit)
		return park(pl, p, u, value, inuse, time_ns);
	if (n == 0)
		truncation_frame(&pl->frames[n++], "[no stack]");
	if (pl->sym_missing)
		pl->wait_forced++;
	if (s->kind == MLPROF_SK_CUDA_LAUNCH && pl->cuda)
		name_from_stub(pl, s, n);

	info.pid = (pid_t)s->pid;
	info.tid = (pid_t)s->tid;
	info.kind = (enum mlprof_sample_kind)s->kind;
	info.time_ns = time_ns ? time_ns : s->time_ns;
	info.value = value;
	info.inuse = inuse;
	info.aux0 = s->aux[0];
	info.aux1 = s->aux[1];
	info.thread_name = thread_name;
	info.proc_name = p && p->comm[0] ? p->comm : thread_name;
	info.proc = p;
	info.start_ns = s->start_ns;
	phase = u->phase;
	/* a PyTorch process with no probed scope: the phase its Python frames show */
	if (!phase && pl->steps && !inuse &&
	    (s->kind == MLPROF_SK_CPU || s->kind == MLPROF_SK_OFFCPU))
		phase = steps__phase_by_frames(pl->steps, info.pid, info.tid,
					       s->kind == MLPROF_SK_CPU,
					       phase_frames__classify(pl->frames, n),
					       s->kind == MLPROF_SK_CPU && pl->cfg.freq_hz
						       ? 1000000000ull / pl->cfg.freq_hz
						       : (uint64_t)value,
					       info.time_ns);
	info.ml_phase = phase ? steps__phase_name((enum step_phase)(phase - 1)) : NULL;
	pl->samples++;
	if (s->kind == MLPROF_SK_CPU && !inuse) {
		pl->cpu_samples++;
		for (int i = 0; i < n; i++) {
			if (pl->frames[i].kind == FRAME_PYTHON) {
				pl->py_cpu_samples++;
				break;
			}
		}
	}
	return emit_sample(pl, &info, n);
}

/* Takes e off the pending list without freeing it. */
static void pending_detach(struct pipeline *pl, struct pending *e)
{
	if (e->prev)
		e->prev->next = e->next;
	else
		pl->pend_head = e->next;
	if (e->next)
		e->next->prev = e->prev;
	else
		pl->pend_tail = e->prev;
	pl->pend_bytes -= e->bytes;
	pl->pend_count--;
}

struct count_ctx {
	struct pipeline *pl;
	pipeline_count_cb cb;
	void *ctx;
	bool only_window; /* only the counts of window (older ones are dropped) */
	uint64_t window;
};

/* The kernel name of a launch count's function (NULL for other kinds). */
static const char *count_name(struct pipeline *pl, uint32_t pid, uint32_t kind, uint64_t what)
{
	const char *name = NULL;

	if (kind == MLPROF_SK_CUDA_LAUNCH && pl->cuda) {
		struct proc *p = proc_cache__get(pl->procs, (pid_t)pid);
		struct mlprof_sample s = {.pid = pid, .kind = kind};
		bool force = pl->force_emit;
		struct frame f;

		/* a count is named now, never parked (sym_missing is a sample's, not ours) */
		pl->sym_missing = false;
		pl->force_emit = true;
		/* a host stub symbolizes as an address of the process; else a handle */
		s.aux[0] = what;
		s.aux[1] = MLPROF_CUDA_DRIVER;
		if (p) {
			symbolize_native(pl, p, what, &f);
			if (f.function)
				s.aux[1] = MLPROF_CUDA_RT;
		}
		pl->names_used = 0;
		frame_cache__begin_sample(pl->fcache);
		kernel_frame(pl, p, &s, &f);
		name = f.function;
		pl->force_emit = force;
	}
	return name;
}

static void count_one(void *ctx, uint32_t pid, uint32_t kind, uint64_t what, uint64_t window,
		      uint64_t count)
{
	struct count_ctx *cc = ctx;

	if (cc->only_window && window != cc->window)
		return;
	cc->cb(cc->ctx, (pid_t)pid, (enum mlprof_sample_kind)kind, what,
	       count_name(cc->pl, pid, kind, what), count);
}

/* Keeps the counts of an exiting process, named while its names and maps are known. */
static void count_keep(void *ctx, uint32_t pid, uint32_t kind, uint64_t what, uint64_t window,
		       uint64_t count)
{
	struct pipeline *pl = ctx;
	const char *name = count_name(pl, pid, kind, what);
	struct done_count *d;

	if (pl->ndone == pl->capdone) {
		size_t cap = pl->capdone ? pl->capdone * 2 : 64;

		if (cap > DONE_MAX || !(d = realloc(pl->done, cap * sizeof(*d)))) {
			pl->done_dropped++;
			return;
		}
		pl->done = d;
		pl->capdone = cap;
	}
	d = &pl->done[pl->ndone];
	d->name = name ? strdup(name) : NULL;
	if (name && !d->name)
		return;
	d->pid = (pid_t)pid;
	d->kind = kind;
	d->what = what;
	d->window = window;
	d->count = count;
	pl->ndone++;
}

/* See pipeline.h. */
int pipeline__cuda_counts(struct pipeline *pl, pipeline_count_cb cb, void *ctx)
{
	struct count_ctx cc = {.pl = pl, .cb = cb, .ctx = ctx};

	for (size_t i = 0; i < pl->ndone; i++)
		cb(ctx, pl->done[i].pid, (enum mlprof_sample_kind)pl->done[i].kind,
		   pl->done[i].what, pl->done[i].name, pl->done[i].count);
	return sampler__cuda_counts(pl->sampler, 0, false, UINT64_MAX, count_one, &cc);
}

/* See pipeline.h. */
struct steps *pipeline__steps(const struct pipeline *pl)
{
	return pl->steps;
}

/* See pipeline.h. */
int pipeline__cuda_counts_take(struct pipeline *pl, uint64_t window, pipeline_count_cb cb,
			       void *ctx)
{
	struct count_ctx cc = {
		.pl = pl, .cb = cb, .ctx = ctx, .only_window = true, .window = window};
	size_t k = 0;

	for (size_t i = 0; i < pl->ndone; i++) {
		struct done_count *d = &pl->done[i];

		if (d->window > window) {
			pl->done[k++] = *d;
			continue;
		}
		if (d->window == window)
			cb(ctx, d->pid, (enum mlprof_sample_kind)d->kind, d->what, d->name,
			   d->count);
		free(d->name);
	}
	pl->ndone = k;
	return sampler__cuda_counts(pl->sampler, 0, true, window, count_one, &cc);
}

struct snap_ctx {
	struct pipeline *pl;
	uint64_t time_ns;
};

static int snap_one(void *ctx, const struct unwound *u, int64_t inuse)
{
	struct snap_ctx *sc = ctx;

	return emit_stage(sc->pl, u, inuse, true, sc->time_ns);
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

static void pending_unlink(struct pipeline *pl, struct pending *e)
{
	pending_detach(pl, e);
	free(e);
}

/* Keeps an off-CPU sample until its interval ends (bounded; the oldest go first). */
static void pending_add(struct pipeline *pl, const struct unwound *u)
{
	size_t bytes = sizeof(struct pending) + unwound__data_bytes(u);
	struct pending *e;

	/* a thread has one open interval per kind: an older one lost its end (ring buffer full;
	 * kinds nest: cudaMalloc's driver allocating host memory) */
	for (e = pl->pend_tail; e; e = e->prev) {
		if (e->u.hdr.tid == u->hdr.tid && e->u.hdr.kind == u->hdr.kind) {
			pending_unlink(pl, e);
			pl->offcpu_unmatched++;
			break;
		}
	}
	while (pl->pend_head &&
	       (pl->pend_bytes + bytes > PENDING_MAX_BYTES || pl->pend_count >= PENDING_MAX)) {
		pending_unlink(pl, pl->pend_head);
		pl->offcpu_dropped++;
	}
	e = malloc(bytes);
	if (!e) {
		pl->offcpu_dropped++;
		return;
	}
	e->bytes = bytes;
	unwound__copy(&e->u, e->data, u);
	e->next = NULL;
	e->prev = pl->pend_tail;
	if (pl->pend_tail)
		pl->pend_tail->next = e;
	else
		pl->pend_head = e;
	pl->pend_tail = e;
	pl->pend_bytes += bytes;
	pl->pend_count++;
}

/*
 * A sampled heap allocation returned (value: the size asked for, 0 when it failed; aux:
 * the block, 0 when BPF could not track it): counted at the bytes it stands for, and kept
 * in the in-use view until its free.
 */
static int heap_end(struct pipeline *pl, struct pending *e, const struct mlprof_sample_end *oe)
{
	int64_t w = heap__weight(oe->value, pl->heap ? heap__sample_bytes(pl->heap) : 1);
	int err = 0;

	if (w) {
		pl->heap_allocs++;
		pl->heap_alloc_bytes += w;
		err = emit_stage(pl, &e->u, w, false, 0);
		if (oe->aux)
			memtrack__add(pl->mem, MLPROF_SK_HEAP, oe->aux, w, &e->u);
	}
	pending_unlink(pl, e);
	return err;
}

/* An interval ended: its captured stack gets its value (blocked time, bytes, ...). */
static int handle_sample_end(struct pipeline *pl, const struct mlprof_sample_end *oe)
{
	struct pending *e;
	int err = 0;

	if (pl->bwd && backward__end(pl->bwd, oe->pid, oe->tid, oe->seq))
		return 0;
	for (e = pl->pend_tail; e; e = e->prev)
		if (e->u.hdr.tid == oe->tid && e->u.hdr.aux[0] == oe->seq)
			break;
	if (!e) {
		pl->offcpu_unmatched++;
		return 0;
	}
	if (e->u.hdr.kind == MLPROF_SK_HEAP)
		return heap_end(pl, e, oe);
	if (oe->value)
		err = emit_stage(pl, &e->u, (int64_t)oe->value, false, 0);
	if (oe->value && oe->aux && e->u.hdr.kind == MLPROF_SK_CUDA_ALLOC)
		memtrack__add(pl->mem, MLPROF_SK_CUDA_ALLOC, oe->aux, (int64_t)oe->value, &e->u);
	pending_unlink(pl, e);
	return err;
}

/* Forgets the off-CPU samples of an exited process (their intervals never end). */
static void pending_drop_pid(struct pipeline *pl, uint32_t pid)
{
	struct pending *e = pl->pend_head, *next;

	for (; e; e = next) {
		next = e->next;
		if (e->u.hdr.pid == pid)
			pending_unlink(pl, e);
	}
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
		pending_add(pl, &u);
		return 0;
	}
	/* a sampled tensor stands for the bytes its sampling probability says, and stays in
	 * the in-use view until its free */
	if (s->kind == MLPROF_SK_CUDA_TENSOR) {
		int64_t w = heap__weight(s->value, tensor_sample(pl));

		memtrack__add(pl->mem, MLPROF_SK_CUDA_TENSOR, s->aux[0], w, &u);
		return emit_stage(pl, &u, w, false, 0);
	}
	/* sampled memory growth stays in the in-use view until its pages are given back */
	if (s->kind == MLPROF_SK_MEMORY)
		memtrack__add(pl->mem, MLPROF_SK_MEMORY, s->aux[0], (int64_t)s->value, &u);
	return emit_stage(pl, &u, (int64_t)s->value, false, 0);
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
			err = handle_sample_end(pl, data);
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
				err = flush_pid(pl, pe->pid) ?: err;
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
			pending_drop_pid(pl, pe->pid);
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
			if ((has_parked(pl, pe->pid) || counts_wait_index(pl, (pid_t)pe->pid)) &&
			    pl->nexited < EXITED_MAX)
				pl->exited[pl->nexited++] = (pid_t)pe->pid;
			else
				forget_exited(pl, (pid_t)pe->pid);
			pl->proc_events++;
		}
		break;
	case MLPROF_EV_FORK:
		/* a new process: if its pid was used before, the cached maps are someone else's */
		if (size >= sizeof(*pe)) {
			err = reuse_exited(pl, pe->pid);
			if (pl->wait.count)
				err = flush_pid(pl, pe->pid) ?: err;
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
	symwait__init(&pl->wait, SYMWAIT_MAX, SYMWAIT_MAX_BYTES);
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
	symwait__clear(&pl->wait);
	while (pl->pend_head)
		pending_unlink(pl, pl->pend_head);
	memtrack__free(pl->mem);
	backward__free(pl->bwd);
	for (size_t i = 0; i < pl->ndone; i++)
		free(pl->done[i].name);
	free(pl->done);
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
	/* the step probes' duty cycle switches at its slots' ends */
	if (pl->steps) {
		int w = steps__wait_ms(pl->steps, clock__mono_ns());

		if (w >= 0 && (timeout_ms < 0 || w < timeout_ms))
			timeout_ms = w;
	}
	n = sampler__poll(pl->sampler, timeout_ms);
	if (pl->steps)
		steps__tick(pl->steps, clock__mono_ns());
	sampler__hold_sweep(pl->sampler, PIPELINE_HOLD_MAX_NS);
	if (pl->wait.count && !pl->sink_err)
		pl->sink_err = retry_parked(pl, 0, 0, false);
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
int pipeline__flush_before(struct pipeline *pl, uint64_t time_ns)
{
	return pl->wait.count ? retry_parked(pl, 0, time_ns, false) : 0;
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
	err = retry_parked(pl, 0, 0, false);
	if (!err)
		err = retry_parked(pl, 0, 0, true);
	if (!err)
		err = sweep_exited(pl, true);
	pl->cpu_ns += thread_cpu_ns() - t0;
	return err;
}

void pipeline__gc(struct pipeline *pl)
{
	/* exited processes' maps go now: what still waits for an index goes out first */
	if (pl->nexited)
		sweep_exited(pl, true);
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
	out->offcpu_pending = pl->pend_count;
	out->offcpu_pending_bytes = pl->pend_bytes;
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
