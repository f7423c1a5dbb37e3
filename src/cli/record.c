// SPDX-License-Identifier: Apache-2.0
/* `mlprof record`: one-shot capture of a PID list, the whole host or a launched command. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cli/commands.h"
#include "cli/record_opts.h"
#include "cli/record_summary.h"
#include "pipeline/cuda_calibrate.h"
#include "pipeline/event_kind.h"
#include "pipeline/pipeline.h"
#include "profile/output.h"
#include "profile/profile.h"
#include "util/clock.h"

#define LOG_MODULE "record"
#include "util/log.h"

/* How long the end of a recording waits for symbol indexes still being built. */
#define RECORD_DRAIN_MS 10000

struct record_state {
	struct record_opts *o;
	struct profile *prof[MLPROF_SK__COUNT]; /* one profile per enabled event kind */
	uint64_t sink_errors;
};

static volatile sig_atomic_t stop_requested;

static void on_signal(int sig)
{
	(void)sig;
	stop_requested = 1;
}

/* Only interrupts the poll (EINTR), so that the command's exit is seen at once. */
static void on_child(int sig)
{
	(void)sig;
}

static int record_sink(void *ctx, const struct sample_info *info, const struct frame *frames,
		       int n_frames)
{
	struct record_state *st = ctx;
	const struct event_kind *ek = event_kind__get(info->kind);
	struct profile *prof = ek ? st->prof[info->kind] : NULL;
	struct profile_label labels[5 + EVENT_KIND_MAX_LABELS] = {
		{.key = "pid", .num = info->pid},
		{.key = "tid", .num = info->tid},
		{.key = "thread_name", .str = info->thread_name},
		{.key = "process_name", .str = info->proc_name},
		{.key = "ml_phase", .str = info->ml_phase},
	};
	int64_t values[PROFILE_MAX_SAMPLE_TYPES];
	int n_labels = info->ml_phase ? 5 : 4, err;

	if (!prof) {
		st->sink_errors++;
		return 0;
	}
	event_kind__sample(ek, info, profile__config(prof)->period, values, labels, &n_labels);
	err = profile__add(prof, frames, n_frames, values, labels, n_labels);
	if (err && err != -ENOSPC)
		st->sink_errors++;
	return 0;
}

/*
 * Forks the command stopped at a barrier so it can be filtered in before it runs. When
 * execvp() fails, the child writes its errno into *exec_err_fd (close-on-exec: the parent
 * reads nothing when the command started).
 */
static pid_t launch(char **cmd, int *go_fd, int *exec_err_fd)
{
	int fds[2], efds[2];
	pid_t pid;

	if (pipe2(fds, O_CLOEXEC) != 0)
		return -1;
	if (pipe2(efds, O_CLOEXEC) != 0) {
		close(fds[0]);
		close(fds[1]);
		return -1;
	}
	pid = fork();
	if (pid < 0) {
		close(fds[0]);
		close(fds[1]);
		close(efds[0]);
		close(efds[1]);
		return -1;
	}
	if (pid == 0) {
		char b;
		int e;

		close(fds[1]);
		close(efds[0]);
		signal(SIGINT, SIG_DFL);
		signal(SIGTERM, SIG_DFL);
		signal(SIGPIPE, SIG_DFL); /* mlprof ignores it for itself, not for the command */
		/* the command gets none of the capabilities mlprof may hold as ambient ones */
		prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0);
		if (read(fds[0], &b, 1) != 1)
			_exit(127); /* mlprof failed to start: do not run unprofiled */
		execvp(cmd[0], cmd);
		e = errno;
		fprintf(stderr, "mlprof: record: cannot run '%s': %s\n", cmd[0], strerror(e));
		if (write(efds[1], &e, sizeof(e)) != sizeof(e))
			_exit(127);
		_exit(e == ENOENT ? 127 : 126);
	}
	close(fds[0]);
	close(efds[1]);
	*go_fd = fds[1];
	*exec_err_fd = efds[0];
	return pid;
}

/* True while the process runs: a zombie (exited, not reaped by its parent) has ended. */
static bool pid_running(pid_t pid)
{
	char path[64], buf[512], *rp;
	ssize_t n;
	int fd;

	if (kill(pid, 0) != 0 && errno == ESRCH)
		return false;
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return errno != ENOENT;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return true;
	buf[n] = '\0';
	/* "pid (comm) S ...": the state follows the last ')' */
	rp = strrchr(buf, ')');
	return !(rp && rp[1] == ' ' && (rp[2] == 'Z' || rp[2] == 'X'));
}

static bool any_alive(const struct record_opts *o)
{
	for (int i = 0; i < o->n_pids; i++)
		if (pid_running(o->pids[i]))
			return true;
	return false;
}

/*
 * The output path of another event kind: "run.pb.gz" -> "run.offcpu.pb.gz" (the kind's
 * name before the first extension of the file name). Returns 0 or -ENAMETOOLONG.
 */
