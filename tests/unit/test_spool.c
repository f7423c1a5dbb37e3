// SPDX-License-Identifier: Apache-2.0
// Spool: round trip, byte/age bounds, corrupt files, restart ordering.
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <unistd.h>

#include "check.h"
#include "export/spool.h"

static char dir[256];

static struct export_item make_item(uint64_t seq, uint8_t *pprof, size_t len, char *w)
{
	static struct label_pair l[2];
	struct export_item it = {.labels = l,
				 .n_labels = 2,
				 .pprof = pprof,
				 .pprof_len = len,
				 .start_ns = 1000 + (int64_t)seq,
				 .end_ns = 2000 + (int64_t)seq,
				 .seq = seq};
	size_t i;

	l[0] = (struct label_pair){"service_name", "svc"};
	l[1] = (struct label_pair){"window", w};
	snprintf(w, 16, "%llu", (unsigned long long)seq);
	for (i = 0; i < len; i++)
		pprof[i] = (uint8_t)(seq * 7 + i);
	return it;
}

static void path_of(uint64_t order, char *buf, size_t len)
{
	snprintf(buf, len, "%s/%020llu.spool", dir, (unsigned long long)order);
}

static void test_round_trip_and_restart(void)
{
	struct spool *s = spool__open(dir, 0, 0);
	struct spool_record *r = NULL;
	struct spool_stats st;
	uint8_t pp[300];
	char w[16];
	uint64_t o, i;

	CHECK(s != NULL, "open: %s", strerror(errno));
	if (!s)
		return;
	for (i = 1; i <= 3; i++) {
		struct export_item it = make_item(i, pp, sizeof(pp), w);

		o = spool__next_order(s);
		CHECK_INT(spool__put(s, o, &it), 0);
	}
	spool__close(s);

	/* restart: files found, oldest first, next order after the existing ones */
	s = spool__open(dir, 0, 0);
	CHECK(s != NULL, "reopen");
	if (!s)
		return;
	spool__stats(s, &st);
	CHECK_INT(st.files, 3);
	CHECK(spool__next_order(s) > 3, "next order");
	for (i = 1; i <= 3; i++) {
		uint8_t expect[300];
		char we[16];

		make_item(i, expect, sizeof(expect), we);
		CHECK_INT(spool__read_oldest(s, &r), 0);
		if (!r)
			break;
		CHECK_INT(r->item.seq, i);
		CHECK_INT(r->item.start_ns, 1000 + i);
		CHECK_INT(r->item.end_ns, 2000 + i);
		CHECK_INT(r->item.n_labels, 2);
		CHECK_STR(r->item.labels[0].name, "service_name");
		CHECK_STR(r->item.labels[1].value, we);
		CHECK_INT(r->item.pprof_len, sizeof(expect));
		CHECK(!memcmp(r->item.pprof, expect, sizeof(expect)), "pprof bytes differ");
		CHECK_INT(spool__remove(s, r->order), 0);
		spool__record_free(r);
		r = NULL;
	}
	CHECK_INT(spool__read_oldest(s, &r), -ENOENT);
	CHECK_INT(spool__oldest(s), UINT64_MAX);
	spool__stats(s, &st);
	CHECK_INT(st.files, 0);
	CHECK_INT(st.bytes, 0);
	spool__close(s);
}

static void test_bounds(void)
{
	struct spool *s;
	struct spool_record *r = NULL;
	struct spool_stats st;
	uint8_t pp[4000];
	char w[16], path[512];
	struct timeval old[2] = {{1000, 0}, {1000, 0}};
	uint64_t i, first_size;

	/* bytes: incompressible-ish 4000-byte items, bound ~3 files */
	s = spool__open(dir, 1, 0);
	if (!s)
		return;
	{
		struct export_item it = make_item(1, pp, sizeof(pp), w);

		spool__put(s, spool__next_order(s), &it);
	}
	spool__stats(s, &st);
	first_size = st.bytes;
	spool__close(s);
	s = spool__open(dir, first_size * 3, 0);
	if (!s)
		return;
	for (i = 2; i <= 6; i++) {
		struct export_item it = make_item(i, pp, sizeof(pp), w);

		CHECK_INT(spool__put(s, spool__next_order(s), &it), 0);
	}
	spool__stats(s, &st);
	CHECK(st.bytes <= first_size * 3 + 64, "bytes %llu > bound", (unsigned long long)st.bytes);
	CHECK_INT(st.files, 3);
	CHECK_INT(st.dropped, 3);
	CHECK_INT(spool__read_oldest(s, &r), 0);
	CHECK_INT(r ? r->item.seq : 0, 4); /* the oldest ones went first */
	spool__record_free(r);
	spool__close(s);

	/* age: make two files old, reopen with a max age */
	for (i = 0; i < 2; i++) {
		s = spool__open(dir, 0, 0);
		if (!s)
			return;
		path_of(spool__oldest(s) + i, path, sizeof(path));
		spool__close(s);
		CHECK_INT(utimes(path, old), 0);
	}
	s = spool__open(dir, 0, 3600);
	if (!s)
		return;
	spool__stats(s, &st);
	CHECK_INT(st.files, 1);
	CHECK_INT(st.dropped, 2);
	CHECK_INT(spool__read_oldest(s, &r), 0);
	CHECK_INT(r ? r->item.seq : 0, 6);
	if (r)
		spool__remove(s, r->order);
	spool__record_free(r);
	spool__close(s);
}

