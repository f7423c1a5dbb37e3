// SPDX-License-Identifier: Apache-2.0
/* PyTorch training steps and their phases from record_function scopes (see steps.h). */
#define LOG_MODULE "steps"
#include "util/log.h"

#include "runtimes/torch/steps.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <pthread.h>

#include "capture/torch_probes.h"
#include "capture/uprobe_link.h"
#include "capture/uprobe_site.h"
#include "symbolize/elf.h"
#include "symbolize/elf_lookup.h"
#include "symbolize/proc.h"
#include "symbolize/proc_files.h"
#include "util/clock.h"
#include "util/fsutil.h"
#include "util/quantile.h"

#define MAX_FILES     16
#define MAX_PROCS     256  /* PyTorch processes followed (exited ones with steps kept) */
#define MAX_THREADS   16   /* threads with open scopes per process */
#define MAX_DEPTH     16   /* open scopes per thread */
#define MAX_DURATIONS 4096 /* step times kept per process for percentiles (the last ones) */
#define CHECK_SLOTS   4096 /* processes whose maps generation is remembered */
/* A thread's time is in a step until STALE_STEPS times the longest step (plus
 * STALE_MIN_NS) past the last step's end without another. */
#define STALE_STEPS  4
#define STALE_MIN_NS 50000000ull
/* By frames (steps__phase_by_frames): the main thread trains until 4 times the longest gap
 * between two samples in an optimizer step or a DataLoader's next (at least
 * FRAMES_STALE_MIN_NS; FRAMES_STALE_NS until three such samples) past the last one. */
#define FRAMES_STALE_NS	    2000000000ull
#define FRAMES_STALE_MIN_NS 100000000ull

/* record_function_enter_new: torch 2.x (std::optional), 1.13 (c10::optional). */
static const char *const enter_syms[] = {
	"_ZN5torch8autograd8profiler25record_function_enter_newERKNSt7__cxx1112basic_string"
	"IcSt11char_traitsIcESaIcEEERKSt8optionalIS7_E",
	"_ZN5torch8autograd8profiler25record_function_enter_newERKNSt7__cxx1112basic_string"
	"IcSt11char_traitsIcESaIcEEERKN3c108optionalIS7_EE",
};
static const char end_sym[] = "_ZN2at14RecordFunction3endEv";
/* Waits for collectives (the comm phase): exported. */
static const char *const comm_syms[] = {
	"_ZN4c10d4Work4waitENSt6chrono8durationIlSt5ratioILl1ELl1000EEEE", /* Work::wait(ms) */
	"_ZN4c10d7Reducer17finalize_backwardEv", /* DDP: waits for its buckets' all-reduces */
};
/*
 * Every collective of any backend, whatever calls it (dist.all_reduce, DDP's buckets, FSDP),
 * goes through c10d's dispatcher ops, static functions per device type in libtorch_cpu:
 * c10d::ops::(anonymous namespace)::allreduce_CUDA, broadcast_CPU, sendCUDA, ... (on a GPU
 * host, 6.6-17% of a step sat in dist.all_reduce's enqueue, counted as cpu_compute before).
 */
static const char comm_ops_prefix[] = "_ZN4c10d3ops12_GLOBAL__N_1";
/* Static functions that only .symtab names; their code is checked before probing. */
static const char enter_rec_sym[] =
	"_ZN5torch8autograd8profilerL21record_function_enterERKNSt7__cxx1112basic_string"
	"IcSt11char_traitsIcESaIcEEERKSt8optionalIS7_ERN2at14RecordFunctionE";
static const char exit_new_sym[] =
	"_ZN5torch8autograd8profilerL24record_function_exit_newERKN3c1013intrusive_ptrINS1_"
	"20PythonRecordFunctionENS2_6detail34intrusive_target_default_null_typeIS4_EEEE";

enum scope_class { SC_NONE, SC_GPU, SC_DATA, SC_COMM, SC_OPT_STEP, SC_OPT_OTHER };

/* The phase of a class (SC_NONE: none). */
static const int class_phase[] = {
	[SC_NONE] = -1,	       [SC_GPU] = STEP_GPU_WAIT,       [SC_DATA] = STEP_DATA_WAIT,
	[SC_COMM] = STEP_COMM, [SC_OPT_STEP] = STEP_OPTIMIZER, [SC_OPT_OTHER] = STEP_OPTIMIZER,
};

struct open_scope {
	uint64_t handle, t0, oncpu0;
	uint64_t claimed, claimed_oncpu; /* taken by scopes inside it of a phase before its own */
	enum scope_class cls;
};

