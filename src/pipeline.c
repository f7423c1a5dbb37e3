// SPDX-License-Identifier: Apache-2.0
/* The sampling pipeline: BPF records -> unwinding -> symbolization -> frames to a sink. */
#include "pipeline.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "proc.h"
#include "sampler.h"
#include "symcache.h"
#include "unwind.h"

#define LOG_MODULE "pipeline"
#include "log.h"

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
	struct ksyms *ksyms;
	struct unwinder *unwinder;
	int sink_err;

	uint64_t samples, frames_total, frames_unsym, proc_events, cpu_ns;
	uint64_t unwind_ends[6];

	uint64_t pcs[PIPELINE_MAX_FRAMES];
	struct frame frames[PIPELINE_MAX_FRAMES + 2];
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

static int add_kernel_frames(struct pipeline *pl, const struct mlprof_sample *s, int n)
{
	uint32_t klen = s->kstack_len;

	if (!pl->cfg.kernel_frames)
		return n;
	if (klen > MLPROF_MAX_KSTACK)
		klen = MLPROF_MAX_KSTACK;
	for (uint32_t i = 0; i < klen && n < PIPELINE_MAX_FRAMES; i++) {
		struct frame *f = &pl->frames[n++];
		uint64_t off;
		const char *name = pl->ksyms ? ksyms__lookup(pl->ksyms, s->kstack[i], &off) : NULL;

		memset(f, 0, sizeof(*f));
		f->kind = FRAME_KERNEL;
		f->addr = s->kstack[i];
		f->function = name ? arena_copy(pl, name) : "[unknown kernel]";
	}
	return n;
}

/* Names one native frame; pc is already adjusted to point into the call instruction. */
static void symbolize_native(struct pipeline *pl, struct proc *p, uint64_t pc, struct frame *f)
{
	const struct proc_map *m;
	struct elf_file *ef;
	struct sym_result res;
	uint64_t vaddr;

	memset(f, 0, sizeof(*f));
	f->kind = FRAME_NATIVE;
	f->addr = pc;
	pl->frames_total++;
	m = proc_cache__find_map(pl->procs, p, pc);
	if (!m) {
		pl->frames_unsym++;
		return;
	}
	f->map = &m->fm;
	ef = proc_cache__map_elf(pl->procs, p, m);
	if (!ef || proc_map__to_vaddr(m, ef, pc, &vaddr) != 0 ||
	    symcache__lookup(pl->syms, ef, p->root, vaddr, &res) != 0) {
		pl->frames_unsym++;
		return;
	}
	f->function = arena_copy(pl, res.name);
}

