// SPDX-License-Identifier: Apache-2.0
/* `mlprof record`: one-shot capture of a PID list, the whole host or a launched command. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <libgen.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "commands.h"
#include "output.h"
#include "pipeline.h"
#include "profile.h"
#include "unwind.h"

#define LOG_MODULE "record"
#include "log.h"

#define MAX_OUTPUTS 8
#define MAX_PIDS    256

struct record_output {
	const char *path;
	enum output_format fmt;
};

struct record_opts {
	unsigned int freq_hz;
	double duration_s; /* 0 = until the command exits / Ctrl-C */
	struct record_output outputs[MAX_OUTPUTS];
	int n_outputs;
	bool format_set;
	enum output_format format;
	pid_t pids[MAX_PIDS];
	int n_pids;
	bool all;
	char **cmd;
	uint32_t ustack_bytes;
	bool kernel_frames;
	bool quiet;
	const char *title;
};

struct record_state {
	struct record_opts *o;
	struct profile *prof;
	int64_t period_ns;
	uint64_t sink_errors;
};

static volatile sig_atomic_t stop_requested;

static void on_signal(int sig)
{
	(void)sig;
	stop_requested = 1;
}

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: mlprof record [options] (-p PID[,PID...] | -a | -- COMMAND [ARGS...])\n"
		"\n"
		"Samples CPU stacks (user + kernel) of the targets with eBPF, unwinds them "
		"without\n"
		"frame pointers, symbolizes them and writes a pprof profile and a flame graph.\n"
		"Stops when the duration ends, the command (or every PID) exits, or on Ctrl-C.\n"
		"\n"
		"Targets (exactly one):\n"
		"  -p, --pid PID[,PID...]   profile these running processes (all their threads)\n"
		"  -a, --all                profile every process on the host\n"
		"  -- COMMAND [ARGS...]     launch COMMAND and profile it and every process it "
		"forks;\n"
		"                           mlprof exits with the command's exit status\n"
		"\n"
		"Options:\n"
		"  -F, --freq HZ            sampling frequency per CPU (default 99, 1..10000)\n"
		"  -d, --duration SECONDS   stop after this long (default: until exit / Ctrl-C;\n"
		"                           required with -a or -p unless you press Ctrl-C)\n"
		"  -o, --output FILE        write the profile to FILE; repeat for several files. "
		"The\n"
		"                           format comes from --format or the extension: "
		".pb.gz/.pprof\n"
		"                           (pprof), .html (flame graph page), .svg (flame graph\n"
		"                           image), .folded/.txt (folded stacks).\n"
		"                           Default: mlprof.pb.gz and mlprof.html\n"
		"  -f, --format FMT         pprof|html|svg|folded, for -o files without a known "
		"extension\n"
		"      --stack-size BYTES   user stack bytes copied per sample (default %u, max "
		"%u)\n"
		"      --no-kernel          leave kernel frames out of the stacks\n"
		"      --title TEXT         flame graph title\n"
		"  -q, --quiet              no summary on stderr\n"
		"      --log-level LEVEL    error|warn|info|debug (default warn)\n"
		"  -h, --help               this help\n"
		"\n"
		"Examples:\n"
		"  mlprof record -- python3 train.py\n"
		"  mlprof record -p 1234 -d 30 -o train.pb.gz -o train.html\n"
		"  mlprof record -a -F 49 -d 10 -o host.svg\n",
		(unsigned int)MLPROF_DEFAULT_USTACK, (unsigned int)MLPROF_MAX_USTACK);
}

/* One clear line, then exit status 2 for usage errors. */
#define usage_error(...)                                                                           \
	do {                                                                                       \
		fprintf(stderr, "mlprof: record: ");                                               \
		fprintf(stderr, __VA_ARGS__);                                                      \
		fprintf(stderr, " (see 'mlprof record --help')\n");                                \
		return -EINVAL;                                                                    \
	} while (0)

static int parse_uint(const char *s, unsigned long min, unsigned long max, unsigned long *out)
{
	char *end;
	unsigned long v;

	errno = 0;
	if (!s || !*s || *s == '-')
		return -EINVAL;
	v = strtoul(s, &end, 10);
	if (errno || *end || v < min || v > max)
		return -EINVAL;
	*out = v;
	return 0;
}

