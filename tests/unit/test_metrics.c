// SPDX-License-Identifier: Apache-2.0
/* Unit tests of the Prometheus text rendering and of the tiny HTTP server serving it. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "agent/httpd.h"
#include "agent/metrics.h"
#include "check.h"

static int collected;

static void collect(struct metrics *m, void *ctx)
{
	int *ids = ctx;

	collected++;
	/* called with the lock held: metrics__set must not deadlock */
	metrics__set(m, ids[0], NULL, NULL, 1234567, 0);
}

static const char expected[] =
	"# HELP mlprof_samples_total Samples taken\n"
	"# TYPE mlprof_samples_total counter\n"
	"mlprof_samples_total 1234567\n"
	"# HELP mlprof_samples_dropped_total Samples dropped, by reason\n"
	"# TYPE mlprof_samples_dropped_total counter\n"
	"mlprof_samples_dropped_total{reason=\"late\"} 3\n"
	"mlprof_samples_dropped_total{reason=\"ring_buffer_full\"} 0\n"
	"# HELP mlprof_spool_bytes Bytes in the spool\\\\n and a backslash \\\\ and a\\nnewline\n"
	"# TYPE mlprof_spool_bytes gauge\n"
	"mlprof_spool_bytes 1.5\n"
	"# HELP mlprof_push_latency_seconds Push latency\n"
	"# TYPE mlprof_push_latency_seconds summary\n"
	"mlprof_push_latency_seconds_sum 0.25\n"
	"mlprof_push_latency_seconds_count 4\n"
	"# HELP mlprof_weird Odd values\n"
	"# TYPE mlprof_weird gauge\n"
	"mlprof_weird{v=\"q\\\"uo\\\\te\\n\"} NaN\n"
	"mlprof_weird{v=\"inf\"} +Inf\n"
	"mlprof_weird{v=\"big\"} 1.8446744073709552e+19\n";

static struct metrics *build(int *ids)
{
	struct metrics *m = metrics__new(collect, ids);

	ids[0] = metrics__register(m, "mlprof_samples_total", METRIC_COUNTER, "Samples taken");
	ids[1] = metrics__register(m, "mlprof_samples_dropped_total", METRIC_COUNTER,
				   "Samples dropped, by reason");
	ids[2] = metrics__register(m, "mlprof_spool_bytes", METRIC_GAUGE,
				   "Bytes in the spool\\n and a backslash \\ and a\nnewline");
	ids[3] =
		metrics__register(m, "mlprof_push_latency_seconds", METRIC_SUMMARY, "Push latency");
	ids[4] = metrics__register(m, "mlprof_weird", METRIC_GAUGE, "Odd values");
	ids[5] = metrics__register(m, "mlprof_unset", METRIC_GAUGE, "Never set: not rendered");
	metrics__set(m, ids[1], "reason", "late", 3, 0);
	metrics__set(m, ids[1], "reason", "ring_buffer_full", 0, 0);
	metrics__set(m, ids[2], NULL, NULL, 1.5, 0);
	metrics__set(m, ids[3], NULL, NULL, 0.25, 4);
	metrics__set(m, ids[4], "v", "q\"uo\\te\n", 0.0 / 0.0, 0);
	metrics__set(m, ids[4], "v", "inf", 1.0 / 0.0, 0);
	metrics__set(m, ids[4], "v", "big", 18446744073709551615.0, 0);
	return m;
}

static void test_render(void)
{
	int ids[8];
	struct metrics *m = build(ids);
	char *out = NULL;
	size_t len = 0;

	CHECK(m != NULL, "metrics__new");
	CHECK_INT(ids[0], 0);
	CHECK_INT(ids[5], 5);
	CHECK_INT(metrics__register(m, "mlprof_samples_total", METRIC_COUNTER, "again"), 0);
	CHECK_INT(metrics__register(m, "bad-name", METRIC_GAUGE, "x"), -EINVAL);
	CHECK_INT(metrics__register(m, "9lives", METRIC_GAUGE, "x"), -EINVAL);
	CHECK_INT(metrics__set(m, ids[1], "bad label", "x", 1, 0), -EINVAL);
	CHECK_INT(metrics__set(m, 99, NULL, NULL, 1, 0), -EINVAL);
	CHECK_INT(metrics__render(m, &out, &len), 0);
	CHECK_INT(collected, 1);
	CHECK_STR(out, expected);
	CHECK_INT(len, strlen(expected));
	free(out);

	/* updates replace values in place */
	metrics__set(m, ids[1], "reason", "late", 4, 0);
	CHECK_INT(metrics__render(m, &out, &len), 0);
	CHECK(strstr(out, "mlprof_samples_dropped_total{reason=\"late\"} 4\n") != NULL,
	      "update lost: %s", out);
	free(out);

	/* series bound */
	{
		char v[16];
		int err = 0;
		for (int i = 0; i < METRICS_MAX_SERIES + 5 && !err; i++) {
			snprintf(v, sizeof(v), "v%d", i);
			err = metrics__set(m, ids[5], "k", v, i, 0);
		}
		CHECK_INT(err, -ENOSPC);
	}
	metrics__free(m);
}

