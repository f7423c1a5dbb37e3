// SPDX-License-Identifier: Apache-2.0
/* `mlprof agent` configuration: option table, flag/env/file parsing, validation, --help. */
#include "agent/agent_config.h"
#include "runtimes/cuda/cuda.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <regex.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "agent/httpd.h"
#include "util/parse.h"
#include "util/redact.h"

enum opt_type {
	OPT_STR,
	OPT_UINT,    /* unsigned integer within [min, max] */
	OPT_BOOL,    /* true/false/yes/no/on/off/1/0; a bare flag means true */
	OPT_BYTES,   /* integer with optional K/M/G/KiB/MiB/GiB suffix (powers of 1024) */
	OPT_SECS_MS, /* decimal seconds (e.g. 2.5) or "500ms", stored as milliseconds */
	OPT_LIST,    /* repeatable; environment value split on sep */
};

#define OPTF_ENV_ONLY 0x1  /* secret: environment only, never a flag or a file key */
#define OPTF_SECRET   0x2  /* never printed */
#define OPTF_RELOAD   0x4  /* applied on SIGHUP without restart */
#define OPTF_URL      0x8  /* printed with its credentials redacted (redact__url) */
#define OPTF_HEADER   0x10 /* list of 'Name: value': printed with the values redacted */

struct opt {
	const char *name; /* long flag, file key; env MLPROF_<NAME with - as _> */
	enum opt_type type;
	size_t off;
	const char *def; /* default as text ("" = empty/unset) */
	const char *arg; /* metavariable for --help */
	const char *help;
	unsigned int flags;
	uint64_t min, max;
	const char *const *choices; /* OPT_STR: allowed values */
	char sep;		    /* OPT_LIST: environment separator */
};

#define OFF(f) offsetof(struct agent_config, f)

static const char *const api_choices[] = {"connect", "ingest", NULL};
static const char *const k8s_choices[] = {"auto", "on", "off", NULL};
static const char *const k8s_src_choices[] = {"apiserver", "kubelet", NULL};
static const char *const level_choices[] = {"error", "warn", "info", "debug", NULL};
static const char *const fmt_choices[] = {"text", "json", NULL};

#define O_STR(n, f, d, a, h, fl, ch)                                                               \
	{                                                                                          \
		.name = n, .type = OPT_STR, .off = OFF(f), .def = d, .arg = a, .help = h,          \
		.flags = fl, .choices = ch                                                         \
	}
#define O_UINT(n, f, d, a, h, fl, mn, mx)                                                          \
	{                                                                                          \
		.name = n, .type = OPT_UINT, .off = OFF(f), .def = d, .arg = a, .help = h,         \
		.flags = fl, .min = mn, .max = mx                                                  \
	}
#define O_BOOL(n, f, d, h, fl)                                                                     \
	{                                                                                          \
		.name = n, .type = OPT_BOOL, .off = OFF(f), .def = d, .arg = "BOOL", .help = h,    \
		.flags = fl                                                                        \
	}
#define O_BYTES(n, f, d, h, mn, mx)                                                                \
	{                                                                                          \
		.name = n, .type = OPT_BYTES, .off = OFF(f), .def = d, .arg = "BYTES", .help = h,  \
		.min = mn, .max = mx                                                               \
	}
#define O_SECS(n, f, d, h, mn, mx)                                                                 \
	{                                                                                          \
		.name = n, .type = OPT_SECS_MS, .off = OFF(f), .def = d, .arg = "SECONDS",         \
		.help = h, .min = mn, .max = mx                                                    \
	}
#define O_LIST(n, f, a, h, fl, sp)                                                                 \
	{                                                                                          \
		.name = n, .type = OPT_LIST, .off = OFF(f), .def = "", .arg = a, .help = h,        \
		.flags = fl, .sep = sp                                                             \
	}

