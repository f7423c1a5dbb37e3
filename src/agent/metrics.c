// SPDX-License-Identifier: Apache-2.0
/* Prometheus text exposition (format 0.0.4) of the agent's counters, gauges and summaries. */
#include "agent/metrics.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct series {
	char *label, *label_value; /* both NULL for an unlabeled series */
	double value;
	uint64_t count; /* summaries */
};

struct family {
	char *name, *help;
	enum metric_type type;
	struct series series[METRICS_MAX_SERIES];
	int n;
};

struct metrics {
	pthread_mutex_t lock;
	metrics_collect_cb collect;
	void *ctx;
	bool collecting;
	pthread_t collector;
	struct family fam[METRICS_MAX_FAMILIES];
	int n;
};

struct metrics *metrics__new(metrics_collect_cb collect, void *ctx)
{
	struct metrics *m = calloc(1, sizeof(*m));

	if (!m)
		return NULL;
	pthread_mutex_init(&m->lock, NULL);
	m->collect = collect;
	m->ctx = ctx;
	return m;
}

void metrics__free(struct metrics *m)
{
	if (!m)
		return;
	for (int i = 0; i < m->n; i++) {
		for (int j = 0; j < m->fam[i].n; j++) {
			free(m->fam[i].series[j].label);
			free(m->fam[i].series[j].label_value);
		}
		free(m->fam[i].name);
		free(m->fam[i].help);
	}
	pthread_mutex_destroy(&m->lock);
	free(m);
}

static bool valid_name(const char *s, bool colon)
{
	if (!*s || isdigit((unsigned char)*s))
		return false;
	for (; *s; s++)
		if (!(isascii((unsigned char)*s) &&
		      (isalnum((unsigned char)*s) || *s == '_' || (colon && *s == ':'))))
			return false;
	return true;
}

int metrics__register(struct metrics *m, const char *name, enum metric_type type, const char *help)
{
	struct family *f;
	int id, err = 0;

	if (!valid_name(name, true))
		return -EINVAL;
	pthread_mutex_lock(&m->lock);
	for (id = 0; id < m->n; id++)
		if (!strcmp(m->fam[id].name, name))
			goto cleanup;
	if (m->n >= METRICS_MAX_FAMILIES) {
		err = -ENOSPC;
		goto cleanup;
	}
	f = &m->fam[m->n];
	f->name = strdup(name);
	f->help = strdup(help ? help : "");
	if (!f->name || !f->help) {
		free(f->name);
		free(f->help);
		f->name = f->help = NULL;
		err = -ENOMEM;
		goto cleanup;
	}
	f->type = type;
	f->n = 0;
	id = m->n++;
cleanup:
	pthread_mutex_unlock(&m->lock);
	return err ? err : id;
}

static bool holds_lock(struct metrics *m)
{
	return m->collecting && pthread_equal(m->collector, pthread_self());
}

static bool streq_null(const char *a, const char *b)
{
	return (!a && !b) || (a && b && !strcmp(a, b));
}

int metrics__set(struct metrics *m, int id, const char *label, const char *label_value,
		 double value, uint64_t count)
{
	bool locked = !holds_lock(m);
	struct family *f;
	struct series *s = NULL;
	int err = 0;

	if ((label && (!label_value || !valid_name(label, false))) || (!label && label_value))
		return -EINVAL;
	if (locked)
		pthread_mutex_lock(&m->lock);
	if (id < 0 || id >= m->n) {
		err = -EINVAL;
		goto cleanup;
	}
	f = &m->fam[id];
	for (int i = 0; i < f->n; i++) {
		if (streq_null(f->series[i].label, label) &&
		    streq_null(f->series[i].label_value, label_value)) {
			s = &f->series[i];
			break;
		}
	}
	if (!s) {
		if (f->n >= METRICS_MAX_SERIES) {
			err = -ENOSPC;
			goto cleanup;
		}
		s = &f->series[f->n];
		s->label = label ? strdup(label) : NULL;
		s->label_value = label_value ? strdup(label_value) : NULL;
		if (label && (!s->label || !s->label_value)) {
			free(s->label);
			free(s->label_value);
			s->label = s->label_value = NULL;
			err = -ENOMEM;
			goto cleanup;
		}
		f->n++;
	}
	s->value = value;
	s->count = count;
cleanup:
	if (locked)
		pthread_mutex_unlock(&m->lock);
	return err;
}

