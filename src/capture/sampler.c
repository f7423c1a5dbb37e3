// SPDX-License-Identifier: Apache-2.0
/* Loads the cpu BPF object, samples every online CPU and delivers the ring-buffer records. */
#define LOG_MODULE "sampler"
#include "util/log.h"

#include "capture/fault_duty.h"
#include "capture/hold.h"
#include "capture/privilege.h"
#include "capture/sampler.h"
#include "capture/sampler_share.h"
#include "capture/tracefs.h"

#include <errno.h>
#include <pthread.h>
#include <fcntl.h>
#include <inttypes.h>
#include <linux/perf_event.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>

#include "cpu.skel.h"
#include "memory.skel.h"
#include "offcpu.skel.h"
#include <mlprof/cuda.h>
#include <mlprof/python.h>

/* Layout checks: BPF and user space must agree byte for byte (see include/mlprof/sample.h). */
_Static_assert(offsetof(struct mlprof_sample, time_ns) % 8 == 0, "time_ns alignment");
_Static_assert(offsetof(struct mlprof_sample, regs) % 8 == 0, "regs alignment");
_Static_assert(offsetof(struct mlprof_sample, kstack) % 8 == 0, "kstack alignment");
_Static_assert(offsetof(struct mlprof_sample, ustack) % 8 == 0, "ustack alignment");
_Static_assert(sizeof(struct mlprof_sample) == 96 + MLPROF_NREGS * 8 + MLPROF_MAX_KSTACK * 8,
	       "mlprof_sample size");
_Static_assert(sizeof(struct mlprof_proc_event) == 40, "mlprof_proc_event size");
_Static_assert(sizeof(struct mlprof_py_frame) == 16, "mlprof_py_frame size");
_Static_assert(sizeof(struct mlprof_sample_end) == 40, "mlprof_sample_end size");
_Static_assert(sizeof(struct mlprof_py_proc) == 56, "mlprof_py_proc size");
_Static_assert(offsetof(struct mlprof_sample, py_nframes) % 8 == 0, "py_nframes alignment");
_Static_assert((MLPROF_MAX_USTACK & (MLPROF_MAX_USTACK - 1)) == 0, "ustack bound");

/*
 * Default ring buffer: 2 MiB per online CPU (about 60 full 32 KiB samples per CPU, i.e.
 * 600 ms of 99 Hz samples between two polls), between 4 and 64 MiB. It is mapped twice
 * by libbpf, so it counts double in RSS: keep it no larger than bursts need.
 */
#define RINGBUF_BYTES_PER_CPU (2UL << 20)
#define MIN_RINGBUF_BYTES     (4UL << 20)
#define MAX_DEFAULT_RINGBUF   (64UL << 20)
#define MAX_RINGBUF_BYTES     (1UL << 30)
#define PIDS_MAX_ENTRIES      8192
#define CPU_ONLINE_PATH	      "/sys/devices/system/cpu/online"
#define VMLINUX_BTF_PATH      "/sys/kernel/btf/vmlinux"
#define MEM_PAGE_BYTES	      4096 /* the unit of the memory-growth profile (x86-64 pages) */
#define MEM_WEIGHT_ONE	      1024 /* bpf/capture.bpf.h: WEIGHT_ONE, a sampling weight of 1 */

struct sampler {
	struct cpu_bpf *skel;
	struct offcpu_bpf *offcpu;	    /* NULL unless off-CPU sampling is on */
	struct cuda_probes *cuda;	    /* loaded when the first CUDA/NCCL library is probed */
	bool cuda_allowed;		    /* CUDA probes are on */
	int cuda_err;			    /* loading them failed (-errno): not tried again */
	struct cuda_probes_config cuda_cfg; /* what they are loaded with */
	struct memory_bpf *memory;	    /* NULL unless memory growth is on */
	struct fault_duty *duty; /* NULL unless its page-fault programs are duty-cycled */
	struct bpf_link **links; /* one per attached perf event */
	int nlinks;
	int ncpus; /* possible CPUs: per-CPU map values and scratch slots */
	struct ring_buffer *rb;
	sampler_event_cb cb;
	void *cb_ctx;
	uint64_t *pids_gen; /* the pids_gen map, mapped on first use (pids_changed) */
	struct hold *hold;  /* processes held at a CUDA library mmap; NULL when not holding */
	struct bpf_link *scope_switch; /* on_scope_switch, attached by sampler__scope_cpu_start */
};

