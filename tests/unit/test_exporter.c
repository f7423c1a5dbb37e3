// SPDX-License-Identifier: Apache-2.0
// Exporter against tests/integration/fault_server.py (fake Pyroscope): retries, 4xx, spool.
#include <dirent.h>
#include <errno.h>
#include <fnmatch.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <curl/curl.h>

#include "check.h"
#include "fds.h"
#include <zlib.h>

#include "export/exporter.h"
#include "profile.pb-c.h"

static char tmpdir[256];

static void msleep(unsigned int ms)
{
	struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000};

	nanosleep(&ts, NULL);
}

/* Starts the fault server; returns its pid and sets *port (0 = random). */
static pid_t start_server(int *port, bool require_tenant)
{
	char pf[300], portarg[16];
	pid_t pid;
	int i;

	snprintf(pf, sizeof(pf), "%s/port", tmpdir);
	unlink(pf);
	snprintf(portarg, sizeof(portarg), "%d", *port);
	pid = fork();
	if (pid == 0) {
		execlp("python3", "python3", TEST_SRC_DIR "/integration/fault_server.py", "--port",
		       portarg, "--port-file", pf, require_tenant ? "--require-tenant" : NULL,
		       (char *)NULL);
		_exit(127);
	}
	for (i = 0; i < 200; i++) {
		FILE *f = fopen(pf, "r");

		if (f) {
			int ok = fscanf(f, "%d", port);

			fclose(f);
			if (ok == 1)
				return pid;
		}
		msleep(25);
	}
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	return -1;
}

static void stop_server(pid_t pid)
{
	if (pid > 0) {
		kill(pid, SIGTERM);
		waitpid(pid, NULL, 0);
	}
}

struct buf {
	char *p;
	size_t len;
};

static size_t on_data(char *p, size_t sz, size_t n, void *ctx)
{
	struct buf *b = ctx;
	char *np = realloc(b->p, b->len + sz * n + 1);

	if (!np)
		return 0;
	memcpy(np + b->len, p, sz * n);
	b->len += sz * n;
	np[b->len] = 0;
	b->p = np;
	return sz * n;
}

/* GET or POST (body != NULL) on the control API; returns malloc'd body or NULL. */
static char *control(int port, const char *path, const char *body)
{
	struct buf b = {NULL, 0};
	char url[256];
	CURL *c = curl_easy_init();

	snprintf(url, sizeof(url), "http://127.0.0.1:%d%s", port, path);
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_data);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, &b);
	if (body)
		curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
	if (curl_easy_perform(c) != CURLE_OK) {
		free(b.p);
		b.p = NULL;
	}
	curl_easy_cleanup(c);
	if (!b.p)
		b.p = strdup("");
	return b.p;
}

static int count_lines(const char *s, const char *needle)
{
	int n = 0;

	for (; (s = strstr(s, needle)); s++)
		n++;
	return n;
}

static const uint8_t fake_pprof[] = {0x0a, 0x04, 0x08, 0x01, 0x10, 0x02};

static int submit(struct exporter *e, int window)
{
	char w[16];
	struct label_pair l[3] = {
		{"__name__", "process_cpu"}, {"service_name", "svc"}, {"window", w}};
	struct export_item it = {.labels = l,
				 .n_labels = 3,
				 .pprof = fake_pprof,
				 .pprof_len = sizeof(fake_pprof),
				 .seq = (uint64_t)window};
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	it.start_ns = (int64_t)ts.tv_sec * 1000000000 - 10000000000LL;
	it.end_ns = (int64_t)ts.tv_sec * 1000000000;
	snprintf(w, sizeof(w), "%d", window);
	return exporter__submit(e, &it);
}

static struct exporter_config base_cfg(char *url, size_t len, int port, const char *spool)
{
	struct exporter_config c = {
		.kind = EXPORTER_PUSH,
		.url = url,
		.connect_timeout_ms = 500,
		.timeout_ms = 2000,
		.max_retries = 3,
		.backoff_min_ms = 5,
		.backoff_max_ms = 40,
		.spool_dir = spool,
		.spool_max_bytes = 1 << 20,
		.queue_max_bytes = 1 << 20,
	};

