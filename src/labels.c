// SPDX-License-Identifier: Apache-2.0
/* Series labels: service name derivation, sanitization, cgroup/k8s/ML labels, pid cache. */
#define LOG_MODULE "labels"
#include "labels.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <regex.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include <curl/curl.h>

#include "agent_config.h"
#include "log.h"
#include "proc.h"

/* ------------------------------------------------------------------ sanitization */

char *labels__sanitize_name(const char *in, char *out, size_t outlen)
{
	size_t n = 0, max = outlen ? outlen - 1 : 0;

	if (!outlen)
		return out;
	if (max > LABEL_NAME_MAX)
		max = LABEL_NAME_MAX;
	if (in[0] >= '0' && in[0] <= '9' && n < max)
		out[n++] = '_';
	for (; *in && n < max; in++) {
		unsigned char c = (unsigned char)*in;
		out[n++] = (isascii(c) && (isalnum(c) || c == '_')) ? (char)c : '_';
	}
	if (!n && max)
		out[n++] = '_';
	out[n] = '\0';
	return out;
}

/* Length of the valid UTF-8 sequence at s (1..4), or 0 when invalid. */
static size_t utf8_len(const unsigned char *s)
{
	size_t n;
	unsigned int cp;

	if (s[0] < 0x80)
		return 1;
	if ((s[0] & 0xe0) == 0xc0) {
		n = 2;
		cp = s[0] & 0x1f;
	} else if ((s[0] & 0xf0) == 0xe0) {
		n = 3;
		cp = s[0] & 0x0f;
	} else if ((s[0] & 0xf8) == 0xf0) {
		n = 4;
		cp = s[0] & 0x07;
	} else {
		return 0;
	}
	for (size_t i = 1; i < n; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		cp = (cp << 6) | (s[i] & 0x3f);
	}
	if ((n == 2 && cp < 0x80) || (n == 3 && cp < 0x800) || (n == 4 && cp < 0x10000) ||
	    cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	return n;
}

char *labels__sanitize_value(const char *in, char *out, size_t outlen)
{
	const unsigned char *s = (const unsigned char *)in;
	size_t n = 0, max = outlen ? outlen - 1 : 0;

	if (!outlen)
		return out;
	if (max > LABEL_VALUE_MAX)
		max = LABEL_VALUE_MAX;
	while (*s) {
		size_t l = utf8_len(s);

		if (l <= 1) {
			if (n + 1 > max)
				break;
			out[n++] = (l == 0 || *s < 0x20 || *s == 0x7f) ? '_' : (char)*s;
			s++;
			continue;
		}
		if (n + l > max)
			break;
		memcpy(out + n, s, l);
		n += l;
		s += l;
	}
	out[n] = '\0';
	return out;
}

/* ------------------------------------------------------------------ service names */

#define MAX_ARGS 64

static const char *base_name(const char *s)
{
	const char *slash = strrchr(s, '/');

	return slash ? slash + 1 : s;
}

static bool ends_with(const char *s, const char *sfx)
{
	size_t a = strlen(s), b = strlen(sfx);

	return a >= b && strcmp(s + a - b, sfx) == 0;
}

static bool is_python(const char *b)
{
	const char *rest;

	if (strncmp(b, "python", 6) == 0)
		rest = b + 6;
	else if (strncmp(b, "pypy", 4) == 0)
		rest = b + 4;
	else
		return false;
	/* python, python3, python3.11, python3.11d, python3-dbg */
	for (; *rest; rest++)
		if (!isdigit((unsigned char)*rest) && *rest != '.' && *rest != 'd' &&
		    *rest != 'm' && *rest != '-' && *rest != 'g' && *rest != 'b')
			return false;
	return true;
}

static bool is_shell(const char *b)
{
	return !strcmp(b, "sh") || !strcmp(b, "bash") || !strcmp(b, "dash") || !strcmp(b, "zsh");
}

static bool is_launcher(const char *b)
{
	static const char *const names[] = {"torchrun", "deepspeed", "accelerate", "mpirun",
					    "mpiexec",	"srun",	     "horovodrun", "composer",
					    "ray",	NULL};

	for (int i = 0; names[i]; i++)
		if (!strcmp(b, names[i]))
			return true;
	return false;
}

static bool is_launcher_module(const char *m)
{
	return !strcmp(m, "torch.distributed.run") || !strcmp(m, "torch.distributed.launch") ||
	       !strcmp(m, "deepspeed.launcher.runner") || !strcmp(m, "accelerate.commands.launch");
}

/* Writes the script name (basename without extension ext) into out. */
static void put_script(const char *arg, const char *ext, char *out, size_t outlen)
{
	const char *b = base_name(arg);
	size_t n = strlen(b);

	if (ext && ends_with(b, ext) && n > strlen(ext))
		n -= strlen(ext);
	snprintf(out, outlen, "%.*s", (int)n, b);
}

static bool derive(char **argv, int argc, int depth, char *out, size_t outlen);

/* Launcher rule: the first *.py argument, else a python interpreter argument. */
static bool derive_launcher(char **argv, int argc, int depth, char *out, size_t outlen)
{
	for (int i = 0; i < argc; i++) {
		if (argv[i][0] != '-' && ends_with(argv[i], ".py")) {
			put_script(argv[i], ".py", out, outlen);
			return true;
		}
	}
	for (int i = 0; i < argc; i++)
		if (argv[i][0] != '-' && is_python(base_name(argv[i])))
			return derive(argv + i, argc - i, depth + 1, out, outlen);
	return false;
}

static bool derive_python(char **argv, int argc, int depth, char *out, size_t outlen)
{
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];

		if (!strcmp(a, "-c"))
			return false;
		if (!strncmp(a, "-m", 2)) {
			const char *mod = a[2] ? a + 2 : (i + 1 < argc ? argv[i + 1] : NULL);
			int next = a[2] ? i + 1 : i + 2;

			if (!mod || !*mod)
				return false;
			if (is_launcher_module(mod) &&
			    derive_launcher(argv + next, argc - next, depth + 1, out, outlen))
				return true;
			snprintf(out, outlen, "%s", mod);
			return true;
		}
		if (!strcmp(a, "-W") || !strcmp(a, "-X") || !strcmp(a, "-Q")) {
			i++; /* option with a separate argument */
			continue;
		}
		if (a[0] == '-' && a[1])
			continue;
		if (!strcmp(a, "-"))
			return false; /* program on stdin */
		/* the script: a console-script launcher (…/bin/torchrun) or a program */
		if (is_launcher(base_name(a))) {
			if (derive_launcher(argv + i + 1, argc - i - 1, depth + 1, out, outlen))
				return true;
			snprintf(out, outlen, "%s", base_name(a));
			return true;
		}
		put_script(a, ".py", out, outlen);
		return true;
	}
	return false;
}

