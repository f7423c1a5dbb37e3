// SPDX-License-Identifier: Apache-2.0
/* Service names derived from command lines (interpreters, launchers), ML process detection. */
#include "agent/service_name.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include "profile/label.h"
#include "util/fsutil.h"

#define MAX_ARGS 64

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

/* See service_name.h. */
bool labels__is_shell(const char *argv0)
{
	const char *b = fsutil__base_name(argv0);

	return is_shell(b[0] == '-' ? b + 1 : b); /* "-bash": a login shell */
}

/*
 * A program read through a file descriptor (bash /dev/fd/3, python3 <(...), /dev/stdin):
 * its "file name" is a number, never a name. This is where a series named "3" came from.
 */
static bool is_fd_path(const char *a)
{
	return !strncmp(a, "/dev/fd/", 8) || !strcmp(a, "/dev/stdin") ||
	       (!strncmp(a, "/proc/", 6) && strstr(a, "/fd/"));
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
	const char *b = fsutil__base_name(arg);
	size_t n = strlen(b);

	if (ext && ends_with(b, ext) && n > strlen(ext))
		n -= strlen(ext);
	snprintf(out, outlen, "%.*s", (int)n, b);
}

static bool derive(char **argv, int argc, int depth, char *out, size_t outlen,
		   enum service_origin *origin);

/* Launcher rule: the first *.py argument, else a python interpreter argument. */
static bool derive_launcher(char **argv, int argc, int depth, char *out, size_t outlen,
			    enum service_origin *origin)
{
	for (int i = 0; i < argc; i++) {
		if (argv[i][0] != '-' && ends_with(argv[i], ".py")) {
			put_script(argv[i], ".py", out, outlen);
			return true;
		}
	}
	for (int i = 0; i < argc; i++)
		if (argv[i][0] != '-' && is_python(fsutil__base_name(argv[i])))
			return derive(argv + i, argc - i, depth + 1, out, outlen, origin);
	return false;
}

static bool derive_python(char **argv, int argc, int depth, char *out, size_t outlen,
			  enum service_origin *origin)
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
			    derive_launcher(argv + next, argc - next, depth + 1, out, outlen,
					    origin))
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
		if (!strcmp(a, "-") || is_fd_path(a))
			return false; /* program on stdin or a pipe */
		/* the script: a console-script launcher (…/bin/torchrun) or a program */
		if (is_launcher(fsutil__base_name(a))) {
			if (derive_launcher(argv + i + 1, argc - i - 1, depth + 1, out, outlen,
					    origin))
				return true;
			snprintf(out, outlen, "%s", fsutil__base_name(a));
			return true;
		}
		put_script(a, ".py", out, outlen);
		return true;
	}
	return false;
}

/*
 * Shell rule: the script a shell runs, skipping options and their arguments (-o pipefail,
 * -O extglob, --rcfile FILE). A command string (-c, also inside a cluster such as -ec or
 * -lc), stdin (-s) or a script read through a file descriptor give no name: false, with
 * *cmds set (the shell runs commands for someone); an interactive shell: false.
 */
static bool derive_shell(char **argv, int argc, char *out, size_t outlen, bool *cmds)
{
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];

		if (!strcmp(a, "--"))
			continue;
		if (!strcmp(a, "--rcfile") || !strcmp(a, "--init-file")) {
			i++;
			continue;
		}
		if (!strncmp(a, "--", 2))
			continue;
		if ((a[0] == '-' || a[0] == '+') && a[1]) {
			if (strchr(a + 1, 'c') || strchr(a + 1, 's')) {
				*cmds = true;
				return false;
			}
			/* each o/O in a cluster (-eo pipefail, +O extglob) takes the next argument
			 */
			for (const char *c = a + 1; *c; c++)
				if (*c == 'o' || *c == 'O')
					i++;
			continue;
		}
		if (is_fd_path(a)) {
			*cmds = true;
			return false;
		}
		put_script(a, ".sh", out, outlen);
		return true;
	}
	return false;
}

static bool derive(char **argv, int argc, int depth, char *out, size_t outlen,
		   enum service_origin *origin)
{
	const char *b;

	if (argc <= 0 || depth > 4)
		return false;
	b = fsutil__base_name(argv[0]);
	if (depth == 0 && b[0] == '-')
		b++; /* a login shell: "-bash" */
	if (!*b)
		return false;
	if (!strcmp(b, "env")) {
		int i = 1;
		while (i < argc && (strchr(argv[i], '=') || argv[i][0] == '-')) {
			/* -u NAME and -C DIR take the next argument */
			if (!strcmp(argv[i], "-u") || !strcmp(argv[i], "-C"))
				i++;
			i++;
		}
		return derive(argv + i, argc - i, depth + 1, out, outlen, origin);
	}
	if ((!strcmp(b, "uv") || !strcmp(b, "poetry") || !strcmp(b, "pipenv")) && argc > 1 &&
	    !strcmp(argv[1], "run")) {
		int i = 2;
		while (i < argc && argv[i][0] == '-')
			i++;
		return derive(argv + i, argc - i, depth + 1, out, outlen, origin);
	}
	if (is_python(b)) {
		if (derive_python(argv, argc, depth, out, outlen, origin))
			return true;
		snprintf(out, outlen, "%s", b);
		*origin = SERVICE_FROM_EXE;
		return true;
	}
	if (is_launcher(b)) {
		if (derive_launcher(argv + 1, argc - 1, depth + 1, out, outlen, origin))
			return true;
		snprintf(out, outlen, "%s", b);
		return true;
	}
	if (is_shell(b)) {
		bool cmds = false;

		if (derive_shell(argv, argc, out, outlen, &cmds))
			return true;
		snprintf(out, outlen, "%s", b);
		*origin = cmds ? SERVICE_FROM_SHELL : SERVICE_FROM_EXE;
		return true;
	}
	snprintf(out, outlen, "%s", b);
	*origin = SERVICE_FROM_EXE;
	/* rewritten titles such as "postgres: checkpointer" */
	{
		size_t n = strlen(out);
		if (n > 1 && out[n - 1] == ':')
			out[n - 1] = '\0';
	}
	return true;
}

/* See service_name.h. */
enum service_origin labels__service_derive(const char *cmdline, size_t len, const char *comm,
					   char *out, size_t outlen)
{
	enum service_origin origin = SERVICE_FROM_SCRIPT;
	char buf[4096], *argv[MAX_ARGS], tmp[256];
	int argc = 0;
	size_t i = 0;

	if (!outlen)
		return SERVICE_FROM_COMM;
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
	if (!derive(argv, argc, 0, tmp, sizeof(tmp), &origin) || !tmp[0]) {
		snprintf(tmp, sizeof(tmp), "%s", comm && *comm ? comm : "unknown");
		origin = SERVICE_FROM_COMM;
	}
	labels__sanitize_value(tmp, out, outlen);
	return origin;
}

/* See service_name.h. */
char *labels__service_from_cmdline(const char *cmdline, size_t len, const char *comm, char *out,
				   size_t outlen)
{
	labels__service_derive(cmdline, len, comm, out, outlen);
	return out;
}

/* See service_name.h. */
unsigned int labels__ml_classify_path(const char *path)
{
	const char *b = fsutil__base_name(path);
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