	snprintf(url, len, "http://127.0.0.1:%d/", port);
	return c;
}

/* Waits until the server log has n lines containing needle; returns the log. */
static char *wait_log(int port, const char *needle, int n)
{
	char *log = NULL;
	int i;

	for (i = 0; i < 200; i++) {
		free(log);
		log = control(port, "/_control/log", NULL);
		if (count_lines(log, needle) >= n)
			break;
		msleep(50);
	}
	return log;
}

static void test_retry_and_headers(void)
{
	int port = 0;
	pid_t srv = start_server(&port, false);
	char url[128], *log;
	struct exporter_config c = base_cfg(url, sizeof(url), port, NULL);
	struct exporter_stats st;
	struct exporter *e;

	CHECK(srv > 0, "fault server did not start");
	c.tenant = "tenant-a";
	c.basic_user = "user";
	c.basic_password = "pass";
	e = exporter__new(&c);
	CHECK(e != NULL, "exporter__new: %s", strerror(errno));
	if (!e)
		goto out;

	/* 429 then 200: retried and delivered */
	free(control(port, "/_control/script", "[[429, \"slow down\"]]"));
	CHECK_INT(submit(e, 1), 0);
	CHECK_INT(exporter__flush(e, 5000), 0);
	log = control(port, "/_control/log", NULL);
	CHECK(strstr(log, "429 /push.v1.PusherService/Push") != NULL, "no 429 in %s", log);
	CHECK_INT(count_lines(log, "200 /push.v1.PusherService/Push"), 1);
	CHECK(strstr(log, "org=tenant-a") != NULL, "tenant header missing: %s", log);
	CHECK(strstr(log, "auth=Basic dXNlcjpwYXNz") != NULL, "basic auth missing: %s", log);
	CHECK(strstr(log, "ua=mlprof/") != NULL, "user agent: %s", log);
	CHECK(strstr(log, "cpv=1") != NULL, "connect header: %s", log);
	CHECK(strstr(log, "labels=__name__=process_cpu;service_name=svc;window=1") != NULL,
	      "labels: %s", log);
	free(log);
	exporter__stats(e, &st);
	CHECK_INT(st.pushed, 1);
	CHECK_INT(st.retries, 1);

	/* 500 twice: retried */
	free(control(port, "/_control/reset", "{}"));
	free(control(port, "/_control/script", "[[500, \"boom\"], [503, \"unavailable\"]]"));
	submit(e, 2);
	CHECK_INT(exporter__flush(e, 5000), 0);
	log = control(port, "/_control/log", NULL);
	CHECK_INT(count_lines(log, "\n"), 3);
	CHECK_INT(count_lines(log, "200 /push"), 1);
	free(log);
	exporter__stats(e, &st);
	CHECK_INT(st.pushed, 2);
	CHECK_INT(st.retries, 3);

	/* 400: not retried, counted, dropped */
	free(control(port, "/_control/reset", "{}"));
	free(control(port, "/_control/script", "[[400, \"profile too old\"]]"));
	submit(e, 3);
	CHECK_INT(exporter__flush(e, 5000), 0);
	msleep(100);
	log = control(port, "/_control/log", NULL);
	CHECK_INT(count_lines(log, "\n"), 1);
	CHECK_INT(count_lines(log, "400 /push"), 1);
	free(log);
	exporter__stats(e, &st);
	CHECK_INT(st.rejected_4xx, 1);
	CHECK_INT(st.pushed, 2);
	exporter__free(e);
out:
	stop_server(srv);
}