/* The option table: the single source of truth for flags, env, file keys and --help. */
static const struct opt opts[] = {
	O_STR("config", config_file, "", "FILE",
	      "config file of 'key = value' lines (keys are the long flag names)", 0, NULL),
	/* sampling */
	O_UINT("frequency", freq_hz, "19", "HZ",
	       "samples per second per CPU (19 Hz keeps overhead well under 1%)", 0, 1, 1000),
	O_UINT("upload-interval", upload_interval_s, "15", "SECONDS",
	       "length of a profile window; one profile per series per window", 0, 1, 3600),
	O_UINT("ustack-bytes", ustack_bytes, "65536", "BYTES", "user stack bytes copied per sample",
	       0, 1024, 131072),
	O_BOOL("kernel-frames", kernel_frames, "true", "include kernel frames in stacks", 0),
	O_BOOL("off-cpu", offcpu, "false",
	       "also profile off-CPU time (blocked or waiting for a CPU), pushed as the offcpu "
	       "profile type",
	       0),
	O_UINT("off-cpu-min-us", offcpu_min_us, "10", "US", "shortest off-CPU interval counted", 0,
	       0, 60000000),
	O_UINT("off-cpu-rate", offcpu_rate, "200", "N",
	       "off-CPU stack captures per CPU per second; above it switch-outs are sampled and "
	       "weighted",
	       0, 10, 100000),
	O_STR("cuda", cuda, "all", "LIST",
	      "CUDA/NCCL profiles from uprobes on the libraries processes map: all, none, or a "
	      "comma list of launches,sync,memcpy,memory,nccl",
	      0, NULL),
	O_UINT("cuda-rate", cuda_rate, "200", "N",
	       "CUDA/NCCL stack captures per CPU per second (counts stay exact)", 0, 10, 1000000),
	O_BOOL("cuda-hold", cuda_hold, "true",
	       "stop a process for the moment it maps a CUDA runtime, driver or NCCL library, "
	       "until the library's probes are attached (a few ms; its first calls are seen)",
	       0),
	O_BOOL("memory", memory, "true",
	       "memory-growth profile (memory brought in by page faults, and in use at each "
	       "window's end, by site)",
	       0),
	O_UINT("memory-sample", memory_sample_kib, "512", "KIB",
	       "mean KiB of faulted-in memory per captured stack", 0, 4, 1048576),
	O_UINT("memory-rate", memory_rate, "200", "N",
	       "memory-growth stack captures per CPU per second; above it the sampled faults are "
	       "sampled again and weighted",
	       0, 10, 1000000),
	O_UINT("memory-max-faults", memory_max_faults, "100000", "N",
	       "page faults per busy CPU per second above which the page-fault programs run in "
	       "random 20 ms slots only, weighted (0: always)",
	       0, 0, 100000000),
	O_UINT("steps-max-scopes", steps_max_scopes, "1500", "N",
	       "record_function scope events a second per process (an enter or an exit; a step "
	       "sends six) above which the training-step probes are attached in random 0.5 s "
	       "slots only: each event costs the training thread ~2 us (0: always attached)",
	       0, 0, 100000000),
	O_STR("heap", heap, "", "NAMES",
	      "heap profile by allocation site (malloc & co: who holds memory) for processes "
	      "whose name is in this comma list, or 'all'; off by default: a selected process "
	      "pays a uprobe on every allocator call (~1 us; posix_memalign & co ~14 us on a VM; "
	      "README)",
	      0, NULL),
	O_UINT("heap-sample", heap_sample_kib, "512", "KIB",
	       "mean KiB allocated per sampled heap allocation", 0, 1, 1048576),
	O_UINT("cuda-tensor-sample", cuda_tensor_sample_kib, "1024", "KIB",
	       "mean KiB of PyTorch tensor allocations (CUDA caching allocator) per sampled one: "
	       "each costs the allocating thread a stack capture",
	       0, 1, 4194304),
	O_BOOL("python", python, "true",
	       "read Python frames of CPython 3.10-3.14 processes (interleaved with native frames)",
	       0),
	O_BOOL("source-lines", source_lines, "false",
	       "file and line of native frames from DWARF (libdw holds each debug file's "
	       "decompressed sections while in use: tens of MB per large library)",
	       0),
	O_BYTES("symcache-bytes", symcache_bytes, "64M",
		"memory bound of the symbol indexes (12 bytes a function; a PyTorch process "
		"needs ~10 MiB)",
		1 << 20, (uint64_t)16 << 30),
	O_UINT("max-procs", max_procs, "4096", "N", "bound on cached processes", 0, 16, 1 << 20),
	/* selection */
	O_LIST("pid", pids, "PID",
	       "profile only this process (repeatable; kernel-side filter, follows children)", 0,
	       ','),
	O_STR("process-regex", process_regex, "", "REGEX",
	      "only processes whose name or command line matches (POSIX extended regex; "
	      "user-space filter)",
	      OPTF_RELOAD, NULL),
	O_LIST("cgroup", cgroups, "PATTERN",
	       "only processes whose cgroup path contains PATTERN or whose container id starts "
	       "with it (repeatable; user-space filter)",
	       OPTF_RELOAD, ','),
	O_BOOL("ml-only", ml_only, "false",
	       "only ML processes: Python with torch/tensorflow/jax libraries, or CUDA libraries "
	       "mapped (user-space filter)",
	       OPTF_RELOAD),
	/* delivery */
	O_STR("url", url, "", "URL", "Pyroscope base URL; without it profiles go to --output-dir",
	      OPTF_URL, NULL),
	O_STR("api", api, "connect", "connect|ingest",
	      "connect Push API (push.v1.PusherService/Push) or legacy /ingest", 0, api_choices),
	O_STR("output-dir", output_dir, "/var/lib/mlprof/profiles", "DIR",
	      "directory for timestamped pprof files when no --url is given", 0, NULL),
	O_BYTES("output-max-bytes", output_max_bytes, "256M",
		"size bound of --output-dir (oldest files removed)", 1 << 20, UINT64_MAX),
	O_STR("spool-dir", spool_dir, "/var/lib/mlprof/spool", "DIR",
	      "on-disk spool for profiles not yet delivered", 0, NULL),
	O_BYTES("spool-max-bytes", spool_max_bytes, "256M", "size bound of the spool", 0,
		UINT64_MAX),
	O_STR("ca-file", ca_file, "", "FILE", "extra CA bundle for HTTPS", 0, NULL),
	O_BOOL("insecure-skip-verify", insecure_skip_verify, "false",
	       "disable HTTPS certificate verification (not recommended)", 0),
	O_STR("basic-auth-user", basic_auth_user, "", "USER",
	      "basic auth user (e.g. Grafana Cloud instance id)", 0, NULL),
	O_STR("basic-auth-password-file", basic_auth_password_file, "", "FILE",
	      "file holding the basic auth password/token", 0, NULL),
	O_STR("basic-auth-password", basic_auth_password, "", "TOKEN",
	      "basic auth password/token (environment only)", OPTF_ENV_ONLY | OPTF_SECRET, NULL),
	O_STR("bearer-token-file", bearer_token_file, "", "FILE", "file holding a bearer token", 0,
	      NULL),
	O_STR("bearer-token", bearer_token, "", "TOKEN", "bearer token (environment only)",
	      OPTF_ENV_ONLY | OPTF_SECRET, NULL),
	O_STR("tenant-id", tenant_id, "", "ID", "X-Scope-OrgID header (multi-tenant Pyroscope)", 0,
	      NULL),
	O_LIST("header", headers, "'NAME: VALUE'",
	       "extra HTTP header (repeatable; in the environment separated by newlines)",
	       OPTF_HEADER, '\n'),
	O_SECS("connect-timeout", connect_timeout_ms, "5", "connect timeout", 1, 600000),
	O_SECS("timeout", timeout_ms, "10", "total timeout of one push attempt", 1, 3600000),
	/* labels */
	O_STR("service-name", service_name, "", "NAME",
	      "service_name for every process (overrides rules and derivation)", OPTF_RELOAD, NULL),
	O_LIST("service-rule", service_rules, "process:REGEX=NAME|cgroup:REGEX=NAME",
	       "service_name for processes whose command line (or cgroup path) matches; first "
	       "match wins (repeatable)",
	       OPTF_RELOAD, ','),
	O_LIST("label", labels, "NAME=VALUE", "static label added to every profile (repeatable)",
	       OPTF_RELOAD, ','),
	O_LIST("ml-env", ml_env, "VAR",
	       "extra environment variable of profiled processes to turn into a label, besides "
	       "RANK LOCAL_RANK WORLD_SIZE CUDA_VISIBLE_DEVICES SLURM_JOB_ID TORCHELASTIC_RUN_ID "
	       "(repeatable)",
	       OPTF_RELOAD, ','),
	O_STR("hostname", hostname, "", "NAME", "hostname label (default: uname nodename)",
	      OPTF_RELOAD, NULL),
	O_UINT("max-services", max_services, "256", "N",
	       "series per window; samples beyond go to service_name=other", OPTF_RELOAD, 1,
	       100000),
	O_UINT("service-min-age", service_min_age_s, "10", "SECONDS",
	       "a command that a shell script or pipeline runs (grep, sleep, curl, bash -c ...) "
	       "and that is younger than this when first sampled takes the script's service (or "
	       "that of what ran the pipeline) until it is this old, so short-lived commands add "
	       "no series; 0 = every process is named after itself",
	       OPTF_RELOAD, 0, 86400),
	O_UINT("label-cache-size", label_cache_size, "4096", "N",
	       "processes whose labels and filter decisions are cached (LRU)", 0, 16, 1 << 20),
	/* kubernetes */
	O_STR("k8s", k8s, "auto", "auto|on|off",
	      "Kubernetes pod labels (auto: on when KUBERNETES_SERVICE_HOST is set)", 0,
	      k8s_choices),
	O_STR("k8s-source", k8s_source, "apiserver", "apiserver|kubelet",
	      "where pod metadata comes from (service account token + CA)", 0, k8s_src_choices),
	O_STR("node-name", node_name, "", "NAME", "this node's name (default: $NODE_NAME)", 0,
	      NULL),
	/* operations */
	O_STR("metrics-addr", metrics_addr, "127.0.0.1:9740", "HOST:PORT",
	      "listen address of /metrics, /healthz, /readyz ('off' disables)", 0, NULL),
	O_STR("log-level", log_level, "info", "error|warn|info|debug", "log level", OPTF_RELOAD,
	      level_choices),
	O_STR("log-format", log_format, "text", "text|json", "log line format", OPTF_RELOAD,
	      fmt_choices),
};