/* Returns the metric name of a BPF counter (static string; "unknown" when out of range). */
const char *sampler__stat_name(enum mlprof_bpf_stat stat)
{
	switch (stat) {
	case MLPROF_STAT_SAMPLES:
		return "samples";
	case MLPROF_STAT_FILTERED:
		return "filtered";
	case MLPROF_STAT_RB_FULL:
		return "ringbuf_full";
	case MLPROF_STAT_USTACK_ERR:
		return "ustack_err";
	case MLPROF_STAT_USTACK_CUT:
		return "ustack_cut";
	case MLPROF_STAT_KSTACK_ERR:
		return "kstack_err";
	case MLPROF_STAT_NO_REGS:
		return "no_regs";
	case MLPROF_STAT_VMA_MISS:
		return "vma_miss";
	case MLPROF_STAT_PROC_EVENTS:
		return "proc_events";
	case MLPROF_STAT_PROC_RB_FULL:
		return "proc_ringbuf_full";
	case MLPROF_STAT_PY_SAMPLES:
		return "python_samples";
	case MLPROF_STAT_PY_NO_TSTATE:
		return "python_no_thread_state";
	case MLPROF_STAT_PY_NO_FRAME:
		return "python_no_frame";
	case MLPROF_STAT_PY_READ_ERR:
		return "python_read_error";
	case MLPROF_STAT_PY_TRUNCATED:
		return "python_truncated";
	case MLPROF_STAT_PY_TID_MISMATCH:
		return "python_tid_mismatch";
	case MLPROF_STAT_OFFCPU_SWITCHES:
		return "offcpu_switches";
	case MLPROF_STAT_OFFCPU_CAPTURED:
		return "offcpu_captured";
	case MLPROF_STAT_OFFCPU_CAPPED:
		return "offcpu_rate_capped";
	case MLPROF_STAT_OFFCPU_SHORT:
		return "offcpu_short";
	case MLPROF_STAT_OFFCPU_END_LOST:
		return "offcpu_end_lost";
	case MLPROF_STAT_HEAP_SAMPLED:
		return "heap_sampled";
	case MLPROF_STAT_HEAP_LIVE_FULL:
		return "heap_live_full";
	case MLPROF_STAT_HEAP_LOST:
		return "heap_lost";
	case MLPROF_STAT_TORCH_LOST:
		return "torch_scope_lost";
	case MLPROF_STAT_TENSOR_LIVE_FULL:
		return "cuda_tensor_live_full";
	case MLPROF_STAT_CUDA_EVENTS:
		return "cuda_events";
	case MLPROF_STAT_CUDA_CAPTURED:
		return "cuda_captured";
	case MLPROF_STAT_CUDA_CAPPED:
		return "cuda_rate_capped";
	case MLPROF_STAT_CUDA_LOST:
		return "cuda_events_lost";
	case MLPROF_STAT_MEM_SAMPLES:
		return "memory_samples";
	case MLPROF_STAT_MEM_LOST:
		return "memory_events_lost";
	case MLPROF_STAT_CUDA_RT_NESTED:
		return "cuda_runtime_nested_launches";
	case MLPROF_STAT_VMA_LOOKUPS:
		return "vma_lookups";
	case MLPROF_STAT_MEM_CAPPED:
		return "memory_rate_capped";
	case MLPROF_STAT_CUDA_HOLDS:
		return "cuda_holds";
	case MLPROF_STAT_FAULTS_SEEN:
		return "page_faults_seen";
	case MLPROF_STAT__COUNT:
		break;
	}
	return "unknown";
}

/* libbpf chatter (including verifier logs, one multi-line message) goes to debug level only. */
static int libbpf_print(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	char *msg, *line, *save = NULL;

	if (level == LIBBPF_DEBUG)
		return 0;
	if (vasprintf(&msg, fmt, ap) < 0)
		return 0;
	for (line = strtok_r(msg, "\n", &save); line; line = strtok_r(NULL, "\n", &save))
		pr_debug("libbpf: %s", line);
	free(msg);
	return 0;
}

/*
 * One line explaining why BPF could not be used; errno-style err (positive). A refusal names
 * the capabilities missing, or, when none is, says it was not about capabilities (the
 * verifier, an LSM or lockdown) instead of asking a root user for root.
 */
static void log_bpf_failure(const char *what, int err)
{
	char missing[PRIVILEGE_MISSING_MAX];

	if (err != EPERM && err != EACCES)
		pr_err("%s failed: %s", what, strerror(err));
	else if (privilege__missing(missing, sizeof(missing)) == -EPERM)
		pr_err("%s failed: need root or %s; missing %s: %s", what, PRIVILEGE_CAPS, missing,
		       strerror(err));
	else
		pr_err("%s failed although the capabilities are held (rejected by the verifier, a "
		       "security module or kernel lockdown; --log-level debug shows libbpf's "
		       "log): %s",
		       what, strerror(err));
}

/*
 * Parses a CPU list such as "0-3,5,8-9" into online[0..n). Returns 0 or -errno.
 */
