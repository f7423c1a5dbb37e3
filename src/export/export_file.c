// SPDX-License-Identifier: Apache-2.0
// File backend: <out_dir>/<service>-<UTC time>-<seq>.pb.gz, atomic, directory size bounded.
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "export/export_backend.h"
#include "util/fsutil.h"
#include "util/gzip.h"
#include "util/hash.h"

#define LOG_MODULE "export-file"
#include "util/log.h"

#define FILE_SUFFIX ".pb.gz"
#define MAX_SCAN    100000

struct ofile {
	char name[NAME_MAX + 1];
	time_t mtime;
	uint64_t size;
};

static int cmp_ofile(const void *a, const void *b)
{
	const struct ofile *x = a, *y = b;

	if (x->mtime != y->mtime)
		return x->mtime < y->mtime ? -1 : 1;
	return strcmp(x->name, y->name);
}

/*
 * The size of dir's entry de when it is one of our profile files (a regular *.pb.gz file
 * not starting with "."), else -1.
 */
static int64_t profile_file_size(const char *dir, const struct dirent *de, time_t *mtime)
{
	size_t l = strlen(de->d_name);
	char path[PATH_MAX];
	struct stat stb;

	if (de->d_name[0] == '.' || l < sizeof(FILE_SUFFIX) ||
	    strcmp(de->d_name + l - strlen(FILE_SUFFIX), FILE_SUFFIX))
		return -1;
	snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
	if (stat(path, &stb) || !S_ISREG(stb.st_mode))
		return -1;
	*mtime = stb.st_mtime;
	return (int64_t)stb.st_size;
}

/*
 * Deletes the oldest *.pb.gz files while the directory is over max_bytes. A first pass
 * only adds the sizes up, so that a directory under its bound (the steady state) costs no
 * memory; the names are listed and sorted only when some must go (their array grew with
 * the number of files on every write before, and the sender thread's heap with it).
 */
static uint64_t enforce_bound(const char *dir, uint64_t max_bytes, uint64_t incoming)
{
	struct ofile *f = NULL, *nf;
	size_t n = 0, cap = 0, i;
	uint64_t total = incoming, deleted = 0;
	struct dirent *de;
	int64_t size;
	time_t mtime;
	DIR *d;

	if (!max_bytes)
		return 0;
	d = opendir(dir);
	if (!d)
		return 0;
	while ((de = readdir(d)) && n++ < MAX_SCAN)
		if ((size = profile_file_size(dir, de, &mtime)) >= 0)
			total += (uint64_t)size;
	if (total <= max_bytes) {
		closedir(d);
		return 0;
	}
	rewinddir(d);
	n = 0;
	total = incoming;
	while ((de = readdir(d)) && n < MAX_SCAN) {
		if ((size = profile_file_size(dir, de, &mtime)) < 0)
			continue;
		if (n == cap) {
			cap = cap ? cap * 2 : 64;
			nf = realloc(f, cap * sizeof(*f));
			if (!nf)
				break;
			f = nf;
		}
		snprintf(f[n].name, sizeof(f[n].name), "%s", de->d_name);
		f[n].mtime = mtime;
		f[n].size = (uint64_t)size;
		total += f[n].size;
		n++;
	}
	closedir(d);
	if (f)
		qsort(f, n, sizeof(*f), cmp_ofile);
	for (i = 0; i < n && total > max_bytes; i++) {
		char path[PATH_MAX];

		snprintf(path, sizeof(path), "%s/%s", dir, f[i].name);
		if (unlink(path))
			continue;
		total -= f[i].size;
		deleted++;
	}
	free(f);
	return deleted;
}

/*
 * The file name's stem for a service and profile kind: "/", spaces and control characters
 * become "_", and so does a leading "." (a dot file would be taken for a temporary file and
 * escape the directory's size bound). A name too long for the stem is cut and gets a hash
 * of the whole name, so that two services sharing a long prefix never share files.
 */