struct out {
	char *p;
	size_t n, cap;
	bool oom;
};

static void put(struct out *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(struct out *o, const char *fmt, ...)
{
	va_list ap;
	int need;

	if (o->oom)
		return;
	va_start(ap, fmt);
	need = vsnprintf(o->p + o->n, o->cap - o->n, fmt, ap);
	va_end(ap);
	if (need < 0) {
		o->oom = true;
		return;
	}
	if ((size_t)need >= o->cap - o->n) {
		size_t cap = (o->n + (size_t)need + 1) * 2;
		char *np = realloc(o->p, cap);

		if (!np) {
			o->oom = true;
			return;
		}
		o->p = np;
		o->cap = cap;
		va_start(ap, fmt);
		vsnprintf(o->p + o->n, o->cap - o->n, fmt, ap);
		va_end(ap);
	}
	o->n += (size_t)need;
}

/* Escapes \ and newline (help) and also " (label values). */
static void put_escaped(struct out *o, const char *s, bool quote)
{
	for (; *s; s++) {
		if (*s == '\\')
			put(o, "\\\\");
		else if (*s == '\n')
			put(o, "\\n");
		else if (quote && *s == '"')
			put(o, "\\\"");
		else
			put(o, "%c", *s);
	}
}

static void put_value(struct out *o, double v)
{
	if (isnan(v))
		put(o, "NaN");
	else if (isinf(v))
		put(o, v > 0 ? "+Inf" : "-Inf");
	else if (v == floor(v) && fabs(v) < 9007199254740992.0)
		put(o, "%.0f", v);
	else
		put(o, "%.17g", v);
}

static void put_series(struct out *o, const char *name, const char *suffix, const struct series *s,
		       double v)
{
	put(o, "%s%s", name, suffix);
	if (s->label) {
		put(o, "{%s=\"", s->label);
		put_escaped(o, s->label_value, true);
		put(o, "\"}");
	}
	put(o, " ");
	put_value(o, v);
	put(o, "\n");
}

int metrics__render(struct metrics *m, char **out, size_t *len)
{
	static const char *const type_names[] = {"counter", "gauge", "summary"};
	struct out o = {.cap = 4096};

	o.p = malloc(o.cap);
	if (!o.p)
		return -ENOMEM;
	o.p[0] = '\0';
	pthread_mutex_lock(&m->lock);
	if (m->collect) {
		m->collecting = true;
		m->collector = pthread_self();
		m->collect(m, m->ctx);
		m->collecting = false;
	}
	for (int i = 0; i < m->n; i++) {
		const struct family *f = &m->fam[i];

		if (!f->n)
			continue;
		put(&o, "# HELP %s ", f->name);
		put_escaped(&o, f->help, false);
		put(&o, "\n# TYPE %s %s\n", f->name, type_names[f->type]);
		for (int j = 0; j < f->n; j++) {
			if (f->type == METRIC_SUMMARY) {
				put_series(&o, f->name, "_sum", &f->series[j], f->series[j].value);
				put_series(&o, f->name, "_count", &f->series[j],
					   (double)f->series[j].count);
			} else {
				put_series(&o, f->name, "", &f->series[j], f->series[j].value);
			}
		}
	}
	pthread_mutex_unlock(&m->lock);
	if (o.oom) {
		free(o.p);
		return -ENOMEM;
	}
	*out = o.p;
	*len = o.n;
	return 0;
}