static int parse_online_cpus(bool *online, int n)
{
	char buf[4096];
	ssize_t len;
	char *p, *end;
	int fd, err = 0;

	fd = open(CPU_ONLINE_PATH, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		err = -errno;
		pr_warn("cannot open %s: %s", CPU_ONLINE_PATH, strerror(errno));
		return err;
	}
	len = read(fd, buf, sizeof(buf) - 1);
	if (len < 0) {
		err = -errno;
		pr_warn("cannot read %s: %s", CPU_ONLINE_PATH, strerror(errno));
		goto cleanup;
	}
	buf[len] = '\0';
	for (p = buf; *p && *p != '\n';) {
		long a, b;

		errno = 0;
		a = strtol(p, &end, 10);
		if (end == p || a < 0 || errno) {
			err = -EINVAL;
			goto cleanup;
		}
		b = a;
		p = end;
		if (*p == '-') {
			p++;
			b = strtol(p, &end, 10);
			if (end == p || b < a || errno) {
				err = -EINVAL;
				goto cleanup;
			}
			p = end;
		}
		for (long i = a; i <= b && i < n; i++)
			online[i] = true;
		if (*p == ',')
			p++;
		else if (*p && *p != '\n') {
			err = -EINVAL;
			goto cleanup;
		}
	}
cleanup:
	if (err == -EINVAL)
		pr_warn("cannot parse %s: \"%s\"", CPU_ONLINE_PATH, buf);
	close(fd);
	return err;
}

/*
 * Opens a software perf event (attr) on every online CPU and attaches prog to each; links
 * (an array of ncpus) and *nlinks receive them. what names the event in messages. Returns 0
 * or -errno (logged); CPUs that go offline meanwhile are skipped.
 */
static int attach_per_cpu(struct sampler *s, struct perf_event_attr *attr, struct bpf_program *prog,
			  const char *what, struct bpf_link **links, int *nlinks)
{
	bool *online = calloc(s->ncpus, sizeof(*online));
	int err;

	if (!online)
		return -ENOMEM;
	err = parse_online_cpus(online, s->ncpus);
	if (err)
		goto cleanup;
	for (int cpu = 0; cpu < s->ncpus; cpu++) {
		struct bpf_link *link;
		int fd;

		if (!online[cpu])
			continue;
		fd = syscall(__NR_perf_event_open, attr, -1, cpu, -1, PERF_FLAG_FD_CLOEXEC);
		if (fd < 0) {
			err = -errno;
			if (errno == ENODEV) /* went offline meanwhile */
				continue;
			if (errno == EINVAL && attr->freq)
				pr_err("perf_event_open %s on cpu %d at %llu Hz failed: %s "
				       "(above kernel.perf_event_max_sample_rate?)",
				       what, cpu, (unsigned long long)attr->sample_freq,
				       strerror(errno));
			else if (errno == EPERM || errno == EACCES)
				log_bpf_failure("perf_event_open", errno);
			else
				pr_err("perf_event_open %s on cpu %d failed: %s", what, cpu,
				       strerror(errno));
			goto cleanup;
		}
		link = bpf_program__attach_perf_event(prog, fd);
		if (!link) {
			err = -errno;
			close(fd);
			log_bpf_failure("attaching a perf_event program", -err);
			goto cleanup;
		}
		/* the link owns fd from here on */
		links[(*nlinks)++] = link;
	}
	err = 0;
cleanup:
	free(online);
	return err;
}

/* Opens and attaches the cpu-clock event on every online CPU. Returns 0 or -errno. */
static int attach_perf_events(struct sampler *s, unsigned int freq_hz)
{
	struct perf_event_attr attr;
	int err;

	s->links = calloc(s->ncpus, sizeof(*s->links));
	if (!s->links)
		return -ENOMEM;
	memset(&attr, 0, sizeof(attr));
	attr.size = sizeof(attr);
	attr.type = PERF_TYPE_SOFTWARE;
	attr.config = PERF_COUNT_SW_CPU_CLOCK;
	attr.freq = 1;
	attr.sample_freq = freq_hz;
	err = attach_per_cpu(s, &attr, s->skel->progs.on_cpu_sample, "cpu-clock", s->links,
			     &s->nlinks);
	if (!err && !s->nlinks) {
		pr_err("no online CPU could be sampled");
		err = -ENODEV;
	}
	return err;
}

static int rb_adapter(void *ctx, void *data, size_t size)
{
	struct sampler *s = ctx;

	if (size < sizeof(__u32))
		return 0;
	return s->cb(s->cb_ctx, data, size);
}

