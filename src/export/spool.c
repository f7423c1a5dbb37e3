// SPDX-License-Identifier: Apache-2.0
// On-disk spool of undelivered profiles: versioned, checksummed, zstd-compressed files.
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
#include <zlib.h>
#include <zstd.h>

#include "export/spool.h"
#include "util/fsutil.h"

#define LOG_MODULE "spool"
#include "util/log.h"

/*
 * File format, version 1 (little endian):
 *   magic "MLSP" | u32 version | u32 payload_len | u32 crc32(payload) | zstd(payload)
 * payload:
 *   u64 seq | i64 start_ns | i64 end_ns | u32 n_labels | n x (u32 len, name, u32 len, value)
 *   | u32 pprof_len | pprof
 * The name is "<order as 20 digits>.spool" so that a directory listing sorts oldest first.
 */
#define SPOOL_MAGIC	  "MLSP"
#define SPOOL_VERSION	  1
#define SPOOL_HDR	  16
#define SPOOL_SUFFIX	  ".spool"
#define SPOOL_MAX_PAYLOAD (64u << 20) /* refuse to inflate anything larger */
#define SPOOL_MAX_FILES	  100000      /* index bound, independent of the byte bound */

struct spool_entry {
	uint64_t order;
	uint64_t size;
	time_t mtime;
};

struct spool {
	char *dir;
	uint64_t max_bytes;
	unsigned int max_age_s;
	struct spool_entry *ent; /* sorted by order; [head, n) are live */
	size_t head, n, cap;
	uint64_t next_order;
	struct spool_stats st;
};

static void path_of(const struct spool *s, uint64_t order, char *buf, size_t len)
{
	snprintf(buf, len, "%s/%020" PRIu64 SPOOL_SUFFIX, s->dir, order);
}

static int cmp_entry(const void *a, const void *b)
{
	const struct spool_entry *x = a, *y = b;

	return x->order < y->order ? -1 : x->order > y->order;
}

static size_t live(const struct spool *s)
{
	return s->n - s->head;
}

static void drop_head(struct spool *s, bool count_dropped)
{
	char path[PATH_MAX];
	struct spool_entry *e = &s->ent[s->head];

	path_of(s, e->order, path, sizeof(path));
	if (unlink(path) && errno != ENOENT)
		pr_warn("cannot remove %s: %s", path, strerror(errno));
	s->st.bytes -= e->size;
	s->st.files--;
	if (count_dropped)
		s->st.dropped++;
	s->head++;
	if (s->head == s->n)
		s->head = s->n = 0;
}

static void evict(struct spool *s, uint64_t incoming)
{
	time_t now = time(NULL);

	while (live(s)) {
		struct spool_entry *e = &s->ent[s->head];
		bool aged = s->max_age_s && now - e->mtime > (time_t)s->max_age_s;
		bool full = s->max_bytes && s->st.bytes + incoming > s->max_bytes;

		if (!aged && !full && live(s) < SPOOL_MAX_FILES)
			break;
		pr_debug("dropping spooled item %" PRIu64 " (%s)", e->order,
			 aged ? "too old" : "spool full");
		drop_head(s, true);
	}
}

static int append_entry(struct spool *s, uint64_t order, uint64_t size, time_t mtime)
{
	if (s->head && s->n == s->cap) {
		memmove(s->ent, s->ent + s->head, live(s) * sizeof(*s->ent));
		s->n -= s->head;
		s->head = 0;
	}
	if (s->n == s->cap) {
		size_t cap = s->cap ? s->cap * 2 : 64;
		struct spool_entry *ne = realloc(s->ent, cap * sizeof(*ne));

		if (!ne)
			return -ENOMEM;
		s->ent = ne;
		s->cap = cap;
	}
	s->ent[s->n++] = (struct spool_entry){.order = order, .size = size, .mtime = mtime};
	s->st.files++;
	s->st.bytes += size;
	return 0;
}

