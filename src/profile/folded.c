// SPDX-License-Identifier: Apache-2.0
/* Folded stacks writer ("root;caller;leaf count"), the input format of flamegraph.pl. */
#include "profile/output.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#define LOG_MODULE "folded"
#include "util/log.h"

#define NAME_MAX_LEN 1024

struct line {
	size_t off; /* into fold.buf */
	int64_t value;
};

struct fold {
	const struct profile *p;
	int vi;
	char **names; /* display name per location, sanitized */
	char *buf;    /* NUL-terminated stacks, back to back */
	size_t len, cap;
	struct line *lines;
	size_t n, lcap;
	int err;
};

/* ';' separates frames and '\n' lines: neither may appear inside a name. */
static char *sanitized_name(const struct profile *p, uint32_t id)
{
	char tmp[NAME_MAX_LEN];
	char *s = strdup(profile__location_name(p, id, tmp, sizeof(tmp)));

	if (!s)
		return NULL;
	for (char *c = s; *c; c++) {
		if (*c == ';')
			*c = ':';
		else if (*c == '\n' || *c == '\r' || *c == '\t')
			*c = ' ';
	}
	return s;
}

static int buf_append(struct fold *f, const char *s, size_t n)
{
	if (f->len + n + 1 > f->cap) {
		size_t ncap = f->cap ? f->cap : 4096;
		char *nb;

		while (ncap < f->len + n + 1)
			ncap *= 2;
		nb = realloc(f->buf, ncap);
		if (!nb)
			return -ENOMEM;
		f->buf = nb;
		f->cap = ncap;
	}
	memcpy(f->buf + f->len, s, n);
	f->len += n;
	return 0;
}

static int collect_cb(const struct profile_sample_view *s, void *ctx)
{
	struct fold *f = ctx;
	size_t off = f->len;
	int64_t v = s->values[f->vi];

	if (!v)
		return 0;
	if (f->n == f->lcap) {
		size_t ncap = f->lcap ? f->lcap * 2 : 1024;
		struct line *nl = realloc(f->lines, ncap * sizeof(*nl));

		if (!nl)
			return -ENOMEM;
		f->lines = nl;
		f->lcap = ncap;
	}
	if (!s->n_locations && buf_append(f, "[no stack]", 10))
		return -ENOMEM;
	for (int i = s->n_locations - 1; i >= 0; i--) {
		const char *name = f->names[s->location_ids[i] - 1];

		if (buf_append(f, name, strlen(name)) || (i && buf_append(f, ";", 1)))
			return -ENOMEM;
	}
	if (buf_append(f, "", 1))
		return -ENOMEM;
	f->lines[f->n++] = (struct line){.off = off, .value = v};
	return 0;
}

static int line_cmp(const void *a, const void *b, void *ctx)
{
	const char *buf = ctx;

	return strcmp(buf + ((const struct line *)a)->off, buf + ((const struct line *)b)->off);
}

int folded__write(const struct profile *p, int vi, FILE *out)
{
	size_t n_locs = profile__n_locations(p);
	struct fold f = {.p = p, .vi = vi};
	int err;

	if (vi < 0 || vi >= profile__config(p)->n_sample_types)
		return -EINVAL;
	f.names = calloc(n_locs ? n_locs : 1, sizeof(*f.names));
	if (!f.names)
		return -ENOMEM;
	for (size_t i = 0; i < n_locs; i++) {
		f.names[i] = sanitized_name(p, (uint32_t)i + 1);
		if (!f.names[i]) {
			err = -ENOMEM;
			goto cleanup;
		}
	}
	err = profile__for_each_sample(p, collect_cb, &f);
	if (err)
		goto cleanup;
	/* sort so stacks that differ only by labels become adjacent, and output is stable */
	qsort_r(f.lines, f.n, sizeof(*f.lines), line_cmp, f.buf);
	for (size_t i = 0; i < f.n;) {
		const char *stack = f.buf + f.lines[i].off;
		int64_t sum = 0;

		for (; i < f.n && strcmp(stack, f.buf + f.lines[i].off) == 0; i++)
			sum += f.lines[i].value;
		if (fprintf(out, "%s %" PRId64 "\n", stack, sum) < 0) {
			err = -EIO;
			goto cleanup;
		}
	}
	err = 0;
cleanup:
	for (size_t i = 0; f.names && i < n_locs; i++)
		free(f.names[i]);
	free(f.names);
	free(f.buf);
	free(f.lines);
	return err;
}