/* See sampler_share.h. */
int sampler__share_maps(struct sampler *s, const char *what, struct bpf_map *scratch,
			struct bpf_map *rb, struct bpf_map *pids, struct bpf_map *pids_gen,
			struct bpf_map *py_procs, struct bpf_map *stats, struct bpf_map *py_known,
			struct bpf_map *stack_vmas)
{
	int err = bpf_map__set_max_entries(scratch, s->ncpus);

	if (!err)
		err = bpf_map__reuse_fd(rb, bpf_map__fd(s->skel->maps.rb));
	if (!err)
		err = bpf_map__reuse_fd(pids, bpf_map__fd(s->skel->maps.pids));
	if (!err)
		err = bpf_map__reuse_fd(pids_gen, bpf_map__fd(s->skel->maps.pids_gen));
	if (!err)
		err = bpf_map__reuse_fd(py_procs, bpf_map__fd(s->skel->maps.py_procs));
	if (!err)
		err = bpf_map__reuse_fd(stats, bpf_map__fd(s->skel->maps.stats));
	if (!err)
		err = bpf_map__reuse_fd(py_known, bpf_map__fd(s->skel->maps.py_known));
	if (!err)
		err = bpf_map__reuse_fd(stack_vmas, bpf_map__fd(s->skel->maps.stack_vmas));
	if (err)
		pr_err("cannot share maps with the %s BPF object: %s", what, strerror(-err));
	return err;
}

/* See sampler_share.h. */
int sampler__share_scope_runs(struct sampler *s, struct bpf_map *scope_runs)
{
	int err = bpf_map__reuse_fd(scope_runs, bpf_map__fd(s->skel->maps.scope_runs));

	if (err)
		pr_err("cannot share the scope threads' run times: %s", strerror(-err));
	return err;
}

/* See sampler_share.h. */
void sampler__scope_cpu_start(struct sampler *s)
{
	if (s->scope_switch)
		return;
	s->scope_switch = bpf_program__attach(s->skel->progs.on_scope_switch);
	if (!s->scope_switch)
		pr_warn("cannot attach the scope threads' switch tracepoint (%s): step CPU times "
			"are read at the scheduler's ticks",
			strerror(errno));
}

/* See sampler_share.h. */
void sampler__knobs(const struct sampler *s, struct sampler_knobs *out)
{
	out->filter_mode = s->skel->rodata->filter_mode;
	out->follow_children = s->skel->rodata->follow_children;
	out->skip_idle = s->skel->rodata->skip_idle;
	out->self_pid = s->skel->rodata->self_pid;
	out->ustack_bytes = s->skel->rodata->ustack_bytes;
	out->wakeup_bytes = s->skel->rodata->wakeup_bytes;
}

#define share_capture(s, o, what) sampler_share_capture(s, o, what)

/*
 * Loads and attaches the off-CPU object, sharing the cpu object's ring buffer, pid filter,
 * Python walker configuration and counters. Returns 0 or -errno (logged).
 */
static int offcpu_setup(struct sampler *s, const struct sampler_config *cfg)
{
	struct offcpu_bpf *o;
	int err;

	o = offcpu_bpf__open();
	if (!o) {
		err = -errno;
		log_bpf_failure("opening the off-CPU BPF object", -err);
		return err;
	}
	s->offcpu = o;
	/* callers always say it (0 is valid: every interval counts) */
	o->rodata->offcpu_min_ns = cfg->offcpu_min_ns;
	if (cfg->offcpu_budget)
		o->rodata->offcpu_budget = cfg->offcpu_budget;
	err = share_capture(s, o, "off-CPU");
	if (err)
		return err;
	err = offcpu_bpf__load(o);
	if (err) {
		pr_err("loading the off-CPU BPF program failed: %s (run with log level debug for "
		       "the verifier log)",
		       strerror(-err));
		return err;
	}
	err = offcpu_bpf__attach(o);
	if (err) {
		log_bpf_failure("attaching the sched_switch tracepoint", -err);
		return err;
	}
	return 0;
}

/*
 * Whether the kernel's mmap_lock_released tracepoint passes (mm, write), as on 6.18 (older
 * kernels, 5.11 to at least 6.8, passed a memory cgroup path that they formatted on every
 * lock release).
 * MLPROF_TEST_VMA_SYSCALLS=1 says no, so that tests cover the syscall fallback.
 */
static bool mmap_unlock_usable(void)
{
	const char *force = getenv("MLPROF_TEST_VMA_SYSCALLS");
	const struct btf_type *t;
	bool usable = false;
	struct btf *btf;
	int id;

	if (force && strcmp(force, "1") == 0)
		return false;
	btf = btf__load_vmlinux_btf();
	if (!btf)
		return false;
	id = btf__find_by_name_kind(btf, "btf_trace_mmap_lock_released", BTF_KIND_TYPEDEF);
	t = id > 0 ? btf__type_by_id(btf, id) : NULL;
	while (t && (btf_is_typedef(t) || btf_is_ptr(t)))
		t = btf__type_by_id(btf, t->type);
	/* (void *__data, struct mm_struct *mm, bool write) */
	usable = t && btf_is_func_proto(t) && btf_vlen(t) == 3;
	btf__free(btf);
	return usable;
}

