// SPDX-License-Identifier: Apache-2.0
/* BPF test (needs root): the CPU sampler's filter, registers, stacks and process events. */
#include <errno.h>
#include <sched.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <mlprof/python.h>

#include "capture/sampler.h"
#include "check.h"
#include "util/log.h"

#define FREQ_HZ	      199
#define SPIN_MARKER   0x6d6c70726f663a29ULL
#define MAX_EXEC_PIDS 8

/* The spin loop lives in its own section so its address range is known exactly. */
extern const char __start_mlprof_spin[], __stop_mlprof_spin[];

static volatile sig_atomic_t spin_stop;

static void on_alarm(int sig)
{
	spin_stop = 1;
}

__attribute__((noinline)) static void spin_touch(volatile uint64_t *p)
{
	*p = SPIN_MARKER;
}

__attribute__((noinline, section("mlprof_spin"))) static uint64_t spin_user(void)
{
	/*
	 * volatile and passed to a call: kept in a real stack frame above SP (not in the
	 * leaf red zone), so every user stack copy must contain it.
	 */
	volatile uint64_t marker = 0;
	volatile uint64_t x = 0;

	spin_touch(&marker);

	while (!spin_stop)
		x = x + marker;
	return x;
}

/* Spends about ms milliseconds of CPU time in the kernel (zero-filling buffers). */
static void spin_kernel(int ms)
{
	static char buf[1 << 20];
	struct timespec a, b;
	int fd = open("/dev/zero", O_RDONLY);

	if (fd < 0)
		return;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &a);
	do {
		if (read(fd, buf, sizeof(buf)) < 0)
			break;
		clock_gettime(CLOCK_THREAD_CPUTIME_ID, &b);
	} while ((b.tv_sec - a.tv_sec) * 1000 + (b.tv_nsec - a.tv_nsec) / 1000000 < ms);
	close(fd);
}

/*
 * Child: waits for the go byte, spins 1 s of CPU time in user space (ITIMER_VIRTUAL, so the
 * sample count does not depend on how busy the host is), 0.4 s in the kernel, then runs
 * /bin/true.
 */
static void child_main(int go_fd, bool run_true)
{
	struct sigaction sa = {.sa_handler = on_alarm};
	struct itimerval it = {.it_value = {.tv_sec = 1}};
	char c;
	pid_t pid;

	if (read(go_fd, &c, 1) != 1)
		_exit(2);
	sigaction(SIGVTALRM, &sa, NULL);
	setitimer(ITIMER_VIRTUAL, &it, NULL);
	spin_user();
	spin_kernel(400);
	if (run_true) {
		pid = fork();
		if (pid == 0) {
			execl("/bin/true", "true", (char *)NULL);
			_exit(127);
		}
		if (pid > 0)
			waitpid(pid, NULL, 0);
	}
	_exit(0);
}

struct results {
	pid_t target, other;
	uintptr_t stack_hint; /* an address on the test's (and the forked child's) stack */
	long samples;	      /* sample records received */
	long wrong_pid;	      /* samples of processes other than target or its children */
	long other_pid;	      /* samples of the unfiltered spinner */
	long user_samples;    /* samples that hit user mode */
	long in_spin;	      /* ... with IP inside spin_user() */
	long with_marker;     /* ... whose stack copy holds the spin marker */
	long kernel_samples;  /* samples that hit kernel mode */
	long kernel_ok;	      /* ... with user regs, a kernel stack and a plausible SP */
	long no_regs, no_ustack, bad_sp, bad_len;
	long flag_err, flag_cut; /* samples flagged USTACK_ERR / USTACK_CUT */
	int nforks;
	pid_t fork_pid[MAX_EXEC_PIDS];
	bool exec_true, exit_true, exit_target, exit_other;
};

static bool in_spin(uint64_t ip)
{
	return ip >= (uintptr_t)__start_mlprof_spin && ip < (uintptr_t)__stop_mlprof_spin;
}

static bool is_fork_child(struct results *r, uint32_t pid)
{
	for (int i = 0; i < r->nforks; i++)
		if ((uint32_t)r->fork_pid[i] == pid)
			return true;
	return false;
}

static bool has_marker(const struct mlprof_sample *smp)
{
	uint64_t v;

	for (uint32_t off = 0; off + 8 <= smp->ustack_len; off += 8) {
		memcpy(&v, smp->ustack + off, 8);
		if (v == SPIN_MARKER)
			return true;
	}
	return false;
}

