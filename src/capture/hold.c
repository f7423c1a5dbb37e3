// SPDX-License-Identifier: Apache-2.0
/* Processes held at a CUDA/NCCL library mmap: continued, by deadline, at exit, by a guard. */
#define LOG_MODULE "hold"
#include "capture/hold.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <bpf/bpf.h>

#include "util/clock.h"
#include "util/log.h"

struct hold {
	int map_fd;
	int guard_wfd; /* the guard's pipe: closing it (or dying) tells the guard to act */
	pid_t guard;
	uint64_t next_sweep_ns; /* sweeps are rate-limited: see hold__sweep */
	struct hold_stats stats;
};

/* Continues every process of the map and empties it (the guard, after fork: syscalls only). */
static void release_all(int map_fd, uint64_t *n)
{
	__u32 key, next;
	int rc;

	for (rc = bpf_map_get_next_key(map_fd, NULL, &next); !rc;
	     rc = bpf_map_get_next_key(map_fd, NULL, &next)) {
		key = next;
		kill((pid_t)key, SIGCONT);
		if (bpf_map_delete_elem(map_fd, &key))
			break;
		if (n)
			(*n)++;
	}
}

/*
 * The guard: waits for EOF on rfd (the parent closed it, or died) and continues whatever is
 * still held. Runs after fork() in a multi-threaded process: only plain system calls.
 */
static void guard_main(int rfd, int map_fd)
{
	char c;

	prctl(PR_SET_NAME, "mlprof-guard", 0, 0, 0);
	/* the terminal's ^C goes to the whole process group: the parent releases, we wait */
	signal(SIGINT, SIG_IGN);
	signal(SIGTERM, SIG_IGN);
	signal(SIGHUP, SIG_IGN);
	while (read(rfd, &c, 1) < 0 && errno == EINTR)
		;
	release_all(map_fd, NULL);
	_exit(0);
}

/* See hold.h. */
struct hold *hold__new(int map_fd)
{
	struct hold *h = calloc(1, sizeof(*h));
	int fds[2];

	if (!h)
		return NULL;
	h->map_fd = map_fd;
	if (pipe2(fds, O_CLOEXEC)) {
		free(h);
		return NULL;
	}
	h->guard = fork();
	if (h->guard < 0) {
		int err = errno;

		close(fds[0]);
		close(fds[1]);
		free(h);
		errno = err;
		return NULL;
	}
	if (h->guard == 0) {
		/* keep the map and the pipe's read end, nothing else (no fd of the parent's
		 * may stay open because of us) */
		if (dup2(fds[0], 3) < 0 || dup2(map_fd, 4) < 0)
			_exit(1);
		close_range(5, ~0U, 0);
		guard_main(3, 4);
	}
	close(fds[0]);
	h->guard_wfd = fds[1];
	return h;
}

/* Continues pid if it is held, counted in *counter; whether it was. */
static bool release_one(struct hold *h, pid_t pid, uint64_t *counter)
{
	__u32 key = (__u32)pid;
	__u64 since; /* bpf_ktime_get_ns(): CLOCK_MONOTONIC, as clock__mono_ns() */
	uint64_t ns;

	if (bpf_map_lookup_elem(h->map_fd, &key, &since))
		return false;
	kill(pid, SIGCONT);
	bpf_map_delete_elem(h->map_fd, &key);
	ns = clock__mono_ns() - since;
	(*counter)++;
	h->stats.total_ns += ns;
	if (ns > h->stats.max_ns)
		h->stats.max_ns = ns;
	return true;
}

/* See hold.h. */
void hold__release(struct hold *h, pid_t pid)
{
	if (h && release_one(h, pid, &h->stats.held))
		pr_debug("process %d continued at its CUDA/NCCL library mmap", (int)pid);
}

/* See hold.h. */
void hold__sweep(struct hold *h, uint64_t max_ns)
{
	__u32 key, next, late[64];
	uint64_t now = clock__mono_ns();
	int n = 0;
	void *prev = NULL;

	if (!h)
		return;
	/*
	 * A walk of the hash map costs a scan of its 4096 buckets in the kernel even when it is
	 * empty, and the consumer polls hundreds of times a second: a tenth of the deadline
	 * between walks keeps a hold at most 10% past it.
	 */
	if (now < h->next_sweep_ns)
		return;
	h->next_sweep_ns = now + max_ns / 10;
	while (n < 64 && !bpf_map_get_next_key(h->map_fd, prev, &next)) {
		__u64 since;

		key = next;
		prev = &key;
		if (!bpf_map_lookup_elem(h->map_fd, &key, &since) && now - since > max_ns)
			late[n++] = key;
	}
	for (int i = 0; i < n; i++) {
		pr_warn("process %u held %llu ms at a CUDA library mmap: continued before its "
			"probes were attached",
			late[i], (unsigned long long)(max_ns / 1000000));
		release_one(h, (pid_t)late[i], &h->stats.overdue);
	}
}

/* See hold.h. */
void hold__stats(const struct hold *h, struct hold_stats *out)
{
	memset(out, 0, sizeof(*out));
	if (h)
		*out = h->stats;
}

/* See hold.h. */
void hold__free(struct hold *h)
{
	if (!h)
		return;
	release_all(h->map_fd, &h->stats.at_exit);
	close(h->guard_wfd); /* the guard finds the map empty and exits */
	waitpid(h->guard, NULL, 0);
	free(h);
}