static bool derive(char **argv, int argc, int depth, char *out, size_t outlen)
{
	const char *b;

	if (argc <= 0 || depth > 4)
		return false;
	b = base_name(argv[0]);
	if (!*b)
		return false;
	if (!strcmp(b, "env")) {
		int i = 1;
		while (i < argc && (strchr(argv[i], '=') || argv[i][0] == '-'))
			i++;
		return derive(argv + i, argc - i, depth + 1, out, outlen);
	}
	if ((!strcmp(b, "uv") || !strcmp(b, "poetry") || !strcmp(b, "pipenv")) && argc > 1 &&
	    !strcmp(argv[1], "run")) {
		int i = 2;
		while (i < argc && argv[i][0] == '-')
			i++;
		return derive(argv + i, argc - i, depth + 1, out, outlen);
	}
	if (is_python(b)) {
		if (derive_python(argv, argc, depth, out, outlen))
			return true;
		snprintf(out, outlen, "%s", b);
		return true;
	}
	if (is_launcher(b)) {
		if (derive_launcher(argv + 1, argc - 1, depth + 1, out, outlen))
			return true;
		snprintf(out, outlen, "%s", b);
		return true;
	}
	if (is_shell(b)) {
		for (int i = 1; i < argc; i++) {
			if (!strcmp(argv[i], "-c"))
				break;
			if (argv[i][0] == '-')
				continue;
			put_script(argv[i], ".sh", out, outlen);
			return true;
		}
		snprintf(out, outlen, "%s", b);
		return true;
	}
	snprintf(out, outlen, "%s", b);
	/* rewritten titles such as "postgres: checkpointer" */
	{
		size_t n = strlen(out);
		if (n > 1 && out[n - 1] == ':')
			out[n - 1] = '\0';
	}
	return true;
}

char *labels__service_from_cmdline(const char *cmdline, size_t len, const char *comm, char *out,
				   size_t outlen)
{
	char buf[4096], *argv[MAX_ARGS], tmp[256];
	int argc = 0;
	size_t i = 0;

	if (!outlen)
		return out;
	out[0] = '\0';
	if (len >= sizeof(buf))
		len = sizeof(buf) - 1;
	memcpy(buf, cmdline, len);
	buf[len] = '\0';
	while (len && buf[len - 1] == '\0')
		len--;
	/* a single argument with spaces: the process rewrote its title (setproctitle) */
	if (len && !memchr(buf, '\0', len) && strchr(buf, ' ')) {
		for (size_t j = 0; j < len; j++)
			if (buf[j] == ' ')
				buf[j] = '\0';
	}
	while (i < len && argc < MAX_ARGS) {
		if (buf[i]) {
			argv[argc++] = buf + i;
			i += strlen(buf + i);
		}
		i++;
	}
	tmp[0] = '\0';
	if (!derive(argv, argc, 0, tmp, sizeof(tmp)) || !tmp[0])
		snprintf(tmp, sizeof(tmp), "%s", comm && *comm ? comm : "unknown");
	labels__sanitize_value(tmp, out, outlen);
	return out;
}

/* ------------------------------------------------------------------ cgroups */

static bool all_hex(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (!isxdigit((unsigned char)s[i]))
			return false;
	return true;
}

/* Container id in one path segment, e.g. "cri-containerd-<64hex>.scope" or "<64hex>". */
static bool segment_container_id(const char *seg, size_t n, char *out)
{
	static const char *const prefixes[] = {"cri-containerd-", "docker-", "crio-", "libpod-",
					       "containerd-",	  "",	     NULL};
	const char *colon;

	if (n > 6 && !memcmp(seg + n - 6, ".scope", 6))
		n -= 6;
	/* "kubepods-...slice:cri-containerd:<id>" (systemd driver, some runtimes) */
	colon = memrchr(seg, ':', n);
	if (colon) {
		n -= (size_t)(colon + 1 - seg);
		seg = colon + 1;
	}
	if (n >= 11 && !memcmp(seg, "crio-conmon-", n < 12 ? n : 12))
		return false;
	for (int i = 0; prefixes[i]; i++) {
		size_t pl = strlen(prefixes[i]);

		if (n == pl + 64 && !memcmp(seg, prefixes[i], pl) && all_hex(seg + pl, 64)) {
			for (int j = 0; j < 64; j++)
				out[j] = (char)tolower((unsigned char)seg[pl + j]);
			out[64] = '\0';
			return true;
		}
	}
	return false;
}