struct sthread {
	pid_t tid;
	int depth;
	struct open_scope s[MAX_DEPTH];
	enum scope_class wait_cls; /* a wait in progress (MLPROF_SCOPE_WAIT), SC_NONE if none */
	/* the step being timed on this thread (started at an Optimizer.step end) */
	bool started;
	uint64_t step_t0, step_oncpu0;
	uint64_t acc[STEP_PHASE__COUNT]; /* gpu_wait, data_wait, comm, optimizer so far */
	uint64_t acc_oncpu;		 /* CPU time inside those scopes */
	uint64_t last_ns;		 /* its last event's time */
};

struct sproc {
	struct sproc *next;
	struct steps_proc out;
	struct sthread threads[MAX_THREADS];
	int nthreads;
	uint64_t *dur;
	size_t ndur;
	uint64_t max_dur; /* the longest step so far */
	bool exited;
	bool scoped;	       /* a probed scope opened in it (no phases by frames then) */
	uint64_t frames_last;  /* by frames: time of the last optimizer or data sample */
	uint64_t frames_gap;   /* ... the longest time between two of them */
	uint64_t frames_hints; /* ... how many */
	/* by frames: CPU and off-CPU time since the last of them, counted once another comes
	 * (what follows the last one, a shutdown or an evaluation, is not training) */
	uint64_t frames_pending[2];
	struct steps_proc taken; /* the totals at the last steps__window */
	size_t ndur_taken;	 /* ndur then */
	uint64_t hits;		 /* scope events since the duty cycle's last measurement */
};

/*
 * Where a libtorch_cpu file's scopes open and close, found on a thread of its own: the
 * cheapest sites are local functions that only .symtab names (a PyPI wheel's: 533k
 * symbols, tens of MB of strings), which the consumer must not read.
 */
struct tscan {
	pthread_t thread;
	struct elf_file *ef; /* a reference of the scan's own */
	int fd;		     /* the verified file, for attaching */
	bool done;	     /* set (release) by the thread when sites is final */
	bool found;
	struct torch_sites sites;
	uint64_t cpu_ns; /* the scan's CPU time */
};

struct tfile {
	uint64_t dev, ino;
	struct uprobe_link *links;
	struct tscan *scan; /* its sites being found (NULL once attached or given up) */
	int fd;		    /* the verified file, to attach again after a time detached */
	struct torch_sites sites;
};

struct steps {
	struct proc_cache *pc;
	struct sampler *s;
	struct torch_probes *tp; /* loaded at the first libtorch_cpu */
	bool tp_failed;
	struct tfile files[MAX_FILES];
	int nfiles;
	int scans_pending; /* files whose scan has not been collected */
	struct sproc *procs;
	int nprocs;
	uint64_t checked[CHECK_SLOTS];	 /* maps generation last looked at, by pid slot */
	uint64_t scratch[MAX_DURATIONS]; /* one process's step times of a window */
	struct steps_stats st;
	uint64_t max_scopes;
	struct steps_duty duty; /* set up at the first attach */
	bool reattach_failed;	/* a file's probes could not be attached again */
	uint64_t retry_ns;	/* ... when to try again */
};

static const char *const phase_names[STEP_PHASE__COUNT] = {
	[STEP_GPU_WAIT] = "gpu_wait",	[STEP_DATA_WAIT] = "data_wait",	    [STEP_COMM] = "comm",
	[STEP_OPTIMIZER] = "optimizer", [STEP_CPU_COMPUTE] = "cpu_compute", [STEP_OTHER] = "other",
};

/* See steps.h. */
const char *steps__phase_name(enum step_phase ph)
{
	return (unsigned int)ph < STEP_PHASE__COUNT ? phase_names[ph] : "unknown";
}

/* See steps.h. */
struct steps *steps__new(struct proc_cache *pc, struct sampler *s, uint64_t max_scopes)
{
	struct steps *st = calloc(1, sizeof(*st));

	if (!st)
		return NULL;
	st->pc = pc;
	st->s = s;
	st->max_scopes = max_scopes;
	steps_duty__init(&st->duty, 0, 0);
	return st;
}

/* See steps.h. */
void steps__free(struct steps *st)
{
	struct sproc *p, *next;

	if (!st)
		return;
	steps__settle(st);
	for (int i = 0; i < st->nfiles; i++) {
		uprobe_link__release(st->files[i].links);
		if (st->files[i].fd >= 0)
			close(st->files[i].fd);
	}
	for (p = st->procs; p; p = next) {
		next = p->next;
		free(p->dur);
		free(p);
	}
	torch_probes__free(st->tp);
	free(st);
}

static struct sproc *proc_get(struct steps *st, pid_t pid);

