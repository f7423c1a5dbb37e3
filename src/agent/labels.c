// SPDX-License-Identifier: Apache-2.0
/* Series labels of processes: ML job variables, filters, service rules, the pid cache. */
#define LOG_MODULE "labels"
#include "agent/labels.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <regex.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "agent/agent_config.h"
#include "agent/cgroup.h"
#include "agent/k8s.h"
#include "agent/service_name.h"
#include "symbolize/proc.h"
#include "util/log.h"
#include "util/lru.h"

/* ------------------------------------------------------------------ ML labels */

const char *const labels_ml_env_default[] = {
	"RANK",		"LOCAL_RANK",	       "WORLD_SIZE", "CUDA_VISIBLE_DEVICES",
	"SLURM_JOB_ID", "TORCHELASTIC_RUN_ID", NULL};

/* See labels.h. */
int labels__ml_from_environ(const char *blob, size_t len, const char *const *names, int n_names,
			    struct label_pair *out, int max, char *buf, size_t buflen)
{
	size_t used = 0;
	int n = 0;

	for (int k = 0; k < n_names && n < max; k++) {
		size_t nl = strlen(names[k]);
		const char *p = blob, *end = blob + len, *val = NULL;
		size_t vl = 0;

		while (p < end) {
			const char *z = memchr(p, '\0', (size_t)(end - p));
			size_t el = z ? (size_t)(z - p) : (size_t)(end - p);

			if (el > nl && p[nl] == '=' && !memcmp(p, names[k], nl)) {
				val = p + nl + 1;
				vl = el - nl - 1;
				/* the last definition wins, as getenv() of most libcs */
			}
			p += el + 1;
		}
		if (!val)
			continue;
		{
			char lname[128], raw[LABEL_VALUE_MAX + 1];
			size_t i;
			size_t ln, lv;

			for (i = 0; i < nl && i < sizeof(lname) - 1; i++)
				lname[i] = (char)tolower((unsigned char)names[k][i]);
			lname[i] = '\0';
			if (vl > LABEL_VALUE_MAX)
				vl = LABEL_VALUE_MAX;
			memcpy(raw, val, vl);
			raw[vl] = '\0';
			ln = strlen(lname) + 2;
			lv = vl + 1;
			if (used + ln + lv > buflen)
				break;
			out[n].name = labels__sanitize_name(lname, buf + used, ln);
			used += strlen(buf + used) + 1;
			out[n].value = labels__sanitize_value(raw, buf + used, lv);
			used += strlen(buf + used) + 1;
			n++;
		}
	}
	return n;
}
/* ------------------------------------------------------------------ labeler */

struct rule {
	bool cgroup; /* match the cgroup path, else "comm cmdline" */
	regex_t re;
	char *name;
};

/*
 * Service names of processes that would each make a series of their own (see compute()):
 * kernel threads share KERNEL_SERVICE, processes that exited before the labeler could read
 * /proc share GONE_SERVICE. Thread names stay visible as the thread_name sample label.
 */
#define KERNEL_SERVICE "kernel"
#define GONE_SERVICE   "short-lived"
#define PF_KTHREAD     0x00200000 /* /proc/PID/stat flags: a kernel thread */
#define MAX_ANCESTORS  16

struct pid_entry {
	pid_t pid;
	bool used;
	bool young; /* labeled as its ancestor until service_min_age: re-labeled when older */
	unsigned long long start_time; /* /proc/PID/stat field 22 */
	char comm[16];
	uint64_t window; /* last validated */
	uint64_t proc_gen;
	uint64_t k8s_gen;
	bool k8s_missing; /* container/pod labels not known yet */
	struct series_labels sl;
	char *strings; /* owns every string of sl */
	struct pid_entry *hnext;
	struct lru_node lru;
};

struct labeler {
	const char *proc_root;
	/* configuration */
	char hostname[256];
	char node[254];
	char *service_name;
	struct rule *rules;
	int n_rules;
	bool has_regex;
	regex_t proc_re;
	char **cgroups;
	int n_cgroups;
	bool ml_only;
	unsigned int ml_logged;		  /* --ml-only decisions logged at info level (bounded) */
	unsigned long long min_age_ticks; /* --service-min-age in clock ticks, 0 = off */
	long clk_tck;
	char **ml_env; /* default + user */
	int n_ml_env;
	struct label_pair *statics;
	int n_statics;
	char *statics_buf;
	struct pid_entry gone; /* labels of samples of exited processes whose pid was reused */
	uint64_t gone_window;  /* the window gone was computed for (+1; 0: never) */
	/* cache */
	struct pid_entry *entries;
	size_t cap, used;
	struct pid_entry **buckets;
	size_t n_buckets;
	struct lru_list lru;	     /* entries in the hash, most recent at head */
	struct pid_entry *free_list; /* pruned slots, linked by hnext */
	size_t live;		     /* entries in the hash/LRU */
	struct k8s_client *k8s;
	struct labeler_stats st;
};

