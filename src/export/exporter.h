/* SPDX-License-Identifier: Apache-2.0 */
/* Delivers finished profiles: Pyroscope push / legacy ingest / local files, with disk spool. */
#ifndef MLPROF_EXPORTER_H
#define MLPROF_EXPORTER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "export_item.h"

struct exporter;

enum exporter_kind {
	EXPORTER_FILE = 0, /* timestamped pprof files in a local directory (no backend) */
	EXPORTER_PUSH,	   /* POST {url}/push.v1.PusherService/Push (connect, application/proto) */
	EXPORTER_INGEST,   /* POST {url}/ingest?format=pprof (legacy) */
};

struct exporter_config {
	enum exporter_kind kind;
	const char *url;	    /* base URL for push/ingest */
	const char *out_dir;	    /* EXPORTER_FILE: directory */
	uint64_t out_max_bytes;	    /* EXPORTER_FILE: size bound of the directory */
	const char *ca_file;	    /* extra CA bundle; NULL = system */
	bool insecure_skip_verify;  /* disable TLS verification (off by default) */
	const char *basic_user;	    /* basic auth user (Grafana Cloud instance id) */
	const char *basic_password; /* basic auth password/token (read from file/env by config) */
	const char *bearer_token;   /* Authorization: Bearer */
	const char *tenant;	    /* X-Scope-OrgID */
	const char *const *headers; /* extra "Name: value" headers, NULL-terminated */
	unsigned int connect_timeout_ms;
	unsigned int timeout_ms;  /* per attempt */
	unsigned int max_retries; /* attempts after the first for retryable errors */
	unsigned int backoff_min_ms, backoff_max_ms;
	const char *spool_dir; /* on-disk spool (zstd) for profiles not yet delivered */
	uint64_t spool_max_bytes;
	unsigned int spool_max_age_s;
	size_t queue_max_bytes; /* in-memory queue bound before spilling to the spool */
};

struct exporter_stats {
	/* retries: attempts made after a failed one (backoff retries, probes of a down backend) */
	uint64_t pushed, failed, retries, rejected_4xx, spooled, spool_dropped, spool_bytes,
		spool_files, queue_bytes, queue_dropped, trimmed, split;
	uint64_t last_latency_us, latency_us_sum, latency_count;
	/* Added after the first version (append-only): */
	uint64_t spool_corrupt; /* unreadable spool files skipped (and removed) */
	uint64_t
		files_deleted; /* EXPORTER_FILE: oldest files removed to stay under out_max_bytes */
};

/* Validates cfg and starts the sender thread. NULL with errno (and a logged reason). */
struct exporter *exporter__new(const struct exporter_config *cfg);
/*
 * Hands over one profile (copied). Never blocks on the network; when the in-memory queue
 * is over its bound the item goes to the spool. Returns 0 or -errno.
 */
int exporter__submit(struct exporter *e, const struct export_item *item);
/* Waits up to timeout_ms for the queue to drain (to network or spool). Returns remaining items. */
int exporter__flush(struct exporter *e, unsigned int timeout_ms);
/*
 * The in-memory queue's hard bound for a queue_max_bytes: with a spool, that plus as much
 * again (at least 8 MiB) for the sender to write behind; exporter__submit drops past it.
 */
size_t exporter__queue_hard_max(size_t queue_max_bytes, bool spool);
void exporter__stats(struct exporter *e, struct exporter_stats *out);
/*
 * The directory this exporter spools into: one per destination (API, URL, tenant) under
 * spool_dir, see spool__dest_dir(). NULL without a spool. Valid until exporter__free.
 */
const char *exporter__spool_dir(const struct exporter *e);
/* Stops the thread after a flush (anything undelivered is spooled) and frees. */
void exporter__free(struct exporter *e);

/*
 * Backend interface (used by export_push.c / export_ingest.c / export_file.c).
 * One const ops instance per backend; the sender thread calls send() for one item at a time.
 */
enum export_status {
	EXPORT_SENT = 0,  /* delivered */
	EXPORT_RETRYABLE, /* network error, 429, 5xx: retry with backoff, then spool */
	EXPORT_REJECTED,  /* other 4xx or invalid item: never retried, dropped and counted */
};

struct export_result {
	long http_status;	/* 0 when no HTTP response */
	char message[512];	/* server message or local error text */
	uint64_t files_deleted; /* file backend: files evicted from out_dir */
};

struct export_ops {
	const char *name;
	enum export_status (*send)(struct exporter *e, const struct export_item *item,
				   struct export_result *res);
};

extern const struct export_ops export_push_ops;
extern const struct export_ops export_ingest_ops;
extern const struct export_ops export_file_ops;

/* The exporter's validated copy of its configuration (valid until exporter__free). */
const struct exporter_config *exporter__config(const struct exporter *e);
/*
 * POSTs body to url with the configured TLS/auth/tenant/timeouts plus content_type and the
 * extra NULL-terminated headers hdrs. Classifies the answer (2xx sent, 429/5xx/network
 * retryable, other 4xx rejected) and fills res. Only called from the sender thread.
 */
enum export_status exporter__http_post(struct exporter *e, const char *url,
				       const char *content_type, const char *const *hdrs,
				       const void *body, size_t len, struct export_result *res);

#endif