static void on_sample(struct results *r, const struct mlprof_sample *smp, size_t size)
{
	uint64_t sp = smp->regs[MLPROF_REG_SP];

	/* the user stack copy, then (Python processes) the frames at the next multiple of 8 */
	if (smp->ustack_len > MLPROF_MAX_USTACK ||
	    size != sizeof(*smp) + (smp->py_nframes ? MLPROF_PY_FRAMES_OFF(smp->ustack_len) +
							      smp->py_nframes *
								      sizeof(struct mlprof_py_frame)
						    : smp->ustack_len)) {
		r->bad_len++;
		return;
	}
	r->samples++;
	if (smp->flags & MLPROF_SF_USTACK_ERR)
		r->flag_err++;
	if (smp->flags & MLPROF_SF_USTACK_CUT)
		r->flag_cut++;
	if ((pid_t)smp->pid == r->other)
		r->other_pid++;
	if ((pid_t)smp->pid != r->target && !is_fork_child(r, smp->pid)) {
		r->wrong_pid++;
		return;
	}
	if ((pid_t)smp->pid != r->target)
		return; /* /bin/true: nothing known about its addresses */
	if (!(smp->flags & MLPROF_SF_USER_REGS)) {
		r->no_regs++;
		return;
	}
	if (!smp->ustack_len)
		r->no_ustack++;
	/* the child is a fork of this process: same stack addresses */
	if (sp > r->stack_hint || r->stack_hint - sp > (1 << 20))
		r->bad_sp++;
	if (smp->flags & MLPROF_SF_IN_KERNEL) {
		r->kernel_samples++;
		if (smp->kstack_len > 0 && smp->kstack_len <= MLPROF_MAX_KSTACK &&
		    smp->kstack[0] >= 0xffff800000000000ULL)
			r->kernel_ok++;
		return;
	}
	r->user_samples++;
	if (in_spin(smp->regs[MLPROF_REG_IP])) {
		r->in_spin++;
		if (has_marker(smp))
			r->with_marker++;
	}
}

static int on_event(void *ctx, const void *data, size_t size)
{
	struct results *r = ctx;
	const struct mlprof_proc_event *pe = data;
	uint32_t type;

	memcpy(&type, data, sizeof(type));
	if (type == MLPROF_EV_SAMPLE) {
		if (size < sizeof(struct mlprof_sample)) {
			r->bad_len++;
			return 0;
		}
		on_sample(r, data, size);
		return 0;
	}
	if (size != sizeof(*pe)) {
		r->bad_len++;
		return 0;
	}
	switch (type) {
	case MLPROF_EV_FORK:
		if ((pid_t)pe->ppid == r->target && r->nforks < MAX_EXEC_PIDS)
			r->fork_pid[r->nforks++] = pe->pid;
		break;
	case MLPROF_EV_EXEC:
		if (is_fork_child(r, pe->pid) && strcmp((const char *)pe->comm, "true") == 0)
			r->exec_true = true;
		break;
	case MLPROF_EV_MAP_EXEC:
		/* the target or /bin/true mapped a library: a lifecycle event, nothing to check */
		break;
	case MLPROF_EV_EXIT:
		if (is_fork_child(r, pe->pid))
			r->exit_true = true;
		if ((pid_t)pe->pid == r->target)
			r->exit_target = true;
		if ((pid_t)pe->pid == r->other)
			r->exit_other = true;
		break;
	default:
		r->bad_len++;
	}
	return 0;
}

static pid_t start_child(int *go_fd, bool run_true)
{
	int p[2];
	pid_t pid;

	if (pipe(p))
		return -1;
	pid = fork();
	if (pid == 0) {
		close(p[1]);
		child_main(p[0], run_true);
	}
	close(p[0]);
	*go_fd = p[1];
	return pid;
}

/* Late-add scenario: samples per pid of one process. */
struct late {
	pid_t pid;
	long samples;
};

static int on_late_event(void *ctx, const void *data, size_t size)
{
	struct late *l = ctx;
	const struct mlprof_sample *smp = data;
	uint32_t type;

	memcpy(&type, data, sizeof(type));
	if (type == MLPROF_EV_SAMPLE && size >= sizeof(*smp) && (pid_t)smp->pid == l->pid)
		l->samples++;
	return 0;
}