static int handle_sample(struct pipeline *pl, const struct mlprof_sample *s, size_t size)
{
	struct sample_info info = {0};
	char thread_name[MLPROF_COMM_LEN + 1];
	enum unwind_end end = UNWIND_END_NO_REGS;
	struct proc *p = NULL;
	int n = 0, nu = 0;

	if (size < sizeof(*s) || size < sizeof(*s) + s->ustack_len)
		return 0; /* malformed record: the sampler never produces these */
	pl->names_used = 0;
	memcpy(thread_name, s->comm, MLPROF_COMM_LEN);
	thread_name[MLPROF_COMM_LEN] = '\0';

	n = add_kernel_frames(pl, s, 0);
	if (!(s->flags & MLPROF_SF_KTHREAD) && s->pid != 0) {
		p = proc_cache__get(pl->procs, (pid_t)s->pid);
		if (p) {
			nu = unwinder__unwind(pl->unwinder, p, s, pl->pcs, PIPELINE_MAX_FRAMES - n,
					      &end);
			if (nu < 0)
				nu = 0;
			for (int i = 0; i < nu; i++) {
				uint64_t pc = i == 0 ? pl->pcs[i] : pl->pcs[i] - 1;

				symbolize_native(pl, p, pc, &pl->frames[n++]);
			}
		} else {
			end = UNWIND_END_NO_INFO;
			struct frame *f = &pl->frames[n++];

			memset(f, 0, sizeof(*f));
			f->kind = FRAME_TRUNCATED;
			f->function = "[process exited before its maps were read]";
		}
		pl->unwind_ends[end]++;
		const char *why = p ? truncation_reason(end) : NULL;
		if (why) {
			struct frame *f = &pl->frames[n++];

			memset(f, 0, sizeof(*f));
			f->kind = FRAME_TRUNCATED;
			f->function = why;
		}
	}
	if (n == 0) {
		struct frame *f = &pl->frames[n++];

		memset(f, 0, sizeof(*f));
		f->kind = FRAME_TRUNCATED;
		f->function = "[no stack]";
	}

	info.pid = (pid_t)s->pid;
	info.tid = (pid_t)s->tid;
	info.kind = (enum mlprof_sample_kind)s->kind;
	info.time_ns = s->time_ns;
	info.value = (int64_t)s->value;
	info.thread_name = thread_name;
	info.proc_name = p && p->comm[0] ? p->comm : thread_name;
	info.proc = p;
	pl->samples++;
	return pl->sink(pl->sink_ctx, &info, pl->frames, n);
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
	case MLPROF_EV_EXEC:
		if (size >= sizeof(*pe)) {
			proc_cache__on_exec(pl->procs, (pid_t)pe->pid);
			pl->proc_events++;
		}
		break;
	case MLPROF_EV_EXIT:
		if (size >= sizeof(*pe)) {
			proc_cache__on_exit(pl->procs, (pid_t)pe->pid);
			pl->proc_events++;
		}
		break;
	case MLPROF_EV_FORK:
		/* a new process: if its pid was used before, the cached maps are someone else's */
		if (size >= sizeof(*pe)) {
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

	pcfg.max_procs = cfg->max_procs ? cfg->max_procs : 4096;
	pcfg.max_elf_files = 1024;
	pcfg.proc_root = "/proc";
	pl->procs = proc_cache__new(&pcfg);
	sym_cfg.max_bytes = cfg->symcache_bytes ? cfg->symcache_bytes : (32u << 20);
	sym_cfg.debug_dirs = "/usr/lib/debug";
	pl->syms = symcache__new(&sym_cfg);
	if (!pl->procs || !pl->syms) {
		err = -errno;
		pr_err("cannot create caches: %s", strerror(errno));
		goto cleanup;
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
	pl->sampler = sampler__new(&scfg, on_event, pl);
	if (!pl->sampler) {
		err = -errno;
		goto cleanup;
	}
	if (cfg->kernel_frames) {
		pl->ksyms = ksyms__load("/proc/kallsyms");
		if (!pl->ksyms)
			pr_warn("kernel symbols unavailable (%s): kernel frames stay unnamed",
				strerror(errno));
	}
	for (int i = 0; i < cfg->n_pids; i++) {
		err = sampler__add_pid(pl->sampler, cfg->pids[i]);
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
	sampler__free(pl->sampler);
	unwinder__free(pl->unwinder);
	ksyms__free(pl->ksyms);
	symcache__free(pl->syms);
	proc_cache__free(pl->procs);
	free(pl);
}

int pipeline__add_pid(struct pipeline *pl, pid_t pid)
{
	return sampler__add_pid(pl->sampler, pid);
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
	n = sampler__poll(pl->sampler, timeout_ms);
	pl->cpu_ns += thread_cpu_ns() - t0;
	if (pl->sink_err)
		return pl->sink_err;
	return n;
}

void pipeline__gc(struct pipeline *pl)
{
	proc_cache__gc(pl->procs);
}

void pipeline__stats(struct pipeline *pl, struct pipeline_stats *out)
{
	struct symcache_stats ss;
	struct proc_cache_stats ps;

	memset(out, 0, sizeof(*out));
	sampler__stats(pl->sampler, out->bpf);
	out->samples = pl->samples;
	memcpy(out->unwind_ends, pl->unwind_ends, sizeof(out->unwind_ends));
	out->frames_total = pl->frames_total;
	out->frames_unsymbolized = pl->frames_unsym;
	out->proc_events = pl->proc_events;
	out->cpu_ns = pl->cpu_ns;
	symcache__stats(pl->syms, &ss);
	out->symcache_bytes = ss.bytes;
	out->symcache_tables = ss.tables;
	out->symcache_evictions = ss.evictions;
	proc_cache__stats(pl->procs, &ps);
	out->procs_cached = ps.procs;
	out->proc_evictions = ps.proc_evictions;
	out->elf_files = ps.elf_files;
}
