// SPDX-License-Identifier: Apache-2.0
/* `mlprof agent`: continuous profiling daemon (setup, SIGHUP reload, main loop, shutdown). */
#define LOG_MODULE "agent"
/*
 * From the moment a stop signal is seen to exit: what is left of it after the drain and the
 * last windows goes to deliveries in flight; then the exporter aborts and spools the rest.
 */
#define AGENT_STOP_MS 2500
/* Of that, at most this long waiting for symbol indexes still being built. */
#define AGENT_DRAIN_MS 1000
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "agent/agent.h"
#include "agent/agent_budget.h"
#include "agent/agent_config.h"
#include "agent/agent_metrics.h"
#include "agent/agent_state.h"
#include "agent/agent_window.h"
#include "agent/httpd.h"
#include "agent/labels.h"
#include "agent/metrics.h"
#include "export/exporter.h"
#include "pipeline/pipeline.h"
#include "util/log.h"
#include "util/redact.h"

extern char **environ;

/* ------------------------------------------------------------------ config and reload */

static void apply_logging(const struct agent_config *cfg)
{
	enum log_level lvl = LOG_INFO;

	log__parse_level(cfg->log_level, &lvl);
	log__setup(lvl, !strcmp(cfg->log_format, "json"));
}

struct kv_list {
	char **k, **v;
	int n;
};

static void kv_collect(const char *key, const char *value, void *ctx)
{
	struct kv_list *l = ctx;
	char **k = realloc(l->k, sizeof(*k) * (size_t)(l->n + 1));
	char **v;

	if (!k)
		return;
	l->k = k;
	v = realloc(l->v, sizeof(*v) * (size_t)(l->n + 1));
	if (!v)
		return;
	l->v = v;
	l->k[l->n] = strdup(key);
	l->v[l->n] = strdup(value);
	if (!l->k[l->n] || !l->v[l->n]) {
		free(l->k[l->n]);
		free(l->v[l->n]);
		return;
	}
	l->n++;
}

static void kv_free(struct kv_list *l)
{
	for (int i = 0; i < l->n; i++) {
		free(l->k[i]);
		free(l->v[i]);
	}
	free(l->k);
	free(l->v);
}

/* SIGHUP: re-reads flags + environment + config file; applies labels, filters, logging. */
static void reload(struct agent *a)
{
	struct agent_config next;
	struct kv_list before = {0}, after = {0}, raw_before = {0}, raw_after = {0};
	char err[512];
	int changed = 0, ret;

	ret = agent_config__load(&next, a->argc, a->argv, environ, err, sizeof(err));
	if (ret) {
		pr_err("reload: invalid configuration, keeping the current one: %s", err);
		agent_config__free(&next);
		a->c.reload_err++;
		return;
	}
	agent_config__for_each(&a->live, false, kv_collect, &before);
	agent_config__for_each(&next, false, kv_collect, &after);
	agent_config__for_each(&a->live, true, kv_collect, &raw_before);
	agent_config__for_each(&next, true, kv_collect, &raw_after);
	for (int i = 0; i < raw_before.n && i < raw_after.n; i++) {
		if (!strcmp(raw_before.v[i], raw_after.v[i]))
			continue;
		changed++;
		if (i >= before.n || i >= after.n || !strcmp(before.v[i], after.v[i]))
			/* a credential changed: say so, never what it is */
			pr_info("reload: %s changed (value not shown)%s", raw_before.k[i],
				agent_config__reloadable(raw_before.k[i])
					? ""
					: "; needs a restart, the old value stays in use");
		else if (agent_config__reloadable(before.k[i]))
			pr_info("reload: %s: '%s' -> '%s'", before.k[i], before.v[i], after.v[i]);
		else
			pr_warn("reload: %s: '%s' -> '%s' needs a restart; still using '%s'",
				before.k[i], before.v[i], after.v[i], before.v[i]);
	}
	kv_free(&before);
	kv_free(&after);
	kv_free(&raw_before);
	kv_free(&raw_after);
	ret = labeler__reconfigure(a->labeler, &next);
	if (ret) {
		pr_err("reload: cannot apply the new labels/filters: %s", strerror(-ret));
		/* restore the previous ones */
		labeler__reconfigure(a->labeler, &a->live);
		agent_config__free(&next);
		a->c.reload_err++;
		return;
	}
	agent_config__free(&a->live);
	a->live = next;
	apply_logging(&a->live);
	a->c.reload_ok++;
	pr_info("configuration reloaded (%d change%s)", changed, changed == 1 ? "" : "s");
}