static void poll_for(struct sampler *s, int ms)
{
	struct timespec t0, now;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		sampler__poll(s, 20);
		clock_gettime(CLOCK_MONOTONIC, &now);
	} while ((now.tv_sec - t0.tv_sec) * 1000 + (now.tv_nsec - t0.tv_nsec) / 1000000 < ms);
}

/*
 * The pid filter's per-CPU verdict cache (capture.bpf.h) must not outlive a change to the
 * filter: a process spinning on one CPU, refused while it is not in the filter (its
 * "no" cached there), is sampled as soon as sampler__add_pid takes it in.
 */
static void test_late_add(struct sampler_config cfg)
{
	struct late l = {0};
	struct sampler *s = NULL;
	cpu_set_t one;
	long before;

	CPU_ZERO(&one);
	CPU_SET(0, &one);
	l.pid = fork();
	if (l.pid == 0) {
		volatile uint64_t x = 0;

		sched_setaffinity(0, sizeof(one), &one);
		for (;;)
			x++;
	}
	CHECK(l.pid > 0, "fork failed");
	if (l.pid <= 0)
		return;
	s = sampler__new(&cfg, on_late_event, &l);
	CHECK(s != NULL, "sampler__new: %s", strerror(errno));
	if (!s)
		goto cleanup;
	poll_for(s, 300);
	CHECK_INT(l.samples, 0);
	CHECK_INT(sampler__add_pid(s, l.pid), 0);
	poll_for(s, 600);
	before = l.samples;
	printf("late add: %ld samples of the spinning process in 0.6 s after it was added\n",
	       before);
	CHECK(before >= FREQ_HZ / 4, "a process added to the filter was not sampled: %ld", before);
cleanup:
	sampler__free(s);
	kill(l.pid, SIGKILL);
	waitpid(l.pid, NULL, 0);
}

