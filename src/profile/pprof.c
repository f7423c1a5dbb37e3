// SPDX-License-Identifier: Apache-2.0
/* pprof encoder: struct profile -> perftools.profiles.Profile protobuf, optionally gzipped. */
#include "profile/output.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "profile.pb-c.h"
#include "util/array.h"
#include "util/gzip.h"
#include "util/hash.h"
#include "util/htab.h"
#include "util/utf8.h"

#define LOG_MODULE "pprof"
#include "util/log.h"

/*
 * Output is deterministic: strings are numbered in order of first use while walking the
 * profile's tables (which keep insertion order), and ids are the profile's 1-based ids.
 */

/* String table builder: strs in order of first use, indexed by util/htab. */
struct strtab {
	char **strs; /* borrowed pointers (the profile or static strings own them) */
	size_t n, cap;
	struct htab idx;
	char **owned; /* repaired copies of strings that were not valid UTF-8 */
	size_t nowned;
	int err;
};

static bool strtab_eq(const void *ctx, uint32_t idx, const void *key)
{
	const struct strtab *t = ctx;

	return strcmp(t->strs[idx - 1], key) == 0;
}

/*
 * s with invalid UTF-8 repaired (protobuf strings must be UTF-8: strict decoders reject the
 * whole profile otherwise): s itself, or a copy the table owns. NULL on ENOMEM.
 */
static const char *strtab_valid(struct strtab *t, const char *s)
{
	char **no, *r;

	if (utf8__valid(s))
		return s;
	no = realloc(t->owned, (t->nowned + 1) * sizeof(*no));
	if (!no)
		return NULL;
	t->owned = no;
	r = utf8__repair(s);
	if (r)
		t->owned[t->nowned++] = r;
	return r;
}

/* Returns the string's index, adding it when new. On ENOMEM sets t->err and returns 0. */
static int64_t strtab_id(struct strtab *t, const char *s)
{
	uint32_t h, id;

	if (!s)
		s = "";
	if (t->err)
		return 0;
	s = strtab_valid(t, s);
	if (!s) {
		t->err = -ENOMEM;
		return 0;
	}
	h = (uint32_t)hash__str(s);
	id = htab__find(&t->idx, h, strtab_eq, t, s);
	if (id)
		return (int64_t)id - 1;
	if ((t->err = htab__reserve(&t->idx)) || (t->err = ARRAY_GROW(t->strs, t->cap, t->n + 1)))
		return 0;
	t->strs[t->n++] = (char *)s;
	htab__insert(&t->idx, h, (uint32_t)t->n);
	return (int64_t)t->n - 1;
}

static void strtab_free(struct strtab *t)
{
	for (size_t i = 0; i < t->nowned; i++)
		free(t->owned[i]);
	free(t->owned);
	free(t->strs);
	htab__free(&t->idx);
}

/* Everything the message tree points at; freed together. */
struct enc {
	struct strtab st;
	Perftools__Profiles__ValueType *vts;
	Perftools__Profiles__ValueType **vtp;
	Perftools__Profiles__ValueType period_type;
	Perftools__Profiles__Mapping *maps;
	Perftools__Profiles__Mapping **mapp;
	Perftools__Profiles__Function *funcs;
	Perftools__Profiles__Function **funcp;
	Perftools__Profiles__Location *locs;
	Perftools__Profiles__Location **locp;
	Perftools__Profiles__Line *lines;
	Perftools__Profiles__Line **linep;
	Perftools__Profiles__Sample *samples;
	Perftools__Profiles__Sample **samplep;
	uint64_t *loc_ids;
	Perftools__Profiles__Label *labels;
	Perftools__Profiles__Label **labelp;
	size_t n_samples, n_loc_ids, n_labels;
	size_t i_sample, i_loc_id, i_label;
	int n_types;
	int64_t comment;
};

static int count_cb(const struct profile_sample_view *s, void *ctx)
{
	struct enc *e = ctx;

	e->n_samples++;
	e->n_loc_ids += (size_t)s->n_locations;
	e->n_labels += (size_t)s->n_labels;
	return 0;
}