#define N_OPTS (sizeof(opts) / sizeof(opts[0]))

enum source { SRC_DEFAULT = 0, SRC_FILE, SRC_ENV, SRC_FLAG };

struct loader {
	struct agent_config *cfg;
	enum source list_src[N_OPTS]; /* who last set each list (to replace, not append) */
	char *err;
	size_t errlen;
};

static int fail(struct loader *ld, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int fail(struct loader *ld, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(ld->err, ld->errlen, fmt, ap);
	va_end(ap);
	return -EINVAL;
}

static void *field(struct agent_config *cfg, const struct opt *o)
{
	return (char *)cfg + o->off;
}

static const void *cfield(const struct agent_config *cfg, const struct opt *o)
{
	return (const char *)cfg + o->off;
}

static void strlist_clear(struct strlist *l)
{
	for (int i = 0; i < l->n; i++)
		free(l->v[i]);
	free(l->v);
	l->v = NULL;
	l->n = 0;
}

static int strlist_add(struct strlist *l, const char *s, size_t len)
{
	char **v;
	char *copy;

	if (l->n >= 4096)
		return -E2BIG;
	copy = strndup(s, len);
	if (!copy)
		return -ENOMEM;
	v = realloc(l->v, sizeof(*v) * (size_t)(l->n + 1));
	if (!v) {
		free(copy);
		return -ENOMEM;
	}
	l->v = v;
	l->v[l->n++] = copy;
	return 0;
}

static const struct opt *find_opt(const char *name, size_t len)
{
	for (size_t i = 0; i < N_OPTS; i++) {
		const char *n = opts[i].name;
		size_t j;

		if (strlen(n) != len)
			continue;
		/* file keys may use '_' for '-' */
		for (j = 0; j < len; j++) {
			char c = name[j] == '_' ? '-' : name[j];
			if (c != n[j])
				break;
		}
		if (j == len)
			return &opts[i];
	}
	return NULL;
}

/* Sets one option from text; where is "--flag", "MLPROF_X" or "file:line" for errors. */
static int set_opt(struct loader *ld, const struct opt *o, const char *val, enum source src,
		   const char *where)
{
	struct agent_config *cfg = ld->cfg;
	void *f = field(cfg, o);
	uint64_t v = 0;
	bool b;
	int err;

	switch (o->type) {
	case OPT_STR: {
		char *copy;

		if (o->choices && *val) {
			int i;
			for (i = 0; o->choices[i]; i++)
				if (strcmp(val, o->choices[i]) == 0)
					break;
			if (!o->choices[i])
				return fail(ld, "invalid %s '%s': expected %s", where, val, o->arg);
		}
		copy = strdup(val);
		if (!copy)
			return -ENOMEM;
		free(*(char **)f);
		*(char **)f = copy;
		return 0;
	}
	case OPT_UINT: {
		const char *end = NULL;

		err = parse__u64(val, &v, &end);
		if (err || *end || v < o->min || v > o->max)
			return fail(ld, "invalid %s '%s': expected an integer from %llu to %llu",
				    where, val, (unsigned long long)o->min,
				    (unsigned long long)o->max);
		*(unsigned int *)f = (unsigned int)v;
		return 0;
	}
	case OPT_BOOL:
		if (parse__bool(val, &b))
			return fail(ld, "invalid %s '%s': expected true or false", where, val);
		*(bool *)f = b;
		return 0;
	case OPT_BYTES:
		if (parse__bytes(val, &v) || v < o->min || v > o->max)
			return fail(ld,
				    "invalid %s '%s': expected a size such as 64M (at least %llu)",
				    where, val, (unsigned long long)o->min);
		*(uint64_t *)f = v;
		return 0;
	case OPT_SECS_MS:
		if (parse__secs_ms(val, &v) || v < o->min || v > o->max)
			return fail(ld,
				    "invalid %s '%s': expected seconds such as 5 or 0.5 or 500ms",
				    where, val);
		*(unsigned int *)f = (unsigned int)v;
		return 0;
	case OPT_LIST: {
		struct strlist *l = f;
		size_t idx = (size_t)(o - opts);
		const char *p = val;

		if (ld->list_src[idx] != src) {
			/* a higher-precedence source replaces the whole list */
			strlist_clear(l);
			ld->list_src[idx] = src;
		}
		if (src != SRC_ENV && src != SRC_DEFAULT)
			return strlist_add(l, val, strlen(val));
		while (*p) {
			const char *e = strchr(p, o->sep);
			size_t len = e ? (size_t)(e - p) : strlen(p);

			while (len && isspace((unsigned char)*p)) {
				p++;
				len--;
			}
			while (len && isspace((unsigned char)p[len - 1]))
				len--;
			if (len && (err = strlist_add(l, p, len)))
				return err;
			if (!e)
				break;
			p = e + 1;
		}
		return 0;
	}
	}
	return -EINVAL;
}

static int load_file(struct loader *ld, const char *path)
{
	char line[8192], where[PATH_MAX + 64];
	FILE *f;
	int lineno = 0, err = 0;

	f = fopen(path, "re");
	if (!f) {
		err = -errno;
		snprintf(ld->err, ld->errlen, "cannot open config file %s: %s", path,
			 strerror(errno));
		return err;
	}
	while (fgets(line, sizeof(line), f)) {
		char *key, *val, *eq;
		const struct opt *o;

		lineno++;
		if (!strchr(line, '\n') && !feof(f)) {
			err = fail(ld, "%s:%d: line too long", path, lineno);
			goto cleanup;
		}
		key = parse__trim(line);
		if (!*key || *key == '#' || *key == ';')
			continue;
		eq = strchr(key, '=');
		if (!eq) {
			err = fail(ld, "%s:%d: expected 'key = value'", path, lineno);
			goto cleanup;
		}
		*eq = '\0';
		key = parse__trim(key);
		val = parse__trim(eq + 1);
		if (strlen(val) >= 2 && (val[0] == '"' || val[0] == '\'') &&
		    val[strlen(val) - 1] == val[0]) {
			val[strlen(val) - 1] = '\0';
			val++;
		}
		o = find_opt(key, strlen(key));
		if (!o || (o->flags & OPTF_ENV_ONLY) || o->off == OFF(config_file)) {
			err = fail(ld, "%s:%d: unknown key '%s'", path, lineno, key);
			goto cleanup;
		}
		snprintf(where, sizeof(where), "%s:%d: %s", path, lineno, o->name);
		err = set_opt(ld, o, val, SRC_FILE, where);
		if (err)
			goto cleanup;
	}
	if (ferror(f)) {
		err = -EIO;
		snprintf(ld->err, ld->errlen, "cannot read config file %s", path);
	}
cleanup:
	fclose(f);
	return err;
}

static void env_name(const struct opt *o, char *buf, size_t len)
{
	size_t i = 0, j;

	snprintf(buf, len, "MLPROF_");
	i = strlen(buf);
	for (j = 0; o->name[j] && i + 1 < len; j++)
		buf[i++] = o->name[j] == '-' ? '_' : (char)toupper((unsigned char)o->name[j]);
	buf[i] = '\0';
}

static const char *env_get(char **envp, const char *name)
{
	size_t n = strlen(name);

	for (; envp && *envp; envp++)
		if (strncmp(*envp, name, n) == 0 && (*envp)[n] == '=')
			return *envp + n + 1;
	return NULL;
}

static int load_env(struct loader *ld, char **envp)
{
	char name[64];
	int err;

	for (size_t i = 0; i < N_OPTS; i++) {
		const char *val;

		if (opts[i].off == OFF(config_file))
			continue;
		env_name(&opts[i], name, sizeof(name));
		val = env_get(envp, name);
		if (!val)
			continue;
		err = set_opt(ld, &opts[i], val, SRC_ENV, name);
		if (err)
			return err;
	}
	return 0;
}

static int load_flags(struct loader *ld, int argc, char **argv)
{
	char where[128];
	int err;

	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *val = NULL, *eq;
		const struct opt *o;
		size_t nlen;

		if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
			ld->cfg->help = true;
			return 0;
		}
		if (strncmp(a, "--", 2) != 0 || !a[2])
			return fail(ld, "unexpected argument '%s' (try 'mlprof agent --help')", a);
		a += 2;
		eq = strchr(a, '=');
		nlen = eq ? (size_t)(eq - a) : strlen(a);
		o = find_opt(a, nlen);
		if (!o || (o->flags & OPTF_ENV_ONLY))
			return fail(ld, "unknown option '--%.*s' (try 'mlprof agent --help')",
				    (int)nlen, a);
		if (eq) {
			val = eq + 1;
		} else if (o->type == OPT_BOOL) {
			val = "true";
		} else {
			if (i + 1 >= argc)
				return fail(ld, "option '--%s' needs a value %s", o->name, o->arg);
			val = argv[++i];
		}
		snprintf(where, sizeof(where), "--%s", o->name);
		err = set_opt(ld, o, val, SRC_FLAG, where);
		if (err)
			return err;
	}
	return 0;
}

