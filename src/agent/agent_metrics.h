/* SPDX-License-Identifier: Apache-2.0 */
/* The agent's self-metrics: /metrics, /healthz and /readyz on its HTTP listener. */
#ifndef MLPROF_AGENT_METRICS_H
#define MLPROF_AGENT_METRICS_H

struct agent;
struct http_response;

/* Creates a->metrics and registers every family. 0 or -errno. */
int agent_metrics__setup(struct agent *a);
/* Copies the counters for the metrics thread and refreshes the heartbeat (main thread). */
void agent_metrics__snapshot(struct agent *a);
/* The httpd handler (ctx is the agent). */
void agent_metrics__http(void *ctx, const char *path, struct http_response *r);

#endif