/* Pod uid in a segment: "pod<uid>" or "kubepods-besteffort-pod<uid_with_underscores>.slice". */
static bool segment_pod_uid(const char *seg, size_t n, char *out, size_t outlen)
{
	const char *p = NULL;
	size_t l;

	for (size_t i = 0; i + 3 <= n; i++)
		if (!memcmp(seg + i, "pod", 3) && (i == 0 || seg[i - 1] == '-'))
			p = seg + i + 3;
	if (!p)
		return false;
	l = n - (size_t)(p - seg);
	if (l > 6 && !memcmp(p + l - 6, ".slice", 6))
		l -= 6;
	if (l != 36 || l >= outlen)
		return false;
	for (size_t i = 0; i < l; i++) {
		char c = p[i] == '_' ? '-' : (char)tolower((unsigned char)p[i]);
		if (!(isxdigit((unsigned char)c) || c == '-'))
			return false;
		out[i] = c;
	}
	out[l] = '\0';
	return true;
}

void labels__parse_cgroup(const char *text, size_t len, struct cgroup_info *out)
{
	const char *line = text, *end = text + len;

	memset(out, 0, sizeof(*out));
	while (line < end) {
		const char *nl = memchr(line, '\n', (size_t)(end - line));
		const char *le = nl ? nl : end, *c1, *c2, *path;
		size_t plen;

		c1 = memchr(line, ':', (size_t)(le - line));
		c2 = c1 ? memchr(c1 + 1, ':', (size_t)(le - c1 - 1)) : NULL;
		if (c2) {
			bool v2 = (c1 - line == 1 && line[0] == '0' && c2 == c1 + 1);

			path = c2 + 1;
			plen = (size_t)(le - path);
			if ((v2 || !out->path[0]) && plen < sizeof(out->path)) {
				memcpy(out->path, path, plen);
				out->path[plen] = '\0';
			}
			/* segments from the leaf up */
			for (const char *se = path + plen; se > path;) {
				const char *ss = se;
				while (ss > path && ss[-1] != '/')
					ss--;
				if (!out->container_id[0])
					segment_container_id(ss, (size_t)(se - ss),
							     out->container_id);
				if (!out->pod_uid[0])
					segment_pod_uid(ss, (size_t)(se - ss), out->pod_uid,
							sizeof(out->pod_uid));
				se = ss > path ? ss - 1 : path;
			}
		}
		line = le + 1;
	}
}

/* ------------------------------------------------------------------ ML labels */

const char *const labels_ml_env_default[] = {
	"RANK",		"LOCAL_RANK",	       "WORLD_SIZE", "CUDA_VISIBLE_DEVICES",
	"SLURM_JOB_ID", "TORCHELASTIC_RUN_ID", NULL};

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

unsigned int labels__ml_classify_path(const char *path)
{
	const char *b = base_name(path);
	unsigned int bits = 0;

	if (!strncmp(b, "libpython", 9) || is_python(b))
		bits |= ML_PYTHON;
	if (strstr(path, "/torch/") || !strncmp(b, "libtorch", 8) || !strncmp(b, "libc10", 6) ||
	    strstr(b, "tensorflow") || strstr(path, "/jaxlib/") || strstr(b, "xla_extension"))
		bits |= ML_FRAMEWORK;
	if (!strncmp(b, "libcudart", 9) || !strncmp(b, "libcuda.so", 10) ||
	    !strncmp(b, "libcublas", 9) || !strncmp(b, "libcudnn", 8) || !strncmp(b, "libnccl", 7))
		bits |= ML_CUDA;
	return bits;
}

/* ------------------------------------------------------------------ JSON */

/*
 * A minimal JSON DOM: nodes in one array, strings unescaped in place in a private copy of
 * the input. Depth, input size and node count are bounded.
 */
enum jtype { J_NULL, J_BOOL, J_NUM, J_STR, J_ARR, J_OBJ };

struct jnode {
	enum jtype t;
	const char *key; /* member name inside an object */
	const char *str; /* J_STR value */
	int child;	 /* first child index, -1 */
	int next;	 /* next sibling index, -1 */
};

struct jdoc {
	char *text;
	struct jnode *nodes;
	int n, cap;
};

#define JSON_MAX_BYTES (64u << 20)
#define JSON_MAX_DEPTH 64
#define JSON_MAX_NODES (8 << 20)

struct jparser {
	struct jdoc *d;
	char *p, *end;
};

static void jskip_ws(struct jparser *ps)
{
	while (ps->p < ps->end &&
	       (*ps->p == ' ' || *ps->p == '\t' || *ps->p == '\n' || *ps->p == '\r'))
		ps->p++;
}

static int jnew(struct jdoc *d, enum jtype t)
{
	if (d->n == d->cap) {
		int cap = d->cap ? d->cap * 2 : 256;
		struct jnode *nn;

		if (cap > JSON_MAX_NODES)
			return -E2BIG;
		nn = realloc(d->nodes, sizeof(*nn) * (size_t)cap);
		if (!nn)
			return -ENOMEM;
		d->nodes = nn;
		d->cap = cap;
	}
	d->nodes[d->n] = (struct jnode){.t = t, .child = -1, .next = -1};
	return d->n++;
}

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

static int jhex4(const char *p, const char *end, unsigned int *out)
{
	unsigned int v = 0;

	if (end - p < 4)
		return -EINVAL;
	for (int i = 0; i < 4; i++) {
		int h = hexval(p[i]);
		if (h < 0)
			return -EINVAL;
		v = v << 4 | (unsigned int)h;
	}
	*out = v;
	return 0;
}