static int sample_cb(const struct profile_sample_view *s, void *ctx)
{
	struct enc *e = ctx;
	Perftools__Profiles__Sample *m = &e->samples[e->i_sample];

	perftools__profiles__sample__init(m);
	e->samplep[e->i_sample++] = m;
	m->n_location_id = (size_t)s->n_locations;
	m->location_id = &e->loc_ids[e->i_loc_id];
	for (int i = 0; i < s->n_locations; i++)
		e->loc_ids[e->i_loc_id++] = s->location_ids[i];
	m->n_value = (size_t)e->n_types;
	m->value = (int64_t *)s->values; /* only read by pack */
	m->n_label = (size_t)s->n_labels;
	m->label = &e->labelp[e->i_label];
	for (int i = 0; i < s->n_labels; i++) {
		const struct profile_label *l = &s->labels[i];
		Perftools__Profiles__Label *pl = &e->labels[e->i_label];

		perftools__profiles__label__init(pl);
		e->labelp[e->i_label++] = pl;
		pl->key = strtab_id(&e->st, l->key);
		if (l->str) {
			pl->str = strtab_id(&e->st, l->str);
		} else {
			pl->num = l->num;
			if (l->num_unit)
				pl->num_unit = strtab_id(&e->st, l->num_unit);
		}
	}
	return 0;
}

static void enc_free(struct enc *e)
{
	strtab_free(&e->st);
	free(e->vts);
	free(e->vtp);
	free(e->maps);
	free(e->mapp);
	free(e->funcs);
	free(e->funcp);
	free(e->locs);
	free(e->locp);
	free(e->lines);
	free(e->linep);
	free(e->samples);
	free(e->samplep);
	free(e->loc_ids);
	free(e->labels);
	free(e->labelp);
}

#define ALLOC_N(ptr, n) ((ptr) = calloc((n) ? (n) : 1, sizeof(*(ptr))))