/* Where a comm site's return can be probed (its entry, kept to the probed instruction). */
static void add_comm_site(struct tscan *sc, uint64_t v)
{
	uint8_t code[48];
	uint64_t off;

	if (sc->sites.n_comm < TORCH_COMM_SITES &&
	    !elf_file__read_vaddr(sc->ef, v, code, sizeof(code)) &&
	    !elf_file__vaddr_to_offset(
		    sc->ef, v + uprobe_site__emulated(code, sizeof(code), UPROBE_RSP), &off))
		sc->sites.comm_off[sc->sites.n_comm++] = off;
}

/*
 * A c10d dispatcher op's implementation: after the prefix, <length><op>_<device> or
 * <length><op><device> (barrierCPU), the device CPU, CUDA or PrivateUse1, and nothing but the
 * arguments behind (not a .cold part; not the TORCH_LIBRARY_IMPL registrars, "L34...").
 */
static void comm_op_found(void *ctx, const char *name, uint64_t value)
{
	static const char *const devices[] = {"CPU", "CUDA", "PrivateUse1"};
	const char *p = name + sizeof(comm_ops_prefix) - 1;
	unsigned long len;
	char *end;

	if (*p < '1' || *p > '9' || strchr(p, '.'))
		return;
	len = strtoul(p, &end, 10);
	if (len < 4 || strnlen(end, len) < len || end[len] != 'E')
		return;
	for (size_t i = 0; i < sizeof(devices) / sizeof(devices[0]); i++) {
		size_t dl = strlen(devices[i]);

		if (len > dl && !memcmp(end + len - dl, devices[i], dl)) {
			add_comm_site(ctx, value);
			return;
		}
	}
}

/* Fills sc->sites from sc->ef (the scan thread). */
static void find_sites(struct tscan *sc)
{
	static const char *const local[] = {enter_rec_sym, exit_new_sym};
	const char *off = getenv("MLPROF_TEST_TORCH_DYNSYM");
	uint64_t vals[2] = {0, 0}, v, enter = 0, end = 0;
	struct elf_file *ef = sc->ef;
	uint8_t code[48];

	/* MLPROF_TEST_TORCH_DYNSYM=1: the exported fallback only, as a stripped library */
	if (!(off && !strcmp(off, "1")))
		elf_file__scan_functions_prefix(ef, local, 2, vals, comm_ops_prefix, comm_op_found,
						sc);
	if (vals[0] && !elf_file__read_vaddr(ef, vals[0], code, sizeof(code))) {
		/* rdi the name, rdx the RecordFunction: both kept to the probed instruction */
		enter = vals[0] +
			uprobe_site__emulated(code, sizeof(code), UPROBE_RDI | UPROBE_RDX);
		sc->sites.enter_rec = true;
	}
	for (size_t i = 0; i < sizeof(enter_syms) / sizeof(enter_syms[0]) && !enter; i++)
		if (!elf_file__find_function(ef, enter_syms[i], &v))
			enter = v;
	/*
	 * record_function_exit_new(const intrusive_ptr<PythonRecordFunction> &r) is
	 * "mov (%rdi),%rdi; add $0x10,%rdi; jmp RecordFunction::end": on the jmp (emulated),
	 * rdi is the closing RecordFunction, one hit per scope. Other code: end() itself, which
	 * every RecordFunction of the process runs, probed past its first instruction (a cmpb
	 * the kernel would single-step: ~14 us a hit on a VM).
	 */
	if (vals[1] && !elf_file__read_vaddr(ef, vals[1], code, 8) &&
	    !memcmp(code, "\x48\x8b\x3f\x48\x83\xc7\x10\xe9", 8))
		end = vals[1] + 7;
	else if (!elf_file__find_function(ef, end_sym, &v) &&
		 !elf_file__read_vaddr(ef, v, code, sizeof(code)))
		end = v + uprobe_site__emulated(code, sizeof(code), UPROBE_RDI);
	for (size_t i = 0; i < sizeof(comm_syms) / sizeof(comm_syms[0]); i++)
		if (!elf_file__find_function(ef, comm_syms[i], &v))
			add_comm_site(sc, v);
	sc->found = enter && end && !elf_file__vaddr_to_offset(ef, enter, &sc->sites.enter_off) &&
		    !elf_file__vaddr_to_offset(ef, end, &sc->sites.end_off);
}

static void *scan_main(void *arg)
{
	struct tscan *sc = arg;
	uint64_t t0 = clock__ns(CLOCK_THREAD_CPUTIME_ID);

	pthread_setname_np(pthread_self(), "mlprof-torch"); /* top -H, perf */
	find_sites(sc);
	sc->cpu_ns = clock__ns(CLOCK_THREAD_CPUTIME_ID) - t0;
	__atomic_store_n(&sc->done, true, __ATOMIC_RELEASE);
	return NULL;
}

