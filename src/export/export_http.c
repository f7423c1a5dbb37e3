// SPDX-License-Identifier: Apache-2.0
/* HTTP POST for the exporter backends (libcurl): headers, TLS, auth, answer classification. */
#include "export/export_http.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <curl/curl.h>

#define LOG_MODULE "exporter"
#include "util/log.h"
#include "util/redact.h"

/* Sockets one transfer may have open at once (happy eyeballs: one a family, plus a proxy). */
#define MAX_SOCKETS 4

struct export_http {
	const struct exporter_config *cfg;
	const bool *stop;
	CURL *curl;
	/* the sockets curl has open, for export_http__abort (another thread) */
	pthread_mutex_t sock_lock;
	int socks[MAX_SOCKETS];
	bool aborted; /* sockets opened after export_http__abort are shut down at once */
};

/* See export_http.h. */
struct export_http *export_http__new(const struct exporter_config *cfg, const bool *stop)
{
	struct export_http *h = calloc(1, sizeof(*h));

	if (!h)
		return NULL;
	h->cfg = cfg;
	h->stop = stop;
	pthread_mutex_init(&h->sock_lock, NULL);
	for (int i = 0; i < MAX_SOCKETS; i++)
		h->socks[i] = -1;
	curl_global_init(CURL_GLOBAL_DEFAULT);
	h->curl = curl_easy_init();
	if (!h->curl) {
		pthread_mutex_destroy(&h->sock_lock);
		free(h);
		errno = ENOMEM;
		return NULL;
	}
	return h;
}

/* See export_http.h. */
void export_http__free(struct export_http *h)
{
	if (!h)
		return;
	curl_easy_cleanup(h->curl); /* (closes its sockets through on_close) */
	pthread_mutex_destroy(&h->sock_lock);
	free(h);
}

/* curl's sockets are opened here so that export_http__abort can shut them down. */
static curl_socket_t on_open(void *ctx, curlsocktype purpose, struct curl_sockaddr *a)
{
	struct export_http *h = ctx;
	int fd;

	(void)purpose;
	fd = socket(a->family, a->socktype | SOCK_CLOEXEC, a->protocol);
	if (fd < 0)
		return CURL_SOCKET_BAD;
	pthread_mutex_lock(&h->sock_lock);
	for (int i = 0; i < MAX_SOCKETS; i++)
		if (h->socks[i] < 0) {
			h->socks[i] = fd;
			break;
		}
	if (h->aborted)
		shutdown(fd, SHUT_RDWR);
	pthread_mutex_unlock(&h->sock_lock);
	return fd;
}

/* Closed under the lock: export_http__abort never shuts down a number reused meanwhile. */
static int on_close(void *ctx, curl_socket_t fd)
{
	struct export_http *h = ctx;
	int rc;

	pthread_mutex_lock(&h->sock_lock);
	for (int i = 0; i < MAX_SOCKETS; i++)
		if (h->socks[i] == fd)
			h->socks[i] = -1;
	rc = close(fd);
	pthread_mutex_unlock(&h->sock_lock);
	return rc;
}

/* See export_http.h. */
void export_http__abort(struct export_http *h)
{
	if (!h)
		return;
	pthread_mutex_lock(&h->sock_lock);
	h->aborted = true;
	for (int i = 0; i < MAX_SOCKETS; i++)
		if (h->socks[i] >= 0)
			shutdown(h->socks[i], SHUT_RDWR);
	pthread_mutex_unlock(&h->sock_lock);
}

struct body {
	char buf[1024];
	size_t len;
};

static size_t on_body(char *p, size_t sz, size_t n, void *ctx)
{
	struct body *b = ctx;
	size_t len = sz * n, room = sizeof(b->buf) - 1 - b->len;

	memcpy(b->buf + b->len, p, len < room ? len : room);
	b->len += len < room ? len : room;
	b->buf[b->len] = 0;
	return len;
}

/* Extracts "message" from Pyroscope's {"code":..,"message":".."}; else the raw text. */
static void server_message(const char *body, char *out, size_t len)
{
	const char *m = strstr(body, "\"message\"");
	size_t i = 0;

	if (m && (m = strchr(m + 9, '"'))) {
		for (m++; *m && *m != '"' && i + 1 < len; m++) {
			if (*m == '\\' && m[1])
				m++;
			out[i++] = *m;
		}
		out[i] = 0;
		return;
	}
	if (snprintf(out, len, "%s", body) >= (int)len)
		pr_debug("server message truncated to %zu bytes", len - 1);
	for (i = 0; out[i]; i++)
		if (out[i] == '\n' || out[i] == '\r')
			out[i] = ' ';
}

/* Aborts a transfer in flight once the owner asked to stop (exporter__free). */
static int on_progress(void *ctx, curl_off_t dlt, curl_off_t dl, curl_off_t ult, curl_off_t ul)
{
	struct export_http *h = ctx;

	return __atomic_load_n(h->stop, __ATOMIC_RELAXED) ? 1 : 0;
}

