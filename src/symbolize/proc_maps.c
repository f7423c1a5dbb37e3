// SPDX-License-Identifier: Apache-2.0
/* One read of a process's executable mappings: PROCMAP_QUERY, or the maps text, bounded. */
#include "symbolize/proc_maps.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

/* Longest /proc/PID/maps line we parse; longer lines are skipped (paths are <= PATH_MAX). */
#define MAPS_LINE_MAX 4352
/*
 * Bounds per read of a process's maps: executable mappings kept, bytes of their distinct
 * paths (65,000 mappings of one file with a 4 KiB path were 284 MB when each kept its own
 * copy), and bytes of /proc/PID/maps read at all. Past the path bound, mappings are kept
 * without their path; past the others the set is cut (both counted: maps_truncated).
 */
#define MAPS_MAX      (64u << 10) /* vm.max_map_count's default is 65530 */
#define MAPS_STRS_MAX (2u << 20)  /* distinct paths (consecutive repeats stored once) */
#define MAPS_READ_MAX (512u << 20)

static bool parse_hex(const char **s, uint64_t *out)
{
	const char *p = *s;
	uint64_t v = 0;
	int n = 0;

	while (n < 17) {
		char c = *p;
		int d;

		if (c >= '0' && c <= '9')
			d = c - '0';
		else if (c >= 'a' && c <= 'f')
			d = c - 'a' + 10;
		else if (c >= 'A' && c <= 'F')
			d = c - 'A' + 10;
		else
			break;
		v = (v << 4) | (uint64_t)d;
		p++;
		n++;
	}
	if (n == 0 || n > 16)
		return false;
	*s = p;
	*out = v;
	return true;
}

static bool parse_dec(const char **s, uint64_t *out)
{
	const char *p = *s;
	uint64_t v = 0;
	int n = 0;

	while (*p >= '0' && *p <= '9' && n < 20) {
		v = v * 10 + (uint64_t)(*p - '0');
		p++;
		n++;
	}
	if (n == 0)
		return false;
	*s = p;
	*out = v;
	return true;
}

struct parsed_line {
	uint64_t start, end, offset, inode, major, minor;
	char perms[4];
	const char *path;
	size_t path_len;
};

/* Parses one NUL-terminated maps line; false when it is malformed or truncated. */
static bool parse_maps_line(const char *s, struct parsed_line *pl)
{
	if (!parse_hex(&s, &pl->start) || *s++ != '-' || !parse_hex(&s, &pl->end) || *s++ != ' ')
		return false;
	for (int i = 0; i < 4; i++) {
		if (!*s)
			return false;
		pl->perms[i] = *s++;
	}
	if (*s++ != ' ' || !parse_hex(&s, &pl->offset) || *s++ != ' ')
		return false;
	if (!parse_hex(&s, &pl->major) || *s++ != ':' || !parse_hex(&s, &pl->minor) || *s++ != ' ')
		return false;
	if (!parse_dec(&s, &pl->inode))
		return false;
	if (*s && *s != ' ')
		return false;
	while (*s == ' ')
		s++;
	pl->path = s;
	pl->path_len = strlen(s);
	return pl->start < pl->end && pl->major <= UINT32_MAX && pl->minor <= UINT32_MAX;
}

struct maps_builder {
	struct proc_map *maps;
	size_t n, cap;
	char *strs;
	size_t slen, scap;
};