/* Frees a scan whose thread has ended or was never started. */
static void scan_free(struct tscan *sc)
{
	if (!sc)
		return;
	if (sc->fd >= 0)
		close(sc->fd);
	elf_file__put(sc->ef);
	free(sc);
}

/*
 * Waits for file f's scan to end and takes it off the file, counting a file without entry
 * points; the caller frees it.
 */
static struct tscan *scan_take(struct steps *st, struct tfile *f)
{
	struct tscan *sc = f->scan;

	pthread_join(sc->thread, NULL);
	f->scan = NULL;
	st->scans_pending--;
	st->st.files_without_sites += !sc->found;
	return sc;
}

/* Attaches the probes of file f once its scan has ended. */
static void attach_file(struct steps *st, struct tfile *f)
{
	struct tscan *sc = scan_take(st, f);

	if (!sc->found) {
		pr_info("%s: no record_function entry points: steps not found by probes",
			elf_file__path(sc->ef));
		goto out;
	}
	if (!st->tp && !st->tp_failed) {
		st->tp = torch_probes__new(st->s);
		st->tp_failed = !st->tp;
		/* a duty cycle where links can go and come back cheaply (uprobe_multi) */
		if (st->tp)
			steps_duty__init(&st->duty,
					 torch_probes__can_cycle(st->tp) ? st->max_scopes : 0,
					 clock__mono_ns() ^ (uint64_t)getpid() << 32);
	}
	if (st->tp)
		f->links = torch_probes__attach(st->tp, sc->fd, &sc->sites);
	/* kept to attach again after a time detached, where there is a duty cycle */
	if (f->links && st->duty.st.max_rate) {
		f->fd = sc->fd;
		f->sites = sc->sites;
		sc->fd = -1;
		if (!st->duty.on) { /* the duty cycle has the probes off now */
			uprobe_link__release(f->links);
			f->links = NULL;
		}
	}
	if (!f->links && f->fd < 0) {
		st->st.attach_failed++;
		pr_warn("cannot probe the record_function scopes of %s", elf_file__path(sc->ef));
	} else {
		st->st.files_probed++;
		pr_info("probing PyTorch's record_function scopes in %s (%s at 0x%" PRIx64
			", closed at 0x%" PRIx64 "; %d collective calls and waits with their "
			"returns; sites found in %.1f ms of CPU)",
			elf_file__path(sc->ef),
			sc->sites.enter_rec ? "record_function_enter, entry probes only"
					    : "record_function_enter_new and its return",
			sc->sites.enter_off, sc->sites.end_off, sc->sites.n_comm, sc->cpu_ns / 1e6);
	}
out:
	scan_free(sc);
}

/* See steps.h. */
void steps__settle(struct steps *st)
{
	for (int i = 0; i < st->nfiles; i++)
		if (st->files[i].scan)
			scan_free(scan_take(st, &st->files[i]));
}

/* Attaches the files whose scans have ended (the consumer; cheap while none is pending). */
static void collect_scans(struct steps *st)
{
	for (int i = 0; i < st->nfiles; i++)
		if (st->files[i].scan &&
		    __atomic_load_n(&st->files[i].scan->done, __ATOMIC_ACQUIRE))
			attach_file(st, &st->files[i]);
}

/* Starts the scan of the libtorch_cpu file m maps (once per file). */
static void probe_file(struct steps *st, struct proc *p, const struct proc_map *m)
{
	uint64_t dev = (uint64_t)m->dev_major << 20 | m->dev_minor;
	struct tfile *f;
	struct tscan *sc;
	struct elf_file *ef;

	for (int i = 0; i < st->nfiles; i++)
		if (st->files[i].dev == dev && st->files[i].ino == m->inode)
			return;
	if (st->nfiles >= MAX_FILES || st->tp_failed)
		return;
	ef = proc_cache__map_elf(st->pc, p, m);
	if (!ef)
		return;
	/* remembered whatever happens next: the file is not looked at again */
	f = &st->files[st->nfiles++];
	*f = (struct tfile){.dev = dev, .ino = m->inode, .fd = -1};
	sc = calloc(1, sizeof(*sc));
	if (!sc)
		return;
	sc->ef = elf_file__get(ef);
	sc->fd = proc_cache__open_verified(st->pc, p, m, ef);
	if (sc->fd < 0 || pthread_create(&sc->thread, NULL, scan_main, sc)) {
		st->st.attach_failed++;
		pr_warn("cannot probe the record_function scopes of %s", m->path);
		scan_free(sc);
		return;
	}
	f->scan = sc;
	st->scans_pending++;
}