static int read_secret(struct loader *ld, const char *path, char **out)
{
	char buf[8192];
	size_t n;
	FILE *f = fopen(path, "re");
	char *s;

	if (!f) {
		int err = -errno;
		snprintf(ld->err, ld->errlen, "cannot read secret file %s: %s", path,
			 strerror(errno));
		return err;
	}
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	s = parse__trim(buf);
	if (!*s)
		return fail(ld, "secret file %s is empty", path);
	free(*out);
	*out = strdup(s);
	explicit_bzero(buf, sizeof(buf));
	return *out ? 0 : -ENOMEM;
}

int agent_config__split_addr(const char *addr, char *host, size_t hostlen, unsigned int *port)
{
	return httpd__split_addr(addr, host, hostlen, port);
}

static bool valid_label_name(const char *s, size_t len)
{
	if (!len || len > 1024 || !(isalpha((unsigned char)s[0]) || s[0] == '_'))
		return false;
	for (size_t i = 1; i < len; i++)
		if (!(isalnum((unsigned char)s[i]) || s[i] == '_'))
			return false;
	return true;
}

static int check_regex(struct loader *ld, const char *what, const char *re)
{
	regex_t r;
	int rc = regcomp(&r, re, REG_EXTENDED | REG_NOSUB);

	if (rc) {
		char msg[128];
		regerror(rc, &r, msg, sizeof(msg));
		return fail(ld, "invalid %s '%s': %s", what, re, msg);
	}
	regfree(&r);
	return 0;
}