static int parse_pids(struct record_opts *o, const char *arg)
{
	char buf[4096];
	char *save = NULL, *tok;

	if (strlen(arg) >= sizeof(buf))
		return -EINVAL;
	strcpy(buf, arg);
	for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		unsigned long v;

		if (parse_uint(tok, 1, INT_MAX, &v) || o->n_pids >= MAX_PIDS)
			return -EINVAL;
		o->pids[o->n_pids++] = (pid_t)v;
	}
	return o->n_pids ? 0 : -EINVAL;
}

static int parse_args(int argc, char **argv, struct record_opts *o)
{
	enum { OPT_STACK = 256, OPT_NO_KERNEL, OPT_TITLE, OPT_LOG };
	static const struct option longopts[] = {
		{"pid", required_argument, NULL, 'p'},
		{"all", no_argument, NULL, 'a'},
		{"freq", required_argument, NULL, 'F'},
		{"duration", required_argument, NULL, 'd'},
		{"output", required_argument, NULL, 'o'},
		{"format", required_argument, NULL, 'f'},
		{"stack-size", required_argument, NULL, OPT_STACK},
		{"no-kernel", no_argument, NULL, OPT_NO_KERNEL},
		{"title", required_argument, NULL, OPT_TITLE},
		{"quiet", no_argument, NULL, 'q'},
		{"log-level", required_argument, NULL, OPT_LOG},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	enum log_level level = LOG_WARN;
	unsigned long v;
	char *end;
	int c;

	o->freq_hz = 99;
	o->ustack_bytes = MLPROF_DEFAULT_USTACK;
	o->kernel_frames = true;
	opterr = 0;
	optind = 1;
	while ((c = getopt_long(argc, argv, "+p:aF:d:o:f:qh", longopts, NULL)) != -1) {
		switch (c) {
		case 'p':
			if (parse_pids(o, optarg))
				usage_error("invalid PID list '%s'", optarg);
			break;
		case 'a':
			o->all = true;
			break;
		case 'F':
			if (parse_uint(optarg, 1, 10000, &v))
				usage_error("invalid frequency '%s' (1..10000 Hz)", optarg);
			o->freq_hz = (unsigned int)v;
			break;
		case 'd':
			errno = 0;
			o->duration_s = strtod(optarg, &end);
			if (errno || *end || !(o->duration_s > 0) || o->duration_s > 86400 * 7)
				usage_error("invalid duration '%s' (seconds > 0)", optarg);
			break;
		case 'o':
			if (o->n_outputs >= MAX_OUTPUTS)
				usage_error("too many -o outputs (max %d)", MAX_OUTPUTS);
			o->outputs[o->n_outputs++].path = optarg;
			break;
		case 'f':
			if (output__parse_format(optarg, &o->format))
				usage_error("unknown format '%s' (pprof|html|svg|folded)", optarg);
			o->format_set = true;
			break;
		case OPT_STACK:
			if (parse_uint(optarg, 512, MLPROF_MAX_USTACK, &v))
				usage_error("invalid --stack-size '%s' (512..%u bytes)", optarg,
					    (unsigned int)MLPROF_MAX_USTACK);
			o->ustack_bytes = (uint32_t)v;
			break;
		case OPT_NO_KERNEL:
			o->kernel_frames = false;
			break;
		case OPT_TITLE:
			o->title = optarg;
			break;
		case 'q':
			o->quiet = true;
			break;
		case OPT_LOG:
			if (log__parse_level(optarg, &level))
				usage_error("invalid log level '%s'", optarg);
			break;
		case 'h':
			usage(stdout);
			return 1;
		case '?':
		default:
			if (optopt && optopt < 256)
				usage_error("invalid or incomplete option '-%c'", optopt);
			usage_error("invalid option '%s'", argv[optind - 1]);
		}
	}
	log__setup(level, false);
	if (optind < argc)
		o->cmd = &argv[optind];
	if ((o->n_pids > 0) + o->all + (o->cmd != NULL) != 1)
		usage_error("give exactly one target: -p PID, -a, or -- COMMAND");
	return 0;
}

/* Resolves output formats and checks that every output can be written before profiling. */
static int prepare_outputs(struct record_opts *o)
{
	if (o->n_outputs == 0) {
		o->outputs[0].path = "mlprof.pb.gz";
		o->outputs[1].path = "mlprof.html";
		o->n_outputs = 2;
	}
	for (int i = 0; i < o->n_outputs; i++) {
		struct record_output *out = &o->outputs[i];
		char dir[PATH_MAX];
		struct stat st;

		if (output__format_from_path(out->path, &out->fmt) != 0) {
			if (!o->format_set)
				usage_error("cannot tell the format of '%s' from its name: use "
					    "--format or an extension (.pb.gz .html .svg .folded)",
					    out->path);
			out->fmt = o->format;
		} else if (o->format_set) {
			out->fmt = o->format;
		}
		if (snprintf(dir, sizeof(dir), "%s", out->path) >= (int)sizeof(dir))
			usage_error("output path too long");
		if (stat(out->path, &st) == 0 && S_ISDIR(st.st_mode)) {
			fprintf(stderr, "mlprof: record: output '%s' is a directory\n", out->path);
			return -EISDIR;
		}
		const char *d = dirname(dir);
		if (access(d, W_OK) != 0) {
			fprintf(stderr, "mlprof: record: cannot write output '%s': %s\n", out->path,
				strerror(errno));
			return -errno;
		}
	}
	return 0;
}

static int check_targets(struct record_opts *o)
{
	for (int i = 0; i < o->n_pids; i++) {
		if (kill(o->pids[i], 0) != 0 && errno == ESRCH) {
			fprintf(stderr, "mlprof: record: no such process: %d\n", o->pids[i]);
			return -ESRCH;
		}
	}
	return 0;
}

static int record_sink(void *ctx, const struct sample_info *info, const struct frame *frames,
		       int n_frames)
{
	struct record_state *st = ctx;
	struct profile_label labels[4] = {
		{.key = "pid", .num = info->pid},
		{.key = "tid", .num = info->tid},
		{.key = "thread_name", .str = info->thread_name},
		{.key = "process_name", .str = info->proc_name},
	};
	int64_t values[2] = {info->value, info->value * st->period_ns};
	int err;

	err = profile__add(st->prof, frames, n_frames, values, labels, 4);
	if (err && err != -ENOSPC)
		st->sink_errors++;
	return 0;
}

static uint64_t now_ns(clockid_t clk)
{
	struct timespec ts;

	clock_gettime(clk, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Forks the command stopped at a barrier so it can be filtered in before it runs. */
static pid_t launch(char **cmd, int *go_fd)
{
	int fds[2];
	pid_t pid;

	if (pipe2(fds, O_CLOEXEC) != 0)
		return -1;
	pid = fork();
	if (pid < 0) {
		close(fds[0]);
		close(fds[1]);
		return -1;
	}
	if (pid == 0) {
		char b;

		close(fds[1]);
		signal(SIGINT, SIG_DFL);
		signal(SIGTERM, SIG_DFL);
		if (read(fds[0], &b, 1) != 1)
			_exit(127); /* mlprof failed to start: do not run unprofiled */
		execvp(cmd[0], cmd);
		fprintf(stderr, "mlprof: record: cannot run '%s': %s\n", cmd[0], strerror(errno));
		_exit(127);
	}
	close(fds[0]);
	*go_fd = fds[1];
	return pid;
}

static bool any_alive(const struct record_opts *o)
{
	for (int i = 0; i < o->n_pids; i++)
		if (kill(o->pids[i], 0) == 0 || errno != ESRCH)
			return true;
	return false;
}

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

static void print_summary(const struct record_opts *o, const struct record_state *st,
			  struct pipeline *pl, double secs)
{
	struct pipeline_stats ps;
	struct summary_ctx sc = {.prof = st->prof};
	int64_t total = profile__total(st->prof, 0);
	uint64_t complete, drops;

	pipeline__stats(pl, &ps);
	drops = ps.bpf[MLPROF_STAT_RB_FULL];
	complete = ps.unwind_ends[UNWIND_END_COMPLETE];
	fprintf(stderr, "mlprof: %lld samples in %.1f s at %u Hz", (long long)total, secs,
		o->freq_hz);
	fprintf(stderr, ", %llu dropped (ring buffer full)", (unsigned long long)drops);
	if (ps.samples)
		fprintf(stderr, ", %.1f%% user stacks complete",
			100.0 * (double)complete / (double)(ps.samples ? ps.samples : 1));
	if (ps.samples)
		fprintf(stderr, ", %.1f us CPU/sample",
			(double)ps.cpu_ns / 1000.0 / (double)ps.samples);
	fputc('\n', stderr);
	if (ps.bpf[MLPROF_STAT_USTACK_ERR] || ps.bpf[MLPROF_STAT_USTACK_CUT])
		fprintf(stderr, "mlprof: user stacks unreadable: %llu, cut at %u bytes: %llu\n",
			(unsigned long long)ps.bpf[MLPROF_STAT_USTACK_ERR], o->ustack_bytes,
			(unsigned long long)ps.bpf[MLPROF_STAT_USTACK_CUT]);
	if (profile__dropped(st->prof))
		fprintf(stderr, "mlprof: %llu samples dropped: profile memory bound reached\n",
			(unsigned long long)profile__dropped(st->prof));
	if (total <= 0)
		return;
	if (profile__for_each_sample(st->prof, collect_leaf, &sc) == 0 && sc.n) {
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

static int write_outputs(const struct record_opts *o, const struct record_state *st)
{
	char title[256];
	int err = 0;

	if (o->title)
		snprintf(title, sizeof(title), "%s", o->title);
	else if (o->cmd)
		snprintf(title, sizeof(title), "mlprof: %s", o->cmd[0]);
	else if (o->all)
		snprintf(title, sizeof(title), "mlprof: all processes");
	else
		snprintf(title, sizeof(title), "mlprof: pid %d%s", o->pids[0],
			 o->n_pids > 1 ? " ..." : "");
	for (int i = 0; i < o->n_outputs; i++) {
		int e = output__write_file(st->prof, o->outputs[i].fmt, title, o->outputs[i].path);

		if (e) {
			fprintf(stderr, "mlprof: record: cannot write '%s': %s\n",
				o->outputs[i].path, strerror(-e));
			err = e;
		} else if (!o->quiet) {
			fprintf(stderr, "mlprof: wrote %s (%s)\n", o->outputs[i].path,
				output__format_name(o->outputs[i].fmt));
		}
	}
	return err;
}

static int exit_status_of(int status)
{
	if (WIFEXITED(status))
		return WEXITSTATUS(status);
	if (WIFSIGNALED(status))
		return 128 + WTERMSIG(status);
	return 1;
}

/* Polls until the duration ends, the targets exit, or a signal arrives. */
static int run_loop(struct record_opts *o, struct pipeline *pl, pid_t child, int *child_status)
{
	uint64_t deadline = o->duration_s > 0
				    ? now_ns(CLOCK_MONOTONIC) + (uint64_t)(o->duration_s * 1e9)
				    : UINT64_MAX;
	uint64_t next_gc = now_ns(CLOCK_MONOTONIC) + 1000000000ull;
	bool child_done = false;
	int err;

	while (!stop_requested) {
		err = pipeline__poll(pl, 100);
		if (now_ns(CLOCK_MONOTONIC) >= next_gc) {
			/* Frees exited processes and replaced map sets; samples are handled
			 * synchronously, so nothing borrowed from the caches is still in use. */
			pipeline__gc(pl);
			next_gc = now_ns(CLOCK_MONOTONIC) + 1000000000ull;
		}
		if (err < 0 && err != -EINTR) {
			fprintf(stderr, "mlprof: record: reading samples failed: %s\n",
				strerror(-err));
			return err;
		}
		if (child > 0 && waitpid(child, child_status, WNOHANG) == child) {
			child_done = true;
			break;
		}
		if (o->n_pids && !any_alive(o))
			break;
		if (now_ns(CLOCK_MONOTONIC) >= deadline)
			break;
	}
	/* Drain what the kernel already queued. */
	for (int i = 0; i < 50 && pipeline__poll(pl, 0) > 0; i++)
		;
	if (child > 0 && !child_done) {
		/* Duration over or Ctrl-C: the command's own exit status still decides ours. */
		if (!stop_requested)
			kill(child, SIGTERM);
		while (waitpid(child, child_status, 0) < 0 && errno == EINTR)
			;
	}
	return 0;
}

int record__main(int argc, char **argv)
{
	struct record_opts o = {0};
	struct record_state st = {.o = &o};
	struct profile_config pcfg = {0};
	struct pipeline_config plc = {0};
	struct pipeline *pl = NULL;
	struct sigaction sa = {0};
	int status = 0, go_fd = -1, err, ret = 1;
	pid_t child = -1;
	uint64_t t0;

	err = parse_args(argc, argv, &o);
	if (err)
		return err > 0 ? 0 : 2;
	if (prepare_outputs(&o) || check_targets(&o))
		return 2;

	pcfg.n_sample_types = 2;
	pcfg.sample_types[0] = (struct profile_value_type){"samples", "count"};
	pcfg.sample_types[1] = (struct profile_value_type){"cpu", "nanoseconds"};
	pcfg.period_type = (struct profile_value_type){"cpu", "nanoseconds"};
	pcfg.period = 1000000000ll / o.freq_hz;
	pcfg.time_nanos = (int64_t)now_ns(CLOCK_REALTIME);
	pcfg.max_bytes = 256u << 20;
	st.period_ns = pcfg.period;
	st.prof = profile__new(&pcfg);
	if (!st.prof) {
		fprintf(stderr, "mlprof: record: out of memory\n");
		return 1;
	}

	sa.sa_handler = on_signal;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);

	if (o.cmd) {
		child = launch(o.cmd, &go_fd);
		if (child < 0) {
			fprintf(stderr, "mlprof: record: cannot fork: %s\n", strerror(errno));
			goto cleanup;
		}
	}
	plc.freq_hz = o.freq_hz;
	plc.ustack_bytes = o.ustack_bytes;
	plc.filter_pids = !o.all;
	plc.pids = o.pids;
	plc.n_pids = o.n_pids;
	plc.follow_children = o.cmd != NULL;
	plc.kernel_frames = o.kernel_frames;
	pl = pipeline__new(&plc, record_sink, &st);
	if (!pl) {
		/* The failing module already logged one line with the reason. */
		if (child > 0) {
			close(go_fd); /* the child exits 127 without running the command */
			waitpid(child, NULL, 0);
		}
		goto cleanup;
	}
	if (child > 0) {
		err = pipeline__add_pid(pl, child);
		if (err) {
			fprintf(stderr, "mlprof: record: cannot filter pid %d: %s\n", child,
				strerror(-err));
			close(go_fd);
			waitpid(child, NULL, 0);
			goto cleanup;
		}
		if (write(go_fd, "g", 1) != 1) {
			fprintf(stderr, "mlprof: record: cannot start the command: %s\n",
				strerror(errno));
			close(go_fd);
			go_fd = -1;
			waitpid(child, NULL, 0);
			goto cleanup;
		}
		close(go_fd);
		go_fd = -1;
	}

	/* the profile covers the capture itself, not the BPF load before it */
	t0 = now_ns(CLOCK_MONOTONIC);
	profile__set_time(st.prof, (int64_t)now_ns(CLOCK_REALTIME));
	err = run_loop(&o, pl, child, &status);
	profile__set_duration(st.prof, (int64_t)(now_ns(CLOCK_MONOTONIC) - t0));
	if (!o.quiet)
		print_summary(&o, &st, pl, (double)(now_ns(CLOCK_MONOTONIC) - t0) / 1e9);
	if (profile__total(st.prof, 0) == 0)
		fprintf(stderr, "mlprof: record: warning: no samples were collected (the "
				"targets used no CPU?)\n");
	if (write_outputs(&o, &st) != 0 || err)
		goto cleanup;
	ret = child > 0 ? exit_status_of(status) : 0;
cleanup:
	if (go_fd >= 0)
		close(go_fd);
	pipeline__free(pl);
	profile__free(st.prof);
	return ret;
}