/* See steps.h. */
void steps__check(struct steps *st, struct proc *p)
{
	uint64_t *seen = &st->checked[(uint32_t)p->pid % CHECK_SLOTS];

	if (st->scans_pending)
		collect_scans(st);
	/* once per maps generation (called for every sample): gens are unique per cache */
	if (*seen == p->gen)
		return;
	*seen = p->gen;
	for (size_t i = 0; i < p->n_maps; i++) {
		const struct proc_map *m = &p->maps[i];
		struct sproc *sp;

		if (!m->exec || !m->inode ||
		    strncmp(fsutil__base_name(m->path), "libtorch_cpu.so", 15))
			continue;
		probe_file(st, p, m);
		sp = proc_get(st, p->pid);
		if (sp)
			memcpy(sp->out.comm, p->comm, sizeof(sp->out.comm));
	}
}

static enum scope_class classify(const char *name)
{
	/* (called for each scope a thread opens, thousands a second: one test on most) */
	switch (name[0]) {
	case 'c':
		if (!strcmp(name, "cuda.synchronize"))
			return SC_GPU;
		if (!strcmp(name, MLPROF_COMM_SCOPE))
			return SC_COMM;
		return SC_NONE;
	case 'e':
		return strncmp(name, "enumerate(DataLoader)#", 22) ? SC_NONE : SC_DATA;
	case 'O':
		if (!strncmp(name, "Optimizer.step#", 15))
			return SC_OPT_STEP;
		if (!strncmp(name, "Optimizer.zero_grad#", 20))
			return SC_OPT_OTHER;
		return SC_NONE;
	default:
		return SC_NONE;
	}
}

/* Unlinks and frees p. */
static void proc_drop(struct steps *st, struct sproc *p)
{
	struct sproc **pp = &st->procs;

	while (*pp && *pp != p)
		pp = &(*pp)->next;
	if (*pp)
		*pp = p->next;
	free(p->dur);
	free(p);
	st->nprocs--;
}

static struct sproc *proc_get(struct steps *st, pid_t pid)
{
	struct sproc *p, *oldest = NULL;

	for (p = st->procs; p; p = p->next) {
		if (p->out.pid == pid && !p->exited)
			return p;
		if (p->exited)
			oldest = p; /* the list is newest first */
	}
	/* full: the oldest exited process's steps go (the agent runs for days) */
	if (st->nprocs >= MAX_PROCS && oldest)
		proc_drop(st, oldest);
	if (st->nprocs >= MAX_PROCS) {
		st->st.procs_dropped++;
		return NULL;
	}
	p = calloc(1, sizeof(*p));
	if (!p)
		return NULL;
	p->out.pid = pid;
	p->next = st->procs;
	st->procs = p;
	st->nprocs++;
	return p;
}

/* A process steps__check saw mapping libtorch_cpu (others' events are not steps). */
static struct sproc *proc_find(struct steps *st, pid_t pid)
{
	for (struct sproc *p = st->procs; p; p = p->next)
		if (p->out.pid == pid && !p->exited)
			return p;
	return NULL;
}

static struct sthread *thread_find(struct sproc *p, pid_t tid)
{
	for (int i = 0; i < p->nthreads; i++)
		if (p->threads[i].tid == tid)
			return &p->threads[i];
	return NULL;
}

static struct sthread *thread_get(struct sproc *p, pid_t tid)
{
	struct sthread *t = thread_find(p, tid);

	if (t || p->nthreads >= MAX_THREADS)
		return t;
	p->threads[p->nthreads].tid = tid;
	return &p->threads[p->nthreads++];
}

/* Forgets what thread t had open and its step in progress (the probes were detached). */
static void thread_reset(struct sthread *t)
{
	t->depth = 0;
	t->wait_cls = SC_NONE;
	t->started = false;
	memset(t->acc, 0, sizeof(t->acc));
	t->acc_oncpu = 0;
}

/* A step ended on thread t at time t1 (CPU time c1): its phases go to the process. */
static void step_end(struct sproc *p, struct sthread *t, uint64_t t1, uint64_t c1)
{
	uint64_t wall, rest, cpu, known = 0;

	if (t->started && t1 > t->step_t0) {
		wall = t1 - t->step_t0;
		for (int ph = 0; ph < STEP_CPU_COMPUTE; ph++)
			known += t->acc[ph];
		rest = wall > known ? wall - known : 0;
		cpu = c1 > t->step_oncpu0 + t->acc_oncpu ? c1 - t->step_oncpu0 - t->acc_oncpu : 0;
		cpu = cpu < rest ? cpu : rest;
		p->out.steps++;
		p->out.wall_ns += known + rest;
		for (int ph = 0; ph < STEP_CPU_COMPUTE; ph++)
			p->out.phase_ns[ph] += t->acc[ph];
		p->out.phase_ns[STEP_CPU_COMPUTE] += cpu;
		p->out.phase_ns[STEP_OTHER] += rest - cpu;
		if (!p->dur)
			p->dur = malloc(MAX_DURATIONS * sizeof(*p->dur));
		if (p->dur)
			p->dur[p->ndur++ % MAX_DURATIONS] = known + rest;
		if (known + rest > p->max_dur)
			p->max_dur = known + rest;
	}
	t->started = true;
	t->step_t0 = t1;
	t->step_oncpu0 = c1;
	memset(t->acc, 0, sizeof(t->acc));
	t->acc_oncpu = 0;
}