static void labeler_clear_config(struct labeler *l)
{
	free(l->service_name);
	for (int i = 0; i < l->n_rules; i++) {
		regfree(&l->rules[i].re);
		free(l->rules[i].name);
	}
	free(l->rules);
	if (l->has_regex)
		regfree(&l->proc_re);
	for (int i = 0; i < l->n_cgroups; i++)
		free(l->cgroups[i]);
	free(l->cgroups);
	for (int i = 0; i < l->n_ml_env; i++)
		free(l->ml_env[i]);
	free(l->ml_env);
	free(l->statics);
	free(l->statics_buf);
	l->service_name = NULL;
	l->rules = NULL;
	l->n_rules = 0;
	l->has_regex = false;
	l->cgroups = NULL;
	l->n_cgroups = 0;
	l->ml_env = NULL;
	l->n_ml_env = 0;
	l->statics = NULL;
	l->statics_buf = NULL;
	l->n_statics = 0;
}

static char **dup_list(const struct strlist *src, const char *const *prefix, int *n_out)
{
	int np = 0, n;
	char **v;

	while (prefix && prefix[np])
		np++;
	n = np + src->n;
	v = calloc((size_t)n + 1, sizeof(*v));
	if (!v)
		return NULL;
	for (int i = 0; i < n; i++) {
		v[i] = strdup(i < np ? prefix[i] : src->v[i - np]);
		if (!v[i]) {
			for (int j = 0; j < i; j++)
				free(v[j]);
			free(v);
			return NULL;
		}
	}
	*n_out = n;
	return v;
}

static size_t bucket_of(const struct labeler *l, pid_t pid)
{
	return ((uint32_t)pid * 2654435761u) & (l->n_buckets - 1);
}

static void cache_drop_all(struct labeler *l)
{
	for (size_t i = 0; i < l->cap; i++) {
		free(l->entries[i].strings);
		memset(&l->entries[i], 0, sizeof(l->entries[i]));
	}
	memset(l->buckets, 0, sizeof(*l->buckets) * l->n_buckets);
	lru__init(&l->lru);
	l->free_list = NULL;
	l->used = 0;
	l->live = 0;
}