/*
 * Counter idx summed over CPUs into *sum, vals: room for one slot per possible CPU (what a
 * per-CPU lookup returns). 0 or -errno.
 */
static int stat_sum(const struct sampler *s, __u32 idx, __u64 *vals, uint64_t *sum)
{
	*sum = 0;
	if (bpf_map_lookup_elem(bpf_map__fd(s->skel->maps.stats), &idx, vals))
		return -errno;
	for (int c = 0; c < s->ncpus; c++)
		*sum += vals[c];
	return 0;
}

/* The page faults the memory-growth programs saw (their counter): fault_duty's rate. */
static uint64_t faults_seen(void *ctx)
{
	const struct sampler *s = ctx;
	__u64 *vals = calloc(s->ncpus, sizeof(*vals));
	uint64_t sum = 0;

	if (vals)
		stat_sum(s, MLPROF_STAT_FAULTS_SEEN, vals, &sum);
	free(vals);
	return sum;
}

/*
 * Loads and attaches the memory-growth object (sampled page faults, releases), maps shared.
 * Returns 0 or -errno (logged).
 */
static int memory_setup(struct sampler *s, const struct sampler_config *cfg)
{
	uint64_t pages = 512 * 1024 / MEM_PAGE_BYTES;
	struct memory_bpf *o;
	bool unlock;
	int err;

	o = memory_bpf__open();
	if (!o) {
		err = -errno;
		log_bpf_failure("opening the memory BPF object", -err);
		return err;
	}
	s->memory = o;
	/* whole pages: each captured stack stands for that many page faults */
	if (cfg->memory_sample_bytes)
		pages = cfg->memory_sample_bytes >= MEM_PAGE_BYTES
				? cfg->memory_sample_bytes / MEM_PAGE_BYTES
				: 1;
	o->rodata->mem_sample_pages = pages;
	if (cfg->memory_budget)
		o->rodata->mem_budget = cfg->memory_budget;
	unlock = mmap_unlock_usable();
	bpf_program__set_autoload(o->progs.on_mmap_unlock, unlock);
	bpf_program__set_autoload(o->progs.on_mprotect_exit_fallback, !unlock);
	o->rodata->vma_syscalls = !unlock;

	err = share_capture(s, o, "memory");
	if (err)
		return err;
	err = memory_bpf__load(o);
	if (err) {
		pr_err("loading the memory BPF programs failed: %s (run with log level debug for "
		       "the verifier log)",
		       strerror(-err));
		return err;
	}
	err = memory_bpf__attach(o);
	if (err) {
		log_bpf_failure("attaching the memory page-fault and syscall tracepoints", -err);
		return err;
	}
	if (cfg->memory_max_faults) {
		struct bpf_program *progs[] = {o->progs.on_fault_user, o->progs.on_fault_kernel};
		struct bpf_link *links[] = {o->links.on_fault_user, o->links.on_fault_kernel};
		struct fault_duty_config dc = {
			.max_rate = cfg->memory_max_faults, .count = faults_seen, .count_ctx = s};

		s->duty = fault_duty__start(progs, links, 2, &o->data->mem_duty_weight,
					    MEM_WEIGHT_ONE, &dc);
		if (!s->duty) {
			err = -errno;
			pr_err("starting the page-fault duty cycle failed: %s", strerror(-err));
			return err;
		}
		/* the links are the duty cycle's now */
		o->links.on_fault_user = links[0];
		o->links.on_fault_kernel = links[1];
	}
	pr_debug("memory: one stack every %" PRIu64 " page faults on average; mapping changes "
		 "seen by %s; page-fault programs attached %s",
		 pages, unlock ? "mmap_lock_released" : "syscall tracepoints",
		 cfg->memory_max_faults ? "in random slots above the fault-rate cap" : "always");
	return 0;
}

/* See sampler.h. */
void sampler__memory_duty(struct sampler *s, struct fault_duty_stats *out)
{
	fault_duty__stats(s ? s->duty : NULL, out);
}