/* "invalid --url": the URL shown with its credentials redacted (userinfo, query). */
static int bad_url(struct loader *ld, const char *url, const char *why)
{
	char shown[1024];

	return fail(ld, "invalid --url '%s': %s", redact__url(url, shown, sizeof(shown)), why);
}

/* The authority of an http(s) URL names a host, and a port when given is 1..65535. */
static int check_url_host(struct loader *ld, const char *url)
{
	const char *a = strstr(url, "://") + 3, *end = a + strcspn(a, "/?#"), *at, *h, *colon;

	at = memchr(a, '@', (size_t)(end - a));
	h = at ? at + 1 : a;
	if (*h == '[') {
		const char *rb = memchr(h, ']', (size_t)(end - h));

		if (!rb || rb == h + 1)
			goto nohost;
		colon = rb + 1 < end && rb[1] == ':' ? rb + 1 : NULL;
	} else {
		colon = memchr(h, ':', (size_t)(end - h));
		if ((colon ? colon : end) == h)
			goto nohost;
	}
	if (colon) {
		char *pe;
		unsigned long port;

		errno = 0;
		port = strtoul(colon + 1, &pe, 10);
		if (pe != end || colon + 1 == end || errno || !port || port > 65535)
			return bad_url(ld, url, "port must be 1..65535");
	}
	return 0;
nohost:
	return bad_url(ld, url, "no host (expected http[s]://HOST[:PORT][/PATH])");
}