int labeler__reconfigure(struct labeler *l, const struct agent_config *cfg)
{
	struct utsname u;
	size_t blen = 0;
	int err = 0;

	labeler_clear_config(l);
	if (cfg->hostname && *cfg->hostname)
		labels__sanitize_value(cfg->hostname, l->hostname, sizeof(l->hostname));
	else if (!uname(&u))
		labels__sanitize_value(u.nodename, l->hostname, sizeof(l->hostname));
	if (*cfg->service_name && !(l->service_name = strdup(cfg->service_name)))
		goto nomem;
	l->rules = calloc((size_t)cfg->service_rules.n + 1, sizeof(*l->rules));
	if (!l->rules)
		goto nomem;
	for (int i = 0; i < cfg->service_rules.n; i++) {
		const char *r = cfg->service_rules.v[i], *eq = strrchr(r, '=');
		bool cg = !strncmp(r, "cgroup:", 7);
		const char *pat = r + (cg ? 7 : 8);
		char re[1024];
		struct rule *ru = &l->rules[l->n_rules];

		/* validated by agent_config */
		if (!eq || eq < pat)
			continue;
		snprintf(re, sizeof(re), "%.*s", (int)(eq - pat), pat);
		if (regcomp(&ru->re, re, REG_EXTENDED | REG_NOSUB)) {
			err = -EINVAL;
			goto cleanup;
		}
		ru->cgroup = cg;
		ru->name = strdup(eq + 1);
		l->n_rules++;
		if (!ru->name)
			goto nomem;
	}
	if (*cfg->process_regex) {
		if (regcomp(&l->proc_re, cfg->process_regex, REG_EXTENDED | REG_NOSUB)) {
			err = -EINVAL;
			goto cleanup;
		}
		l->has_regex = true;
	}
	if (!(l->cgroups = dup_list(&cfg->cgroups, NULL, &l->n_cgroups)))
		goto nomem;
	if (!(l->ml_env = dup_list(&cfg->ml_env, labels_ml_env_default, &l->n_ml_env)))
		goto nomem;
	if (cfg->ml_only && !l->ml_only)
		pr_info("--ml-only: only processes running Python with torch, tensorflow, jax or "
			"CUDA libraries mapped are profiled; samples of other processes are "
			"dropped "
			"(mlprof_samples_dropped_total{reason=\"filtered\"})");
	l->ml_only = cfg->ml_only;
	l->ml_logged = 0;
	l->clk_tck = sysconf(_SC_CLK_TCK) > 0 ? sysconf(_SC_CLK_TCK) : 100;
	l->min_age_ticks =
		(unsigned long long)cfg->service_min_age_s * (unsigned long long)l->clk_tck;
	for (int i = 0; i < cfg->labels.n; i++)
		blen += strlen(cfg->labels.v[i]) + 2;
	l->statics = calloc((size_t)cfg->labels.n + 1, sizeof(*l->statics));
	l->statics_buf = malloc(blen + 1);
	if (!l->statics || !l->statics_buf)
		goto nomem;
	blen = 0;
	for (int i = 0; i < cfg->labels.n; i++) {
		const char *s = cfg->labels.v[i], *eq = strchr(s, '=');
		size_t nl;

		if (!eq)
			continue;
		nl = (size_t)(eq - s);
		l->statics[l->n_statics].name = l->statics_buf + blen;
		memcpy(l->statics_buf + blen, s, nl);
		l->statics_buf[blen + nl] = '\0';
		blen += nl + 1;
		l->statics[l->n_statics].value = l->statics_buf + blen;
		strcpy(l->statics_buf + blen, eq + 1);
		blen += strlen(eq + 1) + 1;
		l->n_statics++;
	}
	if (l->entries)
		cache_drop_all(l);
	return 0;
nomem:
	err = -ENOMEM;
cleanup:
	labeler_clear_config(l);
	return err;
}

struct labeler *labeler__new(const struct agent_config *cfg, const char *proc_root)
{
	struct labeler *l = calloc(1, sizeof(*l));
	bool k8s;
	int err;

	if (!l)
		return NULL;
	l->proc_root = proc_root ? proc_root : "/proc";
	l->cap = cfg->label_cache_size ? cfg->label_cache_size : 4096;
	for (l->n_buckets = 16; l->n_buckets < l->cap * 2; l->n_buckets *= 2)
		;
	l->entries = calloc(l->cap, sizeof(*l->entries));
	l->buckets = calloc(l->n_buckets, sizeof(*l->buckets));
	if (!l->entries || !l->buckets) {
		err = -ENOMEM;
		goto cleanup;
	}
	err = labeler__reconfigure(l, cfg);
	if (err)
		goto cleanup;
	snprintf(l->node, sizeof(l->node), "%s",
		 *cfg->node_name ? cfg->node_name : (getenv("NODE_NAME") ?: ""));
	k8s = !strcmp(cfg->k8s, "on") ||
	      (!strcmp(cfg->k8s, "auto") && getenv("KUBERNETES_SERVICE_HOST"));
	if (k8s) {
		l->k8s = k8s_client__new(cfg->k8s_source, l->node);
		if (!l->k8s) {
			err = -errno;
			goto cleanup;
		}
	}
	return l;
cleanup:
	labeler__free(l);
	errno = -err;
	return NULL;
}

void labeler__free(struct labeler *l)
{
	if (!l)
		return;
	k8s_client__free(l->k8s);
	if (l->entries)
		for (size_t i = 0; i < l->cap; i++)
			free(l->entries[i].strings);
	free(l->entries);
	free(l->gone.strings);
	free(l->buckets);
	labeler_clear_config(l);
	free(l);
}

/* Reads up to len-1 bytes of proc_root/pid/name; returns bytes read or -errno. */
static ssize_t read_proc(const struct labeler *l, pid_t pid, const char *name, char *buf,
			 size_t len)
{
	char path[PATH_MAX];
	ssize_t n, total = 0;
	int fd;

	snprintf(path, sizeof(path), "%s/%d/%s", l->proc_root, pid, name);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	while ((size_t)total < len - 1) {
		n = read(fd, buf + total, len - 1 - (size_t)total);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			total = -errno;
			break;
		}
		if (n == 0)
			break;
		total += n;
	}
	close(fd);
	if (total >= 0)
		buf[total] = '\0';
	return total;
}

