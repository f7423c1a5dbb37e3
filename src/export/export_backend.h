/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The exporter's backends (export_push.c, export_ingest.c, export_file.c): one const ops
 * instance each, called by the sender thread of exporter.c, and what exporter.c offers them.
 */
#ifndef MLPROF_EXPORT_BACKEND_H
#define MLPROF_EXPORT_BACKEND_H

#include <stddef.h>
#include <stdint.h>

#include "export/export_config.h"
#include "export/export_item.h"

struct exporter;

/* The sender thread calls send() for one item at a time. */
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