/*
 * Scope s (at depth i of t's stack) ended at t1 with CPU time c1. Its time goes to its
 * phase unless an enclosing scope's phase comes first (that one has it all), less what
 * scopes inside it of an earlier phase took; the nearest enclosing classified scope of a
 * later phase gives it up.
 */
static void close_scope(struct sproc *p, struct sthread *t, const struct open_scope *s, int i,
			uint64_t t1, uint64_t c1)
{
	int ph = class_phase[s->cls], outer_best = STEP_PHASE__COUNT;
	struct open_scope *enclosing = NULL;
	uint64_t dur, cpu;

	if (ph < 0 || t1 <= s->t0)
		return;
	for (int k = 0; k < i; k++) {
		int kp = class_phase[t->s[k].cls];

		if (kp < 0)
			continue;
		outer_best = kp < outer_best ? kp : outer_best;
		enclosing = &t->s[k];
	}
	if (outer_best <= ph)
		return; /* an enclosing scope's phase comes first: it has this time */
	dur = t1 - s->t0;
	cpu = c1 > s->oncpu0 ? c1 - s->oncpu0 : 0;
	t->acc[ph] += dur > s->claimed ? dur - s->claimed : 0;
	t->acc_oncpu += cpu > s->claimed_oncpu ? cpu - s->claimed_oncpu : 0;
	if (enclosing) {
		enclosing->claimed += dur;
		enclosing->claimed_oncpu += cpu;
	}
	if (s->cls == SC_OPT_STEP && !enclosing)
		step_end(p, t, t1, c1);
}

/* See steps.h. */
void steps__on_scope(struct steps *st, const struct mlprof_torch_scope *e)
{
	struct sproc *p = proc_find(st, (pid_t)e->pid);
	bool wait = e->flags & (MLPROF_SCOPE_WAIT | MLPROF_SCOPE_INTERVAL);
	struct sthread *t;
	struct open_scope s;
	char name[MLPROF_TORCH_NAME_MAX];
	int i;

	if (!p)
		return;
	/* sent while the probes went or came: half of a pair at best (and no thread slot) */
	if (st->duty.ngaps && steps_duty__away_between(&st->duty, e->time_ns, e->time_ns)) {
		st->st.detached_events++;
		return;
	}
	/* waits (synchronize calls, collectives) only count on threads that have opened a
	 * scope: other threads (NCCL's, the autograd engine's) take no slot */
	t = wait ? thread_find(p, (pid_t)e->tid) : thread_get(p, (pid_t)e->tid);
	if (!t)
		return;
	if (st->duty.ngaps && t->last_ns &&
	    steps_duty__away_between(&st->duty, t->last_ns, e->time_ns))
		thread_reset(t);
	t->last_ns = e->time_ns > t->last_ns ? e->time_ns : t->last_ns;
	st->st.scopes++;
	memcpy(name, e->name, sizeof(name));
	name[sizeof(name) - 1] = '\0';
	/* the rate the duty cycle can cut: the scope probes' events (enters, exits, collective
	 * waits), not the CUDA probes' synchronize calls, which stay attached */
	if (!wait || !strcmp(name, MLPROF_COMM_SCOPE))
		p->hits++;
	if (e->flags & MLPROF_SCOPE_WAIT) {
		/* samples from now until its interval arrives are in its phase */
		t->wait_cls = classify(name);
		return;
	}
	if (e->flags & MLPROF_SCOPE_INTERVAL) {
		/* a whole interval (a synchronize call) inside whatever is open now */
		t->wait_cls = SC_NONE;
		if (!t->started && !t->depth)
			return; /* not a training thread (yet) */
		s = (struct open_scope){.t0 = e->time_ns - e->handle, .cls = classify(name)};
		close_scope(p, t, &s, t->depth, e->time_ns, e->oncpu_ns);
		return;
	}
	p->scoped = true;
	if (!(e->flags & MLPROF_SCOPE_EXIT)) {
		/* the same object entered again: its exit was lost, or a link being released
		 * still ran next to its successor; the later enter is the one */
		if (t->depth && t->s[t->depth - 1].handle == e->handle)
			t->depth--;
		if (t->depth >= MAX_DEPTH)
			t->depth = MAX_DEPTH - 1; /* too deep: the innermost is replaced */
		t->s[t->depth++] = (struct open_scope){
			.handle = e->handle,
			.t0 = e->time_ns,
			.oncpu0 = e->oncpu_ns,
			.cls = classify(name),
		};
		return;
	}
	for (i = t->depth - 1; i >= 0 && t->s[i].handle != e->handle; i--)
		;
	if (i < 0) {
		st->st.unmatched_exits++;
		return;
	}
	s = t->s[i];
	t->depth = i; /* scopes opened inside it and never closed go with it */
	close_scope(p, t, &s, i, e->time_ns, e->oncpu_ns);
}

