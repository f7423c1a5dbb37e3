// SPDX-License-Identifier: Apache-2.0
/* Output formats: names, extensions and the atomic file writer shared by all encoders. */
#include "profile/output.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#define LOG_MODULE "output"
#include "util/log.h"

static const struct {
	enum output_format fmt;
	const char *name;
	const char *ext;
} formats[] = {
	{OUTPUT_PPROF, "pprof", ".pb.gz"},
	{OUTPUT_FOLDED, "folded", ".folded"},
	{OUTPUT_HTML, "html", ".html"},
	{OUTPUT_SVG, "svg", ".svg"},
};

/* Extension -> format; longest suffixes first so ".pb.gz" wins over ".gz". */
static const struct {
	const char *ext;
	enum output_format fmt;
} exts[] = {
	{".pb.gz", OUTPUT_PPROF},   {".pprof", OUTPUT_PPROF}, {".pb", OUTPUT_PPROF},
	{".folded", OUTPUT_FOLDED}, {".txt", OUTPUT_FOLDED},  {".html", OUTPUT_HTML},
	{".htm", OUTPUT_HTML},	    {".svg", OUTPUT_SVG},
};

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

int output__parse_format(const char *name, enum output_format *out)
{
	if (!name)
		return -EINVAL;
	for (size_t i = 0; i < ARRAY_SIZE(formats); i++) {
		if (strcasecmp(name, formats[i].name) == 0) {
			*out = formats[i].fmt;
			return 0;
		}
	}
	return -EINVAL;
}

int output__format_from_path(const char *path, enum output_format *out)
{
	size_t len;

	if (!path)
		return -ENOENT;
	len = strlen(path);
	for (size_t i = 0; i < ARRAY_SIZE(exts); i++) {
		size_t el = strlen(exts[i].ext);

		if (len > el && strcasecmp(path + len - el, exts[i].ext) == 0) {
			*out = exts[i].fmt;
			return 0;
		}
	}
	return -ENOENT;
}

const char *output__format_name(enum output_format fmt)
{
	for (size_t i = 0; i < ARRAY_SIZE(formats); i++)
		if (formats[i].fmt == fmt)
			return formats[i].name;
	return "unknown";
}

const char *output__format_ext(enum output_format fmt)
{
	for (size_t i = 0; i < ARRAY_SIZE(formats); i++)
		if (formats[i].fmt == fmt)
			return formats[i].ext;
	return "";
}

static int write_body(const struct profile *p, enum output_format fmt, const char *title, FILE *f)
{
	uint8_t *buf = NULL;
	size_t len = 0;
	int err;

	switch (fmt) {
	case OUTPUT_PPROF:
		err = pprof__encode(p, true, &buf, &len);
		if (err)
			return err;
		if (fwrite(buf, 1, len, f) != len)
			err = errno ? -errno : -EIO;
		free(buf);
		return err;
	case OUTPUT_FOLDED:
		return folded__write(p, 0, f);
	case OUTPUT_HTML:
		return flamegraph__write_html(p, 0, title, f);
	case OUTPUT_SVG:
		return flamegraph__write_svg(p, 0, title, f);
	}
	return -EINVAL;
}

/* See output.h. */
int output__check_writable(const char *path)
{
	struct stat st;
	char *tmp = NULL;
	int fd, err = 0;

	if (!path || !*path)
		return -EINVAL;
	if (stat(path, &st) == 0 && S_ISDIR(st.st_mode))
		return -EISDIR;
	/* the very operation output__write_file() starts with: a temp file next to path */
	if (asprintf(&tmp, "%s.tmpXXXXXX", path) < 0)
		return -ENOMEM;
	fd = mkstemp(tmp);
	if (fd < 0) {
		err = -errno;
	} else {
		close(fd);
		unlink(tmp);
	}
	free(tmp);
	return err;
}

/* See output.h. */
int output__write_fallback(const struct profile *p, enum output_format fmt, const char *title,
			   const char *failed, char *out, size_t len)
{
	const char *dir = getenv("TMPDIR"), *base = strrchr(failed, '/');
	int fd, n, err;

	if (!dir || !*dir)
		dir = "/tmp";
	base = base ? base + 1 : failed;
	if (!*base)
		base = output__format_ext(fmt);
	/* the failed file's name after the unique part keeps its kind and extension */
	n = snprintf(out, len, "%s/mlprof-XXXXXX-%s", dir, base);
	if (n < 0 || (size_t)n >= len)
		return -ENAMETOOLONG;
	fd = mkstemps(out, (int)strlen(base) + 1);
	if (fd < 0)
		return -errno;
	close(fd);
	err = output__write_file(p, fmt, title, out);
	if (err)
		unlink(out);
	return err;
}

int output__write_file(const struct profile *p, enum output_format fmt, const char *title,
		       const char *path)
{
	char *tmp = NULL;
	FILE *f = NULL;
	int fd = -1, err;

	if (!p || !path || !*path) {
		pr_warn("cannot write profile: no output path");
		return -EINVAL;
	}
	/* temp file in the same directory so rename() is atomic */
	if (asprintf(&tmp, "%s.tmpXXXXXX", path) < 0) {
		tmp = NULL;
		err = -ENOMEM;
		pr_warn("cannot write %s: %s", path, strerror(-err));
		goto cleanup;
	}
	fd = mkstemp(tmp);
	if (fd < 0) {
		err = -errno;
		pr_warn("cannot create %s: %s", tmp, strerror(-err));
		free(tmp);
		tmp = NULL;
		goto cleanup;
	}
	/* mkstemp makes 0600 files; profiles are meant to be read by other users' tools */
	if (fchmod(fd, 0644) < 0)
		pr_debug("cannot chmod %s: %s", tmp, strerror(errno));
	f = fdopen(fd, "w");
	if (!f) {
		err = -errno;
		pr_warn("cannot open %s: %s", tmp, strerror(-err));
		goto cleanup;
	}
	fd = -1;
	errno = 0;
	err = write_body(p, fmt, title, f);
	if (err) {
		pr_warn("cannot write %s profile to %s: %s", output__format_name(fmt), path,
			strerror(-err));
		goto cleanup;
	}
	if (fflush(f) != 0 || ferror(f) || fsync(fileno(f)) < 0) {
		err = errno ? -errno : -EIO;
		pr_warn("cannot write %s: %s", path, strerror(-err));
		goto cleanup;
	}
	if (fclose(f) != 0) {
		f = NULL;
		err = errno ? -errno : -EIO;
		pr_warn("cannot write %s: %s", path, strerror(-err));
		goto cleanup;
	}
	f = NULL;
	if (rename(tmp, path) < 0) {
		err = -errno;
		pr_warn("cannot rename %s to %s: %s", tmp, path, strerror(-err));
		goto cleanup;
	}
	free(tmp);
	tmp = NULL;
	err = 0;
cleanup:
	if (f)
		fclose(f);
	if (fd >= 0)
		close(fd);
	if (tmp) {
		unlink(tmp);
		free(tmp);
	}
	return err;
}