static int validate(struct loader *ld, char **envp)
{
	struct agent_config *c = ld->cfg;
	int err;

	for (int i = 0; i < c->pids.n; i++) {
		char *end;
		long v;

		errno = 0;
		v = strtol(c->pids.v[i], &end, 10);
		if (errno || *end || v <= 0 || v > INT_MAX ||
		    !isdigit((unsigned char)c->pids.v[i][0]))
			return fail(ld, "invalid --pid '%s': expected a process id", c->pids.v[i]);
	}
	if (*c->process_regex && (err = check_regex(ld, "--process-regex", c->process_regex)))
		return err;
	{
		struct cuda_config cc;

		if (cuda__parse_families(c->cuda, &cc))
			return fail(ld,
				    "invalid --cuda '%s': expected all, none, or a comma list of "
				    "launches,sync,memcpy,memory,nccl",
				    c->cuda);
	}
	if (*c->url && strncmp(c->url, "http://", 7) != 0 && strncmp(c->url, "https://", 8) != 0)
		return bad_url(ld, c->url, "expected http:// or https://");
	if (*c->url && (err = check_url_host(ld, c->url)))
		return err;
	if (!*c->url && !*c->output_dir)
		return fail(ld, "no --url and no --output-dir: profiles would have nowhere to go");
	for (int i = 0; i < c->headers.n; i++) {
		const char *h = c->headers.v[i], *colon = strchr(h, ':');
		if (!colon || colon == h || strpbrk(h, "\r\n")) {
			char shown[256];

			/* the value may be a token: never echo it */
			return fail(ld, "invalid --header '%s': expected 'Name: value'",
				    colon && colon != h ? redact__header(h, shown, sizeof(shown))
							: REDACTED);
		}
	}
	for (int i = 0; i < c->labels.n; i++) {
		const char *l = c->labels.v[i], *eq = strchr(l, '=');
		if (!eq || !valid_label_name(l, (size_t)(eq - l)))
			return fail(ld,
				    "invalid --label '%s': expected NAME=VALUE with NAME matching "
				    "[a-zA-Z_][a-zA-Z0-9_]*",
				    l);
		if (strlen(eq + 1) > 2048)
			return fail(ld, "invalid --label '%.*s=...': value longer than 2048",
				    (int)(eq - l), l);
	}
	for (int i = 0; i < c->ml_env.n; i++)
		if (!valid_label_name(c->ml_env.v[i], strlen(c->ml_env.v[i])))
			return fail(ld, "invalid --ml-env '%s': not a variable name",
				    c->ml_env.v[i]);
	for (int i = 0; i < c->service_rules.n; i++) {
		const char *r = c->service_rules.v[i], *eq = strrchr(r, '=');
		char re[1024];
		size_t plen;

		if (strncmp(r, "process:", 8) == 0)
			plen = 8;
		else if (strncmp(r, "cgroup:", 7) == 0)
			plen = 7;
		else
			return fail(ld,
				    "invalid --service-rule '%s': expected process:REGEX=NAME or "
				    "cgroup:REGEX=NAME",
				    r);
		if (!eq || eq < r + plen || !eq[1] || (size_t)(eq - r - plen) >= sizeof(re))
			return fail(ld, "invalid --service-rule '%s': expected KIND:REGEX=NAME", r);
		snprintf(re, sizeof(re), "%.*s", (int)(eq - r - (long)plen), r + plen);
		if ((err = check_regex(ld, "--service-rule regex", re)))
			return err;
	}
	if (*c->metrics_addr && strcmp(c->metrics_addr, "off") != 0) {
		char host[256];
		unsigned int port;
		if (agent_config__split_addr(c->metrics_addr, host, sizeof(host), &port))
			return fail(ld, "invalid --metrics-addr '%s': expected HOST:PORT",
				    c->metrics_addr);
	}
	if (*c->basic_auth_password_file &&
	    (err = read_secret(ld, c->basic_auth_password_file, &c->basic_auth_password)))
		return err;
	if (*c->bearer_token_file &&
	    (err = read_secret(ld, c->bearer_token_file, &c->bearer_token)))
		return err;
	if (*c->basic_auth_user && !*c->basic_auth_password)
		return fail(ld, "--basic-auth-user needs --basic-auth-password-file or "
				"MLPROF_BASIC_AUTH_PASSWORD");
	if (*c->basic_auth_user && *c->bearer_token)
		return fail(ld, "basic auth and a bearer token are mutually exclusive");
	if (*c->ca_file && !*c->url)
		return fail(ld, "--ca-file given without --url");
	if (!strcmp(c->k8s, "on") && !*c->node_name && !env_get(envp, "NODE_NAME"))
		return fail(ld, "--k8s=on needs the node name: set NODE_NAME (fieldRef "
				"spec.nodeName) or --node-name");
	return 0;
}

