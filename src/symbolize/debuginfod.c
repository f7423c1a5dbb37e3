// SPDX-License-Identifier: Apache-2.0
/* Background fetches of debug files by build id (libdebuginfod) with a bounded disk cache. */
#include <dirent.h>
#include <elfutils/debuginfod.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "symbolize/debuginfod.h"

#define LOG_MODULE "debuginfod"
#include "util/log.h"
#include "util/redact.h"

#define DI_DEFAULT_ENTRIES  4096
#define DI_DEFAULT_CACHE_MB 2048
#define DI_BUILD_ID_MAX	    128	  /* hex digits */
#define DI_MAX_CACHE_DIRS   65536 /* build ids looked at when bounding the disk cache */

enum di_state { DI_FREE = 0, DI_QUEUED, DI_FETCHING, DI_DONE, DI_MISSING };

struct di_entry {
	enum di_state state;
	uint64_t seq; /* order of requests: the queue is served oldest first */
	char bid[DI_BUILD_ID_MAX + 1];
	char *path; /* DI_DONE: the debug file in the cache */
};

struct debuginfod {
	struct debuginfod_config cfg;
	char *urls, *cache_dir;
	char urls_log[1024]; /* urls as logs show them (credentials redacted) */
	pthread_t thread;
	bool started;
	pthread_mutex_t lock;
	pthread_cond_t wake;
	bool stop; /* read by the progress callback without the lock: set once, at the end */
	struct di_entry *v;
	unsigned n;
	uint64_t seq, gen;
	struct debuginfod_stats stats;
};

static bool valid_build_id(const char *bid)
{
	size_t n = strlen(bid);

	if (n < 2 || n > DI_BUILD_ID_MAX || n % 2)
		return false;
	return strspn(bid, "0123456789abcdef") == n;
}

static struct di_entry *entry_find(struct debuginfod *d, const char *bid)
{
	for (unsigned i = 0; i < d->n; i++)
		if (d->v[i].state != DI_FREE && strcmp(d->v[i].bid, bid) == 0)
			return &d->v[i];
	return NULL;
}

/* A slot for a new request: a free one, else the oldest finished one. NULL when all pend. */
static struct di_entry *entry_alloc(struct debuginfod *d)
{
	struct di_entry *old = NULL;

	for (unsigned i = 0; i < d->n; i++) {
		struct di_entry *e = &d->v[i];

		if (e->state == DI_FREE)
			return e;
		if ((e->state == DI_DONE || e->state == DI_MISSING) && (!old || e->seq < old->seq))
			old = e;
	}
	if (old) {
		free(old->path);
		old->path = NULL;
		old->state = DI_FREE;
	}
	return old;
}

/* See debuginfod.h. */
int debuginfod__find(struct debuginfod *d, const char *build_id, char **path)
{
	struct di_entry *e;
	int err;

	*path = NULL;
	if (!valid_build_id(build_id))
		return -EINVAL;
	pthread_mutex_lock(&d->lock);
	e = entry_find(d, build_id);
	if (!e) {
		e = entry_alloc(d);
		if (!e) {
			d->stats.dropped++;
			err = -ENOBUFS;
			goto cleanup;
		}
		strcpy(e->bid, build_id);
		e->state = DI_QUEUED;
		e->seq = ++d->seq;
		d->stats.requests++;
		pthread_cond_signal(&d->wake);
	}
	switch (e->state) {
	case DI_DONE:
		*path = strdup(e->path);
		err = *path ? 0 : -ENOMEM;
		break;
	case DI_MISSING:
		err = -ENOENT;
		break;
	default:
		err = -EAGAIN;
		break;
	}
cleanup:
	pthread_mutex_unlock(&d->lock);
	return err;
}

/* See debuginfod.h. */
uint64_t debuginfod__generation(struct debuginfod *d)
{
	/* read on every native frame the pipeline names: no lock (written under it) */
	return __atomic_load_n(&d->gen, __ATOMIC_ACQUIRE);
}