static void file_stem(const char *service, const char *kind, char *out, size_t len)
{
	char full[512];
	size_t n;

	snprintf(full, sizeof(full), "%s%s%s", service, *kind ? "." : "", kind);
	n = strlen(full);
	if (n >= len || n >= sizeof(full) - 1) {
		char tail[20];
		uint64_t h = hash__fnv1a(kind, strlen(kind), hash__str(service));

		snprintf(tail, sizeof(tail), "~%012" PRIx64, h & (uint64_t)0xffffffffffff);
		snprintf(out, len - strlen(tail), "%s", full);
		strcat(out, tail);
	} else {
		memcpy(out, full, n + 1);
	}
	for (size_t i = 0; out[i]; i++)
		if (out[i] == '/' || out[i] == ' ' || (unsigned char)out[i] < 32 ||
		    (i == 0 && out[i] == '.'))
			out[i] = '_';
}

static enum export_status file_send(struct exporter *e, const struct export_item *it,
				    struct export_result *res)
{
	const struct exporter_config *c = exporter__config(e);
	const char *service = "unknown_service";
	char path[PATH_MAX], tmp[PATH_MAX], stamp[32], svc[128];
	uint8_t *gz = NULL;
	const uint8_t *data = it->pprof;
	size_t len = it->pprof_len, i;
	time_t secs = (time_t)(it->start_ns / 1000000000);
	struct tm tm;
	int fd = -1, n;

	tmp[0] = '\0';
	const char *kind = "";

	for (n = 0; n < it->n_labels; n++) {
		if (!strcmp(it->labels[n].name, "service_name"))
			service = it->labels[n].value;
		/* one file per profile type of a service: CPU keeps the plain name */
		if (!strcmp(it->labels[n].name, "__name__") &&
		    strcmp(it->labels[n].value, "process_cpu"))
			kind = it->labels[n].value;
	}
	file_stem(service, kind, svc, sizeof(svc));
	gmtime_r(&secs, &tm);
	strftime(stamp, sizeof(stamp), "%Y%m%dT%H%M%SZ", &tm);
	/* removed while the agent runs: made again, parents included */
	n = fsutil__mkdir_p(c->out_dir, 0755);
	if (n) {
		errno = -n;
		goto fail;
	}
	/* .pb.gz: gzip the pprof unless it already is */
	if (!gzip__is_gzip(it->pprof, len)) {
		n = gzip__compress(it->pprof, it->pprof_len, &gz, &len);
		if (n) {
			errno = -n;
			goto fail;
		}
		data = gz;
	}
	res->files_deleted = enforce_bound(c->out_dir, c->out_max_bytes, len);
	snprintf(path, sizeof(path), "%s/%s-%s-%06" PRIu64 FILE_SUFFIX, c->out_dir, svc, stamp,
		 it->seq);
	snprintf(tmp, sizeof(tmp), "%s/.%s-%s-%06" PRIu64 ".tmp", c->out_dir, svc, stamp, it->seq);
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		goto fail;
	for (i = 0; i < len;) {
		ssize_t w = write(fd, data + i, len - i);

		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			goto fail;
		i += (size_t)w;
	}
	if (fsync(fd))
		goto fail;
	n = close(fd);
	fd = -1;
	if (n || rename(tmp, path))
		goto fail;
	free(gz);
	return EXPORT_SENT;
fail:
	n = errno;
	snprintf(res->message, sizeof(res->message), "cannot write %s: %s", c->out_dir,
		 strerror(n));
	pr_warn("%s", res->message);
	if (fd >= 0)
		close(fd);
	if (tmp[0])
		unlink(tmp); /* no half-written file is left behind, whatever step failed */
	free(gz);
	/* a full or read-only disk may recover: retry, then spool */
	return EXPORT_RETRYABLE;
}

/* Local directory of timestamped pprof files. */
const struct export_ops export_file_ops = {
	.name = "file",
	.send = file_send,
};