/* Parses a string at ps->p (on the quote), unescaping in place; *out points to it. */
static int jstring(struct jparser *ps, const char **out)
{
	char *w, *r;

	r = ++ps->p;
	w = r;
	*out = w;
	while (r < ps->end && *r != '"') {
		unsigned char c = (unsigned char)*r;

		if (c < 0x20)
			return -EINVAL;
		if (c != '\\') {
			*w++ = *r++;
			continue;
		}
		if (++r >= ps->end)
			return -EINVAL;
		switch (*r) {
		case '"':
		case '\\':
		case '/':
			*w++ = *r++;
			break;
		case 'b':
			*w++ = '\b';
			r++;
			break;
		case 'f':
			*w++ = '\f';
			r++;
			break;
		case 'n':
			*w++ = '\n';
			r++;
			break;
		case 'r':
			*w++ = '\r';
			r++;
			break;
		case 't':
			*w++ = '\t';
			r++;
			break;
		case 'u': {
			unsigned int cp, lo;

			if (jhex4(r + 1, ps->end, &cp))
				return -EINVAL;
			r += 5;
			if (cp >= 0xd800 && cp <= 0xdbff && ps->end - r >= 6 && r[0] == '\\' &&
			    r[1] == 'u' && !jhex4(r + 2, ps->end, &lo) && lo >= 0xdc00 &&
			    lo <= 0xdfff) {
				cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
				r += 6;
			} else if (cp >= 0xd800 && cp <= 0xdfff) {
				cp = '?';
			}
			if (cp == 0)
				cp = '?'; /* keep C strings intact */
			if (cp < 0x80) {
				*w++ = (char)cp;
			} else if (cp < 0x800) {
				*w++ = (char)(0xc0 | cp >> 6);
				*w++ = (char)(0x80 | (cp & 0x3f));
			} else if (cp < 0x10000) {
				*w++ = (char)(0xe0 | cp >> 12);
				*w++ = (char)(0x80 | ((cp >> 6) & 0x3f));
				*w++ = (char)(0x80 | (cp & 0x3f));
			} else {
				*w++ = (char)(0xf0 | cp >> 18);
				*w++ = (char)(0x80 | ((cp >> 12) & 0x3f));
				*w++ = (char)(0x80 | ((cp >> 6) & 0x3f));
				*w++ = (char)(0x80 | (cp & 0x3f));
			}
			break;
		}
		default:
			return -EINVAL;
		}
	}
	if (r >= ps->end)
		return -EINVAL;
	*w = '\0'; /* w <= r: the closing quote or earlier */
	ps->p = r + 1;
	return 0;
}

static int jvalue(struct jparser *ps, int depth);

static int jcontainer(struct jparser *ps, int depth, bool obj)
{
	int idx = jnew(ps->d, obj ? J_OBJ : J_ARR), last = -1;
	char close = obj ? '}' : ']';

	if (idx < 0)
		return idx;
	ps->p++;
	jskip_ws(ps);
	if (ps->p < ps->end && *ps->p == close) {
		ps->p++;
		return idx;
	}
	for (;;) {
		const char *key = NULL;
		int child, err;

		jskip_ws(ps);
		if (obj) {
			if (ps->p >= ps->end || *ps->p != '"')
				return -EINVAL;
			if ((err = jstring(ps, &key)))
				return err;
			jskip_ws(ps);
			if (ps->p >= ps->end || *ps->p != ':')
				return -EINVAL;
			ps->p++;
		}
		child = jvalue(ps, depth + 1);
		if (child < 0)
			return child;
		ps->d->nodes[child].key = key;
		if (last < 0)
			ps->d->nodes[idx].child = child;
		else
			ps->d->nodes[last].next = child;
		last = child;
		jskip_ws(ps);
		if (ps->p >= ps->end)
			return -EINVAL;
		if (*ps->p == ',') {
			ps->p++;
			continue;
		}
		if (*ps->p == close) {
			ps->p++;
			return idx;
		}
		return -EINVAL;
	}
}

static int jvalue(struct jparser *ps, int depth)
{
	int idx, err;

	if (depth > JSON_MAX_DEPTH)
		return -E2BIG;
	jskip_ws(ps);
	if (ps->p >= ps->end)
		return -EINVAL;
	switch (*ps->p) {
	case '{':
		return jcontainer(ps, depth, true);
	case '[':
		return jcontainer(ps, depth, false);
	case '"':
		idx = jnew(ps->d, J_STR);
		if (idx < 0)
			return idx;
		if ((err = jstring(ps, &ps->d->nodes[idx].str)))
			return err;
		return idx;
	default:
		break;
	}
	if (ps->end - ps->p >= 4 && !memcmp(ps->p, "null", 4)) {
		ps->p += 4;
		return jnew(ps->d, J_NULL);
	}
	if (ps->end - ps->p >= 4 && !memcmp(ps->p, "true", 4)) {
		ps->p += 4;
		return jnew(ps->d, J_BOOL);
	}
	if (ps->end - ps->p >= 5 && !memcmp(ps->p, "false", 5)) {
		ps->p += 5;
		return jnew(ps->d, J_BOOL);
	}
	if (*ps->p == '-' || isdigit((unsigned char)*ps->p)) {
		ps->p++;
		while (ps->p < ps->end &&
		       (isdigit((unsigned char)*ps->p) || *ps->p == '.' || *ps->p == 'e' ||
			*ps->p == 'E' || *ps->p == '+' || *ps->p == '-'))
			ps->p++;
		return jnew(ps->d, J_NUM);
	}
	return -EINVAL;
}

static void jdoc_free(struct jdoc *d)
{
	free(d->text);
	free(d->nodes);
	memset(d, 0, sizeof(*d));
}

static int jdoc_parse(struct jdoc *d, const char *json, size_t len)
{
	struct jparser ps = {.d = d};
	int root;

	memset(d, 0, sizeof(*d));
	if (len > JSON_MAX_BYTES)
		return -E2BIG;
	d->text = malloc(len + 1);
	if (!d->text)
		return -ENOMEM;
	memcpy(d->text, json, len);
	d->text[len] = '\0';
	ps.p = d->text;
	ps.end = d->text + len;
	root = jvalue(&ps, 0);
	if (root < 0)
		return root;
	jskip_ws(&ps);
	if (ps.p != ps.end)
		return -EINVAL;
	return root;
}