static int exporter_setup(struct agent *a)
{
	const struct agent_config *c = &a->boot;
	struct exporter_config ec = {0};
	bool push = *c->url != '\0';

	a->headers = calloc((size_t)c->headers.n + 1, sizeof(*a->headers));
	if (!a->headers)
		return -ENOMEM;
	for (int i = 0; i < c->headers.n; i++)
		a->headers[i] = c->headers.v[i];
	ec.kind = !push			      ? EXPORTER_FILE
		  : !strcmp(c->api, "ingest") ? EXPORTER_INGEST
					      : EXPORTER_PUSH;
	ec.url = push ? c->url : NULL;
	ec.out_dir = c->output_dir;
	ec.out_max_bytes = c->output_max_bytes;
	ec.ca_file = *c->ca_file ? c->ca_file : NULL;
	ec.insecure_skip_verify = c->insecure_skip_verify;
	ec.basic_user = *c->basic_auth_user ? c->basic_auth_user : NULL;
	ec.basic_password = *c->basic_auth_password ? c->basic_auth_password : NULL;
	ec.bearer_token = *c->bearer_token ? c->bearer_token : NULL;
	ec.tenant = *c->tenant_id ? c->tenant_id : NULL;
	ec.headers = a->headers;
	ec.connect_timeout_ms = c->connect_timeout_ms;
	ec.timeout_ms = c->timeout_ms;
	ec.max_retries = 10;
	ec.backoff_min_ms = 500;
	ec.backoff_max_ms = 60000;
	/* the spool only matters with a backend; local files are their own storage */
	ec.spool_dir = push ? c->spool_dir : NULL;
	ec.spool_max_bytes = c->spool_max_bytes;
	ec.spool_max_age_s = 3600; /* Pyroscope rejects profiles older than 1 h */
	ec.queue_max_bytes = AGENT_QUEUE_MAX_BYTES;
	a->exp = exporter__new(&ec);
	if (!a->exp)
		return errno ? -errno : -EINVAL;
	if (push) {
		char shown[1024];

		pr_info("pushing to %s (%s API)", redact__url(c->url, shown, sizeof(shown)),
			c->api);
	} else
		pr_info("writing profiles to %s (bounded to %" PRIu64 " bytes)", c->output_dir,
			c->output_max_bytes);
	return 0;
}

/* The pipeline's configuration from the agent's. */
static void pipeline_cfg(const struct agent_config *c, struct pipeline_config *out)
{
	struct pipeline_config pc = {
		.freq_hz = c->freq_hz,
		.ustack_bytes = c->ustack_bytes,
		.kernel_frames = c->kernel_frames,
		.symcache_bytes = c->symcache_bytes,
		.max_procs = c->max_procs,
		.ringbuf_bytes = 0, /* sized by CPU count (sampler.c) */
		.python = c->python,
		.source_lines = c->source_lines ? PIPELINE_LINES_ALL : PIPELINE_LINES_OFF,
		.offcpu = c->offcpu,
		.offcpu_min_ns = (uint64_t)c->offcpu_min_us * 1000,
		.offcpu_budget = c->offcpu_rate / 10,
		.memory = c->memory,
		.memory_sample_bytes = (uint64_t)c->memory_sample_kib * 1024,
		.cuda_budget = c->cuda_rate / 10,
		.cuda_tensor_sample = (uint64_t)c->cuda_tensor_sample_kib * 1024,
		/* exact counts per window, so that each window's stacks are calibrated to its own
		 */
		.cuda_count_window_ns = (uint64_t)c->upload_interval_s * 1000000000ull,
		.cuda_no_hold = !c->cuda_hold,
		.cuda_preload = true,
		.memory_budget = c->memory_rate / 10,
		.memory_max_faults = c->memory_max_faults,
		.steps = true, /* ml_phase labels on the stacks of PyTorch training threads */
		.steps_max_scopes = c->steps_max_scopes,
		.heap = c->heap && c->heap[0],
		.heap_cfg = {.sample_bytes = (uint64_t)c->heap_sample_kib * 1024,
			     .comms = c->heap && strcmp(c->heap, "all") ? c->heap : NULL},
	};

	/* validated at load: cannot fail here */
	cuda__parse_families(c->cuda, &pc.cuda);
	*out = pc;
}

