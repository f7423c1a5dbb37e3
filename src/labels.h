/* SPDX-License-Identifier: Apache-2.0 */
/* Series labels of profiled processes: service name, k8s pod, ML job env, sanitization. */
#ifndef MLPROF_LABELS_H
#define MLPROF_LABELS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "exporter.h"

struct agent_config;
struct proc;

#define LABEL_NAME_MAX	1024 /* Pyroscope: label name length */
#define LABEL_VALUE_MAX 2048 /* Pyroscope: label value length */

/*
 * Writes a valid Pyroscope label name for in ([a-zA-Z_][a-zA-Z0-9_]*, at most
 * LABEL_NAME_MAX chars, and what fits in out): other bytes become '_', a leading digit
 * gets a '_' prefix, an empty name becomes "_". Returns out.
 */
char *labels__sanitize_name(const char *in, char *out, size_t outlen);
/*
 * Copies a label value: control characters and invalid UTF-8 become '_', truncated at a
 * character boundary to LABEL_VALUE_MAX bytes (and to what fits in out). Returns out.
 */
char *labels__sanitize_value(const char *in, char *out, size_t outlen);

/*
 * Derives a service name from a NUL-separated command line (as in /proc/PID/cmdline):
 *  - python[X[.Y]] SCRIPT.py ...        -> SCRIPT (basename without .py)
 *  - python -m MODULE ...               -> MODULE (dotted name kept)
 *  - launchers (torchrun, python -m torch.distributed.run/launch, deepspeed, accelerate
 *    launch, mpirun, srun, uv/poetry run, env VAR=..) -> the script or program they run
 *  - sh/bash SCRIPT.sh                  -> SCRIPT
 *  - anything else                      -> basename of argv[0]
 * Falls back to comm when the command line is empty (kernel threads, exited processes).
 * Writes into out (NUL-terminated) and returns out.
 */
char *labels__service_from_cmdline(const char *cmdline, size_t len, const char *comm, char *out,
				   size_t outlen);

/* What a process's cgroup file says about its container. */
struct cgroup_info {
	char path[512];	       /* unified (v2) path, else the first v1 path; "" if none */
	char container_id[65]; /* 64 lowercase hex, "" when not in a container */
	char pod_uid[40];      /* Kubernetes pod uid (dashes), "" when unknown */
};

/*
 * Parses the text of /proc/PID/cgroup (v1 or v2, any runtime: containerd, CRI-O, Docker,
 * podman, systemd or cgroupfs drivers). Never fails: missing parts stay empty.
 */
void labels__parse_cgroup(const char *text, size_t len, struct cgroup_info *out);

/* The default ML job variables turned into labels (lowercase label names). */
extern const char *const labels_ml_env_default[];

/*
 * Finds the variables names[0..n_names) in a NUL-separated environ blob and writes up to
 * max label pairs into out, named after the variable in lowercase (sanitized), values
 * sanitized. Strings point into buf (size buflen). Returns the number of labels.
 */
int labels__ml_from_environ(const char *blob, size_t len, const char *const *names, int n_names,
			    struct label_pair *out, int max, char *buf, size_t buflen);

/* Classification of a process by its mappings (the --ml-only filter). */
#define ML_PYTHON    0x1 /* libpython mapped or a python executable */
#define ML_FRAMEWORK 0x2 /* torch, tensorflow or jax/xla libraries */
#define ML_CUDA	     0x4 /* CUDA runtime/driver/cuBLAS/cuDNN/NCCL libraries */
/* Returns the ML_* bits one mapped path contributes. */
unsigned int labels__ml_classify_path(const char *path);
/* A process is an ML process when it runs Python and maps a framework or CUDA library. */
static inline bool labels__is_ml(unsigned int bits)
{
	return (bits & ML_PYTHON) && (bits & (ML_FRAMEWORK | ML_CUDA));
}

/* --- Kubernetes pod list --- */

struct k8s_container {
	char id[65]; /* runtime container id (hex, without "containerd://") */
	const char *pod, *ns, *uid, *name;
};

struct k8s_pods;

/*
 * Parses a PodList JSON document (items[].metadata.{name,namespace,uid} and
 * status.{,init,ephemeral}containerStatuses[].{name,containerID}). Robust to corrupt input
 * (bounded depth/size): returns NULL with errno EINVAL/E2BIG/ENOMEM.
 */
struct k8s_pods *k8s_pods__parse(const char *json, size_t len);
void k8s_pods__free(struct k8s_pods *pods);
size_t k8s_pods__count(const struct k8s_pods *pods);
/* Finds a container by full id (or unique prefix >= 12 chars). NULL when unknown. */
const struct k8s_container *k8s_pods__find(const struct k8s_pods *pods, const char *id);
/* Finds any container of a pod by pod uid (dashes or underscores). NULL when unknown. */
const struct k8s_container *k8s_pods__find_pod(const struct k8s_pods *pods, const char *uid);

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
 * that arrived later). comm is the process name from the sample; proc (may be NULL)
 * gives the maps for the ML filter. The result is valid until the next call.
 */
const struct series_labels *labeler__lookup(struct labeler *l, pid_t pid, const char *comm,
					    const struct proc *proc, uint64_t window);
void labeler__stats(struct labeler *l, struct labeler_stats *out);
/* Releases the cache entries of processes that no longer exist (call once per window). */
void labeler__prune(struct labeler *l);

#endif