static const struct jnode *jget(const struct jdoc *d, const struct jnode *obj, const char *key)
{
	if (!obj || obj->t != J_OBJ)
		return NULL;
	for (int i = obj->child; i >= 0; i = d->nodes[i].next)
		if (d->nodes[i].key && !strcmp(d->nodes[i].key, key))
			return &d->nodes[i];
	return NULL;
}

static const char *jget_str(const struct jdoc *d, const struct jnode *obj, const char *key)
{
	const struct jnode *n = jget(d, obj, key);

	return n && n->t == J_STR ? n->str : NULL;
}

/* ------------------------------------------------------------------ pod table */

struct k8s_pods {
	struct jdoc doc; /* strings of the entries point into it */
	struct k8s_container *c;
	size_t n, cap;
};

static int cmp_container(const void *a, const void *b)
{
	return strcmp(((const struct k8s_container *)a)->id, ((const struct k8s_container *)b)->id);
}

static int pods_add(struct k8s_pods *pods, const char *id, const char *pod, const char *ns,
		    const char *uid, const char *name)
{
	const char *sep = strstr(id, "://");
	size_t l;

	if (sep)
		id = sep + 3;
	l = strlen(id);
	if (l < 12 || l > 64 || !all_hex(id, l))
		return 0; /* not started yet, or an id format we cannot match */
	if (pods->n == pods->cap) {
		size_t cap = pods->cap ? pods->cap * 2 : 64;
		struct k8s_container *nc = realloc(pods->c, sizeof(*nc) * cap);
		if (!nc)
			return -ENOMEM;
		pods->c = nc;
		pods->cap = cap;
	}
	struct k8s_container *c = &pods->c[pods->n++];
	for (size_t i = 0; i <= l; i++)
		c->id[i] = (char)tolower((unsigned char)id[i]);
	c->pod = pod;
	c->ns = ns ? ns : "";
	c->uid = uid ? uid : "";
	c->name = name ? name : "";
	return 0;
}

struct k8s_pods *k8s_pods__parse(const char *json, size_t len)
{
	static const char *const lists[] = {"containerStatuses", "initContainerStatuses",
					    "ephemeralContainerStatuses"};
	struct k8s_pods *pods = calloc(1, sizeof(*pods));
	const struct jnode *root, *items;
	int r, err = 0;

	if (!pods)
		return NULL;
	r = jdoc_parse(&pods->doc, json, len);
	if (r < 0) {
		err = r;
		goto cleanup;
	}
	root = &pods->doc.nodes[r];
	items = jget(&pods->doc, root, "items");
	if (!items || items->t != J_ARR) {
		err = -EINVAL;
		goto cleanup;
	}
	for (int i = items->child; i >= 0; i = pods->doc.nodes[i].next) {
		const struct jnode *item = &pods->doc.nodes[i];
		const struct jnode *md = jget(&pods->doc, item, "metadata");
		const struct jnode *st = jget(&pods->doc, item, "status");
		const char *name = jget_str(&pods->doc, md, "name");

		if (!name)
			continue;
		for (size_t k = 0; k < sizeof(lists) / sizeof(lists[0]); k++) {
			const struct jnode *cs = jget(&pods->doc, st, lists[k]);

			if (!cs || cs->t != J_ARR)
				continue;
			for (int j = cs->child; j >= 0; j = pods->doc.nodes[j].next) {
				const struct jnode *c = &pods->doc.nodes[j];
				const char *id = jget_str(&pods->doc, c, "containerID");

				if (!id)
					continue;
				err = pods_add(pods, id, name,
					       jget_str(&pods->doc, md, "namespace"),
					       jget_str(&pods->doc, md, "uid"),
					       jget_str(&pods->doc, c, "name"));
				if (err)
					goto cleanup;
			}
		}
	}
	if (pods->n)
		qsort(pods->c, pods->n, sizeof(*pods->c), cmp_container);
cleanup:
	if (err) {
		k8s_pods__free(pods);
		errno = -err;
		return NULL;
	}
	return pods;
}

void k8s_pods__free(struct k8s_pods *pods)
{
	if (!pods)
		return;
	jdoc_free(&pods->doc);
	free(pods->c);
	free(pods);
}

size_t k8s_pods__count(const struct k8s_pods *pods)
{
	return pods ? pods->n : 0;
}

const struct k8s_container *k8s_pods__find(const struct k8s_pods *pods, const char *id)
{
	size_t lo = 0, hi, l = strlen(id);

	if (!pods || !pods->n || l < 12)
		return NULL;
	hi = pods->n;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (strcmp(pods->c[mid].id, id) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo < pods->n && !strcmp(pods->c[lo].id, id))
		return &pods->c[lo];
	/* a shorter id on either side (prefix match, both directions) */
	for (size_t i = lo > 0 ? lo - 1 : 0; i < pods->n && i <= lo + 1; i++) {
		size_t cl = strlen(pods->c[i].id), m = cl < l ? cl : l;
		if (!strncmp(pods->c[i].id, id, m))
			return &pods->c[i];
	}
	return NULL;
}

const struct k8s_container *k8s_pods__find_pod(const struct k8s_pods *pods, const char *uid)
{
	if (!pods || !*uid)
		return NULL;
	for (size_t i = 0; i < pods->n; i++) {
		const char *a = pods->c[i].uid, *b = uid;
		for (; *a && *b; a++, b++)
			if (*a != *b && !((*a == '-' || *a == '_') && (*b == '-' || *b == '_')))
				break;
		if (!*a && !*b)
			return &pods->c[i];
	}
	return NULL;
}

