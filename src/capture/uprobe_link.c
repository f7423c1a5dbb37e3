// SPDX-License-Identifier: Apache-2.0
/* Uprobe links on one ELF file: one uprobe_multi link per program, or one link per offset. */
#define LOG_MODULE "uprobe"
#include "util/log.h"

#include "capture/uprobe_link.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>

/*
 * The kernel ABI of uprobe_multi links (Linux 6.6), which libbpf 1.1's and Debian 12's
 * headers predate: enum bpf_attach_type's BPF_TRACE_UPROBE_MULTI, the return flag, and
 * union bpf_attr's link_create layout for it.
 */
#define ATTACH_UPROBE_MULTI   48
#define ATTACH_UPROBE_SESSION 57 /* Linux 6.13 */
#define UPROBE_MULTI_RETURN   1u

struct link_create_uprobe_multi {
	uint32_t prog_fd;
	uint32_t target_fd;
	uint32_t attach_type;
	uint32_t flags;
	uint64_t path;
	uint64_t offsets;
	uint64_t ref_ctr_offsets;
	uint64_t cookies;
	uint32_t cnt;
	uint32_t multi_flags;
	uint32_t pid;
	uint32_t pad;
};
_Static_assert(sizeof(struct link_create_uprobe_multi) == 64, "link_create layout");

struct uprobe_link {
	int fds[2];		  /* uprobe_multi links (entry, return); -1 when none */
	int nlinks;		  /* per-offset links in use */
	struct bpf_link *links[]; /* per-offset links (fallback) */
};

/* See uprobe_link.h. */
bool uprobe_link__multi_supported(void)
{
	const char *force = getenv("MLPROF_TEST_NO_UPROBE_MULTI");
	struct btf *btf;
	bool ok;

	if (force && strcmp(force, "1") == 0)
		return false;
	btf = btf__load_vmlinux_btf();
	if (!btf)
		return false;
	ok = btf__find_by_name_kind(btf, "bpf_uprobe_multi_link", BTF_KIND_STRUCT) > 0;
	btf__free(btf);
	return ok;
}

/* True when vmlinux's enum bpf_attach_type has name. */
static bool btf_has_attach_type(const char *name)
{
	struct btf *btf = btf__load_vmlinux_btf();
	bool found = false;
	int id;

	if (!btf)
		return false;
	id = btf__find_by_name_kind(btf, "bpf_attach_type", BTF_KIND_ENUM);
	if (id > 0) {
		const struct btf_type *t = btf__type_by_id(btf, (__u32)id);
		const struct btf_enum *e = btf_enum(t);

		for (int i = 0; i < btf_vlen(t) && !found; i++)
			found = strcmp(btf__name_by_offset(btf, e[i].name_off), name) == 0;
	}
	btf__free(btf);
	return found;
}

/* See uprobe_link.h. */
bool uprobe_link__session_supported(void)
{
	const char *force = getenv("MLPROF_TEST_NO_UPROBE_SESSION");

	if (force && strcmp(force, "1") == 0)
		return false;
	return uprobe_link__multi_supported() && btf_has_attach_type("BPF_TRACE_UPROBE_SESSION");
}

/* See uprobe_link.h. */
int uprobe_link__prepare_session(struct bpf_program *prog)
{
	return bpf_program__set_expected_attach_type(prog,
						     (enum bpf_attach_type)ATTACH_UPROBE_SESSION);
}

/* See uprobe_link.h. */
int uprobe_link__prepare(struct bpf_program *prog)
{
	return bpf_program__set_expected_attach_type(prog,
						     (enum bpf_attach_type)ATTACH_UPROBE_MULTI);
}

/*
 * One uprobe_multi link (or session: attach_type) of prog over the n offsets (cookies
 * alike), for process pid only when pid > 0. fd or -errno.
 */
static int multi_create(struct bpf_program *prog, const char *path, const uint64_t *offs,
			const uint64_t *cookies, const uint64_t *ref_ctrs, int n, bool ret,
			uint32_t attach_type, pid_t pid)
{
	struct link_create_uprobe_multi a;
	int fd;

	memset(&a, 0, sizeof(a));
	a.prog_fd = (uint32_t)bpf_program__fd(prog);
	a.attach_type = attach_type;
	a.path = (uint64_t)(uintptr_t)path;
	a.offsets = (uint64_t)(uintptr_t)offs;
	a.cookies = (uint64_t)(uintptr_t)cookies;
	a.ref_ctr_offsets = (uint64_t)(uintptr_t)ref_ctrs;
	a.cnt = (uint32_t)n;
	a.multi_flags = ret ? UPROBE_MULTI_RETURN : 0;
	a.pid = pid > 0 ? (uint32_t)pid : 0;
	fd = (int)syscall(__NR_bpf, BPF_LINK_CREATE, &a, sizeof(a));
	if (fd < 0)
		return -errno;
	/* fcntl, not O_CLOEXEC at creation: BPF_LINK_CREATE has no flag for it */
	fcntl(fd, F_SETFD, FD_CLOEXEC);
	return fd;
}

static void link_free(struct uprobe_link *l)
{
	for (int i = 0; i < 2; i++)
		if (l->fds[i] >= 0)
			close(l->fds[i]);
	for (int i = 0; i < l->nlinks; i++)
		bpf_link__destroy(l->links[i]);
	free(l);
}