/* What the labeler reads from /proc/PID/stat. */
struct pstat {
	char comm[64];
	pid_t ppid;		  /* field 4 */
	unsigned int flags;	  /* field 9 (PF_*) */
	unsigned long long start; /* field 22: start time, clock ticks after boot */
};

/* Parses /proc/PID/stat ("pid (comm) state ppid ... flags ... starttime"). 0 or -errno. */
static int read_stat(const struct labeler *l, pid_t pid, struct pstat *ps)
{
	char buf[1024], *lp, *rp, *p;
	ssize_t n = read_proc(l, pid, "stat", buf, sizeof(buf));
	int field = 3;

	if (n <= 0)
		return n < 0 ? (int)n : -EINVAL;
	lp = strchr(buf, '(');
	rp = strrchr(buf, ')');
	if (!lp || !rp || rp < lp || !rp[1])
		return -EINVAL;
	snprintf(ps->comm, sizeof(ps->comm), "%.*s", (int)(rp - lp - 1), lp + 1);
	ps->ppid = 0;
	ps->flags = 0;
	p = rp + 2;
	while (*p && field < 22) {
		if (field == 4)
			ps->ppid = (pid_t)strtol(p, NULL, 10);
		else if (field == 9)
			ps->flags = (unsigned int)strtoul(p, NULL, 10);
		while (*p && *p != ' ')
			p++;
		if (*p == ' ') {
			p++;
			field++;
		}
	}
	if (field != 22 || !*p)
		return -EINVAL;
	ps->start = strtoull(p, NULL, 10);
	return 0;
}

/* Clock ticks since boot (proc_root/uptime), or 0 when unknown. */
static unsigned long long uptime_ticks(const struct labeler *l)
{
	char path[PATH_MAX], buf[64];
	double up;
	FILE *f;

	snprintf(path, sizeof(path), "%s/uptime", l->proc_root);
	f = fopen(path, "re");
	if (!f)
		return 0;
	if (!fgets(buf, sizeof(buf), f) || sscanf(buf, "%lf", &up) != 1 || up < 0)
		up = 0;
	fclose(f);
	return (unsigned long long)(up * (double)l->clk_tck);
}

/* Whether a process that started at start (ticks) is younger than --service-min-age. */
static bool is_young(const struct labeler *l, unsigned long long start, unsigned long long now)
{
	return l->min_age_ticks && now && now >= start && now - start < l->min_age_ticks;
}

static unsigned int ml_bits_of(const struct labeler *l, pid_t pid, const struct proc *proc)
{
	unsigned int bits = 0;
	char path[PATH_MAX], line[PATH_MAX + 128];
	FILE *f;
	int lines = 0;

	if (proc && proc->n_maps) {
		for (size_t i = 0; i < proc->n_maps; i++)
			if (proc->maps[i].path && proc->maps[i].path[0] == '/')
				bits |= labels__ml_classify_path(proc->maps[i].path);
		return bits;
	}
	snprintf(path, sizeof(path), "%s/%d/maps", l->proc_root, pid);
	f = fopen(path, "re");
	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f) && lines++ < 100000) {
		char *p = strchr(line, '/');
		if (!p)
			continue;
		p[strcspn(p, "\n")] = '\0';
		bits |= labels__ml_classify_path(p);
	}
	fclose(f);
	return bits;
}

/* Growable string arena for one entry's labels (bounded). */
struct sbuf {
	char *p;
	size_t n, cap;
	bool overflow;
};

static size_t sb_add(struct sbuf *b, const char *s)
{
	size_t l = strlen(s) + 1, off = b->n;

	if (b->n + l > b->cap) {
		size_t cap = (b->n + l) * 2;
		char *np;

		if (cap > (256u << 10) || !(np = realloc(b->p, cap))) {
			b->overflow = true;
			return (size_t)-1;
		}
		b->p = np;
		b->cap = cap;
	}
	memcpy(b->p + b->n, s, l);
	b->n += l;
	return off;
}

struct lbl_build {
	size_t name[EXPORT_MAX_LABELS - 1], value[EXPORT_MAX_LABELS - 1];
	int n;
	bool trimmed;
};