/* ------------------------------------------------------------------ k8s client */

#define K8S_MIN_REFRESH_S 30
#define K8S_MAX_REFRESH_S 120
#define K8S_SA_DIR	  "/var/run/secrets/kubernetes.io/serviceaccount"

struct k8s_client {
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool stop, want_refresh, started;
	struct k8s_pods *pods;
	uint64_t gen; /* bumps with every successful fetch */
	uint64_t fetches, errors;
	char url[512];
};

struct membuf {
	char *p;
	size_t n, cap;
};

static size_t curl_write(char *ptr, size_t size, size_t nmemb, void *ud)
{
	struct membuf *b = ud;
	size_t len = size * nmemb;

	if (b->n + len + 1 > JSON_MAX_BYTES)
		return 0; /* aborts the transfer */
	if (b->n + len + 1 > b->cap) {
		size_t cap = (b->n + len + 1) * 2;
		char *np = realloc(b->p, cap);
		if (!np)
			return 0;
		b->p = np;
		b->cap = cap;
	}
	memcpy(b->p + b->n, ptr, len);
	b->n += len;
	return len;
}

static int k8s_fetch(struct k8s_client *k, struct k8s_pods **out)
{
	char token[8192], auth[8300];
	struct curl_slist *hdrs = NULL;
	struct membuf body = {0};
	long code = 0;
	CURL *curl = NULL;
	CURLcode rc;
	FILE *f;
	size_t n;
	int err = 0;

	/* tokens are rotated by the kubelet: read it on every fetch */
	f = fopen(K8S_SA_DIR "/token", "re");
	if (!f) {
		err = -errno;
		pr_warn("cannot open %s/token: %s", K8S_SA_DIR, strerror(errno));
		return err;
	}
	n = fread(token, 1, sizeof(token) - 1, f);
	fclose(f);
	while (n && isspace((unsigned char)token[n - 1]))
		n--;
	token[n] = '\0';
	snprintf(auth, sizeof(auth), "Authorization: Bearer %s", token);
	explicit_bzero(token, sizeof(token));
	curl = curl_easy_init();
	hdrs = curl_slist_append(NULL, auth);
	explicit_bzero(auth, sizeof(auth));
	if (!curl || !hdrs) {
		err = -ENOMEM;
		goto cleanup;
	}
	hdrs = curl_slist_append(hdrs, "Accept: application/json") ?: hdrs;
	curl_easy_setopt(curl, CURLOPT_URL, k->url);
	curl_easy_setopt(curl, CURLOPT_HTTPHEADER, hdrs);
	curl_easy_setopt(curl, CURLOPT_CAINFO, K8S_SA_DIR "/ca.crt");
	curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT_MS, 5000L);
	curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS, 20000L);
	curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, curl_write);
	curl_easy_setopt(curl, CURLOPT_WRITEDATA, &body);
	curl_easy_setopt(curl, CURLOPT_ACCEPT_ENCODING, "");
	rc = curl_easy_perform(curl);
	if (rc != CURLE_OK) {
		pr_warn("cannot fetch pods from %s: %s", k->url, curl_easy_strerror(rc));
		err = -EIO;
		goto cleanup;
	}
	curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &code);
	if (code != 200) {
		pr_warn("cannot fetch pods from %s: HTTP %ld", k->url, code);
		err = code == 401 || code == 403 ? -EACCES : -EIO;
		goto cleanup;
	}
	*out = k8s_pods__parse(body.p ? body.p : "", body.n);
	if (!*out) {
		err = -errno;
		pr_warn("cannot parse the pod list from %s: %s", k->url, strerror(errno));
	}
cleanup:
	curl_slist_free_all(hdrs);
	if (curl)
		curl_easy_cleanup(curl);
	free(body.p);
	return err;
}

static void *k8s_thread(void *arg)
{
	struct k8s_client *k = arg;
	time_t last = 0;

	pthread_mutex_lock(&k->lock);
	while (!k->stop) {
		time_t now = time(NULL);
		struct k8s_pods *pods = NULL, *old;
		struct timespec ts;
		int err;

		if (last && now - last < K8S_MIN_REFRESH_S) {
			clock_gettime(CLOCK_REALTIME, &ts);
			ts.tv_sec += K8S_MIN_REFRESH_S - (now - last);
			pthread_cond_timedwait(&k->cond, &k->lock, &ts);
			continue;
		}
		if (last && !k->want_refresh && now - last < K8S_MAX_REFRESH_S) {
			clock_gettime(CLOCK_REALTIME, &ts);
			ts.tv_sec += K8S_MAX_REFRESH_S - (now - last);
			pthread_cond_timedwait(&k->cond, &k->lock, &ts);
			continue;
		}
		k->want_refresh = false;
		last = now;
		pthread_mutex_unlock(&k->lock);
		err = k8s_fetch(k, &pods);
		pthread_mutex_lock(&k->lock);
		k->fetches++;
		if (err) {
			k->errors++;
			continue;
		}
		old = k->pods;
		k->pods = pods;
		k->gen++;
		pthread_mutex_unlock(&k->lock);
		pr_debug("pod list refreshed: %zu containers", k8s_pods__count(pods));
		k8s_pods__free(old);
		pthread_mutex_lock(&k->lock);
	}
	pthread_mutex_unlock(&k->lock);
	return NULL;
}

static struct k8s_client *k8s_client__new(const char *source, const char *node)
{
	struct k8s_client *k;
	const char *host = getenv("KUBERNETES_SERVICE_HOST");
	const char *port = getenv("KUBERNETES_SERVICE_PORT");
	int err;