/*
 * Every bound added up must fit the cgroup's memory limit (the DaemonSet's limit, the
 * unit's MemoryMax): a configuration that cannot fails now, in one line, rather than
 * being OOM-killed later under load.
 */
static int check_budget(struct agent *a, char *err, size_t len)
{
	struct pipeline_config pc;
	struct agent_budget b = {0};
	int ret;

	pipeline_cfg(&a->boot, &pc);
	b.pipeline = pipeline__bound_bytes(&pc);
	b.windows = 2ull * AGENT_WINDOW_MAX_BYTES;
	/* exporter_setup gives the exporter a spool when it pushes */
	b.queue =
		exporter__queue_hard_max(AGENT_QUEUE_MAX_BYTES, *a->boot.url && *a->boot.spool_dir);
	b.base = AGENT_BASE_BYTES;
	b.limit = agent_budget__cgroup_limit("/proc/self/cgroup", "/sys/fs/cgroup");
	ret = agent_budget__check(&b, err, len);
	if (!ret) {
		char lim[48] = "none";

		if (b.limit)
			snprintf(lim, sizeof(lim), "%" PRIu64 " MiB", b.limit >> 20);
		pr_info("memory bounds: %" PRIu64
			" MiB in all (caches, BPF maps and ring buffer %" PRIu64
			", windows %" PRIu64 ", export queue %" PRIu64 ", base %" PRIu64
			"); cgroup memory limit: %s",
			b.total >> 20, b.pipeline >> 20, b.windows >> 20, b.queue >> 20,
			b.base >> 20, lim);
	}
	return ret;
}

static int pipeline_setup(struct agent *a)
{
	const struct agent_config *c = &a->boot;
	struct pipeline_config pc;

	pipeline_cfg(c, &pc);
	pc.cuda_on = cuda__any(&pc.cuda);

	if (c->pids.n) {
		a->pids = calloc((size_t)c->pids.n, sizeof(*a->pids));
		if (!a->pids)
			return -ENOMEM;
		for (int i = 0; i < c->pids.n; i++)
			a->pids[i] = (pid_t)strtol(c->pids.v[i], NULL, 10);
		pc.filter_pids = true;
		pc.pids = a->pids;
		pc.n_pids = c->pids.n;
		pc.follow_children = true;
	}
	a->pl = pipeline__new(&pc, agent_window__sink, a);
	return a->pl ? 0 : (errno ? -errno : -EIO);
}

/* ------------------------------------------------------------------ main loop */

/* What is left of the stop deadline, at most cap ms (cap when no stop signal set one). */
static unsigned int stop_left_ms(const struct agent *a, unsigned int cap)
{
	uint64_t now = clock__mono_ns(), left;

	if (!a->stop_deadline_ns)
		return cap;
	left = a->stop_deadline_ns > now ? (a->stop_deadline_ns - now) / 1000000 : 0;
	return left < cap ? (unsigned int)left : cap;
}

/* Set by the main thread's signal handlers (the only thread that takes these signals). */
static volatile sig_atomic_t stop_sig, hup_sig;

static void on_signal(int sig)
{
	if (sig == SIGHUP)
		hup_sig = 1;
	else
		stop_sig = sig;
}

/*
 * The loop's signals interrupt its wait (EINTR) instead of waiting for the next poll period:
 * handlers without SA_RESTART, unblocked in this thread only (every other thread keeps
 * them blocked). A signal that came while they were blocked is taken at once.
 */