int agent_config__load(struct agent_config *cfg, int argc, char **argv, char **envp, char *err,
		       size_t errlen)
{
	struct loader ld = {.cfg = cfg, .err = err, .errlen = errlen};
	const char *path = NULL;
	int ret;

	if (errlen)
		err[0] = '\0';
	memset(cfg, 0, sizeof(*cfg));
	for (size_t i = 0; i < N_OPTS; i++) {
		ret = set_opt(&ld, &opts[i], opts[i].def, SRC_DEFAULT, opts[i].name);
		if (ret)
			goto cleanup;
	}
	/* the config file location itself: flag > env */
	path = env_get(envp, "MLPROF_CONFIG");
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--config") == 0 && i + 1 < argc)
			path = argv[i + 1];
		else if (strncmp(argv[i], "--config=", 9) == 0)
			path = argv[i] + 9;
	}
	if (path && *path) {
		ret = set_opt(&ld, &opts[0], path, SRC_FLAG, "--config");
		if (ret)
			goto cleanup;
		ret = load_file(&ld, path);
		if (ret)
			goto cleanup;
	}
	ret = load_env(&ld, envp);
	if (ret)
		goto cleanup;
	ret = load_flags(&ld, argc, argv);
	if (ret || cfg->help)
		goto cleanup;
	ret = validate(&ld, envp);
cleanup:
	if (ret == -ENOMEM && errlen)
		snprintf(err, errlen, "out of memory");
	return ret;
}