/* Adds or (override) replaces a label; names must already be valid. */
static void lb_set(struct lbl_build *lb, struct sbuf *sb, const char *name, const char *value,
		   bool override)
{
	char v[LABEL_VALUE_MAX + 1];
	size_t no, vo;

	if (!*value)
		return;
	labels__sanitize_value(value, v, sizeof(v));
	for (int i = 0; i < lb->n; i++) {
		if (!strcmp(sb->p + lb->name[i], name)) {
			if (override && (vo = sb_add(sb, v)) != (size_t)-1)
				lb->value[i] = vo;
			return;
		}
	}
	if (lb->n >= EXPORT_MAX_LABELS - 1) {
		lb->trimmed = true;
		return;
	}
	no = sb_add(sb, name);
	vo = sb_add(sb, v);
	if (no == (size_t)-1 || vo == (size_t)-1)
		return;
	lb->name[lb->n] = no;
	lb->value[lb->n] = vo;
	lb->n++;
}

static bool filters_pass(struct labeler *l, pid_t pid, const char *comm, const char *args,
			 const struct cgroup_info *cg, const struct proc *proc)
{
	if (l->has_regex && regexec(&l->proc_re, comm, 0, NULL, 0) &&
	    regexec(&l->proc_re, args, 0, NULL, 0))
		return false;
	if (l->n_cgroups) {
		bool any = false;
		for (int i = 0; i < l->n_cgroups && !any; i++)
			any = (cg->path[0] && strstr(cg->path, l->cgroups[i])) ||
			      (cg->container_id[0] &&
			       !strncmp(cg->container_id, l->cgroups[i], strlen(l->cgroups[i])));
		if (!any)
			return false;
	}
	if (l->ml_only) {
		unsigned int bits = ml_bits_of(l, pid, proc);

		if (!labels__is_ml(bits)) {
			const char *why = !(bits & ML_PYTHON)
						  ? "no Python"
						  : "Python without torch, tensorflow, jax or CUDA "
						    "libraries";

			/* a few at info level say why nothing arrives; the rest at debug */
			if (l->ml_logged < 5)
				pr_info("--ml-only: not profiling pid %d (%s): %s%s", pid, comm,
					why,
					++l->ml_logged == 5 ? " (further ones at debug level)"
							    : "");
			else
				pr_debug("--ml-only: not profiling pid %d (%s): %s", pid, comm,
					 why);
			return false;
		}
	}
	return true;
}

/* The service a rule gives "comm cmdline" args or cgroup path cgpath, or NULL. */
static const char *rule_service(const struct labeler *l, const char *args, const char *cgpath)
{
	for (int i = 0; i < l->n_rules; i++) {
		const char *subject = l->rules[i].cgroup ? cgpath : args;

		if (!regexec(&l->rules[i].re, subject, 0, NULL, 0))
			return l->rules[i].name;
	}
	return NULL;
}

/* "comm arg0 arg1 ...": what --process-regex and process: rules match. */
static void args_text(const char *comm, const char *cmdline, ssize_t cl, char *args, size_t len)
{
	size_t o;

	snprintf(args, len, "%s ", comm);
	o = strlen(args);
	for (ssize_t i = 0; i < cl && o < len - 1; i++)
		args[o++] = cmdline[i] ? cmdline[i] : ' ';
	while (o && args[o - 1] == ' ')
		o--;
	args[o] = '\0';
}

/*
 * The service of a young process named after its executable, when a shell started it (the
 * commands of scripts and pipelines): the shell's script name; for a shell running commands
 * (-c, a pipeline), the shell's own name once it is old, else the service of what started
 * it (the nearest ancestor that a rule names, that runs a script, or that is old).
 * Interactive shells lend no name: what a user types is named after itself. The walk stops
 * at pid 1, kernel threads and cgroup boundaries (a container's shim names nothing).
 * A young shell running commands is itself such a command (shell_parent false: any
 * parent). Returns false when the process keeps its own name.
 */