static int builder_add(struct maps_builder *b, const struct parsed_line *pl)
{
	struct proc_map *m;

	size_t path_off, last = b->n ? (size_t)(uintptr_t)b->maps[b->n - 1].path : 0;
	bool repeat = b->n && b->slen - last == pl->path_len + 1 &&
		      memcmp(b->strs + last, pl->path, pl->path_len) == 0;
	int ret = 0;

	if (b->n >= MAPS_MAX)
		return -E2BIG;
	if (b->n == b->cap) {
		size_t cap = b->cap ? b->cap * 2 : 32;
		void *p = realloc(b->maps, cap * sizeof(*b->maps));

		if (!p)
			return -ENOMEM;
		b->maps = p;
		b->cap = cap;
	}
	if (!b->scap) {
		b->strs = malloc(1024);
		if (!b->strs)
			return -ENOMEM;
		b->strs[0] = '\0'; /* offset 0: "", the path of mappings past the bound */
		b->slen = 1;
		b->scap = 1024;
	}
	if (repeat) {
		path_off = last;
	} else if (b->slen + pl->path_len + 1 > MAPS_STRS_MAX) {
		path_off = 0;
		ret = -E2BIG; /* kept, without its path */
	} else {
		if (b->slen + pl->path_len + 1 > b->scap) {
			size_t cap = b->scap * 2;
			char *p;

			while (cap < b->slen + pl->path_len + 1)
				cap *= 2;
			p = realloc(b->strs, cap);
			if (!p)
				return -ENOMEM;
			b->strs = p;
			b->scap = cap;
		}
		memcpy(b->strs + b->slen, pl->path, pl->path_len);
		b->strs[b->slen + pl->path_len] = '\0';
		path_off = b->slen;
		b->slen += pl->path_len + 1;
	}

	m = &b->maps[b->n++];
	memset(m, 0, sizeof(*m));
	m->start = pl->start;
	m->end = pl->end;
	m->offset = pl->offset;
	m->inode = pl->inode;
	m->dev_major = (uint32_t)pl->major;
	m->dev_minor = (uint32_t)pl->minor;
	m->exec = true;
	/* strs may still move: store the offset now, fix up pointers at the end */
	m->path = (const char *)(uintptr_t)path_off;
	return ret;
}

static int cmp_map(const void *a, const void *b)
{
	const struct proc_map *x = a, *y = b;

	return x->start < y->start ? -1 : x->start > y->start;
}

static void handle_line(struct maps_builder *b, char *line, int *err, bool *cut)
{
	struct parsed_line pl;

	if (!parse_maps_line(line, &pl))
		return;
	if (pl.perms[2] != 'x')
		return;
	if (!*err) {
		int e = builder_add(b, &pl);

		if (e == -ENOMEM)
			*err = e;
		else if (e == -E2BIG)
			*cut = true;
	}
}

/*
 * Feeds the executable mappings of the maps file open on fd into b from its text. *total:
 * bytes read. 0 or -errno.
 */
static int maps_from_text(int fd, struct maps_builder *b, bool *cut, size_t *total)
{
	char buf[16384], *line = malloc(MAPS_LINE_MAX + 1);
	bool skipping = false;
	size_t llen = 0;
	int err = 0;
	ssize_t n;

	if (!line)
		return -ENOMEM;
	while ((n = read(fd, buf, sizeof(buf))) > 0) {
		*total += (size_t)n;
		if (*total > MAPS_READ_MAX) {
			*cut = true;
			llen = 0; /* the last line may be cut: not parsed */
			break;
		}
		for (ssize_t i = 0; i < n; i++) {
			char c = buf[i];

			if (c == '\n') {
				if (!skipping) {
					line[llen] = '\0';
					handle_line(b, line, &err, cut);
				}
				llen = 0;
				skipping = false;
			} else if (!skipping) {
				if (llen >= MAPS_LINE_MAX || c == '\0')
					skipping = true; /* overlong or binary garbage: drop */
				else
					line[llen++] = c;
			}
		}
	}
	if (n < 0)
		err = -errno;
	/* a last line without '\n' may be cut mid-way: parse it only if complete enough */
	if (!err && llen && !skipping) {
		line[llen] = '\0';
		handle_line(b, line, &err, cut);
	}
	free(line);
	return err;
}