static int scan(struct spool *s)
{
	DIR *d = opendir(s->dir);
	struct dirent *de;
	int err = 0;

	if (!d)
		return -errno;
	while ((de = readdir(d))) {
		char path[PATH_MAX], *end;
		unsigned long long order;
		struct stat stb;

		if (de->d_name[0] < '0' || de->d_name[0] > '9')
			continue;
		errno = 0;
		order = strtoull(de->d_name, &end, 10);
		snprintf(path, sizeof(path), "%s/%s", s->dir, de->d_name);
		if (strcmp(end, SPOOL_SUFFIX)) {
			/* leftover temp file of an interrupted write */
			if (strstr(de->d_name, ".tmp"))
				unlink(path);
			continue;
		}
		if (errno || stat(path, &stb) || !S_ISREG(stb.st_mode))
			continue;
		err = append_entry(s, order, (uint64_t)stb.st_size, stb.st_mtime);
		if (err)
			goto cleanup;
		if (order >= s->next_order)
			s->next_order = order + 1;
	}
	if (s->n)
		qsort(s->ent, s->n, sizeof(*s->ent), cmp_entry);
cleanup:
	closedir(d);
	return err;
}

struct spool *spool__open(const char *dir, uint64_t max_bytes, unsigned int max_age_s)
{
	struct spool *s;
	int err;

	if (!dir || !*dir) {
		errno = EINVAL;
		return NULL;
	}
	err = fsutil__mkdir_p(dir, 0700);
	if (err) {
		errno = -err;
		pr_err("cannot create spool directory %s: %s", dir, strerror(errno));
		return NULL;
	}
	s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	s->dir = strdup(dir);
	s->max_bytes = max_bytes;
	s->max_age_s = max_age_s;
	s->next_order = 1;
	if (!s->dir) {
		err = -ENOMEM;
		goto cleanup;
	}
	err = scan(s);
	if (err) {
		pr_err("cannot read spool directory %s: %s", dir, strerror(-err));
		goto cleanup;
	}
	if (live(s))
		pr_info("%s: %" PRIu64 " spooled profiles (%" PRIu64 " bytes) from a previous run",
			dir, s->st.files, s->st.bytes);
	evict(s, 0);
	return s;
cleanup:
	spool__close(s);
	errno = -err;
	return NULL;
}

void spool__close(struct spool *s)
{
	if (!s)
		return;
	free(s->ent);
	free(s->dir);
	free(s);
}

uint64_t spool__next_order(struct spool *s)
{
	return s->next_order++;
}

/* Growable byte buffer for the payload. */
struct buf {
	uint8_t *p;
	size_t len, cap;
	int err;
};

static void put(struct buf *b, const void *data, size_t len)
{
	if (b->err || !len)
		return;
	if (b->len + len > b->cap) {
		size_t cap = (b->len + len) * 2;
		uint8_t *np = realloc(b->p, cap);

		if (!np) {
			b->err = -ENOMEM;
			return;
		}
		b->p = np;
		b->cap = cap;
	}
	memcpy(b->p + b->len, data, len);
	b->len += len;
}

static void put_u32(struct buf *b, uint32_t v)
{
	uint8_t x[4] = {v, v >> 8, v >> 16, v >> 24};

	put(b, x, 4);
}

static void put_u64(struct buf *b, uint64_t v)
{
	put_u32(b, (uint32_t)v);
	put_u32(b, (uint32_t)(v >> 32));
}

static void put_str(struct buf *b, const char *s)
{
	size_t len = s ? strlen(s) : 0;

	put_u32(b, (uint32_t)len);
	put(b, s, len);
}

