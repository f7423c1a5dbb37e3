// SPDX-License-Identifier: Apache-2.0
/* A tiny poll()-based HTTP server thread: one request per connection, bounded everything. */
#define LOG_MODULE "httpd"
#include "agent/httpd.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "util/clock.h"
#include "util/log.h"

#define HTTPD_MAX_CONNS	  32
#define HTTPD_MAX_REQUEST 8192
/*
 * A client has HTTPD_HEADER_MS from its connect to send its request headers, and
 * HTTPD_WRITE_MS to take the response. At most HTTPD_PER_PEER connections per peer address;
 * when every slot is taken, a new connection replaces the oldest one still waiting for its
 * request. Together: idle or slow clients cannot keep /healthz from answering (32 idle
 * connections held the slots for 10 s each and the kubelet restarted the agent).
 */
#define HTTPD_HEADER_MS 2000
#define HTTPD_WRITE_MS	10000
#define HTTPD_PER_PEER	4

struct conn {
	int fd;
	struct sockaddr_storage peer;
	int64_t accepted_ms;
	char req[HTTPD_MAX_REQUEST + 1];
	size_t req_len;
	char *out; /* response bytes (malloc'd) */
	size_t out_len, out_off;
	int64_t deadline_ms;
};

struct httpd {
	int lfd;
	int wake[2]; /* self-pipe to stop the thread */
	unsigned int port;
	pthread_t thread;
	bool started;
	httpd_handler handler;
	void *ctx;
	struct conn conns[HTTPD_MAX_CONNS];
};

static int64_t now_ms(void)
{
	return (int64_t)(clock__mono_ns() / 1000000);
}

static void conn_close(struct conn *c)
{
	if (c->fd >= 0)
		close(c->fd);
	free(c->out);
	c->out = NULL;
	c->fd = -1;
	c->req_len = c->out_len = c->out_off = 0;
}

static const char *reason(int status)
{
	switch (status) {
	case 200:
		return "OK";
	case 400:
		return "Bad Request";
	case 404:
		return "Not Found";
	case 405:
		return "Method Not Allowed";
	case 413:
		return "Request Entity Too Large";
	case 503:
		return "Service Unavailable";
	default:
		return "Error";
	}
}

static void respond(struct conn *c, int status, const char *ctype, const char *body, size_t blen,
		    bool head)
{
	char hdr[256];
	int hl = snprintf(hdr, sizeof(hdr),
			  "HTTP/1.1 %d %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\n"
			  "Connection: close\r\n\r\n",
			  status, reason(status), ctype, blen);

	if (head)
		blen = 0;
	c->out = malloc((size_t)hl + blen);
	if (!c->out) {
		conn_close(c);
		return;
	}
	memcpy(c->out, hdr, (size_t)hl);
	if (blen)
		memcpy(c->out + hl, body, blen);
	c->out_len = (size_t)hl + blen;
	c->out_off = 0;
	c->deadline_ms = now_ms() + HTTPD_WRITE_MS;
}

static void handle_request(struct httpd *h, struct conn *c)
{
	char method[8], path[1024];
	struct http_response r = {.status = 0};
	char *sp1, *sp2, *q;
	bool head;

	sp1 = memchr(c->req, ' ', c->req_len);
	if (!sp1 || sp1 - c->req >= (long)sizeof(method)) {
		respond(c, 400, "text/plain", "bad request\n", 12, false);
		return;
	}
	memcpy(method, c->req, (size_t)(sp1 - c->req));
	method[sp1 - c->req] = '\0';
	sp2 = strchr(sp1 + 1, ' ');
	if (!sp2 || sp2 - sp1 - 1 >= (long)sizeof(path) || sp2 == sp1 + 1) {
		respond(c, 400, "text/plain", "bad request\n", 12, false);
		return;
	}
	memcpy(path, sp1 + 1, (size_t)(sp2 - sp1 - 1));
	path[sp2 - sp1 - 1] = '\0';
	if ((q = strchr(path, '?')))
		*q = '\0';
	head = !strcmp(method, "HEAD");
	if (!head && strcmp(method, "GET")) {
		respond(c, 405, "text/plain", "method not allowed\n", 19, false);
		return;
	}
	h->handler(h->ctx, path, &r);
	if (!r.status) {
		free(r.body);
		respond(c, 404, "text/plain", "not found\n", 10, head);
		return;
	}
	respond(c, r.status, r.content_type ? r.content_type : "text/plain", r.body ? r.body : "",
		r.body ? r.body_len : 0, head);
	free(r.body);
}