static bool ancestor_service(const struct labeler *l, pid_t ppid, bool shell_parent,
			     const char *cgtext, unsigned long long now, char *out, size_t outlen)
{
	char cmdline[4096], args[4096 + 80], cg[8192], name[LABEL_VALUE_MAX + 1];
	char fallback[LABEL_VALUE_MAX + 1] = "";

	for (int depth = 0; depth < MAX_ANCESTORS && ppid > 1; depth++) {
		enum service_origin origin;
		struct pstat ps;
		struct cgroup_info ci;
		const char *r;
		ssize_t cl, gl;

		if (read_stat(l, ppid, &ps) || ps.ppid <= 0 || (ps.flags & PF_KTHREAD))
			break;
		gl = read_proc(l, ppid, "cgroup", cg, sizeof(cg));
		if (gl < 0 || strcmp(cg, cgtext))
			break;
		cl = read_proc(l, ppid, "cmdline", cmdline, sizeof(cmdline));
		if (cl < 0)
			cl = 0;
		if (shell_parent && depth == 0 && (!cl || !labels__is_shell(cmdline)))
			return false; /* only shells lend their name to their commands */
		args_text(ps.comm, cmdline, cl, args, sizeof(args));
		labels__parse_cgroup(cg, (size_t)gl, &ci);
		r = rule_service(l, args, ci.path);
		if (r) {
			snprintf(out, outlen, "%s", r);
			return true;
		}
		origin = labels__service_derive(cmdline, (size_t)cl, ps.comm, name, sizeof(name));
		if (shell_parent && depth == 0 && origin == SERVICE_FROM_EXE)
			return false; /* an interactive shell */
		if (origin == SERVICE_FROM_SCRIPT || !is_young(l, ps.start, now)) {
			snprintf(out, outlen, "%s", name);
			return true;
		}
		if (!fallback[0])
			snprintf(fallback, sizeof(fallback), "%s", name);
		ppid = ps.ppid;
	}
	if (!fallback[0])
		return false;
	snprintf(out, outlen, "%s", fallback);
	return true;
}