static int write_all(int fd, const void *p, size_t len)
{
	const uint8_t *c = p;

	while (len) {
		ssize_t w = write(fd, c, len);

		if (w < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		c += w;
		len -= (size_t)w;
	}
	return 0;
}

int spool__put(struct spool *s, uint64_t order, const struct export_item *it)
{
	char path[PATH_MAX], tmp[PATH_MAX];
	struct buf pl = {0}, file = {0};
	size_t bound, zlen;
	int fd = -1, err = 0, i;

	if (it->pprof_len > SPOOL_MAX_PAYLOAD / 2 || it->n_labels < 0 ||
	    it->n_labels > EXPORT_MAX_LABELS)
		return -E2BIG;
	put_u64(&pl, it->seq);
	put_u64(&pl, (uint64_t)it->start_ns);
	put_u64(&pl, (uint64_t)it->end_ns);
	put_u32(&pl, (uint32_t)it->n_labels);
	for (i = 0; i < it->n_labels; i++) {
		put_str(&pl, it->labels[i].name);
		put_str(&pl, it->labels[i].value);
	}
	put_u32(&pl, (uint32_t)it->pprof_len);
	put(&pl, it->pprof, it->pprof_len);
	if (pl.err) {
		err = pl.err;
		goto cleanup;
	}
	put(&file, SPOOL_MAGIC, 4);
	put_u32(&file, SPOOL_VERSION);
	put_u32(&file, (uint32_t)pl.len);
	put_u32(&file, (uint32_t)crc32(0, pl.p, (uInt)pl.len));
	bound = ZSTD_compressBound(pl.len);
	if (!file.err && file.cap < SPOOL_HDR + bound) {
		uint8_t *np = realloc(file.p, SPOOL_HDR + bound);

		if (!np)
			file.err = -ENOMEM;
		else
			file.p = np, file.cap = SPOOL_HDR + bound;
	}
	if (file.err) {
		err = file.err;
		goto cleanup;
	}
	zlen = ZSTD_compress(file.p + SPOOL_HDR, bound, pl.p, pl.len, 3);
	if (ZSTD_isError(zlen)) {
		pr_warn("zstd: %s", ZSTD_getErrorName(zlen));
		err = -EIO;
		goto cleanup;
	}
	file.len = SPOOL_HDR + zlen;

	evict(s, file.len);
	path_of(s, order, path, sizeof(path));
	snprintf(tmp, sizeof(tmp), "%s/.%020" PRIu64 ".tmp", s->dir, order);
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0) {
		err = -errno;
		pr_warn("cannot create %s: %s", tmp, strerror(errno));
		goto cleanup;
	}
	err = write_all(fd, file.p, file.len);
	if (!err && fsync(fd))
		err = -errno;
	if (close(fd) && !err)
		err = -errno;
	fd = -1;
	if (!err && rename(tmp, path))
		err = -errno;
	if (err) {
		pr_warn("cannot write %s: %s", path, strerror(-err));
		unlink(tmp);
		goto cleanup;
	}
	/* keep the index sorted: orders normally arrive increasing, else re-sort */
	err = append_entry(s, order, file.len, time(NULL));
	if (err)
		goto cleanup;
	if (live(s) > 1 && s->ent[s->n - 2].order > order)
		qsort(s->ent + s->head, live(s), sizeof(*s->ent), cmp_entry);
	if (order >= s->next_order)
		s->next_order = order + 1;
	s->st.written++;
cleanup:
	free(pl.p);
	free(file.p);
	return err;
}

uint64_t spool__oldest(struct spool *s)
{
	evict(s, 0);
	return live(s) ? s->ent[s->head].order : UINT64_MAX;
}

/* Bounds-checked reader over the decompressed payload. */
struct rd {
	const uint8_t *p;
	size_t len, off;
	bool bad;
};

static const uint8_t *take(struct rd *r, size_t n)
{
	const uint8_t *p;

	if (r->bad || r->len - r->off < n) {
		r->bad = true;
		return NULL;
	}
	p = r->p + r->off;
	r->off += n;
	return p;
}

