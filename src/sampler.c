// SPDX-License-Identifier: Apache-2.0
/* Loads the cpu BPF object, samples every online CPU and delivers the ring-buffer records. */
#define LOG_MODULE "sampler"
#include "log.h"

#include "sampler.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/perf_event.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "cpu.skel.h"

/* Layout checks: BPF and user space must agree byte for byte (see include/mlprof/sample.h). */
_Static_assert(offsetof(struct mlprof_sample, time_ns) % 8 == 0, "time_ns alignment");
_Static_assert(offsetof(struct mlprof_sample, regs) % 8 == 0, "regs alignment");
_Static_assert(offsetof(struct mlprof_sample, kstack) % 8 == 0, "kstack alignment");
_Static_assert(offsetof(struct mlprof_sample, ustack) % 8 == 0, "ustack alignment");
_Static_assert(sizeof(struct mlprof_sample) == 80 + MLPROF_NREGS * 8 + MLPROF_MAX_KSTACK * 8,
	       "mlprof_sample size");
_Static_assert(sizeof(struct mlprof_proc_event) == 40, "mlprof_proc_event size");
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

struct sampler {
	struct cpu_bpf *skel;
	struct bpf_link **links; /* one per attached perf event */
	int nlinks;
	int ncpus; /* possible CPUs: per-CPU map values and scratch slots */
	struct ring_buffer *rb;
	sampler_event_cb cb;
	void *cb_ctx;
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

/* One line explaining why BPF could not be used; errno-style err (positive). */
static void log_bpf_failure(const char *what, int err)
{
	if (err == EPERM || err == EACCES)
		pr_err("%s failed: need root (or CAP_BPF+CAP_PERFMON): %s", what, strerror(err));
	else
		pr_err("%s failed: %s", what, strerror(err));
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

/* Opens and attaches the cpu-clock event on every online CPU. Returns 0 or -errno. */
static int attach_perf_events(struct sampler *s, unsigned int freq_hz)
{
	struct perf_event_attr attr;
	bool *online;
	int err = 0;

	online = calloc(s->ncpus, sizeof(*online));
	s->links = calloc(s->ncpus, sizeof(*s->links));
	if (!online || !s->links) {
		err = -ENOMEM;
		goto cleanup;
	}
	err = parse_online_cpus(online, s->ncpus);
	if (err)
		goto cleanup;

	memset(&attr, 0, sizeof(attr));
	attr.size = sizeof(attr);
	attr.type = PERF_TYPE_SOFTWARE;
	attr.config = PERF_COUNT_SW_CPU_CLOCK;
	attr.freq = 1;
	attr.sample_freq = freq_hz;

	for (int cpu = 0; cpu < s->ncpus; cpu++) {
		struct bpf_link *link;
		int fd;

		if (!online[cpu])
			continue;
		fd = syscall(__NR_perf_event_open, &attr, -1, cpu, -1, PERF_FLAG_FD_CLOEXEC);
		if (fd < 0) {
			err = -errno;
			if (errno == ENODEV) /* went offline meanwhile */
				continue;
			if (errno == EINVAL)
				pr_err("perf_event_open cpu-clock on cpu %d at %u Hz failed: %s "
				       "(above kernel.perf_event_max_sample_rate?)",
				       cpu, freq_hz, strerror(errno));
			else if (errno == EPERM || errno == EACCES)
				pr_err("perf_event_open on cpu %d failed: need root (or "
				       "CAP_BPF+CAP_PERFMON): %s",
				       cpu, strerror(errno));
			else
				pr_err("perf_event_open on cpu %d failed: %s", cpu,
				       strerror(errno));
			goto cleanup;
		}
		link = bpf_program__attach_perf_event(s->skel->progs.on_cpu_sample, fd);
		if (!link) {
			err = -errno;
			close(fd);
			log_bpf_failure("attaching the perf_event program", -err);
			goto cleanup;
		}
		/* the link owns fd from here on */
		s->links[s->nlinks++] = link;
	}
	err = 0;
	if (!s->nlinks) {
		pr_err("no online CPU could be sampled");
		err = -ENODEV;
	}
cleanup:
	free(online);
	return err;
}

static int rb_adapter(void *ctx, void *data, size_t size)
{
	struct sampler *s = ctx;

	if (size < sizeof(__u32))
		return 0;
	return s->cb(s->cb_ctx, data, size);
}

/* Rounds up to a power of two and at least one page. */
static size_t ringbuf_size(size_t want)
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
	/* batch: wake the consumer when an eighth of the ring is pending (or for a new pid) */
	skel->rodata->wakeup_bytes = cfg->batch ? ringbuf_size(cfg->ringbuf_bytes) / 8 : 0;

	err = bpf_map__set_max_entries(skel->maps.rb, ringbuf_size(cfg->ringbuf_bytes));
	if (!err)
		err = bpf_map__set_max_entries(skel->maps.pids, PIDS_MAX_ENTRIES);
	if (!err)
		err = bpf_map__set_max_entries(skel->maps.scratch, s->ncpus);
	if (err) {
		pr_err("cannot size BPF maps: %s", strerror(-err));
		goto cleanup;
	}

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

	err = attach_perf_events(s, cfg->freq_hz);
	if (err)
		goto cleanup;
	err = cpu_bpf__attach(skel);
	if (err) {
		log_bpf_failure("attaching the sched tracepoints", -err);
		goto cleanup;
	}

	s->rb = ring_buffer__new(bpf_map__fd(skel->maps.rb), rb_adapter, s, NULL);
	if (!s->rb) {
		err = -errno;
		pr_err("cannot set up the ring buffer reader: %s", strerror(-err));
		goto cleanup;
	}
	pr_info("sampling %d CPUs at %u Hz, %u-byte user stacks, %s", s->nlinks, cfg->freq_hz,
		cfg->ustack_bytes, cfg->filter_pids ? "selected pids" : "all processes");
	return s;

cleanup:
	sampler__free(s);
	errno = err < 0 ? -err : EINVAL;
	return NULL;
}

/* Detaches every program and frees everything; NULL is a no-op. */
void sampler__free(struct sampler *s)
{
	if (!s)
		return;
	ring_buffer__free(s->rb);
	for (int i = 0; i < s->nlinks; i++)
		bpf_link__destroy(s->links[i]);
	free(s->links);
	cpu_bpf__destroy(s->skel);
	free(s);
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
	int fd, err = 0;

	if (!s || !out)
		return -EINVAL;
	/* per-CPU lookups return one 8-byte slot per possible CPU */
	vals = calloc(s->ncpus, sizeof(*vals));
	if (!vals)
		return -ENOMEM;
	fd = bpf_map__fd(s->skel->maps.stats);
	for (__u32 i = 0; i < MLPROF_STAT__COUNT; i++) {
		out[i] = 0;
		if (bpf_map_lookup_elem(fd, &i, vals)) {
			err = -errno;
			goto cleanup;
		}
		for (int c = 0; c < s->ncpus; c++)
			out[i] += vals[c];
	}
cleanup:
	free(vals);
	return err;
}