static void test_wrong_url_and_tenant(void)
{
	int port = 0, dead_port = 0;
	pid_t srv = start_server(&port, true), dead;
	char url[128], spool[300], *log;
	struct exporter_config c = base_cfg(url, sizeof(url), port, NULL);
	struct exporter_stats st;
	struct exporter *e;

	/* multitenancy on, no tenant: 401 "no org id", not retried */
	e = exporter__new(&c);
	if (!e)
		goto out;
	submit(e, 1);
	CHECK_INT(exporter__flush(e, 5000), 0);
	log = control(port, "/_control/log", NULL);
	CHECK_INT(count_lines(log, "401 /push"), 1);
	free(log);
	exporter__stats(e, &st);
	CHECK_INT(st.rejected_4xx, 1);
	CHECK_INT(st.retries, 0);
	exporter__free(e);

	/* wrong path: 404, not retried */
	free(control(port, "/_control/reset", "{}"));
	snprintf(url, sizeof(url), "http://127.0.0.1:%d/wrong/prefix", port);
	c.tenant = "t";
	e = exporter__new(&c);
	if (!e)
		goto out;
	submit(e, 1);
	exporter__flush(e, 5000);
	log = control(port, "/_control/log", NULL);
	CHECK_INT(count_lines(log, "404 /wrong/prefix/push.v1.PusherService/Push"), 1);
	free(log);
	exporter__stats(e, &st);
	CHECK_INT(st.rejected_4xx, 1);
	exporter__free(e);

	/* connection refused: retried, then spooled (nothing lost) */
	dead = start_server(&dead_port, false);
	stop_server(dead);
	snprintf(spool, sizeof(spool), "%s/spool-refused", tmpdir);
	c = base_cfg(url, sizeof(url), dead_port, spool);
	c.max_retries = 1;
	e = exporter__new(&c);
	if (!e)
		goto out;
	submit(e, 1);
	exporter__flush(e, 5000);
	exporter__stats(e, &st);
	CHECK_INT(st.spooled, 1);
	CHECK_INT(st.spool_files, 1);
	CHECK(st.failed >= 2, "failed %llu", (unsigned long long)st.failed);
	CHECK_INT(st.pushed, 0);
	exporter__free(e);
out:
	stop_server(srv);
}

/* Checks that the log holds windows 1..n exactly once each, in order, all with 200. */
static void check_order(const char *log, int n)
{
	const char *p = log;
	char needle[64];
	int w;

	for (w = 1; w <= n; w++) {
		const char *q;

		snprintf(needle, sizeof(needle), "window=%d name", w);
		q = strstr(p, needle);
		CHECK(q != NULL, "window %d missing or out of order in:\n%s", w, log);
		if (!q)
			return;
		CHECK(strstr(q + 1, needle) == NULL, "window %d delivered twice", w);
		p = q;
	}
	CHECK_INT(count_lines(log, "200 /push"), n);
}

static void test_down_then_up(void)
{
	int port = 0;
	pid_t srv = start_server(&port, false);
	char url[128], spool[300], *log;
	struct exporter_config c;
	struct exporter_stats st;
	struct exporter *e;
	int w;

	snprintf(spool, sizeof(spool), "%s/spool-down", tmpdir);
	c = base_cfg(url, sizeof(url), port, spool);
	c.max_retries = 1;
	stop_server(srv); /* backend down */

	/* first agent run: everything spooled, then the agent exits */
	e = exporter__new(&c);
	if (!e)
		return;
	for (w = 1; w <= 3; w++)
		CHECK_INT(submit(e, w), 0);
	exporter__flush(e, 5000);
	exporter__free(e);

	/* second agent run, backend still down: queue full spills too (order kept) */
	c.queue_max_bytes = 1; /* every item goes to the spool */
	e = exporter__new(&c);
	if (!e)
		return;
	exporter__stats(e, &st);
	CHECK_INT(st.spool_files, 3);
	for (w = 4; w <= 5; w++)
		CHECK_INT(submit(e, w), 0);
	/* submit never writes the spool itself: the sender does, behind it */
	exporter__flush(e, 5000);
	exporter__stats(e, &st);
	CHECK_INT(st.spool_files, 5);

	/* backend back on the same port: the spool drains oldest first */
	srv = start_server(&port, false);
	CHECK(srv > 0, "restart");
	c.queue_max_bytes = 1 << 20;
	log = wait_log(port, "200 /push", 5);
	for (w = 0; w < 100; w++) {
		exporter__stats(e, &st);
		if (!st.spool_files)
			break;
		msleep(50);
	}
	exporter__flush(e, 5000);
	/* a newer item goes after the spooled ones */
	submit(e, 6);
	exporter__flush(e, 5000);
	free(log);
	log = wait_log(port, "200 /push", 6);
	check_order(log, 6);
	exporter__stats(e, &st);
	CHECK_INT(st.spool_files, 0);
	CHECK_INT(st.pushed, 6);
	/* every attempt after a failed one is a retry: backoff retries and probes alike */
	CHECK(st.failed >= 1, "no failed attempt while the backend was down");
	CHECK_INT(st.retries, st.failed);
	free(log);
	exporter__free(e);
	stop_server(srv);
}