static void handler(void *ctx, const char *path, struct http_response *r)
{
	struct metrics *m = ctx;

	if (!strcmp(path, "/metrics")) {
		r->status = metrics__render(m, &r->body, &r->body_len) ? 503 : 200;
		r->content_type = "text/plain; version=0.0.4";
	} else if (!strcmp(path, "/readyz")) {
		r->status = 503;
		r->body = strdup("starting\n");
		r->body_len = 9;
	}
}

static char *http(unsigned int port, const char *req)
{
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
	static char buf[16384];
	size_t n = 0;
	ssize_t r;
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa))) {
		if (fd >= 0)
			close(fd);
		return NULL;
	}
	if (write(fd, req, strlen(req)) < 0) {
		close(fd);
		return NULL;
	}
	while (n < sizeof(buf) - 1 && (r = read(fd, buf + n, sizeof(buf) - 1 - n)) > 0)
		n += (size_t)r;
	buf[n] = '\0';
	close(fd);
	return buf;
}

static void test_httpd(void)
{
	int ids[8];
	struct metrics *m = build(ids);
	struct httpd *h = httpd__new("127.0.0.1:0", handler, m);
	unsigned int port;
	char *r, big[12000];

	CHECK(h != NULL, "httpd__new: %s", strerror(errno));
	if (!h) {
		metrics__free(m);
		return;
	}
	port = httpd__port(h);
	CHECK(port > 0, "port 0");
	r = http(port, "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n");
	CHECK(r && !strncmp(r, "HTTP/1.1 200 OK\r\n", 17), "GET /metrics: %s", r ? r : "(none)");
	CHECK(r && strstr(r, "Content-Type: text/plain; version=0.0.4\r\n"), "content type");
	CHECK(r && strstr(r, "\r\n\r\n# HELP mlprof_samples_total Samples taken\n"), "body: %s",
	      r ? r : "(none)");
	CHECK(r && strstr(r, "Content-Length: "), "length");
	r = http(port, "GET /metrics?x=1 HTTP/1.0\n\n");
	CHECK(r && !strncmp(r, "HTTP/1.1 200 OK", 15), "query string: %s", r ? r : "(none)");
	r = http(port, "GET /readyz HTTP/1.1\r\n\r\n");
	CHECK(r && !strncmp(r, "HTTP/1.1 503 Service Unavailable", 32) && strstr(r, "starting"),
	      "readyz: %s", r ? r : "(none)");
	r = http(port, "GET /nope HTTP/1.1\r\n\r\n");
	CHECK(r && !strncmp(r, "HTTP/1.1 404 Not Found", 22), "404: %s", r ? r : "(none)");
	r = http(port, "POST /metrics HTTP/1.1\r\n\r\n");
	CHECK(r && !strncmp(r, "HTTP/1.1 405", 12), "405: %s", r ? r : "(none)");
	r = http(port, "HEAD /metrics HTTP/1.1\r\n\r\n");
	CHECK(r && !strncmp(r, "HTTP/1.1 200", 12) && !strstr(r, "# HELP"), "HEAD: %s",
	      r ? r : "(none)");
	memset(big, 'a', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	memcpy(big, "GET /", 5);
	r = http(port, big);
	CHECK(r && (!strncmp(r, "HTTP/1.1 413", 12) || !*r), "oversized request: %s",
	      r ? r : "(none)");
	r = http(port, "garbage\r\n\r\n");
	CHECK(r && !strncmp(r, "HTTP/1.1 400", 12), "400: %s", r ? r : "(none)");
	httpd__free(h);
	CHECK(httpd__new("nonsense", handler, m) == NULL && errno == EINVAL, "bad address");
	metrics__free(m);
}

int main(void)
{
	test_render();
	test_httpd();
	return check_done("metrics");
}