static int kind_path(const char *path, const char *kind, char *out, size_t len)
{
	const char *base = strrchr(path, '/');
	const char *dot;
	int n;

	base = base ? base + 1 : path;
	dot = strchr(base[0] == '.' ? base + 1 : base, '.');
	if (dot)
		n = snprintf(out, len, "%.*s.%s%s", (int)(dot - path), path, kind, dot);
	else
		n = snprintf(out, len, "%s.%s", path, kind);
	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
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
	for (int k = 0; k < MLPROF_SK__COUNT; k++) {
		const struct event_kind *ek = event_kind__get((enum mlprof_sample_kind)k);
		char ktitle[320];

		if (!st->prof[k] || (k != MLPROF_SK_CPU && !profile__n_samples(st->prof[k])))
			continue;
		if (k == MLPROF_SK_CPU)
			snprintf(ktitle, sizeof(ktitle), "%s", title);
		else
			snprintf(ktitle, sizeof(ktitle), "%s (%s)", title, ek->title);
		for (int i = 0; i < o->n_outputs; i++) {
			char path[PATH_MAX];
			int e;

			if (k == MLPROF_SK_CPU)
				snprintf(path, sizeof(path), "%s", o->outputs[i].path);
			else if (kind_path(o->outputs[i].path, ek->name, path, sizeof(path)))
				continue;
			e = output__write_file(st->prof[k], o->outputs[i].fmt, ktitle, path);
			if (e) {
				char saved[PATH_MAX];
				int e2 = output__write_fallback(st->prof[k], o->outputs[i].fmt,
								ktitle, path, saved, sizeof(saved));

				/* the recording is not lost with its path: say where it went */
				if (!e2)
					fprintf(stderr,
						"mlprof: record: cannot write '%s': %s; saved the "
						"profile to %s instead\n",
						path, strerror(-e), saved);
				else
					fprintf(stderr,
						"mlprof: record: cannot write '%s': %s (nor a "
						"temporary copy: %s)\n",
						path, strerror(-e), strerror(-e2));
				err = e;
			} else if (!o->quiet) {
				fprintf(stderr, "mlprof: wrote %s (%s)\n", path,
					output__format_name(o->outputs[i].fmt));
			}
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
				    ? clock__ns(CLOCK_MONOTONIC) + (uint64_t)(o->duration_s * 1e9)
				    : UINT64_MAX;
	uint64_t next_gc = clock__ns(CLOCK_MONOTONIC) + 1000000000ull;
	bool child_done = false;
	int err;

	while (!stop_requested) {
		uint64_t now = clock__ns(CLOCK_MONOTONIC);
		int ms = PIPELINE_POLL_MS;

		/* (the command's exit interrupts the wait: SIGCHLD) */
		if (deadline != UINT64_MAX && now >= deadline)
			ms = 0;
		else if (deadline != UINT64_MAX && (deadline - now) / 1000000 < (uint64_t)ms)
			ms = (int)((deadline - now) / 1000000) + 1;
		err = pipeline__poll(pl, ms);
		if (clock__ns(CLOCK_MONOTONIC) >= next_gc) {
			/* Frees exited processes and replaced map sets; samples are handled
			 * synchronously, so nothing borrowed from the caches is still in use. */
			pipeline__gc(pl);
			next_gc = clock__ns(CLOCK_MONOTONIC) + 1000000000ull;
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
		if (clock__ns(CLOCK_MONOTONIC) >= deadline)
			break;
	}
	/* Drain what the kernel already queued. */
	pipeline__ending(pl);
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
	struct calib_stats calib[MLPROF_SK__COUNT] = {0};
	struct pipeline_config plc = {0};
	struct pipeline *pl = NULL;
	struct sigaction sa = {0};
	int status = 0, go_fd = -1, exec_err_fd = -1, exec_err = 0, err, ret = 1;
	pid_t child = -1;
	uint64_t t0;

	err = record_opts__parse(argc, argv, &o);
	if (err)
		return err > 0 ? 0 : 2;
	err = record_opts__check(&o);
	if (err)
		return err;

	for (int k = 0; k < MLPROF_SK__COUNT; k++) {
		const struct event_kind *ek = event_kind__get((enum mlprof_sample_kind)k);
		struct profile_config pcfg = {0};

		if (!ek || !record_opts__kind_enabled(&o, (enum mlprof_sample_kind)k))
			continue;
		event_kind__profile_config(ek, o.freq_hz, &pcfg);
		pcfg.time_nanos = (int64_t)clock__ns(CLOCK_REALTIME);
		pcfg.max_bytes = 256u << 20;
		st.prof[k] = profile__new(&pcfg);
		if (!st.prof[k]) {
			fprintf(stderr, "mlprof: record: out of memory\n");
			goto cleanup;
		}
	}

	sa.sa_handler = on_signal;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	/* (SA_RESTART: other calls go on; epoll_wait returns EINTR whatever the flag) */
	sa.sa_handler = on_child;
	sa.sa_flags = SA_RESTART | SA_NOCLDSTOP;
	sigaction(SIGCHLD, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);

	if (o.cmd) {
		child = launch(o.cmd, &go_fd, &exec_err_fd);
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
	plc.python = o.python;
	plc.source_lines = o.source_lines;
	plc.offcpu = o.offcpu;
	plc.offcpu_min_ns = (uint64_t)o.offcpu_min_us * 1000;
	plc.offcpu_budget = (uint32_t)(o.offcpu_rate / 10);
	plc.cuda = o.cuda;
	plc.cuda_on = cuda__any(&o.cuda);
	plc.cuda_budget = (uint32_t)(o.cuda_rate / 10);
	plc.cuda_no_hold = o.cuda_no_hold;
	/* the programs verified before the command runs: a static CUDA binary (no library mmap
	 * to hold it at) is probed as soon as its executable is read, before its first calls */
	plc.cuda_preload = plc.cuda_on;
	plc.memory_budget = (uint32_t)(o.memory_rate / 10);
	plc.memory_max_faults = o.memory_max_faults;
	plc.memory = o.memory;
	plc.memory_sample_bytes = (uint64_t)o.memory_sample_kib * 1024;
	plc.heap = o.heap;
	plc.steps = !o.no_steps;
	plc.steps_max_scopes = o.steps_max_scopes;
	plc.heap_cfg.sample_bytes = (uint64_t)o.heap_sample_kib * 1024;
	plc.cuda_tensor_sample = (uint64_t)o.cuda_tensor_sample_kib * 1024;
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
	t0 = clock__ns(CLOCK_MONOTONIC);
	for (int k = 0; k < MLPROF_SK__COUNT; k++)
		if (st.prof[k])
			profile__set_time(st.prof[k], (int64_t)clock__ns(CLOCK_REALTIME));
	err = run_loop(&o, pl, child, &status);
	if (exec_err_fd >= 0 &&
	    read(exec_err_fd, &exec_err, sizeof(exec_err)) == sizeof(exec_err)) {
		/* the command never ran (the child said why): keep the previous outputs */
		ret = exec_err == ENOENT ? 127 : 126;
		goto cleanup;
	}
	/* samples waiting for a symbol index still being built: named once it is ready */
	if (!err)
		err = pipeline__drain(pl, RECORD_DRAIN_MS);
	/* the GPU memory profile's in-use view: what is still allocated at the end */
	if (st.prof[MLPROF_SK_CUDA_ALLOC] || st.prof[MLPROF_SK_CUDA_TENSOR] ||
	    st.prof[MLPROF_SK_MEMORY] || st.prof[MLPROF_SK_HEAP]) {
		pipeline__snapshot(pl, 0);
		pipeline__drain(pl, RECORD_DRAIN_MS); /* (its samples may wait for an index) */
	}
	/* sampled CUDA stacks weighted to BPF's exact counts (captures may have been lost) */
	if (cuda__any(&o.cuda) && cuda_calibrate__profiles(pl, st.prof, calib))
		fprintf(stderr,
			"mlprof: record: warning: CUDA profiles not calibrated to the exact "
			"counts: out of memory\n");
	/* the training steps' CPU part: the CPU samples that have a phase, in nanoseconds */
	if (st.prof[MLPROF_SK_STEPS] && st.prof[MLPROF_SK_CPU] &&
	    profile__add_selected(st.prof[MLPROF_SK_STEPS], st.prof[MLPROF_SK_CPU], "ml_phase", 1))
		fprintf(stderr, "mlprof: record: warning: the steps profile lacks CPU samples: out "
				"of memory\n");
	for (int k = 0; k < MLPROF_SK__COUNT; k++)
		if (st.prof[k])
			profile__set_duration(st.prof[k],
					      (int64_t)(clock__ns(CLOCK_MONOTONIC) - t0));
	if (!o.quiet)
		record_summary__print(&(struct record_summary){
			.prof = st.prof,
			.pl = pl,
			.secs = (double)(clock__ns(CLOCK_MONOTONIC) - t0) / 1e9,
			.freq_hz = o.freq_hz,
			.ustack_bytes = o.ustack_bytes,
			.memory_sample_kib = o.memory_sample_kib,
			.cuda_tensor_sample_kib = o.cuda_tensor_sample_kib,
			.cuda = cuda__any(&o.cuda),
			.calib = calib,
		});
	if (profile__total(st.prof[MLPROF_SK_CPU], 0) == 0)
		fprintf(stderr, "mlprof: record: warning: no samples were collected (the "
				"targets used no CPU?)\n");
	if (write_outputs(&o, &st) != 0 || err)
		goto cleanup;
	ret = child > 0 ? exit_status_of(status) : 0;
cleanup:
	if (go_fd >= 0)
		close(go_fd);
	if (exec_err_fd >= 0)
		close(exec_err_fd);
	pipeline__free(pl);
	for (int k = 0; k < MLPROF_SK__COUNT; k++)
		profile__free(st.prof[k]);
	return ret;
}