/* Profiles spooled for one URL or tenant are never sent to another one. */
static void test_spool_per_destination(void)
{
	int port_a = 0, port_b = 0;
	pid_t srv_a = start_server(&port_a, false), srv_b = start_server(&port_b, false);
	char url[128], spool[300], *log;
	struct exporter_config c;
	struct exporter_stats st;
	struct exporter *e;
	const char *dir_a;
	char saved_a[600];
	int w;

	CHECK(srv_a > 0 && srv_b > 0, "fault servers did not start");
	snprintf(spool, sizeof(spool), "%s/spool-dest", tmpdir);
	stop_server(srv_a); /* A is down: its profiles are spooled */
	srv_a = -1;
	c = base_cfg(url, sizeof(url), port_a, spool);
	c.max_retries = 1;
	e = exporter__new(&c);
	if (!e)
		goto out;
	for (w = 1; w <= 3; w++)
		submit(e, w);
	exporter__flush(e, 5000);
	dir_a = exporter__spool_dir(e);
	CHECK(dir_a && !strncmp(dir_a, spool, strlen(spool)) && dir_a[strlen(spool)] == '/',
	      "spool dir %s not under %s", dir_a ? dir_a : "(null)", spool);
	snprintf(saved_a, sizeof(saved_a), "%s", dir_a ? dir_a : "");
	exporter__free(e);

	/* same spool directory, another URL: A's profiles are neither seen nor sent */
	c = base_cfg(url, sizeof(url), port_b, spool);
	e = exporter__new(&c);
	if (!e)
		goto out;
	exporter__stats(e, &st);
	CHECK_INT(st.spool_files, 0);
	CHECK(strcmp(exporter__spool_dir(e), saved_a) != 0, "B spools into A's directory");
	submit(e, 4);
	exporter__flush(e, 5000);
	exporter__free(e);
	/* same URL as B, another tenant: nothing of B's or A's either */
	c.tenant = "t2";
	e = exporter__new(&c);
	if (!e)
		goto out;
	exporter__stats(e, &st);
	CHECK_INT(st.spool_files, 0);
	exporter__flush(e, 2000);
	exporter__free(e);
	log = wait_log(port_b, "200 /push", 1);
	CHECK_INT(count_lines(log, "200 /push"), 1);
	CHECK(strstr(log, "window=4 name") != NULL, "B did not get its own profile: %s", log);
	CHECK(strstr(log, "window=1 name") == NULL, "A's profile went to B: %s", log);
	free(log);

	/* A is back: its three profiles go there, in order */
	srv_a = start_server(&port_a, false);
	c = base_cfg(url, sizeof(url), port_a, spool);
	e = exporter__new(&c);
	if (!e)
		goto out;
	log = wait_log(port_a, "200 /push", 3);
	check_order(log, 3);
	free(log);
	exporter__flush(e, 5000);
	exporter__stats(e, &st);
	CHECK_INT(st.spool_files, 0);
	exporter__free(e);
out:
	stop_server(srv_a);
	stop_server(srv_b);
}