static void conn_read(struct httpd *h, struct conn *c)
{
	ssize_t n = recv(c->fd, c->req + c->req_len, HTTPD_MAX_REQUEST - c->req_len, 0);

	if (n <= 0) {
		if (n < 0 && (errno == EAGAIN || errno == EINTR))
			return;
		conn_close(c);
		return;
	}
	c->req_len += (size_t)n;
	c->req[c->req_len] = '\0';
	if (strstr(c->req, "\r\n\r\n") || strstr(c->req, "\n\n")) {
		handle_request(h, c);
		return;
	}
	if (c->req_len >= HTTPD_MAX_REQUEST)
		respond(c, 413, "text/plain", "request too large\n", 18, false);
}

static void conn_write(struct conn *c)
{
	ssize_t n = send(c->fd, c->out + c->out_off, c->out_len - c->out_off, MSG_NOSIGNAL);

	if (n < 0) {
		if (errno != EAGAIN && errno != EINTR)
			conn_close(c);
		return;
	}
	c->out_off += (size_t)n;
	if (c->out_off == c->out_len) {
		shutdown(c->fd, SHUT_WR);
		conn_close(c);
	}
}

/* True when a and b are the same peer address (the port aside). */
static bool same_peer(const struct sockaddr_storage *a, const struct sockaddr_storage *b)
{
	if (a->ss_family != b->ss_family)
		return false;
	if (a->ss_family == AF_INET)
		return ((const struct sockaddr_in *)a)->sin_addr.s_addr ==
		       ((const struct sockaddr_in *)b)->sin_addr.s_addr;
	if (a->ss_family == AF_INET6)
		return !memcmp(&((const struct sockaddr_in6 *)a)->sin6_addr,
			       &((const struct sockaddr_in6 *)b)->sin6_addr,
			       sizeof(struct in6_addr));
	return true;
}

/*
 * A slot for a new connection from peer: a free one while the peer holds fewer than its
 * share, else the oldest connection still waiting for its request (of that peer when it
 * holds its share, else of anyone), closed for it; NULL when all slots are answering.
 */
static struct conn *conn_slot(struct httpd *h, const struct sockaddr_storage *peer)
{
	struct conn *free_slot = NULL, *oldest = NULL, *oldest_mine = NULL, *take;
	int mine = 0;

	for (int i = 0; i < HTTPD_MAX_CONNS; i++) {
		struct conn *c = &h->conns[i];
		bool same;

		if (c->fd < 0) {
			if (!free_slot)
				free_slot = c;
			continue;
		}
		same = same_peer(&c->peer, peer);
		mine += same;
		if (c->out)
			continue; /* answering: kept */
		if (!oldest || c->accepted_ms < oldest->accepted_ms)
			oldest = c;
		if (same && (!oldest_mine || c->accepted_ms < oldest_mine->accepted_ms))
			oldest_mine = c;
	}
	take = mine >= HTTPD_PER_PEER ? oldest_mine : free_slot ? free_slot : oldest;
	if (take && take->fd >= 0)
		conn_close(take);
	return take;
}

static void accept_conns(struct httpd *h)
{
	for (;;) {
		struct sockaddr_storage peer;
		socklen_t plen = sizeof(peer);
		int fd = accept4(h->lfd, (struct sockaddr *)&peer, &plen,
				 SOCK_NONBLOCK | SOCK_CLOEXEC);
		struct conn *slot;

		if (fd < 0)
			return;
		slot = conn_slot(h, &peer);
		if (!slot) {
			close(fd); /* bounded: every slot is answering */
			continue;
		}
		slot->fd = fd;
		slot->peer = peer;
		slot->req_len = 0;
		slot->accepted_ms = now_ms();
		slot->deadline_ms = slot->accepted_ms + HTTPD_HEADER_MS;
	}
}

static void *httpd_thread(void *arg)
{
	struct httpd *h = arg;
	struct pollfd pfd[HTTPD_MAX_CONNS + 2];
	int idx[HTTPD_MAX_CONNS + 2];

	pthread_setname_np(pthread_self(), "mlprof-http"); /* top -H, perf */
	for (;;) {
		int n = 0, rc;
		int64_t now;

		pfd[n++] = (struct pollfd){.fd = h->wake[0], .events = POLLIN};
		pfd[n++] = (struct pollfd){.fd = h->lfd, .events = POLLIN};
		for (int i = 0; i < HTTPD_MAX_CONNS; i++) {
			struct conn *c = &h->conns[i];
			if (c->fd < 0)
				continue;
			idx[n] = i;
			pfd[n++] =
				(struct pollfd){.fd = c->fd, .events = c->out ? POLLOUT : POLLIN};
		}
		rc = poll(pfd, (nfds_t)n, 1000);
		if (rc < 0 && errno != EINTR) {
			pr_warn("poll: %s", strerror(errno));
			break;
		}
		if (pfd[0].revents)
			break;
		if (pfd[1].revents & POLLIN)
			accept_conns(h);
		for (int k = 2; k < n; k++) {
			struct conn *c = &h->conns[idx[k]];

			if (c->fd != pfd[k].fd || !pfd[k].revents)
				continue;
			if (c->out)
				conn_write(c);
			else
				conn_read(h, c);
		}
		now = now_ms();
		for (int i = 0; i < HTTPD_MAX_CONNS; i++)
			if (h->conns[i].fd >= 0 && now > h->conns[i].deadline_ms)
				conn_close(&h->conns[i]);
	}
	return NULL;
}