/* (Re)computes an entry's filter decision and labels. */
static void compute(struct labeler *l, struct pid_entry *e, pid_t pid, const char *comm,
		    const struct proc *proc)
{
	char cmdline[4096], args[4096 + 32], service[LABEL_VALUE_MAX + 1], cgtext[8192];
	char envbuf[8192];
	struct label_pair ml[64];
	struct pstat ps = {.ppid = 0};
	bool alive, kthread;
	unsigned long long now = 0;
	enum service_origin origin;
	const char *r;
	struct cgroup_info cg;
	struct k8s_pod_meta pm = {.pod = ""};
	struct lbl_build lb = {.n = 0};
	struct sbuf sb = {0};
	ssize_t cl, gl;
	bool k8s_found = false;
	int nml = 0;

	free(e->strings);
	e->strings = NULL;
	memset(&e->sl, 0, sizeof(e->sl));
	e->k8s_missing = false;
	e->young = false;
	alive = read_stat(l, pid, &ps) == 0;
	if (alive) {
		comm = ps.comm;
		e->start_time = ps.start;
	} else {
		e->start_time = 0;
	}
	snprintf(e->comm, sizeof(e->comm), "%.15s", comm ? comm : "");
	e->proc_gen = proc ? proc->gen : 0;

	cl = read_proc(l, pid, "cmdline", cmdline, sizeof(cmdline));
	if (cl < 0)
		cl = 0;
	args_text(e->comm, cmdline, cl, args, sizeof(args));
	/* kernel threads have no command line; pid 2 (kthreadd) is their parent */
	kthread = pid == 0 /* idle */ ||
		  (alive && ((ps.flags & PF_KTHREAD) || (!cl && (pid == 2 || ps.ppid == 2))));
	gl = read_proc(l, pid, "cgroup", cgtext, sizeof(cgtext));
	if (gl < 0)
		cgtext[0] = '\0';
	labels__parse_cgroup(cgtext, gl > 0 ? (size_t)gl : 0, &cg);

	e->sl.keep = filters_pass(l, pid, e->comm, args, &cg, proc);
	if (!e->sl.keep)
		return;

	if (l->k8s && (cg.container_id[0] || cg.pod_uid[0])) {
		e->k8s_gen =
			k8s_client__lookup(l->k8s, cg.container_id, cg.pod_uid, &pm, &k8s_found);
		e->k8s_missing = !k8s_found;
	}
	/*
	 * service_name: fixed > rules > k8s namespace/container > kernel threads ("kernel") >
	 * exited before first seen ("short-lived") > derived from the command line. A young
	 * process named only after its executable takes its ancestor's service until it is
	 * --service-min-age old, so that commands of scripts and pipelines add no series.
	 */
	service[0] = '\0';
	if (l->service_name)
		snprintf(service, sizeof(service), "%s", l->service_name);
	else if ((r = rule_service(l, args, cg.path)))
		snprintf(service, sizeof(service), "%s", r);
	if (!service[0] && pm.pod[0] && pm.container[0])
		snprintf(service, sizeof(service), "%s/%s", pm.ns, pm.container);
	if (!service[0] && kthread)
		snprintf(service, sizeof(service), KERNEL_SERVICE);
	if (!service[0] && !alive)
		snprintf(service, sizeof(service), GONE_SERVICE);
	if (!service[0] &&
	    (origin = labels__service_derive(cmdline, (size_t)cl, e->comm, service,
					     sizeof(service))) != SERVICE_FROM_SCRIPT &&
	    is_young(l, e->start_time, (now = uptime_ticks(l)))) {
		char anc[LABEL_VALUE_MAX + 1];

		e->young = true;
		if (ancestor_service(l, ps.ppid, origin != SERVICE_FROM_SHELL, cgtext, now, anc,
				     sizeof(anc)))
			snprintf(service, sizeof(service), "%s", anc);
	}

	lb_set(&lb, &sb, "service_name", service, false);
	lb_set(&lb, &sb, "hostname", l->hostname, false);
	if (l->k8s) {
		lb_set(&lb, &sb, "node", l->node, false);
		lb_set(&lb, &sb, "namespace", pm.ns, false);
		lb_set(&lb, &sb, "pod", pm.pod, false);
		lb_set(&lb, &sb, "container", pm.container, false);
	}
	lb_set(&lb, &sb, "container_id", cg.container_id, false);
	{
		ssize_t el = read_proc(l, pid, "environ", envbuf, sizeof(envbuf));
		char mlbuf[8192];

		if (el > 0)
			nml = labels__ml_from_environ(envbuf, (size_t)el,
						      (const char *const *)l->ml_env, l->n_ml_env,
						      ml, 64, mlbuf, sizeof(mlbuf));
		for (int i = 0; i < nml; i++)
			lb_set(&lb, &sb, ml[i].name, ml[i].value, false);
	}
	for (int i = 0; i < l->n_statics; i++) {
		/* static labels override derived ones, except service_name */
		bool ovr = strcmp(l->statics[i].name, "service_name") != 0;
		lb_set(&lb, &sb, l->statics[i].name, l->statics[i].value, ovr);
	}
	if (lb.trimmed)
		l->st.labels_trimmed++;
	/* series key: name=value pairs joined by \x1f */
	{
		size_t klen = 0, ko;
		char *key;

		for (int i = 0; i < lb.n; i++)
			klen += strlen(sb.p + lb.name[i]) + strlen(sb.p + lb.value[i]) + 2;
		key = malloc(klen + 1);
		if (key) {
			size_t o = 0;
			for (int i = 0; i < lb.n; i++)
				o += (size_t)sprintf(key + o, "%s=%s\x1f", sb.p + lb.name[i],
						     sb.p + lb.value[i]);
			key[o] = '\0';
			ko = sb_add(&sb, key);
			free(key);
		} else {
			ko = (size_t)-1;
		}
		if (sb.overflow || ko == (size_t)-1 || !sb.p) {
			/* out of memory: keep the sample under a minimal series */
			free(sb.p);
			e->strings = NULL;
			e->sl.key = "service_name=unknown\x1f";
			e->sl.service = "unknown";
			e->sl.n = 1;
			e->sl.pairs[0] = (struct label_pair){"service_name", "unknown"};
			return;
		}
		e->strings = sb.p;
		e->sl.key = sb.p + ko;
	}
	e->sl.n = lb.n;
	for (int i = 0; i < lb.n; i++) {
		e->sl.pairs[i].name = e->strings + lb.name[i];
		e->sl.pairs[i].value = e->strings + lb.value[i];
	}
	e->sl.service = e->sl.pairs[0].value;
}

static struct pid_entry *cache_find(struct labeler *l, pid_t pid)
{
	for (struct pid_entry *e = l->buckets[bucket_of(l, pid)]; e; e = e->hnext)
		if (e->pid == pid)
			return e;
	return NULL;
}

static void cache_unhash(struct labeler *l, struct pid_entry *e)
{
	struct pid_entry **pp = &l->buckets[bucket_of(l, e->pid)];

	for (; *pp; pp = &(*pp)->hnext) {
		if (*pp == e) {
			*pp = e->hnext;
			break;
		}
	}
}

static struct pid_entry *cache_insert(struct labeler *l, pid_t pid)
{
	struct pid_entry *e;
	size_t b;