static void test_ingest(void)
{
	int port = 0;
	pid_t srv = start_server(&port, false);
	char url[128], *log;
	struct exporter_config c = base_cfg(url, sizeof(url), port, NULL);
	struct exporter *e;

	c.kind = EXPORTER_INGEST;
	e = exporter__new(&c);
	if (!e)
		goto out;
	submit(e, 7);
	exporter__flush(e, 5000);
	log = control(port, "/_control/log", NULL);
	CHECK(strstr(log, "200 /ingest") && strstr(log, "name=svc{window=7}"), "ingest: %s", log);
	free(log);
	exporter__free(e);
out:
	stop_server(srv);
}

static void test_file(void)
{
	char dir[300], url[8];
	struct exporter_config c = {.kind = EXPORTER_FILE, .out_dir = dir, .out_max_bytes = 100};
	struct exporter_stats st;
	struct exporter *e;
	char cmd[400];
	FILE *p;
	int n = 0, w;

	(void)url;
	snprintf(dir, sizeof(dir), "%s/out", tmpdir);
	e = exporter__new(&c);
	CHECK(e != NULL, "file exporter");
	if (!e)
		return;
	for (w = 1; w <= 5; w++)
		submit(e, w);
	exporter__flush(e, 5000);
	exporter__stats(e, &st);
	CHECK_INT(st.pushed, 5);
	CHECK(st.files_deleted >= 1, "files_deleted %llu", (unsigned long long)st.files_deleted);
	snprintf(cmd, sizeof(cmd), "ls %s | grep -c '^svc-.*Z-00000[0-9].pb.gz$'", dir);
	p = popen(cmd, "r");
	if (p) {
		if (fscanf(p, "%d", &n) != 1)
			n = -1;
		pclose(p);
	}
	CHECK(n >= 1 && n < 5, "files kept %d", n);
	exporter__free(e);
}

/*
 * Test double for a disk whose fsync fails (EIO): this program's fsync replaces libc's for
 * the code linked into it while fail_fsync is set.
 */
static volatile int fail_fsync;

int fsync(int fd)
{
	if (fail_fsync) {
		errno = EIO;
		return -1;
	}
	return (int)syscall(SYS_fsync, fd);
}

/* Names in dir (dot files included) matching the shell pattern pat. */
static int count_files(const char *dir, const char *pat)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	int n = 0;

	if (!d)
		return -1;
	while ((de = readdir(d)))
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, "..") &&
		    !fnmatch(pat, de->d_name, 0))
			n++;
	closedir(d);
	return n;
}

static int submit_svc(struct exporter *e, const char *svc, int seq)
{
	struct label_pair l[2] = {{"__name__", "process_cpu"}, {"service_name", svc}};
	struct export_item it = {.labels = l,
				 .n_labels = 2,
				 .pprof = fake_pprof,
				 .pprof_len = sizeof(fake_pprof),
				 .seq = (uint64_t)seq,
				 .start_ns = 1700000000000000000LL,
				 .end_ns = 1700000010000000000LL};

	return exporter__submit(e, &it);
}

/*
 * File names: a service starting with "." is not written as a dot file (those escape the
 * size bound), and two long names sharing their first 200 characters get two files. A
 * failed fsync leaves no descriptor open and no .tmp file behind.
 */