/* See sampler_share.h. */
int sampler__map_walk(int fd, size_t key_size, int (*visit)(const void *key, void *ctx), void *ctx)
{
	uint8_t key[64], next[64], *doomed = NULL;
	size_t n = 0, cap = 0;

	if (key_size > sizeof(key))
		return -EINVAL;
	if (bpf_map_get_next_key(fd, NULL, next))
		return 0;
	do {
		memcpy(key, next, key_size);
		if (!visit(key, ctx))
			continue;
		/* deleting while iterating restarts the walk: collect first */
		if (n == cap) {
			size_t nc = cap ? cap * 2 : 64;
			uint8_t *d = realloc(doomed, nc * key_size);

			if (!d)
				continue;
			doomed = d;
			cap = nc;
		}
		memcpy(doomed + n++ * key_size, key, key_size);
	} while (!bpf_map_get_next_key(fd, key, next));
	for (size_t i = 0; i < n; i++)
		bpf_map_delete_elem(fd, doomed + i * key_size);
	free(doomed);
	return 0;
}

/* See sampler.h. */
int sampler__cuda_load(struct sampler *s)
{
	if (!s->cuda_allowed || s->cuda_err)
		return s->cuda_err ? s->cuda_err : -ENOTSUP;
	if (s->cuda)
		return 0;
	s->cuda = cuda_probes__new(s, &s->cuda_cfg);
	if (!s->cuda) {
		s->cuda_err = -errno;
		return s->cuda_err;
	}
	pr_info("CUDA/NCCL uprobe programs loaded (%s)", cuda_probes__link_kind(s->cuda));
	return 0;
}

/* See sampler.h. */
struct uprobe_link *sampler__attach_probes(struct sampler *s, const char *path,
					   const struct sampler_probe *probes, int n)
{
	int err;

	if (!s || !s->cuda_allowed || s->cuda_err) {
		errno = s && s->cuda_err ? -s->cuda_err : ENOTSUP;
		return NULL;
	}
	if (!probes || n <= 0) {
		errno = EINVAL;
		return NULL;
	}
	/* the uprobe programs are verified only once some process maps a CUDA library */
	err = sampler__cuda_load(s);
	if (err) {
		errno = -err;
		return NULL;
	}
	return cuda_probes__attach(s->cuda, path, probes, n);
}

/* See sampler.h. */
void sampler__cuda_forget_pid(struct sampler *s, pid_t pid)
{
	if (s && s->cuda)
		cuda_probes__forget_pid(s->cuda, pid);
}

/* See sampler.h. */
int sampler__cuda_counts(struct sampler *s, pid_t pid, bool take, uint64_t max_window,
			 sampler_count_cb cb, void *ctx)
{
	if (!s || !s->cuda_allowed)
		return -ENOTSUP;
	if (!s->cuda)
		return 0; /* no CUDA library was probed */
	return cuda_probes__counts(s->cuda, pid, take, max_window, cb, ctx);
}

/* See sampler.h. */
uint64_t sampler__maps_bound_bytes(void)
{
	long ncpu = sysconf(_SC_NPROCESSORS_CONF);

	return (24ull << 20) + (uint64_t)(ncpu > 0 ? ncpu : 1) * (256u << 10);
}

/* See sampler.h. */
size_t sampler__ringbuf_bytes(size_t want)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	size_t sz = page;

	if (!want) {
		long ncpu = sysconf(_SC_NPROCESSORS_ONLN);

		want = (ncpu > 0 ? (size_t)ncpu : 1) * RINGBUF_BYTES_PER_CPU;
		if (want < MIN_RINGBUF_BYTES)
			want = MIN_RINGBUF_BYTES;
		if (want > MAX_DEFAULT_RINGBUF)
			want = MAX_DEFAULT_RINGBUF;
	}
	if (want > MAX_RINGBUF_BYTES)
		want = MAX_RINGBUF_BYTES;
	while (sz < want)
		sz <<= 1;
	return sz;
}

/*
 * Opens, sizes, loads and attaches the cpu BPF object (see sampler.h). Returns the sampler,
 * owned by the caller (sampler__free), or NULL with errno set after logging one line.
 */
struct sampler *sampler__new(const struct sampler_config *cfg, sampler_event_cb cb, void *ctx)
{
	struct sampler *s = NULL;
	struct cpu_bpf *skel;
	int err = 0;

	if (!cfg || !cb || !cfg->freq_hz || cfg->ustack_bytes > MLPROF_MAX_USTACK) {
		pr_err("invalid sampler configuration (freq %u Hz, ustack %u bytes, max %u)",
		       cfg ? cfg->freq_hz : 0, cfg ? cfg->ustack_bytes : 0, MLPROF_MAX_USTACK);
		errno = EINVAL;
		return NULL;
	}
	if (access(VMLINUX_BTF_PATH, R_OK)) {
		err = errno;
		pr_err("kernel BTF unavailable: %s: %s (need CONFIG_DEBUG_INFO_BTF)",
		       VMLINUX_BTF_PATH, strerror(err));
		errno = err == EACCES ? EPERM : EOPNOTSUPP;
		return NULL;
	}
	err = tracefs__ensure();
	if (err) {
		errno = -err;
		return NULL;
	}