/* See steps.h. */
int steps__phase_of(struct steps *st, pid_t pid, pid_t tid, bool on_cpu, uint64_t time_ns)
{
	struct sproc *p = proc_find(st, pid);

	if (!p)
		return 0;
	for (int i = 0; i < p->nthreads; i++) {
		struct sthread *t = &p->threads[i];
		int best = STEP_PHASE__COUNT;

		if (t->tid != tid)
			continue;
		/* the probes were off at that time, or since the thread's last event: what it
		 * has open is not known */
		if (st->duty.ngaps && steps_duty__away_between(&st->duty, t->last_ns, time_ns))
			return 0;
		/* the open scope (or wait) whose phase comes first */
		if (class_phase[t->wait_cls] >= 0)
			best = class_phase[t->wait_cls];
		for (int k = 0; k < t->depth; k++) {
			int kp = class_phase[t->s[k].cls];

			if (kp >= 0 && kp < best)
				best = kp;
		}
		if (best < STEP_PHASE__COUNT)
			return 1 + best;
		/* no step in progress: before the first, or long past the last (the job is
		 * evaluating, saving or shutting down) */
		if (!t->started ||
		    (p->max_dur && time_ns > t->step_t0 + STALE_STEPS * p->max_dur + STALE_MIN_NS))
			return 0;
		return 1 + (on_cpu ? STEP_CPU_COMPUTE : STEP_OTHER);
	}
	return 0;
}

/* See steps.h. */
int steps__phase_by_frames(struct steps *st, pid_t pid, pid_t tid, bool on_cpu, int hint,
			   uint64_t ns, uint64_t time_ns)
{
	struct sproc *p = proc_find(st, pid);
	uint64_t stale;
	int ph;

	if (!p || p->scoped || tid != pid)
		return 0;
	if (hint == STEP_OPTIMIZER || hint == STEP_DATA_WAIT) {
		if (p->frames_last && time_ns > p->frames_last &&
		    time_ns - p->frames_last > p->frames_gap)
			p->frames_gap = time_ns - p->frames_last;
		p->frames_last = time_ns > p->frames_last ? time_ns : p->frames_last;
		p->frames_hints++;
	} else {
		hint = -1;
	}
	/* not yet training, or done (evaluating, saving, shutting down) */
	stale = p->frames_hints < 3 ? FRAMES_STALE_NS : 4 * p->frames_gap;
	if (stale < FRAMES_STALE_MIN_NS)
		stale = FRAMES_STALE_MIN_NS;
	if (!p->frames_last || time_ns > p->frames_last + stale)
		return 0;
	ph = hint >= 0 ? hint : on_cpu ? STEP_CPU_COMPUTE : STEP_OTHER;
	p->out.frames_offcpu |= !on_cpu;
	if (hint < 0) {
		p->frames_pending[on_cpu ? 0 : 1] += ns;
		return 1 + ph;
	}
	p->out.frames_ns[ph] += ns;
	p->out.frames_ns[STEP_CPU_COMPUTE] += p->frames_pending[0];
	p->out.frames_ns[STEP_OTHER] += p->frames_pending[1];
	p->frames_pending[0] = p->frames_pending[1] = 0;
	return 1 + ph;
}

/* See steps.h. */
void steps__exited(struct steps *st, pid_t pid)
{
	struct sproc *p = proc_find(st, pid);

	if (!p)
		return;
	if (!p->out.steps && !steps_proc__frames_total(&p->out)) { /* nothing to report */
		st->st.procs_without_steps++;
		proc_drop(st, p);
		return;
	}
	p->exited = true;
	p->nthreads = 0;
}

/* See steps.h. */
uint64_t steps__bound_bytes(void)
{
	return sizeof(struct steps) +
	       (uint64_t)MAX_PROCS * (sizeof(struct sproc) + MAX_DURATIONS * sizeof(uint64_t));
}

