/* SPDX-License-Identifier: Apache-2.0 */
/* The exporter's HTTP client: one curl handle, POSTs with the configured TLS and auth. */
#ifndef MLPROF_EXPORT_HTTP_H
#define MLPROF_EXPORT_HTTP_H

#include <stdbool.h>
#include <stddef.h>

#include "export/export_backend.h"
#include "export/export_config.h"

struct export_http;

/*
 * Creates a client for cfg (borrowed: must outlive the client). A transfer in flight is
 * aborted as soon as *stop (read atomically) becomes true. NULL with errno on failure.
 */
struct export_http *export_http__new(const struct exporter_config *cfg, const bool *stop);
void export_http__free(struct export_http *h);
/*
 * Ends a transfer in flight now, from another thread: its sockets are shut down (the
 * progress check on *stop alone can take a second to run on a silent connection), and so
 * is any socket opened later. For shutdown only.
 */
void export_http__abort(struct export_http *h);

/*
 * POSTs body to url with the configured TLS/auth/tenant/timeouts plus content_type and the
 * extra NULL-terminated headers hdrs. Classifies the answer (2xx sent, 408/429/5xx/network
 * retryable, other 4xx rejected) and fills res. Not thread-safe: one caller at a time.
 */
enum export_status export_http__post(struct export_http *h, const char *url,
				     const char *content_type, const char *const *hdrs,
				     const void *body, size_t len, struct export_result *res);

#endif