static void write_file(const char *path, const void *data, size_t len)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);

	if (fd >= 0) {
		if (write(fd, data, len) != (ssize_t)len)
			perror("write");
		close(fd);
	}
}

static void test_corrupt(void)
{
	struct spool *s = spool__open(dir, 0, 0);
	struct spool_record *r = NULL;
	struct spool_stats st;
	uint8_t pp[100], junk[64], *buf;
	char w[16], path[512];
	uint64_t o1, o2, o3, o4;
	struct export_item it;
	FILE *f;
	long len;

	if (!s)
		return;
	it = make_item(10, pp, sizeof(pp), w);
	o1 = spool__next_order(s);
	spool__put(s, o1, &it);
	it = make_item(11, pp, sizeof(pp), w);
	o2 = spool__next_order(s);
	spool__put(s, o2, &it);
	it = make_item(12, pp, sizeof(pp), w);
	o3 = spool__next_order(s);
	spool__put(s, o3, &it);
	it = make_item(13, pp, sizeof(pp), w);
	o4 = spool__next_order(s);
	spool__put(s, o4, &it);
	spool__close(s);

	/* o1: random junk; o2: truncated; o3: one flipped byte in the payload */
	memset(junk, 0xa5, sizeof(junk));
	path_of(o1, path, sizeof(path));
	write_file(path, junk, sizeof(junk));
	path_of(o2, path, sizeof(path));
	CHECK_INT(truncate(path, 20), 0);
	path_of(o3, path, sizeof(path));
	f = fopen(path, "rb");
	fseek(f, 0, SEEK_END);
	len = ftell(f);
	rewind(f);
	buf = malloc((size_t)len);
	if (fread(buf, 1, (size_t)len, f) != (size_t)len)
		perror("fread");
	fclose(f);
	buf[len - 3] ^= 0xff;
	write_file(path, buf, (size_t)len);
	free(buf);
	/* a stray file with a bad name is ignored */
	snprintf(path, sizeof(path), "%s/garbage.txt", dir);
	write_file(path, "x", 1);

	s = spool__open(dir, 0, 0);
	if (!s)
		return;
	CHECK_INT(spool__read_oldest(s, &r), 0);
	CHECK_INT(r ? r->item.seq : 0, 13);
	spool__stats(s, &st);
	CHECK_INT(st.corrupt, 3);
	CHECK_INT(st.files, 1);
	if (r)
		spool__remove(s, r->order);
	spool__record_free(r);
	CHECK_INT(spool__read_oldest(s, &r), -ENOENT);
	spool__close(s);
}

/* Each destination (API, URL, tenant) spools into a directory of its own, named by it. */
static void test_dest_dir(void)
{
	char root[300], a[600], a2[600], b[600], c[600], path[700], text[256];
	FILE *f;
	size_t n;

	snprintf(root, sizeof(root), "%s/per-dest", dir);
	CHECK_INT(spool__dest_dir(root, "push http://a:4040 tenant=", a, sizeof(a)), 0);
	CHECK_INT(spool__dest_dir(root, "push http://a:4040 tenant=", a2, sizeof(a2)), 0);
	CHECK_INT(spool__dest_dir(root, "push http://b:4040 tenant=", b, sizeof(b)), 0);
	CHECK_INT(spool__dest_dir(root, "push http://a:4040 tenant=t2", c, sizeof(c)), 0);
	CHECK_STR(a, a2);
	CHECK(strcmp(a, b) && strcmp(a, c) && strcmp(b, c), "shared dirs: %s %s %s", a, b, c);
	CHECK(!strncmp(a, root, strlen(root)) && strlen(a) == strlen(root) + 17, "dir %s", a);
	snprintf(path, sizeof(path), "%s/DESTINATION", a);
	f = fopen(path, "r");
	CHECK(f != NULL, "no %s", path);
	if (f) {
		n = fread(text, 1, sizeof(text) - 1, f);
		text[n] = 0;
		fclose(f);
		CHECK_STR(text, "push http://a:4040 tenant=\n");
	}
	/* the DESTINATION file is no spool file, and a spool opened there starts empty */
	{
		struct spool *s = spool__open(a, 0, 0);
		struct spool_stats st;

		CHECK(s != NULL, "open %s", a);
		if (s) {
			spool__stats(s, &st);
			CHECK_INT(st.files, 0);
			CHECK_INT(st.corrupt, 0);
			CHECK_STR(spool__path(s), a);
			spool__close(s);
		}
	}
	/* a directory that belongs to another destination is refused, never shared */
	f = fopen(path, "w");
	if (f) {
		fputs("push http://other tenant=\n", f);
		fclose(f);
	}
	CHECK_INT(spool__dest_dir(root, "push http://a:4040 tenant=", a2, sizeof(a2)), -EEXIST);
	CHECK_INT(spool__dest_dir("", "x", a2, sizeof(a2)), -EINVAL);
}

int main(void)
{
	char cmd[300];

	snprintf(dir, sizeof(dir), "/tmp/mlprof-test-spool-XXXXXX");
	if (!mkdtemp(dir))
		return 1;
	test_round_trip_and_restart();
	test_bounds();
	test_corrupt();
	test_dest_dir();
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	if (system(cmd))
		fprintf(stderr, "cannot remove %s\n", dir);
	return check_done("spool");
}