static void take_signals(const sigset_t *sigs)
{
	struct sigaction sa = {.sa_handler = on_signal};

	sigemptyset(&sa.sa_mask);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	pthread_sigmask(SIG_UNBLOCK, sigs, NULL);
}

static int run(struct agent *a, const sigset_t *sigs)
{
	uint64_t now = clock__mono_ns(), last_snap = 0;
	uint64_t cur = now / a->interval_ns;
	int ret = 0;

	agent_window__reset(&a->win[0], cur);
	agent_window__reset(&a->win[1], cur + 1);
	atomic_store(&a->ready, true);
	pr_info("profiling at %u Hz, %u s windows", a->boot.freq_hz, a->boot.upload_interval_s);
	take_signals(sigs);
	for (;;) {
		int n;

		/* (a signal ends the wait: SIGTERM is seen at once) */
		n = stop_sig ? 0 : pipeline__poll(a->pl, PIPELINE_POLL_MS);
		if (n < 0 && n != -EINTR) {
			pr_err("sampling failed: %s", strerror(-n));
			ret = n;
			break;
		}
		if (stop_sig) {
			pr_info("%s: sending the current window and exiting", strsignal(stop_sig));
			a->stop_deadline_ns = clock__mono_ns() + AGENT_STOP_MS * 1000000ull;
			break;
		}
		if (hup_sig) {
			hup_sig = 0;
			reload(a);
			/* /metrics says at once whether it took */
			agent_metrics__snapshot(a);
		}
		now = clock__mono_ns();
		while (now >= (a->win[0].idx + 1) * a->interval_ns + WINDOW_GRACE_NS)
			agent_window__rotate(a);
		if (now - last_snap >= 1000000000ull) {
			agent_metrics__snapshot(a);
			last_snap = now;
		}
	}
	/* (nothing below is interrupted by another signal) */
	pthread_sigmask(SIG_BLOCK, sigs, NULL);
	/* drain what the ring buffer still holds, then send the open windows */
	atomic_store(&a->ready, false);
	pipeline__ending(a->pl);
	for (int i = 0; i < 5 && pipeline__poll(a->pl, 0) > 0; i++)
		;
	pipeline__drain(a->pl, stop_left_ms(a, AGENT_DRAIN_MS));
	now = clock__mono_ns();
	for (int i = 0; i < 2; i++) {
		uint64_t start = a->win[i].idx * a->interval_ns;
		int64_t dur = now > start ? (int64_t)(now - start) : 0;

		if (dur > (int64_t)a->interval_ns)
			dur = (int64_t)a->interval_ns;
		if (a->win[i].n && dur > 0)
			agent_window__flush(a, &a->win[i], a->win[i].idx, dur);
		else
			agent_window__reset(&a->win[i], a->win[i].idx);
	}
	return ret;
}

static void agent_free(struct agent *a)
{
	httpd__free(a->httpd);
	pipeline__free(a->pl);
	for (int i = 0; i < 2; i++)
		agent_window__reset(&a->win[i], 0);
	if (a->exp) {
		/* bounded shutdown: what is not delivered by the stop deadline is spooled */
		int left = exporter__flush(a->exp, stop_left_ms(a, AGENT_STOP_MS));
		const char *dir = exporter__spool_dir(a->exp);
		struct exporter_stats es;
		char shown[1024];

		exporter__stats(a->exp, &es);
		redact__url(a->boot.url, shown, sizeof(shown));
		if (dir && left + es.spool_files > 0)
			pr_warn("%" PRIu64 " undelivered profiles kept in %s; they go to %s%s%s%s "
				"when the agent next starts with the same --url and --tenant-id",
				(uint64_t)left + es.spool_files, dir, shown,
				*a->boot.tenant_id ? " (tenant " : "", a->boot.tenant_id,
				*a->boot.tenant_id ? ")" : "");
		else if (left > 0)
			pr_warn("%d profiles not delivered at exit are lost (no --spool-dir)",
				left);
		exporter__free(a->exp);
	}
	metrics__free(a->metrics);
	labeler__free(a->labeler);
	free(a->headers);
	free(a->pids);
	free(a->step_times);
	agent_config__free(&a->live);
	agent_config__free(&a->boot);
	pthread_mutex_destroy(&a->snap_lock);
	free(a);
}