/* See debuginfod.h. */
void debuginfod__stats(struct debuginfod *d, struct debuginfod_stats *out)
{
	pthread_mutex_lock(&d->lock);
	*out = d->stats;
	pthread_mutex_unlock(&d->lock);
}

/* libdebuginfod calls this during a transfer: non-zero aborts it (we are stopping). */
static int progress(debuginfod_client *c, long a, long b)
{
	struct debuginfod *d = debuginfod_get_user_data(c);

	return __atomic_load_n(&d->stop, __ATOMIC_RELAXED) ? 1 : 0;
}

/* One build id directory of the disk cache: its bytes and when it was last used. */
struct cache_dir {
	char name[DI_BUILD_ID_MAX + 1];
	uint64_t bytes;
	int64_t used;
};

static int cache_dir_cmp(const void *a, const void *b)
{
	const struct cache_dir *x = a, *y = b;

	return x->used < y->used ? -1 : x->used > y->used;
}

/* Opens directory name under dfd (NULL on failure); its fd is dirfd() of the result. */
static DIR *open_dir_at(int dfd, const char *name)
{
	int fd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *dir;

	if (fd < 0)
		return NULL;
	dir = fdopendir(fd);
	if (!dir)
		close(fd);
	return dir;
}

/* Sums the regular files of dir (libdebuginfod's layout: <cache>/<build id>/<files>). */
static void dir_usage(int dfd, struct cache_dir *cd)
{
	DIR *dir = open_dir_at(dfd, cd->name);
	struct dirent *de;
	int fd;

	if (!dir)
		return;
	fd = dirfd(dir);
	while ((de = readdir(dir))) {
		struct stat st;

		if (fstatat(fd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) || !S_ISREG(st.st_mode))
			continue;
		cd->bytes += (uint64_t)st.st_blocks * 512;
		if (st.st_mtime > cd->used)
			cd->used = st.st_mtime;
		if (st.st_atime > cd->used)
			cd->used = st.st_atime;
	}
	closedir(dir);
}

static void dir_remove(int dfd, const char *name)
{
	DIR *dir = open_dir_at(dfd, name);
	struct dirent *de;

	if (!dir)
		return;
	while ((de = readdir(dir)))
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
			unlinkat(dirfd(dir), de->d_name, 0);
	closedir(dir);
	unlinkat(dfd, name, AT_REMOVEDIR);
}

/*
 * Deletes the least recently used build id directories until the cache is under its bound,
 * never keep (the one just fetched). Only directories named like build ids are touched.
 */
static void cache_bound(struct debuginfod *d, const char *keep)
{
	struct cache_dir *v = NULL;
	size_t n = 0, cap = 0;
	uint64_t total = 0, evicted = 0;
	struct dirent *de;
	DIR *dir;
	int dfd;

	dir = opendir(d->cache_dir);
	if (!dir)
		return;
	dfd = dirfd(dir);
	while ((de = readdir(dir)) && n < DI_MAX_CACHE_DIRS) {
		if (!valid_build_id(de->d_name))
			continue;
		if (n == cap) {
			size_t ncap = cap ? cap * 2 : 64;
			struct cache_dir *nv = realloc(v, ncap * sizeof(*nv));

			if (!nv)
				goto cleanup;
			v = nv;
			cap = ncap;
		}
		memset(&v[n], 0, sizeof(v[n]));
		strcpy(v[n].name, de->d_name);
		dir_usage(dfd, &v[n]);
		total += v[n].bytes;
		n++;
	}
	if (total > d->cfg.cache_max_bytes && n)
		qsort(v, n, sizeof(*v), cache_dir_cmp);
	for (size_t i = 0; i < n && total > d->cfg.cache_max_bytes; i++) {
		if (keep && strcmp(v[i].name, keep) == 0)
			continue;
		pr_info("cache over %llu MiB: removing %s (%llu KiB)",
			(unsigned long long)(d->cfg.cache_max_bytes >> 20), v[i].name,
			(unsigned long long)(v[i].bytes >> 10));
		dir_remove(dfd, v[i].name);
		total -= v[i].bytes;
		evicted++;
	}
cleanup:
	closedir(dir);
	free(v);
	pthread_mutex_lock(&d->lock);
	d->stats.cache_bytes = total;
	d->stats.evicted += evicted;
	/* an evicted build id must be fetched again when asked for */
	for (unsigned i = 0; evicted && i < d->n; i++) {
		struct di_entry *e = &d->v[i];
		struct stat st;

		if (e->state == DI_DONE && stat(e->path, &st) != 0) {
			free(e->path);
			e->path = NULL;
			e->state = DI_FREE;
		}
	}
	pthread_mutex_unlock(&d->lock);
}