	if (!node || !*node) {
		pr_err("Kubernetes labels need the node name: set NODE_NAME (fieldRef "
		       "spec.nodeName) or --node-name");
		errno = EINVAL;
		return NULL;
	}
	k = calloc(1, sizeof(*k));
	if (!k)
		return NULL;
	if (!strcmp(source, "kubelet")) {
		snprintf(k->url, sizeof(k->url), "https://%s:10250/pods", node);
	} else if (host && *host) {
		snprintf(k->url, sizeof(k->url),
			 strchr(host, ':')
				 ? "https://[%s]:%s/api/v1/pods?fieldSelector=spec.nodeName%%3D%s"
				 : "https://%s:%s/api/v1/pods?fieldSelector=spec.nodeName%%3D%s",
			 host, port && *port ? port : "443", node);
	} else {
		snprintf(k->url, sizeof(k->url),
			 "https://kubernetes.default.svc/api/v1/"
			 "pods?fieldSelector=spec.nodeName%%3D%s",
			 node);
	}
	curl_global_init(CURL_GLOBAL_DEFAULT);
	pthread_mutex_init(&k->lock, NULL);
	pthread_cond_init(&k->cond, NULL);
	err = pthread_create(&k->thread, NULL, k8s_thread, k);
	if (err) {
		pr_err("cannot start the Kubernetes thread: %s", strerror(err));
		free(k);
		errno = err;
		return NULL;
	}
	k->started = true;
	pr_info("Kubernetes pod metadata from %s", k->url);
	return k;
}

static void k8s_client__free(struct k8s_client *k)
{
	if (!k)
		return;
	pthread_mutex_lock(&k->lock);
	k->stop = true;
	pthread_cond_broadcast(&k->cond);
	pthread_mutex_unlock(&k->lock);
	if (k->started)
		pthread_join(k->thread, NULL);
	k8s_pods__free(k->pods);
	pthread_mutex_destroy(&k->lock);
	pthread_cond_destroy(&k->cond);
	free(k);
}

struct pod_meta {
	char pod[254], ns[64], container[254];
};

/* Copies the metadata of a container; asks for a refresh when unknown. Returns the gen. */
static uint64_t k8s_client__lookup(struct k8s_client *k, const struct cgroup_info *cg,
				   struct pod_meta *out, bool *found)
{
	const struct k8s_container *c = NULL;
	uint64_t gen;

	*found = false;
	pthread_mutex_lock(&k->lock);
	if (cg->container_id[0])
		c = k8s_pods__find(k->pods, cg->container_id);
	if (c) {
		snprintf(out->pod, sizeof(out->pod), "%s", c->pod);
		snprintf(out->ns, sizeof(out->ns), "%s", c->ns);
		snprintf(out->container, sizeof(out->container), "%s", c->name);
		*found = true;
	} else if (cg->pod_uid[0] && (c = k8s_pods__find_pod(k->pods, cg->pod_uid))) {
		/* container not started/listed yet: the pod is still known */
		snprintf(out->pod, sizeof(out->pod), "%s", c->pod);
		snprintf(out->ns, sizeof(out->ns), "%s", c->ns);
		out->container[0] = '\0';
	}
	if (!*found && (cg->container_id[0] || cg->pod_uid[0])) {
		k->want_refresh = true;
		pthread_cond_signal(&k->cond);
	}
	gen = k->gen;
	pthread_mutex_unlock(&k->lock);
	return gen;
}

/* ------------------------------------------------------------------ labeler */

struct rule {
	bool cgroup; /* match the cgroup path, else "comm cmdline" */
	regex_t re;
	char *name;
};