/* See export_http.h. */
enum export_status export_http__post(struct export_http *http, const char *url,
				     const char *content_type, const char *const *hdrs,
				     const void *body, size_t len, struct export_result *res)
{
	const struct exporter_config *c = http->cfg;
	struct curl_slist *h = NULL, *nh;
	struct body rb = {.len = 0};
	char line[1024];
	CURLcode rc;
	long status = 0;
	int i;

	res->http_status = 0;
	res->message[0] = 0;
	curl_easy_reset(http->curl);
	snprintf(line, sizeof(line), "Content-Type: %s", content_type);
	nh = curl_slist_append(h, line);
	h = nh ? nh : h;
	if (c->tenant && *c->tenant) {
		snprintf(line, sizeof(line), "X-Scope-OrgID: %s", c->tenant);
		nh = curl_slist_append(h, line);
		h = nh ? nh : h;
	}
	if (c->bearer_token && *c->bearer_token) {
		snprintf(line, sizeof(line), "Authorization: Bearer %s", c->bearer_token);
		nh = curl_slist_append(h, line);
		h = nh ? nh : h;
	}
	for (i = 0; hdrs && hdrs[i]; i++) {
		nh = curl_slist_append(h, hdrs[i]);
		h = nh ? nh : h;
	}
	for (i = 0; c->headers && c->headers[i]; i++) {
		nh = curl_slist_append(h, c->headers[i]);
		h = nh ? nh : h;
	}
	/* no "Expect: 100-continue" round trip for big bodies */
	nh = curl_slist_append(h, "Expect:");
	h = nh ? nh : h;
	if (!h) {
		snprintf(res->message, sizeof(res->message), "out of memory");
		return EXPORT_RETRYABLE;
	}
	curl_easy_setopt(http->curl, CURLOPT_URL, url);
	curl_easy_setopt(http->curl, CURLOPT_POST, 1L);
	curl_easy_setopt(http->curl, CURLOPT_POSTFIELDS, body);
	curl_easy_setopt(http->curl, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)len);
	curl_easy_setopt(http->curl, CURLOPT_HTTPHEADER, h);
	curl_easy_setopt(http->curl, CURLOPT_USERAGENT, "mlprof/" MLPROF_VERSION);
	curl_easy_setopt(http->curl, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(http->curl, CURLOPT_CONNECTTIMEOUT_MS, (long)c->connect_timeout_ms);
	curl_easy_setopt(http->curl, CURLOPT_TIMEOUT_MS, (long)c->timeout_ms);
	curl_easy_setopt(http->curl, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(http->curl, CURLOPT_WRITEDATA, &rb);
	curl_easy_setopt(http->curl, CURLOPT_NOPROGRESS, 0L);
	curl_easy_setopt(http->curl, CURLOPT_XFERINFOFUNCTION, on_progress);
	curl_easy_setopt(http->curl, CURLOPT_XFERINFODATA, http);
	curl_easy_setopt(http->curl, CURLOPT_OPENSOCKETFUNCTION, on_open);
	curl_easy_setopt(http->curl, CURLOPT_OPENSOCKETDATA, http);
	curl_easy_setopt(http->curl, CURLOPT_CLOSESOCKETFUNCTION, on_close);
	curl_easy_setopt(http->curl, CURLOPT_CLOSESOCKETDATA, http);
	curl_easy_setopt(http->curl, CURLOPT_SSL_VERIFYPEER, c->insecure_skip_verify ? 0L : 1L);
	curl_easy_setopt(http->curl, CURLOPT_SSL_VERIFYHOST, c->insecure_skip_verify ? 0L : 2L);
	if (c->ca_file && *c->ca_file)
		curl_easy_setopt(http->curl, CURLOPT_CAINFO, c->ca_file);
	if (c->basic_user && *c->basic_user) {
		curl_easy_setopt(http->curl, CURLOPT_HTTPAUTH, (long)CURLAUTH_BASIC);
		curl_easy_setopt(http->curl, CURLOPT_USERNAME, c->basic_user);
		curl_easy_setopt(http->curl, CURLOPT_PASSWORD,
				 c->basic_password ? c->basic_password : "");
	}
	rc = curl_easy_perform(http->curl);
	curl_slist_free_all(h);
	if (rc != CURLE_OK) {
		char shown[1024];

		snprintf(res->message, sizeof(res->message), "%s: %s",
			 redact__url(url, shown, sizeof(shown)), curl_easy_strerror(rc));
		return EXPORT_RETRYABLE;
	}
	curl_easy_getinfo(http->curl, CURLINFO_RESPONSE_CODE, &status);
	res->http_status = status;
	if (status >= 200 && status < 300)
		return EXPORT_SENT;
	server_message(rb.buf, res->message, sizeof(res->message));
	if (status == 429 || status >= 500 || status == 408)
		return EXPORT_RETRYABLE;
	return EXPORT_REJECTED;
}
