// SPDX-License-Identifier: Apache-2.0
/*
 * Stage 2 of the pipeline: a sample's frames named (kernel, native, the CUDA kernel it
 * launched, Python merged in) and handed to the sink; samples whose files are still being
 * indexed parked until they are.
 */
#include "pipeline/name_stage.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "capture/sampler.h"
#include "pipeline/frame_cache.h"
#include "pipeline/phase_frames.h"
#include "pipeline/pipeline_state.h"
#include "runtimes/cuda/cuda.h"
#include "runtimes/python/python.h"
#include "runtimes/torch/steps.h"
#include "symbolize/proc.h"
#include "symbolize/proc_files.h"
#include "symbolize/symcache.h"
#include "unwind/unwound.h"
#include "util/clock.h"

/* A parked sample goes out after this long even when its index is still not built. */
#define SYMWAIT_MAX_AGE_NS (5ull * 1000 * 1000 * 1000)

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

/* See name_stage.h. */
void name_stage__native(struct pipeline *pl, struct proc *p, uint64_t pc, struct frame *f)
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

static void truncation_frame(struct frame *f, const char *why)
{
	memset(f, 0, sizeof(*f));
	f->kind = FRAME_TRUNCATED;
	f->function = why;
}

/* Symbolizes one address of the process for the CUDA kernel namer (NULL: unnamed). */
static const char *name_addr(void *ctx, uint64_t addr)
{
	struct pipeline *pl = ctx;
	struct frame f;

	if (!pl->cur_proc)
		return NULL;
	name_stage__native(pl, pl->cur_proc, addr, &f);
	return f.function;
}

/* See name_stage.h. */
void name_stage__kernel_frame(struct pipeline *pl, struct proc *p, const struct mlprof_sample *s,
			      struct frame *f)
{
	const char *fn_name = NULL;
	struct frame tmp;

	pl->cur_proc = p;
	if (p && s->aux[1] == MLPROF_CUDA_RT) {
		name_stage__native(pl, p, s->aux[0], &tmp);
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

/* Emits a parked sample now, with whatever indexes are ready (the rest unnamed). */
static int emit_forced(struct pipeline *pl, struct queued *e)
{
	int err;

	stack_queue__take(&pl->wait, e);
	pl->force_emit = true;
	err = name_stage__emit(pl, &e->u, e->value, e->inuse, e->time_ns);
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
	perr = stack_queue__push(&pl->wait, u, value, inuse, time_ns, first);
	/* (a re-parked sample was just taken out: it never needs room made) */
	while (perr == -ENOSPC && pl->wait.head && !pl->parked_now_ns) {
		err = emit_forced(pl, pl->wait.head) ?: err;
		perr = stack_queue__push(&pl->wait, u, value, inuse, time_ns, first);
	}
	if (perr) {
		pl->force_emit = true;
		err = name_stage__emit(pl, u, value, inuse, time_ns) ?: err;
		pl->force_emit = false;
	}
	return err;
}

/* See name_stage.h. */
int name_stage__retry_parked(struct pipeline *pl, uint32_t pid, uint64_t before_ns, bool force)
{
	uint64_t gen = symcache__ready_gen(pl->syms), now = clock__mono_ns();
	bool ready = gen != pl->wait_gen;
	size_t n = pl->wait.count;
	struct queued *e, *next;
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
		stack_queue__take(&pl->wait, e);
		pl->parked_now_ns = e->parked_ns;
		err = name_stage__emit(pl, &e->u, e->value, e->inuse, e->time_ns) ?: err;
		pl->parked_now_ns = 0;
		free(e);
	}
	return err;
}

/* See name_stage.h. */
int name_stage__flush_pid(struct pipeline *pl, uint32_t pid)
{
	return name_stage__retry_parked(pl, pid, 0, false);
}

/* See name_stage.h. */
bool name_stage__has_parked(const struct pipeline *pl, uint32_t pid)
{
	for (const struct queued *e = pl->wait.head; e; e = e->next)
		if (e->u.hdr.pid == pid)
			return true;
	return false;
}

/* See name_stage.h. */
int name_stage__emit(struct pipeline *pl, const struct unwound *u, int64_t value, bool inuse,
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
		name_stage__kernel_frame(pl, p, s, &pl->frames[n++]);
	n = add_kernel_frames(pl, s, n);
	if (!(s->flags & MLPROF_SF_KTHREAD) && s->pid != 0) {
		const char *why;

		if (p) {
			frame_cache__prefetch(pl->fcache, p->gen, u->pcs, u->nu);
			for (int i = 0; i < u->nu; i++) {
				uint64_t pc = i == 0 ? u->pcs[i] : u->pcs[i] - 1;

				name_stage__native(pl, p, pc, &pl->ufr[nu++]);
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