struct pid_entry {
	pid_t pid;
	bool used;
	unsigned long long start_time; /* /proc/PID/stat field 22 */
	char comm[16];
	uint64_t window; /* last validated */
	uint64_t proc_gen;
	uint64_t k8s_gen;
	bool k8s_missing; /* container/pod labels not known yet */
	struct series_labels sl;
	char *strings; /* owns every string of sl */
	struct pid_entry *lru_prev, *lru_next, *hnext;
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
	char **ml_env; /* default + user */
	int n_ml_env;
	struct label_pair *statics;
	int n_statics;
	char *statics_buf;
	/* cache */
	struct pid_entry *entries;
	size_t cap, used;
	struct pid_entry **buckets;
	size_t n_buckets;
	struct pid_entry *lru_head, *lru_tail; /* head = most recent */
	struct pid_entry *free_list;	       /* pruned slots, linked by hnext */
	size_t live;			       /* entries in the hash/LRU */
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

static void lru_unlink(struct labeler *l, struct pid_entry *e)
{
	if (e->lru_prev)
		e->lru_prev->lru_next = e->lru_next;
	else
		l->lru_head = e->lru_next;
	if (e->lru_next)
		e->lru_next->lru_prev = e->lru_prev;
	else
		l->lru_tail = e->lru_prev;
	e->lru_prev = e->lru_next = NULL;
}

static void lru_push_front(struct labeler *l, struct pid_entry *e)
{
	e->lru_prev = NULL;
	e->lru_next = l->lru_head;
	if (l->lru_head)
		l->lru_head->lru_prev = e;
	l->lru_head = e;
	if (!l->lru_tail)
		l->lru_tail = e;
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
	l->lru_head = l->lru_tail = NULL;
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
	l->ml_only = cfg->ml_only;
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

/* comm and start time from /proc/PID/stat ("pid (comm) state ppid ... starttime"). */
static int read_stat(const struct labeler *l, pid_t pid, char *comm, size_t clen,
		     unsigned long long *start)
{
	char buf[1024], *lp, *rp, *p;
	ssize_t n = read_proc(l, pid, "stat", buf, sizeof(buf));
	int field = 3;

	if (n <= 0)
		return n < 0 ? (int)n : -EINVAL;
	lp = strchr(buf, '(');
	rp = strrchr(buf, ')');
	if (!lp || !rp || rp < lp)
		return -EINVAL;
	snprintf(comm, clen, "%.*s", (int)(rp - lp - 1), lp + 1);
	p = rp + 2;
	while (*p && field < 22) {
		if (*p++ == ' ')
			field++;
	}
	if (field != 22)
		return -EINVAL;
	*start = strtoull(p, NULL, 10);
	return 0;
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
	if (l->ml_only && !labels__is_ml(ml_bits_of(l, pid, proc)))
		return false;
	return true;
}

/* (Re)computes an entry's filter decision and labels. */
static void compute(struct labeler *l, struct pid_entry *e, pid_t pid, const char *comm,
		    const struct proc *proc)
{
	char cmdline[4096], args[4096 + 32], service[LABEL_VALUE_MAX + 1], cgtext[8192];
	char envbuf[8192], statcomm[64];
	struct label_pair ml[64];
	struct cgroup_info cg;
	struct pod_meta pm = {.pod = ""};
	struct lbl_build lb = {.n = 0};
	struct sbuf sb = {0};
	ssize_t cl, gl;
	bool k8s_found = false;
	int nml = 0;

	free(e->strings);
	e->strings = NULL;
	memset(&e->sl, 0, sizeof(e->sl));
	e->k8s_missing = false;
	if (read_stat(l, pid, statcomm, sizeof(statcomm), &e->start_time) == 0)
		comm = statcomm;
	else
		e->start_time = 0;
	snprintf(e->comm, sizeof(e->comm), "%.15s", comm ? comm : "");
	e->proc_gen = proc ? proc->gen : 0;

	cl = read_proc(l, pid, "cmdline", cmdline, sizeof(cmdline));
	if (cl < 0)
		cl = 0;
	/* "comm arg0 arg1 ..." for the regexes */
	snprintf(args, sizeof(args), "%s ", e->comm);
	{
		size_t o = strlen(args);
		for (ssize_t i = 0; i < cl && o < sizeof(args) - 1; i++)
			args[o++] = cmdline[i] ? cmdline[i] : ' ';
		while (o && args[o - 1] == ' ')
			o--;
		args[o] = '\0';
	}
	gl = read_proc(l, pid, "cgroup", cgtext, sizeof(cgtext));
	labels__parse_cgroup(cgtext, gl > 0 ? (size_t)gl : 0, &cg);

	e->sl.keep = filters_pass(l, pid, e->comm, args, &cg, proc);
	if (!e->sl.keep)
		return;

	if (l->k8s && (cg.container_id[0] || cg.pod_uid[0])) {
		e->k8s_gen = k8s_client__lookup(l->k8s, &cg, &pm, &k8s_found);
		e->k8s_missing = !k8s_found;
	}
	/* service_name: fixed > rules > k8s namespace/container > derived from the process */
	service[0] = '\0';
	if (l->service_name) {
		snprintf(service, sizeof(service), "%s", l->service_name);
	} else {
		for (int i = 0; i < l->n_rules; i++) {
			const char *subject = l->rules[i].cgroup ? cg.path : args;
			if (!regexec(&l->rules[i].re, subject, 0, NULL, 0)) {
				snprintf(service, sizeof(service), "%s", l->rules[i].name);
				break;
			}
		}
	}
	if (!service[0] && pm.pod[0] && pm.container[0])
		snprintf(service, sizeof(service), "%s/%s", pm.ns, pm.container);
	if (!service[0])
		labels__service_from_cmdline(cmdline, (size_t)cl, e->comm, service,
					     sizeof(service));

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
		e = l->lru_tail;
		lru_unlink(l, e);
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
	lru_push_front(l, e);
	return e;
}

void labeler__prune(struct labeler *l)
{
	struct pid_entry *e = l->lru_tail, *prev;

	for (; e; e = prev) {
		prev = e->lru_prev;
		if (kill(e->pid, 0) == 0 || errno != ESRCH)
			continue;
		lru_unlink(l, e);
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

const struct series_labels *labeler__lookup(struct labeler *l, pid_t pid, const char *comm,
					    const struct proc *proc, uint64_t window)
{
	struct pid_entry *e = cache_find(l, pid);

	l->st.lookups++;
	if (!e) {
		l->st.misses++;
		e = cache_insert(l, pid);
		compute(l, e, pid, comm, proc);
		e->window = window;
		return &e->sl;
	}
	if (e != l->lru_head) {
		lru_unlink(l, e);
		lru_push_front(l, e);
	}
	if (proc && proc->gen != e->proc_gen) {
		/* exec or new mappings (e.g. torch loaded later): decide again */
		l->st.invalidations++;
		compute(l, e, pid, comm, proc);
		e->window = window;
	} else if (e->window != window) {
		char c[64];
		unsigned long long st = 0;
		bool stale = false;

		e->window = window;
		if (read_stat(l, pid, c, sizeof(c), &st) == 0)
			stale = st != e->start_time || strncmp(c, e->comm, sizeof(e->comm) - 1);
		if (!stale && e->k8s_missing && l->k8s) {
			pthread_mutex_lock(&l->k8s->lock);
			stale = l->k8s->gen != e->k8s_gen;
			pthread_mutex_unlock(&l->k8s->lock);
		}
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
		pthread_mutex_lock(&l->k8s->lock);
		out->k8s_fetches = l->k8s->fetches;
		out->k8s_errors = l->k8s->errors;
		out->k8s_pods = k8s_pods__count(l->k8s->pods);
		pthread_mutex_unlock(&l->k8s->lock);
	}
}