/* The oldest queued request, marked as being fetched; NULL when none. Lock held. */
static struct di_entry *next_queued(struct debuginfod *d)
{
	struct di_entry *best = NULL;

	for (unsigned i = 0; i < d->n; i++)
		if (d->v[i].state == DI_QUEUED && (!best || d->v[i].seq < best->seq))
			best = &d->v[i];
	if (best)
		best->state = DI_FETCHING;
	return best;
}

static void *fetch_thread(void *arg)
{
	struct debuginfod *d = arg;
	debuginfod_client *client = debuginfod_begin();

	pthread_setname_np(pthread_self(), "mlprof-dbginfo"); /* top -H, perf */
	if (!client)
		pr_warn("cannot start the libdebuginfod client: %s", strerror(errno));
	else {
		debuginfod_set_user_data(client, d);
		debuginfod_set_progressfn(client, progress);
	}
	pthread_mutex_lock(&d->lock);
	for (;;) {
		struct di_entry *e = NULL;
		char bid[DI_BUILD_ID_MAX + 1], *path = NULL;
		int fd = -ENOSYS;

		while (!d->stop && !(e = next_queued(d)))
			pthread_cond_wait(&d->wake, &d->lock);
		if (d->stop)
			break;
		strcpy(bid, e->bid);
		pthread_mutex_unlock(&d->lock);

		if (client)
			fd = debuginfod_find_debuginfo(client, (const unsigned char *)bid, 0,
						       &path);
		if (fd >= 0) {
			close(fd);
			pr_info("debug file for build id %s: %s", bid, path);
			cache_bound(d, bid);
		} else {
			pr_info("no debug file for build id %s from %s: %s", bid, d->urls_log,
				strerror(-fd));
		}

		pthread_mutex_lock(&d->lock);
		/* a fetching entry is never recycled (entry_alloc takes finished ones only) */
		e = entry_find(d, bid);
		if (e && fd >= 0 && path) {
			e->state = DI_DONE;
			e->path = path;
			path = NULL;
			d->stats.fetched++;
		} else if (e) {
			e->state = DI_MISSING;
			d->stats.missing++;
		}
		free(path);
		__atomic_add_fetch(&d->gen, 1, __ATOMIC_RELEASE);
	}
	pthread_mutex_unlock(&d->lock);
	if (client)
		debuginfod_end(client);
	return NULL;
}

/* See debuginfod.h. */
struct debuginfod *debuginfod__new(const struct debuginfod_config *cfg)
{
	struct debuginfod *d = calloc(1, sizeof(*d));
	char maxsize[32];
	int err;