/* Fills l with uprobe_multi links: entry over every target, ret over those with .ret. */
static int attach_multi(struct uprobe_link *l, struct bpf_program *entry, struct bpf_program *ret,
			const char *path, const struct uprobe_target *t, int n, pid_t pid)
{
	uint64_t *offs = calloc((size_t)n * 3, sizeof(*offs));
	uint64_t *cookies = offs + n, *ref_ctrs = offs + 2 * (size_t)n;
	bool any_ref = false;
	int err = 0, k = 0;

	if (!offs)
		return -ENOMEM;
	for (int pass = 0; pass < 2 && !err; pass++) {
		k = 0;
		for (int i = 0; i < n; i++) {
			if (pass == 1 && !t[i].ret)
				continue;
			offs[k] = t[i].off;
			cookies[k] = t[i].cookie;
			ref_ctrs[k] = t[i].ref_ctr_off;
			any_ref |= t[i].ref_ctr_off != 0;
			k++;
		}
		if (!k)
			continue;
		if (pass == 1 && !ret) {
			err = -EINVAL;
			break;
		}
		l->fds[pass] =
			multi_create(pass ? ret : entry, path, offs, cookies,
				     any_ref ? ref_ctrs : NULL, k, pass, ATTACH_UPROBE_MULTI, pid);
		if (l->fds[pass] < 0) {
			err = l->fds[pass];
			l->fds[pass] = -1;
		}
	}
	free(offs);
	return err;
}

/* Fills l with one perf-event link per offset (kernels without uprobe_multi). */
static int attach_each(struct uprobe_link *l, struct bpf_program *entry, struct bpf_program *ret,
		       const char *path, const struct uprobe_target *t, int n, pid_t pid)
{
	for (int i = 0; i < n; i++) {
		LIBBPF_OPTS(bpf_uprobe_opts, opts, .bpf_cookie = t[i].cookie,
			    .ref_ctr_offset = (size_t)t[i].ref_ctr_off);
		struct bpf_link *bl;

		bl = bpf_program__attach_uprobe_opts(entry, pid > 0 ? pid : -1, path,
						     (size_t)t[i].off, &opts);
		if (!bl)
			return -errno;
		l->links[l->nlinks++] = bl;
		if (!t[i].ret)
			continue;
		if (!ret)
			return -EINVAL;
		opts.retprobe = true;
		bl = bpf_program__attach_uprobe_opts(ret, pid > 0 ? pid : -1, path,
						     (size_t)t[i].off, &opts);
		if (!bl)
			return -errno;
		l->links[l->nlinks++] = bl;
	}
	return 0;
}

/* See uprobe_link.h. */
struct uprobe_link *uprobe_link__attach(struct bpf_program *entry, struct bpf_program *ret,
					bool multi, const char *path,
					const struct uprobe_target *targets, int n, pid_t pid)
{
	struct uprobe_link *l;
	int err;

	if (!entry || !path || !targets || n <= 0) {
		errno = EINVAL;
		return NULL;
	}
	l = calloc(1, sizeof(*l) + (multi ? 0 : 2 * (size_t)n * sizeof(l->links[0])));
	if (!l)
		return NULL;
	l->fds[0] = l->fds[1] = -1;
	err = multi ? attach_multi(l, entry, ret, path, targets, n, pid)
		    : attach_each(l, entry, ret, path, targets, n, pid);
	if (err) {
		link_free(l);
		errno = -err;
		return NULL;
	}
	return l;
}

/* See uprobe_link.h. */
struct uprobe_link *uprobe_link__attach_session(struct bpf_program *prog, const char *path,
						const struct uprobe_target *targets, int n,
						pid_t pid)
{
	uint64_t *offs, *cookies;
	struct uprobe_link *l;

	if (!prog || !path || !targets || n <= 0) {
		errno = EINVAL;
		return NULL;
	}
	l = calloc(1, sizeof(*l));
	offs = calloc((size_t)n * 2, sizeof(*offs));
	if (!l || !offs) {
		free(l);
		free(offs);
		errno = ENOMEM;
		return NULL;
	}
	cookies = offs + n;
	for (int i = 0; i < n; i++) {
		offs[i] = targets[i].off;
		cookies[i] = targets[i].cookie;
	}
	l->fds[1] = -1;
	l->fds[0] =
		multi_create(prog, path, offs, cookies, NULL, n, false, ATTACH_UPROBE_SESSION, pid);
	free(offs);
	if (l->fds[0] < 0) {
		errno = -l->fds[0];
		free(l);
		return NULL;
	}
	return l;
}

static void *release_worker(void *arg)
{
	pthread_setname_np(pthread_self(), "mlprof-detach"); /* top -H, perf */
	link_free(arg);
	return NULL;
}

/* See uprobe_link.h. */
void uprobe_link__release(struct uprobe_link *l)
{
	pthread_attr_t attr;
	pthread_t th;
	int err = -1;

	if (!l)
		return;
	if (!pthread_attr_init(&attr)) {
		pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
		err = pthread_create(&th, &attr, release_worker, l);
		pthread_attr_destroy(&attr);
	}
	if (err)
		link_free(l); /* no thread: here, slowly */
}