/* See httpd.h. */
int httpd__split_addr(const char *addr, char *host, size_t hostlen, unsigned int *port)
{
	const char *colon, *h = addr;
	size_t hl;
	char *end;
	unsigned long p;

	if (addr[0] == '[') {
		const char *rb = strchr(addr, ']');
		if (!rb || rb[1] != ':')
			return -EINVAL;
		h = addr + 1;
		hl = (size_t)(rb - h);
		colon = rb + 1;
	} else {
		colon = strrchr(addr, ':');
		if (!colon)
			return -EINVAL;
		hl = (size_t)(colon - addr);
		if (memchr(addr, ':', hl))
			return -EINVAL; /* bare IPv6 needs brackets */
	}
	if (hl >= hostlen || !isdigit((unsigned char)colon[1]))
		return -EINVAL;
	errno = 0;
	p = strtoul(colon + 1, &end, 10);
	if (errno || *end || p > 65535)
		return -EINVAL;
	memcpy(host, h, hl);
	host[hl] = '\0';
	*port = (unsigned int)p;
	return 0;
}

struct httpd *httpd__new(const char *addr, httpd_handler handler, void *ctx)
{
	struct addrinfo hints = {.ai_socktype = SOCK_STREAM, .ai_flags = AI_PASSIVE};
	struct addrinfo *res = NULL;
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	char host[256], port[16];
	unsigned int p;
	struct httpd *h;
	int err, one = 1;

	if (httpd__split_addr(addr, host, sizeof(host), &p)) {
		pr_err("invalid listen address '%s'", addr);
		errno = EINVAL;
		return NULL;
	}
	h = calloc(1, sizeof(*h));
	if (!h)
		return NULL;
	h->lfd = h->wake[0] = h->wake[1] = -1;
	for (int i = 0; i < HTTPD_MAX_CONNS; i++)
		h->conns[i].fd = -1;
	h->handler = handler;
	h->ctx = ctx;
	snprintf(port, sizeof(port), "%u", p);
	err = getaddrinfo(*host ? host : NULL, port, &hints, &res);
	if (err) {
		pr_err("cannot resolve %s: %s", addr, gai_strerror(err));
		err = -EINVAL;
		goto cleanup;
	}
	h->lfd = socket(res->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (h->lfd < 0) {
		err = -errno;
		pr_err("socket: %s", strerror(errno));
		goto cleanup;
	}
	setsockopt(h->lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(h->lfd, res->ai_addr, res->ai_addrlen) || listen(h->lfd, 64)) {
		err = -errno;
		pr_err("cannot listen on %s: %s", addr, strerror(errno));
		goto cleanup;
	}
	if (!getsockname(h->lfd, (struct sockaddr *)&ss, &sl))
		h->port = ntohs(ss.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&ss)->sin6_port
							 : ((struct sockaddr_in *)&ss)->sin_port);
	if (pipe2(h->wake, O_CLOEXEC | O_NONBLOCK)) {
		err = -errno;
		goto cleanup;
	}
	err = -pthread_create(&h->thread, NULL, httpd_thread, h);
	if (err) {
		pr_err("cannot start the HTTP thread: %s", strerror(-err));
		goto cleanup;
	}
	h->started = true;
	freeaddrinfo(res);
	return h;
cleanup:
	if (res)
		freeaddrinfo(res);
	httpd__free(h);
	errno = -err;
	return NULL;
}

unsigned int httpd__port(const struct httpd *h)
{
	return h->port;
}

void httpd__free(struct httpd *h)
{
	if (!h)
		return;
	if (h->started) {
		ssize_t w = write(h->wake[1], "x", 1);
		(void)w;
		pthread_join(h->thread, NULL);
	}
	for (int i = 0; i < HTTPD_MAX_CONNS; i++)
		conn_close(&h->conns[i]);
	if (h->lfd >= 0)
		close(h->lfd);
	if (h->wake[0] >= 0)
		close(h->wake[0]);
	if (h->wake[1] >= 0)
		close(h->wake[1]);
	free(h);
}
