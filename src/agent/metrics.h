/* SPDX-License-Identifier: Apache-2.0 */
/* Self-observability: a registry of counters/gauges rendered as Prometheus text 0.0.4. */
#ifndef MLPROF_METRICS_H
#define MLPROF_METRICS_H

#include <stddef.h>
#include <stdint.h>

enum metric_type { METRIC_COUNTER, METRIC_GAUGE, METRIC_SUMMARY };

#define METRICS_MAX_FAMILIES 128
#define METRICS_MAX_SERIES   64 /* per family */

struct metrics;

/*
 * Called under the registry lock at the start of every render to refresh values
 * (pull model: stats are read at scrape time).
 */
typedef void (*metrics_collect_cb)(struct metrics *m, void *ctx);

/* Creates an empty registry. NULL with errno on failure. */
struct metrics *metrics__new(metrics_collect_cb collect, void *ctx);
void metrics__free(struct metrics *m);

/*
 * Registers a family (name must match [a-zA-Z_:][a-zA-Z0-9_:]*; help and name are copied).
 * Returns the family id (>= 0) or -EINVAL/-ENOSPC/-ENOMEM. Registering an existing name
 * returns its id.
 */
int metrics__register(struct metrics *m, const char *name, enum metric_type type, const char *help);

/*
 * Sets the value of one series of family id. label/label_value name one optional label
 * (NULL for none). For METRIC_SUMMARY value is the sum and count the number of
 * observations (ignored otherwise). Returns 0, -EINVAL or -ENOSPC (series bound).
 * Takes the lock unless called from the collect callback (which already holds it).
 */
int metrics__set(struct metrics *m, int id, const char *label, const char *label_value,
		 double value, uint64_t count);

/*
 * Renders every family in registration order (series in insertion order) as Prometheus
 * text exposition format 0.0.4. *out is malloc'd (caller frees). Returns 0 or -ENOMEM.
 */
int metrics__render(struct metrics *m, char **out, size_t *len);

#endif