int main(void)
{
	struct sampler_config cfg = {
		.freq_hz = FREQ_HZ,
		.ustack_bytes = MLPROF_DEFAULT_USTACK,
		.filter_pids = true,
		.follow_children = true,
		.skip_idle = true,
		.ringbuf_bytes = 0,
		.self_pid = getpid(),
	};
	struct results r = {0};
	uint64_t stats[MLPROF_STAT__COUNT];
	struct sampler *s = NULL;
	int go_target = -1, go_other = -1;
	bool target_done = false, other_done = false;
	int stack_anchor = 0;
	int poll_err = 0;
	struct timespec t0, now;

	if (geteuid() != 0) {
		printf("SKIP: needs root (BPF + perf events)\n");
		return 77;
	}
	log__setup(getenv("MLPROF_TEST_DEBUG") ? LOG_DEBUG : LOG_INFO, false);
	r.stack_hint = (uintptr_t)&stack_anchor;

	CHECK(strcmp(sampler__stat_name(MLPROF_STAT_SAMPLES), "samples") == 0, "stat name");
	CHECK_STR(sampler__stat_name(MLPROF_STAT_RB_FULL), "ringbuf_full");
	CHECK_STR(sampler__stat_name(MLPROF_STAT__COUNT), "unknown");

	/* bad config is refused with EINVAL */
	cfg.ustack_bytes = MLPROF_MAX_USTACK + 1;
	errno = 0;
	CHECK(sampler__new(&cfg, on_event, &r) == NULL && errno == EINVAL, "bad config accepted");
	cfg.ustack_bytes = MLPROF_DEFAULT_USTACK;

	r.target = start_child(&go_target, true);
	r.other = start_child(&go_other, false);
	CHECK(r.target > 0 && r.other > 0, "fork failed");
	if (r.target <= 0 || r.other <= 0)
		goto cleanup;

	s = sampler__new(&cfg, on_event, &r);
	CHECK(s != NULL, "sampler__new: %s", strerror(errno));
	if (!s)
		goto cleanup;
	CHECK_INT(sampler__add_pid(s, r.target), 0);
	CHECK_INT(sampler__add_pid(s, 0), -EINVAL);

	CHECK(write(go_target, "g", 1) == 1, "go target");
	CHECK(write(go_other, "g", 1) == 1, "go other");

	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		int n = sampler__poll(s, 100);

		if (n < 0 && n != -EINTR)
			poll_err = n;
		if (!target_done && waitpid(r.target, NULL, WNOHANG) == r.target)
			target_done = true;
		if (!other_done && waitpid(r.other, NULL, WNOHANG) == r.other)
			other_done = true;
		if (target_done && other_done && r.exit_target)
			break;
		clock_gettime(CLOCK_MONOTONIC, &now);
		if (now.tv_sec - t0.tv_sec > 60)
			break;
	}
	/* drain what is left */
	while (sampler__poll(s, 50) > 0)
		;
	CHECK_INT(poll_err, 0);

	printf("samples %ld (user %ld, in spin %ld, marker %ld; kernel %ld, ok %ld) "
	       "forks %d exec %d exit %d/%d\n",
	       r.samples, r.user_samples, r.in_spin, r.with_marker, r.kernel_samples, r.kernel_ok,
	       r.nforks, r.exec_true, r.exit_true, r.exit_target);

	/*
	 * ~199 samples for 1 s of user CPU time, ~80 for 0.4 s in the kernel; sampling is
	 * statistical (and the last tick of a time slice may go to the next task), so
	 * counts are loose and ratios strict.
	 */
	CHECK(r.samples >= FREQ_HZ / 2, "too few samples: %ld", r.samples);
	CHECK_INT(r.bad_len, 0);
	CHECK_INT(r.wrong_pid, 0);
	CHECK_INT(r.other_pid, 0);
	CHECK_INT(r.no_regs, 0);
	CHECK_INT(r.no_ustack, 0);
	CHECK_INT(r.bad_sp, 0);
	CHECK(r.user_samples >= FREQ_HZ / 3, "user samples: %ld", r.user_samples);
	CHECK(r.in_spin * 10 >= r.user_samples * 8, "IP in spin_user for %ld of %ld", r.in_spin,
	      r.user_samples);
	CHECK(r.with_marker * 10 >= r.in_spin * 9, "marker in %ld of %ld stacks", r.with_marker,
	      r.in_spin);
	CHECK(r.kernel_samples >= 10, "kernel samples: %ld", r.kernel_samples);
	CHECK(r.kernel_ok * 10 >= r.kernel_samples * 9, "kernel stacks: %ld of %ld", r.kernel_ok,
	      r.kernel_samples);

	/* lifecycle: target forked /bin/true (followed), which exec'd and exited */
	CHECK(r.nforks >= 1, "no fork event for the target's child");
	CHECK(r.exec_true, "no exec event for /bin/true");
	CHECK(r.exit_true, "no exit event for /bin/true");
	CHECK(r.exit_target, "no exit event for the target");
	CHECK(!r.exit_other, "exit event for an unfiltered process");

	CHECK_INT(sampler__stats(s, stats), 0);
	for (int i = 0; i < MLPROF_STAT__COUNT; i++)
		printf("  %s = %llu\n", sampler__stat_name(i), (unsigned long long)stats[i]);
	CHECK_INT(stats[MLPROF_STAT_SAMPLES], r.samples);
	CHECK_INT(stats[MLPROF_STAT_RB_FULL], 0);
	/* per-sample flags and counters agree (a sample taken mid-exec may have no stack) */
	CHECK_INT(stats[MLPROF_STAT_USTACK_ERR], r.flag_err);
	CHECK_INT(stats[MLPROF_STAT_USTACK_CUT], r.flag_cut);
	CHECK(stats[MLPROF_STAT_FILTERED] >= (uint64_t)FREQ_HZ / 5, "filtered: %llu",
	      (unsigned long long)stats[MLPROF_STAT_FILTERED]);
	/* fork + exec + exit of /bin/true, exit of the target */
	CHECK(stats[MLPROF_STAT_PROC_EVENTS] >= 4, "proc events: %llu",
	      (unsigned long long)stats[MLPROF_STAT_PROC_EVENTS]);
	CHECK_INT(stats[MLPROF_STAT_PROC_RB_FULL], 0);

	test_late_add(cfg);

cleanup:
	sampler__free(s);
	if (go_target >= 0)
		close(go_target);
	if (go_other >= 0)
		close(go_other);
	if (r.target > 0 && !target_done) {
		kill(r.target, SIGKILL);
		waitpid(r.target, NULL, 0);
	}
	if (r.other > 0 && !other_done) {
		kill(r.other, SIGKILL);
		waitpid(r.other, NULL, 0);
	}
	return check_done("sampler");
}