/* The kernel ABI of PROCMAP_QUERY (Linux 6.11, include/uapi/linux/fs.h), newer than our headers. */
struct procmap_query {
	uint64_t size;
	uint64_t query_flags;
	uint64_t query_addr;
	uint64_t vma_start;
	uint64_t vma_end;
	uint64_t vma_flags;
	uint64_t vma_page_size;
	uint64_t vma_offset;
	uint64_t inode;
	uint32_t dev_major;
	uint32_t dev_minor;
	uint32_t vma_name_size;
	uint32_t build_id_size;
	uint64_t vma_name_addr;
	uint64_t build_id_addr;
};
#define PROCMAP_QUERY		       _IOWR('f', 17, struct procmap_query)
#define PROCMAP_QUERY_VMA_READ	       0x01
#define PROCMAP_QUERY_VMA_WRITE	       0x02
#define PROCMAP_QUERY_VMA_EXEC	       0x04
#define PROCMAP_QUERY_VMA_SHARED       0x08
#define PROCMAP_QUERY_COVERING_OR_NEXT 0x10

/*
 * Feeds the executable mappings into b through PROCMAP_QUERY: the kernel walks only the
 * executable ones and names a file only when it differs from the previous mapping's, so a
 * process with 65,000 mappings of long paths costs milliseconds, not the seconds its
 * maps text takes to format. -ENOTTY when the kernel has no PROCMAP_QUERY.
 */
static int maps_from_query(int fd, struct maps_builder *b, bool *cut, size_t *total)
{
	char name[MAPS_LINE_MAX], prev[MAPS_LINE_MAX] = "";
	uint64_t addr = 0, prev_ino = 0;
	uint32_t prev_maj = 0, prev_min = 0;
	bool have_prev = false;
	int err = 0, rc;

	for (;;) {
		struct procmap_query q = {.size = sizeof(q),
					  .query_flags = PROCMAP_QUERY_VMA_EXEC |
							 PROCMAP_QUERY_COVERING_OR_NEXT,
					  .query_addr = addr};
		struct parsed_line pl;

		if (ioctl(fd, PROCMAP_QUERY, &q)) {
			err = errno == ENOENT ? 0 : -errno; /* ENOENT: no further mapping */
			break;
		}
		*total += sizeof(q);
		memset(&pl, 0, sizeof(pl));
		pl.start = q.vma_start;
		pl.end = q.vma_end;
		pl.offset = q.vma_offset;
		pl.inode = q.inode;
		pl.major = q.dev_major;
		pl.minor = q.dev_minor;
		memcpy(pl.perms, "r-xp", 4);
		if (have_prev && q.inode && q.inode == prev_ino && q.dev_major == prev_maj &&
		    q.dev_minor == prev_min) {
			pl.path = prev;
		} else {
			/* again, with room for the name (files, and [vdso]-like special names) */
			q.vma_name_size = sizeof(name);
			q.vma_name_addr = (uint64_t)(uintptr_t)name;
			q.query_addr = q.vma_start;
			q.query_flags = PROCMAP_QUERY_VMA_EXEC | PROCMAP_QUERY_COVERING_OR_NEXT;
			name[0] = '\0';
			rc = ioctl(fd, PROCMAP_QUERY, &q) ? -errno : 0;
			if (rc && rc != -ENAMETOOLONG) {
				err = rc == -ENOENT ? 0 : rc;
				break;
			}
			if (q.vma_start != pl.start)
				continue; /* changed meanwhile: take it from the top of the loop */
			if (rc || !q.vma_name_size)
				name[0] = '\0';
			name[sizeof(name) - 1] = '\0';
			memcpy(prev, name, sizeof(prev));
			prev_ino = q.inode;
			prev_maj = q.dev_major;
			prev_min = q.dev_minor;
			have_prev = true;
			pl.path = prev;
		}
		pl.path_len = strlen(pl.path);
		err = builder_add(b, &pl);
		if (err == -E2BIG) {
			*cut = true;
			err = 0;
			if (b->n >= MAPS_MAX)
				break;
		}
		if (err || pl.end <= addr)
			break;
		addr = pl.end;
	}
	return err;
}

