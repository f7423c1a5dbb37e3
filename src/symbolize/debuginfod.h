/* SPDX-License-Identifier: Apache-2.0 */
/* Debug files fetched by build id from debuginfod servers (libdebuginfod) in the background. */
#ifndef MLPROF_DEBUGINFOD_H
#define MLPROF_DEBUGINFOD_H

#include <stdint.h>

struct debuginfod;

struct debuginfod_config {
	const char *urls;	  /* space-separated server URLs (as DEBUGINFOD_URLS) */
	const char *cache_dir;	  /* where fetched files live (DEBUGINFOD_CACHE_PATH) */
	uint64_t cache_max_bytes; /* bound on the files in cache_dir; least recently used
				   * build ids are deleted past it */
	unsigned max_entries;	  /* build ids remembered (queued, fetched, missing); 0: 4096 */
};

struct debuginfod_stats {
	uint64_t requests;    /* build ids queued for a fetch */
	uint64_t fetched;     /* debug files now in the cache (downloaded or already there) */
	uint64_t missing;     /* build ids no server had (or errors) */
	uint64_t dropped;     /* requests not queued: table full of fetches still pending */
	uint64_t evicted;     /* build ids deleted from the disk cache by the size bound */
	uint64_t cache_bytes; /* bytes in the disk cache after the last fetch */
};

/*
 * The configuration from the environment: DEBUGINFOD_URLS (servers; unset or empty: off),
 * MLPROF_DEBUGINFOD=0 (off even with DEBUGINFOD_URLS set), DEBUGINFOD_CACHE_PATH (cache
 * directory; default /var/cache/mlprof/debuginfod as root, else libdebuginfod's
 * $XDG_CACHE_HOME/debuginfod_client or ~/.cache/debuginfod_client) and
 * MLPROF_DEBUGINFOD_CACHE_MB (size bound, default 2048). Returns a started client, or NULL:
 * with errno 0 when debuginfod is off, else with errno set (and a logged reason).
 */
struct debuginfod *debuginfod__from_env(void);

/* Starts the fetch thread. Returns NULL with errno set on failure. */
struct debuginfod *debuginfod__new(const struct debuginfod_config *cfg);

/* Stops the fetch thread (aborting a transfer in progress) and frees d. */
void debuginfod__free(struct debuginfod *d);

/*
 * Never waits for the network. build_id: lowercase hex. Returns 0 with a malloc'd path of
 * the debug file in *path once it is in the cache; -EAGAIN while a fetch is queued or under
 * way (the first call queues it); -ENOENT when no server has it; -ENOBUFS when too many
 * fetches are pending (ask again later); -EINVAL for a malformed build id.
 */
int debuginfod__find(struct debuginfod *d, const char *build_id, char **path);

/* A number that changes whenever a fetch ends: callers waiting on -EAGAIN poll it cheaply. */
uint64_t debuginfod__generation(struct debuginfod *d);

void debuginfod__stats(struct debuginfod *d, struct debuginfod_stats *out);

#endif