	s = calloc(1, sizeof(*s));
	if (!s) {
		errno = ENOMEM;
		return NULL;
	}
	s->cb = cb;
	s->cb_ctx = ctx;
	s->ncpus = libbpf_num_possible_cpus();
	if (s->ncpus <= 0) {
		err = s->ncpus ? s->ncpus : -EINVAL;
		pr_err("cannot count possible CPUs: %s", strerror(-err));
		goto cleanup;
	}

	libbpf_set_print(libbpf_print);
	skel = cpu_bpf__open();
	if (!skel) {
		err = -errno;
		log_bpf_failure("opening the BPF object", -err);
		goto cleanup;
	}
	s->skel = skel;

	skel->rodata->filter_mode = cfg->filter_pids ? MLPROF_FILTER_PIDS : MLPROF_FILTER_ALL;
	skel->rodata->follow_children = cfg->follow_children;
	skel->rodata->skip_idle = cfg->skip_idle;
	skel->rodata->self_pid = cfg->self_pid > 0 ? (__u32)cfg->self_pid : 0;
	skel->rodata->ustack_bytes = cfg->ustack_bytes;
	skel->rodata->hold_cuda_maps = cfg->cuda && cfg->hold_cuda_maps;
	/* batch: wake the consumer when half the ring is pending (or for a new pid) */
	skel->rodata->wakeup_bytes =
		cfg->batch ? sampler__ringbuf_bytes(cfg->ringbuf_bytes) / 2 : 0;

	err = bpf_map__set_max_entries(skel->maps.rb, sampler__ringbuf_bytes(cfg->ringbuf_bytes));
	if (!err)
		err = bpf_map__set_max_entries(skel->maps.pids, PIDS_MAX_ENTRIES);
	if (!err)
		err = bpf_map__set_max_entries(skel->maps.scratch, s->ncpus);
	/* tests only: a small table of Python processes, to fill it without forking 16384 */
	if (!err && getenv("MLPROF_TEST_PY_PROCS")) {
		long n = strtol(getenv("MLPROF_TEST_PY_PROCS"), NULL, 10);

		if (n > 0 && n <= 16384)
			err = bpf_map__set_max_entries(skel->maps.py_procs, (__u32)n);
	}
	if (err) {
		pr_err("cannot size BPF maps: %s", strerror(-err));
		goto cleanup;
	}

	/* attached when PyTorch scopes are probed (sampler__scope_cpu_start) */
	bpf_program__set_autoattach(skel->progs.on_scope_switch, false);
	err = cpu_bpf__load(skel);
	if (err) {
		if (err == -EPERM || err == -EACCES)
			log_bpf_failure("loading the BPF programs", -err);
		else
			pr_err("loading the BPF programs failed: %s (run with log level debug "
			       "for the verifier log)",
			       strerror(-err));
		goto cleanup;
	}

	if (skel->rodata->hold_cuda_maps) {
		s->hold = hold__new(bpf_map__fd(skel->maps.held));
		if (!s->hold) {
			err = -errno;
			pr_err("cannot start the guard of held processes: %s", strerror(-err));
			goto cleanup;
		}
	}
	err = attach_perf_events(s, cfg->freq_hz);
	if (err)
		goto cleanup;
	err = cpu_bpf__attach(skel);
	if (err) {
		log_bpf_failure("attaching the sched tracepoints", -err);
		goto cleanup;
	}

	if (cfg->offcpu) {
		err = offcpu_setup(s, cfg);
		if (err)
			goto cleanup;
	}
	s->cuda_allowed = cfg->cuda;
	s->cuda_cfg = (struct cuda_probes_config){
		.budget = cfg->cuda_budget,
		.count_window_ns = cfg->cuda_count_window_ns,
		.sync_intervals = cfg->cuda_sync_intervals,
		.tensor_sample = cfg->cuda_tensor_sample,
	};
	if (cfg->memory) {
		err = memory_setup(s, cfg);
		if (err)
			goto cleanup;
	}

	s->rb = ring_buffer__new(bpf_map__fd(skel->maps.rb), rb_adapter, s, NULL);
	if (!s->rb) {
		err = -errno;
		pr_err("cannot set up the ring buffer reader: %s", strerror(-err));
		goto cleanup;
	}
	pr_info("sampling %d CPUs at %u Hz, %u-byte user stacks, %s%s", s->nlinks, cfg->freq_hz,
		cfg->ustack_bytes, cfg->filter_pids ? "selected pids" : "all processes",
		cfg->offcpu ? ", off-CPU on" : "");
	return s;

cleanup:
	sampler__free(s);
	errno = err < 0 ? -err : EINVAL;
	return NULL;
}

