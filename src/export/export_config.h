/* SPDX-License-Identifier: Apache-2.0 */
/* What an exporter is configured with: backend kind, destination, TLS, auth, retries, spool. */
#ifndef MLPROF_EXPORT_CONFIG_H
#define MLPROF_EXPORT_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

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

#endif