	if (!d)
		return NULL;
	d->cfg = *cfg;
	d->n = cfg->max_entries ? cfg->max_entries : DI_DEFAULT_ENTRIES;
	d->urls = strdup(cfg->urls);
	d->cache_dir = strdup(cfg->cache_dir);
	d->v = calloc(d->n, sizeof(*d->v));
	if (!d->urls || !d->cache_dir || !d->v) {
		err = -ENOMEM;
		goto cleanup;
	}
	pthread_mutex_init(&d->lock, NULL);
	pthread_cond_init(&d->wake, NULL);
	if (mkdir(d->cache_dir, 0700) && errno != EEXIST) {
		err = -errno;
		pr_warn("cannot create the cache directory %s: %s", d->cache_dir, strerror(errno));
		goto cleanup;
	}
	/* libdebuginfod reads these from the environment on every query: set them once, here,
	 * before its thread exists. No single file may be larger than the whole cache. */
	snprintf(maxsize, sizeof(maxsize), "%llu", (unsigned long long)cfg->cache_max_bytes);
	if (setenv(DEBUGINFOD_URLS_ENV_VAR, d->urls, 1) ||
	    setenv(DEBUGINFOD_CACHE_PATH_ENV_VAR, d->cache_dir, 1) ||
	    setenv(DEBUGINFOD_MAXSIZE_ENV_VAR, maxsize, 0)) {
		err = -errno;
		goto cleanup;
	}
	err = -pthread_create(&d->thread, NULL, fetch_thread, d);
	if (err)
		goto cleanup;
	d->started = true;
	redact__url(d->urls, d->urls_log, sizeof(d->urls_log));
	pr_info("fetching debug files of stripped binaries from %s (cache %s, %llu MiB)",
		d->urls_log, d->cache_dir, (unsigned long long)(cfg->cache_max_bytes >> 20));
	return d;
cleanup:
	debuginfod__free(d);
	errno = -err;
	return NULL;
}

/* See debuginfod.h. */
void debuginfod__free(struct debuginfod *d)
{
	if (!d)
		return;
	if (d->started) {
		pthread_mutex_lock(&d->lock);
		__atomic_store_n(&d->stop, true, __ATOMIC_RELAXED);
		pthread_cond_signal(&d->wake);
		pthread_mutex_unlock(&d->lock);
		pthread_join(d->thread, NULL);
	}
	for (unsigned i = 0; d->v && i < d->n; i++)
		free(d->v[i].path);
	free(d->v);
	free(d->urls);
	free(d->cache_dir);
	free(d);
}

/* See debuginfod.h. */
struct debuginfod *debuginfod__from_env(void)
{
	const char *urls = getenv(DEBUGINFOD_URLS_ENV_VAR);
	const char *off = getenv("MLPROF_DEBUGINFOD");
	const char *dir = getenv(DEBUGINFOD_CACHE_PATH_ENV_VAR);
	const char *mb = getenv("MLPROF_DEBUGINFOD_CACHE_MB");
	struct debuginfod_config cfg = {.urls = urls};
	struct debuginfod *d;
	char *buf = NULL;
	unsigned long long max_mb = DI_DEFAULT_CACHE_MB;

	errno = 0;
	if (!urls || !*urls || strspn(urls, " \t") == strlen(urls))
		return NULL;
	if (off && strcmp(off, "0") == 0) {
		pr_info("off (MLPROF_DEBUGINFOD=0) although DEBUGINFOD_URLS is set");
		return NULL;
	}
	if (mb && *mb) {
		char *end;

		errno = 0;
		max_mb = strtoull(mb, &end, 10);
		if (errno || *end || max_mb == 0 || max_mb > (1ull << 24)) {
			pr_warn("MLPROF_DEBUGINFOD_CACHE_MB=%s: not a size in MiB (1-16777216): "
				"debuginfod off",
				mb);
			errno = EINVAL;
			return NULL;
		}
	}
	cfg.cache_max_bytes = (uint64_t)max_mb << 20;
	if (!dir || !*dir) {
		const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
		int n = -1;

		if (geteuid() == 0)
			n = asprintf(&buf, "/var/cache/mlprof/debuginfod");
		else if (xdg && *xdg)
			n = asprintf(&buf, "%s/debuginfod_client", xdg);
		else if (home && *home)
			n = asprintf(&buf, "%s/.cache/debuginfod_client", home);
		if (n < 0) {
			pr_warn("no cache directory (set DEBUGINFOD_CACHE_PATH): debuginfod off");
			errno = ENOENT;
			return NULL;
		}
		/* the parent of our default directory may not exist yet */
		if (geteuid() == 0 && mkdir("/var/cache/mlprof", 0755) && errno != EEXIST)
			pr_warn("cannot create /var/cache/mlprof: %s", strerror(errno));
		dir = buf;
	}
	cfg.cache_dir = dir;
	d = debuginfod__new(&cfg);
	free(buf);
	return d;
}