static uint32_t get_u32(struct rd *r)
{
	const uint8_t *p = take(r, 4);

	return p ? (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
			       (uint32_t)p[3] << 24
		 : 0;
}

static uint64_t get_u64(struct rd *r)
{
	uint64_t lo = get_u32(r);

	return lo | (uint64_t)get_u32(r) << 32;
}

static char *get_str(struct rd *r)
{
	uint32_t len = get_u32(r);
	const uint8_t *p = take(r, len);
	char *s;

	if (!p)
		return NULL;
	s = malloc((size_t)len + 1);
	if (!s) {
		r->bad = true;
		return NULL;
	}
	memcpy(s, p, len);
	s[len] = 0;
	return s;
}

void spool__record_free(struct spool_record *r)
{
	int i;

	if (!r)
		return;
	for (i = 0; i < r->item.n_labels; i++) {
		free((char *)r->item.labels[i].name);
		free((char *)r->item.labels[i].value);
	}
	free((void *)r->item.labels);
	free((void *)r->item.pprof);
	free(r);
}

/* Parses one file; returns 0, -EBADMSG for corrupt content, or -errno. */
static int load(const char *path, uint64_t order, struct spool_record **out)
{
	struct spool_record *r = NULL;
	struct label_pair *labels = NULL;
	uint8_t *raw = NULL, *pl = NULL, *pp = NULL;
	struct rd rd = {0};
	struct stat stb;
	uint32_t plen, crc, n, i, pprof_len;
	size_t got;
	int fd, err = 0;
	ssize_t rn;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &stb) || stb.st_size < SPOOL_HDR || stb.st_size > SPOOL_MAX_PAYLOAD) {
		err = -EBADMSG;
		goto cleanup;
	}
	raw = malloc((size_t)stb.st_size);
	if (!raw) {
		err = -ENOMEM;
		goto cleanup;
	}
	for (got = 0; got < (size_t)stb.st_size; got += (size_t)rn) {
		rn = read(fd, raw + got, (size_t)stb.st_size - got);
		if (rn <= 0) {
			err = rn < 0 ? -errno : -EBADMSG;
			goto cleanup;
		}
	}
	rd = (struct rd){.p = raw, .len = got};
	if (memcmp(take(&rd, 4), SPOOL_MAGIC, 4) || get_u32(&rd) != SPOOL_VERSION) {
		err = -EBADMSG;
		goto cleanup;
	}
	plen = get_u32(&rd);
	crc = get_u32(&rd);
	if (plen > SPOOL_MAX_PAYLOAD) {
		err = -EBADMSG;
		goto cleanup;
	}
	pl = malloc(plen ? plen : 1);
	if (!pl) {
		err = -ENOMEM;
		goto cleanup;
	}
	got = ZSTD_decompress(pl, plen, raw + SPOOL_HDR, (size_t)stb.st_size - SPOOL_HDR);
	if (ZSTD_isError(got) || got != plen || (uint32_t)crc32(0, pl, plen) != crc) {
		err = -EBADMSG;
		goto cleanup;
	}
	r = calloc(1, sizeof(*r));
	if (!r) {
		err = -ENOMEM;
		goto cleanup;
	}
	r->order = order;
	rd = (struct rd){.p = pl, .len = plen};
	r->item.seq = get_u64(&rd);
	r->item.start_ns = (int64_t)get_u64(&rd);
	r->item.end_ns = (int64_t)get_u64(&rd);
	n = get_u32(&rd);
	if (rd.bad || n > EXPORT_MAX_LABELS) {
		err = -EBADMSG;
		goto cleanup;
	}
	labels = calloc(n ? n : 1, sizeof(*labels));
	if (!labels) {
		err = -ENOMEM;
		goto cleanup;
	}
	r->item.labels = labels;
	for (i = 0; i < n; i++) {
		labels[i].name = get_str(&rd);
		labels[i].value = get_str(&rd);
		r->item.n_labels = (int)i + 1;
	}
	pprof_len = get_u32(&rd);
	if (!rd.bad) {
		const uint8_t *src = take(&rd, pprof_len);

		/* no allocation for a length the payload does not hold */
		pp = src ? malloc(pprof_len ? pprof_len : 1) : NULL;
		if (src && pp)
			memcpy(pp, src, pprof_len);
	}
	r->item.pprof = pp;
	r->item.pprof_len = pprof_len;
	if (rd.bad || !pp || rd.off != rd.len) {
		err = -EBADMSG;
		goto cleanup;
	}
	*out = r;
	r = NULL;
cleanup:
	spool__record_free(r);
	free(raw);
	free(pl);
	close(fd);
	return err;
}

int spool__read_oldest(struct spool *s, struct spool_record **out)
{
	char path[PATH_MAX];
	int err;

	evict(s, 0);
	while (live(s)) {
		struct spool_entry *e = &s->ent[s->head];

		path_of(s, e->order, path, sizeof(path));
		err = load(path, e->order, out);
		if (!err)
			return 0;
		if (err == -ENOMEM)
			return err;
		pr_warn("skipping unreadable spool file %s: %s", path,
			err == -EBADMSG ? "corrupt" : strerror(-err));
		s->st.corrupt++;
		drop_head(s, false);
	}
	return -ENOENT;
}

