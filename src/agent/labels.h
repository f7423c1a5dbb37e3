/* SPDX-License-Identifier: Apache-2.0 */
/* The labels of a profiled process's series, computed once per process and cached. */
#ifndef MLPROF_LABELS_H
#define MLPROF_LABELS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "profile/label.h"

struct agent_config;
struct proc;

/* The default ML job variables turned into labels (lowercase label names). */
extern const char *const labels_ml_env_default[];

/*
 * Finds the variables names[0..n_names) in a NUL-separated environ blob and writes up to
 * max label pairs into out, named after the variable in lowercase (sanitized), values
 * sanitized. Strings point into buf (size buflen). Returns the number of labels.
 */
int labels__ml_from_environ(const char *blob, size_t len, const char *const *names, int n_names,
			    struct label_pair *out, int max, char *buf, size_t buflen);

/* --- the per-process labeler used by the agent --- */

/* The labels of one process for one series. */
struct series_labels {
	bool keep;	     /* passes the filters */
	const char *key;     /* unique text of the label set (series key) */
	const char *service; /* service_name value */
	int n;
	struct label_pair pairs[EXPORT_MAX_LABELS - 1]; /* without __name__ */
};

struct labeler_stats {
	uint64_t cache_entries, cache_evictions, lookups, misses, invalidations, labels_trimmed;
	uint64_t cache_pruned; /* entries of exited processes released by labeler__prune */
	uint64_t pid_reused;   /* samples of exited processes whose pid a newer one holds */
	uint64_t k8s_fetches, k8s_errors, k8s_pods;
};

struct labeler;

/*
 * Builds a labeler from the configuration (filters, rules, static labels, ML variables,
 * hostname, Kubernetes client when enabled). proc_root is "/proc" (tests may use another
 * tree). NULL with errno on failure (logged).
 */
struct labeler *labeler__new(const struct agent_config *cfg, const char *proc_root);
/* Applies a new configuration (labels, rules, filters) and drops the cache. 0 or -errno. */
int labeler__reconfigure(struct labeler *l, const struct agent_config *cfg);
void labeler__free(struct labeler *l);

/*
 * Returns the labels of pid (computed once and cached in a bounded LRU; re-validated
 * once per window: pid reuse via /proc/PID/stat start time, exec via comm, pod metadata
 * that arrived later, a young command that reached --service-min-age). comm is the
 * process name from the sample; proc (may be NULL) gives the maps for the ML filter. The
 * result is valid until the next call. service_name: --service-name > --service-rule >
 * Kubernetes namespace/container > "kernel" for kernel threads (and the idle task) >
 * "short-lived" for a process gone before it could be read > the command line
 * (service_name.h), where a young command of a shell script or pipeline takes the
 * script's service (labels.c, ancestor_service()). start_ns (the sample's process start,
 * ns since boot; 0 if unknown) tells a sample of a process that has exited, whose pid now
 * belongs to a newer process, from that newer one's: it gets the "short-lived" labels,
 * never the newer process's.
 */
const struct series_labels *labeler__lookup(struct labeler *l, pid_t pid, uint64_t start_ns,
					    const char *comm, const struct proc *proc,
					    uint64_t window);
void labeler__stats(struct labeler *l, struct labeler_stats *out);
/* Releases the cache entries of processes that no longer exist (call once per window). */
void labeler__prune(struct labeler *l);

#endif