/* See proc_maps.h. */
bool proc_maps__exec_at(int fd, uint64_t addr, uint64_t *next)
{
	struct procmap_query q = {.size = sizeof(q),
				  .query_flags =
					  PROCMAP_QUERY_VMA_EXEC | PROCMAP_QUERY_COVERING_OR_NEXT,
				  .query_addr = addr};
	int rc;

	*next = 0;
	rc = ioctl(fd, PROCMAP_QUERY, &q) ? errno : 0;
	if (rc == ENOENT) {
		*next = UINT64_MAX; /* no executable mapping at or above addr */
		return false;
	}
	if (rc || q.vma_start <= addr)
		return true;
	*next = q.vma_start;
	return false;
}

/* See proc_maps.h. */
bool proc_maps__describe(int fd, uint64_t addr, char *buf, size_t len)
{
	char name[256] = "";
	struct procmap_query q = {.size = sizeof(q),
				  .query_addr = addr,
				  .vma_name_size = sizeof(name),
				  .vma_name_addr = (uint64_t)(uintptr_t)name};

	if (len)
		buf[0] = '\0';
	if (ioctl(fd, PROCMAP_QUERY, &q) || q.vma_start > addr)
		return false;
	name[sizeof(name) - 1] = '\0';
	snprintf(buf, len, "%llx-%llx %c%c%c%c %s", (unsigned long long)q.vma_start,
		 (unsigned long long)q.vma_end, q.vma_flags & PROCMAP_QUERY_VMA_READ ? 'r' : '-',
		 q.vma_flags & PROCMAP_QUERY_VMA_WRITE ? 'w' : '-',
		 q.vma_flags & PROCMAP_QUERY_VMA_EXEC ? 'x' : '-',
		 q.vma_flags & PROCMAP_QUERY_VMA_SHARED ? 's' : 'p',
		 name[0] ? name : "(anonymous)");
	return (q.vma_flags & PROCMAP_QUERY_VMA_EXEC) != 0;
}

/* See proc_maps.h. */
int proc_maps__read(int fd, bool *no_query, struct proc_maps *out)
{
	struct maps_builder b = {0};
	bool cut = false;
	size_t total = 0, k = 0;
	int err;

	memset(out, 0, sizeof(*out));
	err = *no_query ? -ENOTTY : maps_from_query(fd, &b, &cut, &total);
	if (err == -ENOTTY || err == -EINVAL || err == -EOPNOTSUPP) {
		/* no PROCMAP_QUERY here (before 6.11, or not a procfs file): the text */
		*no_query = true;
		b.n = 0;
		b.slen = b.scap ? 1 : 0;
		cut = false;
		err = maps_from_text(fd, &b, &cut, &total);
	}
	if (err)
		goto cleanup;
	/*
	 * Nothing executable: a zombie, or a process past exit_mm whose exit event is still in
	 * the ring buffer. The caller keeps the maps it had.
	 */
	if (!b.n) {
		err = -ESRCH;
		goto cleanup;
	}
	for (size_t i = 0; i < b.n; i++)
		b.maps[i].path = b.strs + (uintptr_t)b.maps[i].path;
	qsort(b.maps, b.n, sizeof(*b.maps), cmp_map);
	/* drop overlapping entries (cannot happen in a real maps file) */
	for (size_t i = 0; i < b.n; i++) {
		if (k && b.maps[i].start < b.maps[k - 1].end)
			continue;
		b.maps[k++] = b.maps[i];
	}
	for (size_t i = 0; i < k; i++) {
		struct proc_map *m = &b.maps[i];

		m->fm.start = m->start;
		m->fm.limit = m->end;
		m->fm.file_offset = m->offset;
		m->fm.file = m->path[0] ? m->path : NULL;
		m->fm.build_id = NULL;
	}
	out->maps = b.maps;
	out->n = k;
	out->strs = b.strs;
	out->bytes = b.cap * sizeof(*b.maps) + b.scap;
	out->cut = cut;
	out->bytes_read = total;
	b.maps = NULL;
	b.strs = NULL;
cleanup:
	free(b.maps);
	free(b.strs);
	return err;
}

/* See proc_maps.h. */
void proc_maps__release(struct proc_maps *m)
{
	free(m->maps);
	free(m->strs);
	m->maps = NULL;
	m->strs = NULL;
}
