/* SPDX-License-Identifier: Apache-2.0 */
/* Delivers finished profiles: Pyroscope push / legacy ingest / local files, with disk spool. */
#ifndef MLPROF_EXPORTER_H
#define MLPROF_EXPORTER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "export/export_config.h"
#include "export/export_item.h"

struct exporter;

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

#endif