static int build(const struct profile *p, struct enc *e, Perftools__Profiles__Profile *pb)
{
	const struct profile_config *cfg = profile__config(p);
	size_t n_maps = profile__n_mappings(p), n_funcs = profile__n_functions(p);
	size_t n_locs = profile__n_locations(p);
	bool *fn_has_file = NULL;
	int err = -ENOMEM;

	e->n_types = cfg->n_sample_types;
	strtab_id(&e->st, ""); /* string_table[0] must be "" */
	profile__for_each_sample(p, count_cb, e);

	if (!ALLOC_N(e->vts, e->n_types) || !ALLOC_N(e->vtp, e->n_types) ||
	    !ALLOC_N(e->maps, n_maps) || !ALLOC_N(e->mapp, n_maps) || !ALLOC_N(e->funcs, n_funcs) ||
	    !ALLOC_N(e->funcp, n_funcs) || !ALLOC_N(e->locs, n_locs) || !ALLOC_N(e->locp, n_locs) ||
	    !ALLOC_N(e->lines, n_locs) || !ALLOC_N(e->linep, n_locs) ||
	    !ALLOC_N(e->samples, e->n_samples) || !ALLOC_N(e->samplep, e->n_samples) ||
	    !ALLOC_N(e->loc_ids, e->n_loc_ids) || !ALLOC_N(e->labels, e->n_labels) ||
	    !ALLOC_N(e->labelp, e->n_labels) || !ALLOC_N(fn_has_file, n_funcs))
		goto cleanup;

	for (int i = 0; i < e->n_types; i++) {
		perftools__profiles__value_type__init(&e->vts[i]);
		e->vts[i].type = strtab_id(&e->st, cfg->sample_types[i].type);
		e->vts[i].unit = strtab_id(&e->st, cfg->sample_types[i].unit);
		e->vtp[i] = &e->vts[i];
	}
	pb->n_sample_type = (size_t)e->n_types;
	pb->sample_type = e->vtp;

	perftools__profiles__value_type__init(&e->period_type);
	if (cfg->period_type.type || cfg->period_type.unit) {
		e->period_type.type = strtab_id(&e->st, cfg->period_type.type);
		e->period_type.unit = strtab_id(&e->st, cfg->period_type.unit);
		pb->period_type = &e->period_type;
	}
	pb->period = cfg->period;
	pb->time_nanos = cfg->time_nanos;
	pb->duration_nanos = cfg->duration_nanos;

	for (size_t i = 0; i < n_maps; i++) {
		struct profile_mapping_view v;
		Perftools__Profiles__Mapping *m = &e->maps[i];

		profile__mapping(p, i, &v);
		perftools__profiles__mapping__init(m);
		m->id = v.id;
		m->memory_start = v.start;
		m->memory_limit = v.limit;
		m->file_offset = v.file_offset;
		m->filename = strtab_id(&e->st, v.file);
		m->build_id = strtab_id(&e->st, v.build_id);
		m->has_functions = v.has_functions;
		/* refined below: every location must have a file / line for these */
		m->has_filenames = v.has_functions;
		m->has_line_numbers = v.has_functions;
		e->mapp[i] = m;
	}
	pb->n_mapping = n_maps;
	pb->mapping = e->mapp;

	for (size_t i = 0; i < n_funcs; i++) {
		struct profile_function_view v;
		Perftools__Profiles__Function *f = &e->funcs[i];

		profile__function(p, i, &v);
		perftools__profiles__function__init(f);
		f->id = v.id;
		f->name = strtab_id(&e->st, v.name);
		f->system_name = f->name;
		f->filename = strtab_id(&e->st, v.filename);
		f->start_line = v.start_line;
		fn_has_file[i] = v.filename && v.filename[0];
		e->funcp[i] = f;
	}
	pb->n_function = n_funcs;
	pb->function = e->funcp;

	for (size_t i = 0; i < n_locs; i++) {
		struct profile_location_view v;
		Perftools__Profiles__Location *l = &e->locs[i];

		profile__location(p, i, &v);
		perftools__profiles__location__init(l);
		l->id = v.id;
		l->mapping_id = v.mapping_id;
		l->address = v.address;
		if (v.function_id) {
			Perftools__Profiles__Line *ln = &e->lines[i];

			perftools__profiles__line__init(ln);
			ln->function_id = v.function_id;
			ln->line = v.line;
			e->linep[i] = ln;
			l->n_line = 1;
			l->line = &e->linep[i];
		}
		if (v.mapping_id && v.mapping_id <= n_maps) {
			Perftools__Profiles__Mapping *m = &e->maps[v.mapping_id - 1];

			if (!v.function_id || !fn_has_file[v.function_id - 1])
				m->has_filenames = false;
			if (!v.line)
				m->has_line_numbers = false;
		}
		e->locp[i] = l;
	}
	pb->n_location = n_locs;
	pb->location = e->locp;

	profile__for_each_sample(p, sample_cb, e);
	pb->n_sample = e->n_samples;
	pb->sample = e->samplep;

#ifdef MLPROF_VERSION
	e->comment = strtab_id(&e->st, "mlprof " MLPROF_VERSION);
	pb->n_comment = 1;
	pb->comment = &e->comment;
#endif
	if (e->st.err)
		goto cleanup;
	pb->n_string_table = e->st.n;
	pb->string_table = e->st.strs;
	err = 0;
cleanup:
	free(fn_has_file);
	return err;
}

int pprof__encode(const struct profile *p, bool gzip, uint8_t **out, size_t *len)
{
	Perftools__Profiles__Profile pb = PERFTOOLS__PROFILES__PROFILE__INIT;
	struct enc e = {0};
	uint8_t *raw = NULL;
	size_t raw_len;
	int err;

	if (!p || !out || !len)
		return -EINVAL;
	err = build(p, &e, &pb);
	if (err)
		goto cleanup;
	raw_len = perftools__profiles__profile__get_packed_size(&pb);
	raw = malloc(raw_len ? raw_len : 1);
	if (!raw) {
		err = -ENOMEM;
		goto cleanup;
	}
	if (perftools__profiles__profile__pack(&pb, raw) != raw_len) {
		err = -EIO;
		goto cleanup;
	}
	if (gzip) {
		err = gzip__compress(raw, raw_len, out, len);
		if (err)
			pr_warn("cannot gzip the profile: %s", strerror(-err));
		goto cleanup;
	}
	*out = raw;
	*len = raw_len;
	raw = NULL;
	err = 0;
cleanup:
	free(raw);
	enc_free(&e);
	return err;
}