/* See sampler.h. */
void sampler__release(struct sampler *s, pid_t pid)
{
	hold__release(s->hold, pid);
}

/* See sampler.h. */
void sampler__hold_sweep(struct sampler *s, uint64_t max_ns)
{
	hold__sweep(s->hold, max_ns);
}

/* See sampler.h. */
void sampler__hold_stats(const struct sampler *s, struct hold_stats *out)
{
	hold__stats(s->hold, out);
}

/* Detaches every program and frees everything; NULL is a no-op. */
void sampler__free(struct sampler *s)
{
	if (!s)
		return;
	ring_buffer__free(s->rb);
	bpf_link__destroy(s->scope_switch);
	for (int i = 0; i < s->nlinks; i++)
		bpf_link__destroy(s->links[i]);
	/* after the tracepoints are gone: nothing is held any more once this returns */
	hold__free(s->hold);
	free(s->links);
	offcpu_bpf__destroy(s->offcpu);
	cuda_probes__free(s->cuda);
	fault_duty__stop(s->duty);
	memory_bpf__destroy(s->memory);
	if (s->pids_gen)
		munmap(s->pids_gen, (size_t)sysconf(_SC_PAGESIZE));
	cpu_bpf__destroy(s->skel);
	free(s);
}

/*
 * Bumps the pids map's generation after user space changed the map: the BPF programs'
 * per-CPU filter verdicts (capture.bpf.h, pid_wanted) read before are stale. An atomic add
 * through the map's mapping, like the BPF side's, so that no concurrent bump is lost.
 */
static int pids_changed(struct sampler *s)
{
	if (!s->pids_gen) {
		int fd = bpf_map__fd(s->skel->maps.pids_gen);
		void *p = mmap(NULL, (size_t)sysconf(_SC_PAGESIZE), PROT_READ | PROT_WRITE,
			       MAP_SHARED, fd, 0);

		if (p == MAP_FAILED) {
			int err = -errno;

			pr_warn("cannot map the pid filter generation: %s", strerror(-err));
			return err;
		}
		s->pids_gen = p;
	}
	__atomic_fetch_add(s->pids_gen, 1, __ATOMIC_SEQ_CST);
	return 0;
}

/* Puts a tgid into the kernel-side filter map. Returns 0, -EINVAL or the map error. */
int sampler__add_pid(struct sampler *s, pid_t pid)
{
	__u32 key = (__u32)pid;
	__u8 one = 1;

	if (!s || pid <= 0)
		return -EINVAL;
	if (bpf_map_update_elem(bpf_map__fd(s->skel->maps.pids), &key, &one, BPF_ANY)) {
		int err = -errno;

		pr_warn("cannot add pid %d to the filter: %s", (int)pid, strerror(-err));
		return err;
	}
	return pids_changed(s);
}

/* See sampler.h. The map entry is removed by BPF itself at exec and exit. */
int sampler__set_python(struct sampler *s, pid_t pid, const struct mlprof_py_proc *cfg)
{
	__u32 key = (__u32)pid;

	if (!s || pid <= 0 || !cfg)
		return -EINVAL;
	if (bpf_map_update_elem(bpf_map__fd(s->skel->maps.py_procs), &key, cfg, BPF_ANY)) {
		int err = -errno;

		pr_debug("cannot set the python walker for pid %d: %s", (int)pid, strerror(-err));
		return err;
	}
	return 0;
}

/*
 * Waits up to timeout_ms for records and runs the callback on each; returns the number
 * consumed, -EINTR on a signal, or the callback's non-zero return (which stops the batch).
 */
int sampler__poll(struct sampler *s, int timeout_ms)
{
	if (!s)
		return -EINVAL;
	int n, m;

	n = ring_buffer__poll(s->rb, timeout_ms);
	fault_duty__tick(s->duty); /* (its thread sleeps while the fault rate is low) */
	if (n < 0)
		return n;
	/* batched records raise no epoll event: consume whatever is pending */
	m = ring_buffer__consume(s->rb);
	if (m < 0)
		return m;
	return n + m;
}

/* Fills out[MLPROF_STAT__COUNT] with the counters summed over CPUs; 0 or -errno. */
int sampler__stats(struct sampler *s, uint64_t *out)
{
	__u64 *vals;
	int err = 0;

	if (!s || !out)
		return -EINVAL;
	vals = calloc(s->ncpus, sizeof(*vals));
	if (!vals)
		return -ENOMEM;
	for (__u32 i = 0; i < MLPROF_STAT__COUNT && !err; i++)
		err = stat_sum(s, i, vals, &out[i]);
	free(vals);
	return err;
}