/* Sorts the n step times in d and sets out's percentiles from them. */
static void percentiles(uint64_t *d, size_t n, struct steps_proc *out)
{
	if (!n)
		return;
	qsort(d, n, sizeof(*d), quantile__cmp_u64);
	out->p50_ns = d[quantile__index(n, 50)];
	out->p99_ns = d[quantile__index(n, 99)];
}

/* See steps.h. */
void steps__for_each(const struct steps *st, void (*cb)(void *ctx, const struct steps_proc *sp),
		     void *ctx)
{
	for (struct sproc *p = st->procs; p; p = p->next) {
		struct steps_proc out = p->out;
		size_t n = p->ndur < MAX_DURATIONS ? p->ndur : MAX_DURATIONS;

		if ((!out.steps && !steps_proc__frames_total(&out)) || !out.pid)
			continue;
		/* sorted in place: the ring's order is not needed any more at the end */
		percentiles(p->dur, n, &out);
		cb(ctx, &out);
	}
}

/* See steps.h. */
void steps__window(struct steps *st,
		   void (*cb)(void *ctx, const struct steps_proc *sp, const uint64_t *dur,
			      size_t n),
		   void *ctx)
{
	for (struct sproc *p = st->procs; p; p = p->next) {
		struct steps_proc out = p->out;
		size_t n = p->ndur - p->ndur_taken;

		if (!out.pid || out.steps == p->taken.steps)
			continue;
		out.steps -= p->taken.steps;
		out.wall_ns -= p->taken.wall_ns;
		for (int ph = 0; ph < STEP_PHASE__COUNT; ph++)
			out.phase_ns[ph] -= p->taken.phase_ns[ph];
		/* the window's step times, oldest first, at most the ring's */
		n = n < MAX_DURATIONS ? n : MAX_DURATIONS;
		for (size_t i = 0; i < n && p->dur; i++)
			st->scratch[i] = p->dur[(p->ndur - n + i) % MAX_DURATIONS];
		if (!p->dur)
			n = 0;
		cb(ctx, &out, st->scratch, n);
		p->taken = p->out;
		p->ndur_taken = p->ndur;
	}
}

/* Attaches the probes of the files kept for it that have none now. */
static void attach_missing(struct steps *st, uint64_t now)
{
	st->reattach_failed = false;
	for (int i = 0; i < st->nfiles; i++) {
		struct tfile *f = &st->files[i];

		if (f->fd < 0 || f->links)
			continue;
		f->links = torch_probes__attach(st->tp, f->fd, &f->sites);
		if (!f->links) {
			if (!st->st.reattach_failed)
				pr_warn("cannot attach the record_function scope probes again "
					"(%s): "
					"trying again every second",
					strerror(errno));
			st->st.reattach_failed++;
			st->reattach_failed = true;
			st->retry_ns = now + 1000000000ull;
		}
	}
}

/* Detaches every file's probes (on false) or attaches them again. */
static void set_attached(struct steps *st, bool on, uint64_t now)
{
	if (!on) {
		steps_duty__gap_begin(&st->duty, clock__mono_ns());
		for (int i = 0; i < st->nfiles; i++) {
			uprobe_link__release(st->files[i].links);
			st->files[i].links = NULL;
		}
	} else {
		/* the BPF side forgets what it had open; what the new links send from now on is
		 * whole (the old ones went a slot ago) */
		torch_probes__next_gen(st->tp);
		steps_duty__gap_end(&st->duty, clock__mono_ns());
		attach_missing(st, now);
	}
}

/* See steps.h. */
void steps__tick(struct steps *st, uint64_t now)
{
	uint64_t most = 0;
	bool measured, on, was = st->duty.on;

	if (!st->tp || !st->st.files_probed)
		return;
	for (struct sproc *p = st->procs; p; p = p->next)
		most = !p->exited && p->hits > most ? p->hits : most;
	on = steps_duty__tick(&st->duty, now, most, &measured);
	if (measured)
		for (struct sproc *p = st->procs; p; p = p->next)
			p->hits = 0;
	if (on != was)
		set_attached(st, on, now);
	else if (on && st->reattach_failed && now >= st->retry_ns)
		attach_missing(st, now);
}

/* See steps.h. */
int steps__wait_ms(const struct steps *st, uint64_t now)
{
	return st->tp ? steps_duty__wait_ms(&st->duty, now) : -1;
}

/* See steps.h. */
void steps__stats(const struct steps *st, struct steps_stats *out)
{
	*out = st->st;
	out->duty = st->duty.st;
	for (const struct sproc *p = st->procs; p; p = p->next)
		out->procs_without_steps += !p->out.steps && !steps_proc__frames_total(&p->out);
}