static void test_file_names_and_failures(void)
{
	char dir[300], a[260], b[260];
	struct exporter_config c = {.kind = EXPORTER_FILE,
				    .out_dir = dir,
				    .out_max_bytes = 1 << 20,
				    .max_retries = 2,
				    .backoff_min_ms = 1,
				    .backoff_max_ms = 2};
	struct exporter_stats st;
	struct exporter *e;
	int fds;

	snprintf(dir, sizeof(dir), "%s/names", tmpdir);
	memset(a, 'x', sizeof(a) - 1);
	a[sizeof(a) - 1] = '\0';
	memcpy(b, a, sizeof(b));
	a[sizeof(a) - 2] = 'A';
	b[sizeof(b) - 2] = 'B';
	e = exporter__new(&c);
	CHECK(e != NULL, "file exporter");
	if (!e)
		return;
	submit_svc(e, ".hidden", 1);
	submit_svc(e, a, 1);
	submit_svc(e, b, 1);
	exporter__flush(e, 5000);
	exporter__stats(e, &st);
	CHECK_INT(st.pushed, 3);
	CHECK_INT(count_files(dir, ".*"), 0);
	CHECK_INT(count_files(dir, "_hidden-*Z-000001.pb.gz"), 1);
	CHECK_INT(count_files(dir, "xxxx*~*-*Z-000001.pb.gz"), 2);

	fds = count_fds(NULL, NULL);
	fail_fsync = 1;
	submit_svc(e, "svc", 2);
	exporter__flush(e, 5000);
	fail_fsync = 0;
	exporter__stats(e, &st);
	CHECK_INT(st.pushed, 3);
	CHECK(st.failed >= 1, "no failed write");
	CHECK_INT(count_fds(NULL, NULL), fds);
	CHECK_INT(count_files(dir, ".*"), 0);
	CHECK_INT(count_files(dir, "svc-*"), 0);
	exporter__free(e);
}

/* Fetches the last pushed raw profile and decodes it (gunzip + unpack). */
static Perftools__Profiles__Profile *last_profile(int port)
{
	struct buf b = {NULL, 0};
	char url[128];
	CURL *c = curl_easy_init();
	uint8_t *out = malloc(32 << 20);
	uLongf out_len = 32 << 20;
	Perftools__Profiles__Profile *p = NULL;
	z_stream zs = {0};

	snprintf(url, sizeof(url), "http://127.0.0.1:%d/_control/last_profile", port);
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_data);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, &b);
	if (curl_easy_perform(c) == CURLE_OK && b.p && out &&
	    inflateInit2(&zs, 16 + MAX_WBITS) == Z_OK) {
		zs.next_in = (Bytef *)b.p;
		zs.avail_in = (uInt)b.len;
		zs.next_out = out;
		zs.avail_out = (uInt)out_len;
		if (inflate(&zs, Z_FINISH) == Z_STREAM_END)
			p = perftools__profiles__profile__unpack(NULL, zs.total_out, out);
		inflateEnd(&zs);
	}
	curl_easy_cleanup(c);
	free(b.p);
	free(out);
	return p;
}