int spool__remove(struct spool *s, uint64_t order)
{
	size_t i;

	for (i = s->head; i < s->n; i++) {
		if (s->ent[i].order != order)
			continue;
		if (i != s->head) {
			/* rare: keep the array compact by swapping down */
			struct spool_entry e = s->ent[i];

			memmove(s->ent + s->head + 1, s->ent + s->head, (i - s->head) * sizeof(e));
			s->ent[s->head] = e;
		}
		drop_head(s, false);
		return 0;
	}
	return -ENOENT;
}

void spool__stats(struct spool *s, struct spool_stats *out)
{
	*out = s->st;
}

const char *spool__path(const struct spool *s)
{
	return s->dir;
}

/* ---- one spool per destination ---- */

#define DEST_FILE "DESTINATION"

/* The text of a DESTINATION file: what the spooled profiles are for. */
static void dest_text(const char *destination, char *out, size_t len)
{
	snprintf(out, len, "%s\n", destination);
}

/* Counts the *.spool files of dir. */
static uint64_t count_spooled(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	uint64_t n = 0;

	if (!d)
		return 0;
	while ((de = readdir(d))) {
		size_t l = strlen(de->d_name);

		n += l > strlen(SPOOL_SUFFIX) && de->d_name[0] >= '0' && de->d_name[0] <= '9' &&
		     !strcmp(de->d_name + l - strlen(SPOOL_SUFFIX), SPOOL_SUFFIX);
	}
	closedir(d);
	return n;
}

/* Says what else lies in root: other destinations' profiles, files of the flat layout. */
static void log_others(const char *root, const char *own)
{
	DIR *d = opendir(root);
	struct dirent *de;
	uint64_t flat = count_spooled(root);

	if (flat)
		pr_warn("%s: %" PRIu64 " profiles spooled by an older mlprof name no destination: "
			"they are never sent; delete them if they are not needed",
			root, flat);
	if (!d)
		return;
	while ((de = readdir(d))) {
		char dir[PATH_MAX], path[PATH_MAX + 16], text[4096];
		uint64_t n;
		FILE *f;

		if (de->d_name[0] == '.' || !strcmp(de->d_name, own))
			continue;
		snprintf(dir, sizeof(dir), "%s/%s", root, de->d_name);
		snprintf(path, sizeof(path), "%s/" DEST_FILE, dir);
		f = fopen(path, "re");
		if (!f)
			continue;
		if (!fgets(text, sizeof(text), f))
			text[0] = '\0';
		fclose(f);
		text[strcspn(text, "\n")] = '\0';
		n = count_spooled(dir);
		if (n)
			pr_info("%s: %" PRIu64 " profiles for %s stay there: they are sent only to "
				"that destination",
				dir, n, text);
	}
	closedir(d);
}

int spool__dest_dir(const char *root, const char *destination, char *out, size_t len)
{
	char path[PATH_MAX + 16], want[4096], have[4096];
	uint64_t h = 14695981039346656037ull;
	size_t n;
	FILE *f;
	int err;

	if (!root || !*root || !destination)
		return -EINVAL;
	for (const char *p = destination; *p; p++)
		h = (h ^ (uint8_t)*p) * 1099511628211ull;
	if ((size_t)snprintf(out, len, "%s/%016" PRIx64, root, h) >= len)
		return -ENAMETOOLONG;
	err = fsutil__mkdir_p(out, 0700);
	if (err) {
		pr_err("cannot create spool directory %s: %s", out, strerror(-err));
		return err;
	}
	dest_text(destination, want, sizeof(want));
	snprintf(path, sizeof(path), "%s/" DEST_FILE, out);
	f = fopen(path, "re");
	if (f) {
		n = fread(have, 1, sizeof(have) - 1, f);
		fclose(f);
		have[n] = '\0';
		if (strcmp(have, want)) {
			pr_err("%s holds profiles for another destination (%.*s)", out,
			       (int)strcspn(have, "\n"), have);
			return -EEXIST;
		}
	} else {
		f = fopen(path, "we");
		if (!f || fputs(want, f) < 0 || fclose(f)) {
			err = -errno;
			pr_err("cannot write %s: %s", path, strerror(errno));
			return err ? err : -EIO;
		}
	}
	log_others(root, strrchr(out, '/') + 1);
	return 0;
}