int agent__main(int argc, char **argv)
{
	struct agent *a;
	char err[1024];
	sigset_t sigs;
	int ret, status = 1;

	a = calloc(1, sizeof(*a));
	if (!a) {
		fprintf(stderr, "mlprof agent: out of memory\n");
		return 1;
	}
	pthread_mutex_init(&a->snap_lock, NULL);
	a->argc = argc;
	a->argv = argv;
	ret = agent_config__load(&a->boot, argc, argv, environ, err, sizeof(err));
	if (!ret && a->boot.help) {
		agent_config__usage(stdout);
		status = 0;
		goto cleanup;
	}
	if (ret) {
		fprintf(stderr, "mlprof agent: %s\n", err);
		status = 2;
		goto cleanup;
	}
	ret = agent_config__load(&a->live, argc, argv, environ, err, sizeof(err));
	if (ret) {
		fprintf(stderr, "mlprof agent: %s\n", err);
		status = 2;
		goto cleanup;
	}
	apply_logging(&a->live);
	if (check_budget(a, err, sizeof(err))) {
		fprintf(stderr, "mlprof agent: %s\n", err);
		status = 2;
		goto cleanup;
	}
	a->interval_ns = (uint64_t)a->boot.upload_interval_s * 1000000000ull;
	a->period_ns = 1000000000ll / a->boot.freq_hz;
	a->mono_to_real = agent__clock_offset();
	atomic_store(&a->heartbeat_ns, (long long)clock__mono_ns());

	/* blocked in every thread (those started later inherit it); the main loop takes them */
	sigemptyset(&sigs);
	sigaddset(&sigs, SIGTERM);
	sigaddset(&sigs, SIGINT);
	sigaddset(&sigs, SIGHUP);
	pthread_sigmask(SIG_BLOCK, &sigs, NULL);

	a->labeler = labeler__new(&a->live, "/proc");
	if (!a->labeler) {
		fprintf(stderr, "mlprof agent: cannot set up labels: %s\n", strerror(errno));
		status = errno == EINVAL ? 2 : 1;
		goto cleanup;
	}
	labels__sanitize_value(*a->live.hostname ? a->live.hostname : "", a->other_host,
			       sizeof(a->other_host));
	if (!a->other_host[0] && gethostname(a->other_host, sizeof(a->other_host) - 1))
		snprintf(a->other_host, sizeof(a->other_host), "unknown");
	ret = exporter_setup(a);
	if (ret) {
		fprintf(stderr, "mlprof agent: cannot set up the exporter: %s\n", strerror(-ret));
		status = ret == -EINVAL ? 2 : 1;
		goto cleanup;
	}
	ret = agent_metrics__setup(a);
	if (ret) {
		fprintf(stderr, "mlprof agent: cannot set up metrics: %s\n", strerror(-ret));
		goto cleanup;
	}
	if (*a->boot.metrics_addr && strcmp(a->boot.metrics_addr, "off")) {
		a->httpd = httpd__new(a->boot.metrics_addr, agent_metrics__http, a);
		if (!a->httpd) {
			fprintf(stderr, "mlprof agent: cannot serve metrics on %s: %s\n",
				a->boot.metrics_addr, strerror(errno));
			status = 1;
			goto cleanup;
		}
		pr_info("metrics on http://%s/metrics", a->boot.metrics_addr);
	}
	ret = pipeline_setup(a);
	if (ret) {
		fprintf(stderr, "mlprof agent: cannot start sampling: %s%s\n", strerror(-ret),
			ret == -EPERM ? " (needs root or CAP_BPF+CAP_PERFMON)" : "");
		goto cleanup;
	}
	agent_metrics__snapshot(a);
	ret = run(a, &sigs);
	status = ret ? 1 : 0;
cleanup:
	agent_free(a);
	return status;
}