/* 20000 distinct samples (over Pyroscope's 16000): trimmed, totals kept. */
static void test_trim(void)
{
	enum { N = 20000 };
	int port = 0;
	pid_t srv = start_server(&port, false);
	char url[128];
	struct exporter_config c = base_cfg(url, sizeof(url), port, NULL);
	Perftools__Profiles__Profile pp = PERFTOOLS__PROFILES__PROFILE__INIT, *got;
	Perftools__Profiles__ValueType vt = PERFTOOLS__PROFILES__VALUE_TYPE__INIT, *vtp = &vt;
	Perftools__Profiles__Sample *samples = calloc(N, sizeof(*samples)), **sp;
	Perftools__Profiles__Location *locs = calloc(N, sizeof(*locs)), **lp;
	Perftools__Profiles__Function *fns = calloc(N, sizeof(*fns)), **fp;
	Perftools__Profiles__Line *lines = calloc(N, sizeof(*lines)), **lnp;
	uint64_t *ids = calloc(N, sizeof(*ids));
	int64_t *vals = calloc(N, sizeof(*vals)), total = 0, got_total = 0;
	char **strs = calloc(N + 3, sizeof(*strs));
	struct label_pair l[2] = {{"__name__", "process_cpu"}, {"service_name", "svc"}};
	struct export_item it = {.labels = l, .n_labels = 2};
	struct exporter_stats st;
	struct exporter *e;
	uint8_t *packed;
	size_t i;
	bool found = false;

	sp = calloc(N, sizeof(*sp));
	lp = calloc(N, sizeof(*lp));
	fp = calloc(N, sizeof(*fp));
	lnp = calloc(N, sizeof(*lnp));
	strs[0] = "";
	strs[1] = "cpu";
	strs[2] = "nanoseconds";
	vt.type = 1;
	vt.unit = 2;
	for (i = 0; i < N; i++) {
		char *name = malloc(32);

		snprintf(name, 32, "func_%zu", i);
		strs[3 + i] = name;
		perftools__profiles__function__init(&fns[i]);
		fns[i].id = i + 1;
		fns[i].name = (int64_t)(3 + i);
		perftools__profiles__line__init(&lines[i]);
		lines[i].function_id = i + 1;
		lnp[i] = &lines[i];
		perftools__profiles__location__init(&locs[i]);
		locs[i].id = i + 1;
		locs[i].n_line = 1;
		locs[i].line = &lnp[i];
		perftools__profiles__sample__init(&samples[i]);
		ids[i] = i + 1;
		vals[i] = (int64_t)(i + 1) * 1000;
		total += vals[i];
		samples[i].n_location_id = 1;
		samples[i].location_id = &ids[i];
		samples[i].n_value = 1;
		samples[i].value = &vals[i];
		sp[i] = &samples[i];
		lp[i] = &locs[i];
		fp[i] = &fns[i];
	}
	pp.n_sample_type = 1;
	pp.sample_type = &vtp;
	pp.n_sample = N;
	pp.sample = sp;
	pp.n_location = N;
	pp.location = lp;
	pp.n_function = N;
	pp.function = fp;
	pp.n_string_table = N + 3;
	pp.string_table = strs;
	it.pprof_len = perftools__profiles__profile__get_packed_size(&pp);
	packed = malloc(it.pprof_len);
	perftools__profiles__profile__pack(&pp, packed);
	it.pprof = packed;

	e = exporter__new(&c);
	if (!e)
		goto out;
	CHECK_INT(exporter__submit(e, &it), 0);
	exporter__flush(e, 10000);
	exporter__stats(e, &st);
	CHECK_INT(st.trimmed, 1);
	CHECK_INT(st.pushed, 1);
	got = last_profile(port);
	CHECK(got != NULL, "cannot decode the pushed profile");
	if (got) {
		CHECK_INT(got->n_sample, 16000);
		for (i = 0; i < got->n_sample; i++)
			got_total += got->sample[i]->value[0];
		CHECK_INT(got_total, total);
		for (i = 0; i < got->n_string_table; i++)
			if (!strcmp(got->string_table[i], "[trimmed: 4001 samples]"))
				found = true;
		CHECK(found, "no [trimmed: 4001 samples] frame");
		CHECK(got->n_location <= 16000, "locations not pruned: %zu", got->n_location);
		perftools__profiles__profile__free_unpacked(got, NULL);
	}
	exporter__free(e);
out:
	stop_server(srv);
	for (i = 0; i < N; i++)
		free(strs[3 + i]);
	free(strs), free(sp), free(lp), free(fp), free(lnp), free(samples), free(locs);
	free(fns), free(lines), free(ids), free(vals), free(packed);
}

int main(void)
{
	char cmd[300];

	curl_global_init(CURL_GLOBAL_DEFAULT);
	snprintf(tmpdir, sizeof(tmpdir), "/tmp/mlprof-test-exporter-XXXXXX");
	if (!mkdtemp(tmpdir))
		return 1;
	test_retry_and_headers();
	test_wrong_url_and_tenant();
	test_down_then_up();
	test_spool_per_destination();
	test_ingest();
	test_file();
	test_file_names_and_failures();
	test_trim();
	snprintf(cmd, sizeof(cmd), "rm -rf %s", tmpdir);
	if (system(cmd))
		fprintf(stderr, "cannot clean %s\n", tmpdir);
	return check_done("exporter");
}