void agent_config__free(struct agent_config *cfg)
{
	for (size_t i = 0; i < N_OPTS; i++) {
		void *f = field(cfg, &opts[i]);

		if (opts[i].type == OPT_STR) {
			char **s = f;
			if (*s && (opts[i].flags & OPTF_SECRET))
				explicit_bzero(*s, strlen(*s));
			free(*s);
			*s = NULL;
		} else if (opts[i].type == OPT_LIST) {
			strlist_clear(f);
		}
	}
	memset(cfg, 0, sizeof(*cfg));
}

void agent_config__usage(FILE *f)
{
	char env[64], left[128];

	fprintf(f,
		"Usage: mlprof agent [options]\n"
		"\n"
		"Continuous profiling daemon: samples every process on the host (or those\n"
		"selected), builds one pprof per service for every upload interval and pushes it\n"
		"to Grafana Pyroscope (--url) or writes timestamped files to --output-dir.\n"
		"\n"
		"Every option can also be given as an environment variable MLPROF_<NAME> (shown)\n"
		"or as a 'name = value' line in the --config file. Precedence: flags > "
		"environment\n"
		"> config file > defaults. Lists repeat the flag or the file key; in the\n"
		"environment they are comma separated. SIGHUP re-reads the configuration.\n"
		"--pid is applied in the kernel; --process-regex, --cgroup and --ml-only are\n"
		"user-space filters (the samples are taken, then discarded).\n"
		"\n"
		"Options:\n");
	for (size_t i = 0; i < N_OPTS; i++) {
		const struct opt *o = &opts[i];

		env_name(o, env, sizeof(env));
		if (o->flags & OPTF_ENV_ONLY)
			snprintf(left, sizeof(left), "  %s=%s", env, o->arg);
		else if (o->type == OPT_BOOL)
			snprintf(left, sizeof(left), "  --%s[=BOOL]", o->name);
		else
			snprintf(left, sizeof(left), "  --%s %s", o->name, o->arg);
		fprintf(f, "%s\n      %s", left, o->help);
		if (o->def[0])
			fprintf(f, " [default: %s]", o->def);
		if (o->type == OPT_UINT)
			fprintf(f, " [range: %llu..%llu]", (unsigned long long)o->min,
				(unsigned long long)o->max);
		else if (o->type == OPT_SECS_MS)
			fprintf(f, " [range: %g..%g s]", (double)o->min / 1000.0,
				(double)o->max / 1000.0);
		else if (o->type == OPT_BYTES && o->max != UINT64_MAX)
			fprintf(f, " [range: %lluM..%lluG]", (unsigned long long)(o->min >> 20),
				(unsigned long long)(o->max >> 30));
		else if (o->type == OPT_BYTES && o->min)
			fprintf(f, " [minimum: %lluM]", (unsigned long long)(o->min >> 20));
		if (!(o->flags & OPTF_ENV_ONLY))
			fprintf(f, " (env %s)", env);
		fputc('\n', f);
	}
	fprintf(f, "  -h, --help\n      this text\n"
		   "\nInvalid configuration exits with status 2 and one line saying why.\n");
}

void agent_config__for_each(const struct agent_config *cfg, bool raw,
			    void (*cb)(const char *key, const char *value, void *ctx), void *ctx)
{
	char buf[4096];

	for (size_t i = 0; i < N_OPTS; i++) {
		const struct opt *o = &opts[i];
		const void *f = cfield(cfg, o);

		switch (o->type) {
		case OPT_STR: {
			const char *s = *(char *const *)f;
			if (!raw && (o->flags & OPTF_SECRET))
				s = s && *s ? "<set>" : "";
			if (!raw && (o->flags & OPTF_URL))
				redact__url(s, buf, sizeof(buf));
			else
				snprintf(buf, sizeof(buf), "%s", s ? s : "");
			break;
		}
		case OPT_UINT:
		case OPT_SECS_MS:
			snprintf(buf, sizeof(buf), "%u", *(const unsigned int *)f);
			break;
		case OPT_BOOL:
			snprintf(buf, sizeof(buf), "%s", *(const bool *)f ? "true" : "false");
			break;
		case OPT_BYTES:
			snprintf(buf, sizeof(buf), "%llu",
				 (unsigned long long)*(const uint64_t *)f);
			break;
		case OPT_LIST: {
			const struct strlist *l = f;
			size_t n = 0;
			buf[0] = '\0';
			for (int j = 0; j < l->n && n < sizeof(buf); j++) {
				char h[256];
				const char *v = l->v[j];

				if (!raw && (o->flags & OPTF_HEADER))
					v = redact__header(v, h, sizeof(h));
				n += (size_t)snprintf(buf + n, sizeof(buf) - n, "%s%s",
						      j ? "," : "", v);
			}
			break;
		}
		}
		cb(o->name, buf, ctx);
	}
}

bool agent_config__reloadable(const char *key)
{
	const struct opt *o = find_opt(key, strlen(key));

	return o && (o->flags & OPTF_RELOAD);
}
