/* SPDX-License-Identifier: Apache-2.0 */
/* `mlprof agent` configuration: long flags > MLPROF_* environment > config file > defaults. */
#ifndef MLPROF_AGENT_CONFIG_H
#define MLPROF_AGENT_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* A list of strings (repeatable flag, comma separated env var, repeated file key). */
struct strlist {
	char **v;
	int n;
};

/*
 * Every knob of the agent. Each one is documented in the option table of agent_config.c
 * (which is also what `mlprof agent --help` prints). All strings are owned by the struct.
 */
struct agent_config {
	char *config_file; /* --config / MLPROF_CONFIG */

	/* sampling */
	unsigned int freq_hz;
	unsigned int upload_interval_s;
	unsigned int ustack_bytes;
	bool kernel_frames;
	bool python;	   /* read Python frames */
	bool source_lines; /* native source lines from DWARF */
	bool offcpu;	   /* off-CPU profile */
	char *cuda;	   /* CUDA/NCCL families: all, none or a list */
	unsigned int cuda_rate;
	unsigned int memory_rate;	/* memory-growth captures per CPU per second */
	unsigned int memory_max_faults; /* page faults per busy CPU per second seen whole */
	unsigned int steps_max_scopes;	/* scope events per process per second seen whole */
	bool memory;			/* memory-growth profile */
	bool cuda_hold;			/* hold processes at CUDA/NCCL library mmaps */
	unsigned int memory_sample_kib;
	char *heap; /* heap profile: comma list of process names, "all", or "" (off) */
	unsigned int heap_sample_kib;
	unsigned int cuda_tensor_sample_kib;
	unsigned int offcpu_min_us;
	unsigned int offcpu_rate; /* captures per CPU per second */
	uint64_t symcache_bytes;
	unsigned int max_procs;

	/* selection (user-space filters except pids) */
	struct strlist pids;
	char *process_regex;
	struct strlist cgroups; /* substrings of the cgroup path or container id prefixes */
	bool ml_only;

	/* delivery */
	char *url;
	char *api; /* "connect" | "ingest" */
	char *output_dir;
	uint64_t output_max_bytes;
	char *spool_dir;
	uint64_t spool_max_bytes;
	char *ca_file;
	bool insecure_skip_verify;
	char *basic_auth_user;
	char *basic_auth_password_file;
	char *basic_auth_password; /* env only (MLPROF_BASIC_AUTH_PASSWORD) or read from file */
	char *bearer_token_file;
	char *bearer_token; /* env only (MLPROF_BEARER_TOKEN) or read from file */
	char *tenant_id;
	struct strlist headers; /* "Name: value" */
	unsigned int connect_timeout_ms;
	unsigned int timeout_ms;

	/* labels */
	char *service_name;	      /* fixed service name for everything */
	struct strlist service_rules; /* "process:REGEX=NAME" | "cgroup:REGEX=NAME" */
	struct strlist labels;	      /* static "name=value" */
	struct strlist ml_env;	      /* extra environment variable names to turn into labels */
	char *hostname;
	unsigned int max_services;
	unsigned int service_min_age_s; /* younger plain commands take their parent's service */
	unsigned int label_cache_size;

	/* kubernetes */
	char *k8s;	  /* "auto" | "on" | "off" */
	char *k8s_source; /* "apiserver" | "kubelet" */
	char *node_name;

	/* operations */
	char *metrics_addr; /* "host:port", "" or "off" disables */
	char *log_level;
	char *log_format; /* "text" | "json" */

	bool help; /* --help was given: print usage, nothing else is valid */
};

/*
 * Fills cfg from defaults, then the config file (path from --config or MLPROF_CONFIG, if
 * any), then the MLPROF_* variables of envp (NULL-terminated "NAME=value" array), then
 * argv (argv[0] is skipped), and validates the result. Secrets named by *-file options
 * are read. Returns 0; or -EINVAL (also -ENOENT/-EACCES for unreadable files) with one
 * line describing the problem in err. cfg must be zeroed or freed before; on failure it
 * holds partial data that agent_config__free() releases.
 */
int agent_config__load(struct agent_config *cfg, int argc, char **argv, char **envp, char *err,
		       size_t errlen);

/* Releases everything cfg owns and zeroes it. */
void agent_config__free(struct agent_config *cfg);

/* Prints the --help text (every option, its environment variable and default). */
void agent_config__usage(FILE *f);

/*
 * Calls cb(key, value, ctx) for every option in table order with its effective value
 * rendered as text. Unless raw, credentials are hidden: secrets as "<set>"/"", URLs and
 * header values redacted (redact.h); raw values are for comparing, never for logs. Used
 * to log what a reload changed.
 */
void agent_config__for_each(const struct agent_config *cfg, bool raw,
			    void (*cb)(const char *key, const char *value, void *ctx), void *ctx);

/* True if key (a long option name) can change on SIGHUP without a restart. */
bool agent_config__reloadable(const char *key);

/* Checks an address the way the metrics server reads it (httpd__split_addr). */
int agent_config__split_addr(const char *addr, char *host, size_t hostlen, unsigned int *port);

#endif