	if (l->free_list) {
		e = l->free_list;
		l->free_list = e->hnext;
		l->live++;
	} else if (l->used < l->cap) {
		e = &l->entries[l->used++];
		l->live++;
	} else {
		e = lru_entry(l->lru.tail, struct pid_entry, lru);
		lru__unlink(&l->lru, &e->lru);
		cache_unhash(l, e);
		free(e->strings);
		l->st.cache_evictions++;
	}
	memset(e, 0, sizeof(*e));
	e->pid = pid;
	e->used = true;
	b = bucket_of(l, pid);
	e->hnext = l->buckets[b];
	l->buckets[b] = e;
	lru__push_head(&l->lru, &e->lru);
	return e;
}

void labeler__prune(struct labeler *l)
{
	struct pid_entry *e = lru_entry(l->lru.tail, struct pid_entry, lru), *prev;

	for (; e; e = prev) {
		prev = lru_entry(e->lru.prev, struct pid_entry, lru);
		if (kill(e->pid, 0) == 0 || errno != ESRCH)
			continue;
		lru__unlink(&l->lru, &e->lru);
		cache_unhash(l, e);
		free(e->strings);
		e->strings = NULL;
		e->used = false;
		e->hnext = l->free_list;
		l->free_list = e;
		l->live--;
		l->st.cache_pruned++;
	}
}

/* The labels of a sample whose process has exited and whose pid a newer process holds. */
static const struct series_labels *gone_labels(struct labeler *l, uint64_t window)
{
	if (l->gone_window != window + 1) {
		/* a pid that cannot exist: not alive, no cgroup, "short-lived" */
		compute(l, &l->gone, INT_MAX, "", NULL);
		l->gone_window = window + 1;
	}
	l->st.pid_reused++;
	return &l->gone.sl;
}

/*
 * A sample's process started before e's (t: its start in clock ticks, 0: unknown; one tick
 * of slack either way): it has exited and e's pid now belongs to a newer process.
 */
static bool started_before(const struct pid_entry *e, unsigned long long t)
{
	return t && e->start_time && t + 1 < e->start_time;
}

const struct series_labels *labeler__lookup(struct labeler *l, pid_t pid, uint64_t start_ns,
					    const char *comm, const struct proc *proc,
					    uint64_t window)
{
	struct pid_entry *e = cache_find(l, pid);
	/* /proc/PID/stat's starttime is the leader's start_boottime in clock ticks */
	unsigned long long t =
		start_ns ? start_ns / (1000000000ull / (unsigned long long)l->clk_tck) : 0;

	l->st.lookups++;
	if (!e) {
		l->st.misses++;
		e = cache_insert(l, pid);
		compute(l, e, pid, comm, proc);
		e->window = window;
		return started_before(e, t) ? gone_labels(l, window) : &e->sl;
	}
	lru__touch(&l->lru, &e->lru);
	if (started_before(e, t))
		return gone_labels(l, window);
	if (t && e->start_time && t > e->start_time + 1) {
		/* the pid was reused since this entry was made: the sample is the new process's */
		l->st.invalidations++;
		compute(l, e, pid, comm, proc);
		e->window = window;
	} else if (proc && proc->gen != e->proc_gen) {
		/* exec or new mappings (e.g. torch loaded later): decide again */
		l->st.invalidations++;
		compute(l, e, pid, comm, proc);
		e->window = window;
	} else if (e->window != window) {
		struct pstat ps;
		bool stale = false;

		e->window = window;
		if (read_stat(l, pid, &ps) == 0)
			stale = ps.start != e->start_time ||
				strncmp(ps.comm, e->comm, sizeof(e->comm) - 1) ||
				(e->young && !is_young(l, e->start_time, uptime_ticks(l)));
		if (!stale && e->k8s_missing && l->k8s)
			stale = k8s_client__gen(l->k8s) != e->k8s_gen;
		if (stale) {
			l->st.invalidations++;
			compute(l, e, pid, comm, proc);
		}
	}
	return &e->sl;
}

void labeler__stats(struct labeler *l, struct labeler_stats *out)
{
	*out = l->st;
	out->cache_entries = l->live;
	if (l->k8s) {
		struct k8s_client_stats ks;

		k8s_client__stats(l->k8s, &ks);
		out->k8s_fetches = ks.fetches;
		out->k8s_errors = ks.errors;
		out->k8s_pods = ks.pods;
	}
}
