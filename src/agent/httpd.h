/* SPDX-License-Identifier: Apache-2.0 */
/* A tiny single-threaded HTTP/1.x server for /metrics, /healthz and /readyz. */
#ifndef MLPROF_HTTPD_H
#define MLPROF_HTTPD_H

#include <stddef.h>

struct httpd;

/* A response built by the handler: body is malloc'd (freed by the server) or NULL. */
struct http_response {
	int status;		  /* 200, 404, 503 ... */
	const char *content_type; /* static string */
	char *body;
	size_t body_len;
};

/*
 * Called on the server thread for every GET/HEAD request with the path (query removed).
 * Must fill resp; status 0 means 404.
 */
typedef void (*httpd_handler)(void *ctx, const char *path, struct http_response *resp);

/*
 * Binds addr ("host:port", "[v6]:port"; host "" means all interfaces) and starts the
 * server thread. Requests are bounded (8 KiB), connections bounded (32) and closed after
 * one response or 10 s idle. NULL with errno on failure (logged).
 */
struct httpd *httpd__new(const char *addr, httpd_handler handler, void *ctx);
/*
 * Parses "host:port" / "[v6]:port" / ":port" into host (may be "", bracket-less) and port.
 * Returns 0 or -EINVAL (also when host does not fit in hostlen).
 */
int httpd__split_addr(const char *addr, char *host, size_t hostlen, unsigned int *port);
/* The bound port (useful with port 0). */
unsigned int httpd__port(const struct httpd *h);
/* Stops the thread, closes every socket, frees. */
void httpd__free(struct httpd *h);

#endif
