// SPDX-License-Identifier: Apache-2.0
/*
 * A view of one profile added to another: the samples that carry a label, with one of their
 * values (the training-steps profile is the CPU profile's samples that have an ml_phase, in
 * nanoseconds: built once per output from the aggregated samples, not per CPU sample).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "profile/profile.h"

/* The source profile's locations as frames, built once; their mappings. */
struct select_ctx {
	struct profile *dst;
	const char *key;
	int vi;
	struct frame *frames; /* by location index */
	struct frame_mapping *maps;
	struct frame *stack; /* one sample's frames */
	int cap;
	int err;
};

static bool has_label(const struct profile_sample_view *s, const char *key)
{
	for (int i = 0; i < s->n_labels; i++)
		if (s->labels[i].str && !strcmp(s->labels[i].key, key))
			return true;
	return false;
}

static int add_cb(const struct profile_sample_view *s, void *arg)
{
	struct select_ctx *c = arg;
	int64_t v;
	int err;

	if (!has_label(s, c->key) || !s->values[c->vi])
		return 0;
	if (s->n_locations > c->cap) {
		struct frame *nf = realloc(c->stack, (size_t)s->n_locations * sizeof(*nf));

		if (!nf)
			return c->err = -ENOMEM;
		c->stack = nf;
		c->cap = s->n_locations;
	}
	for (int i = 0; i < s->n_locations; i++)
		c->stack[i] = c->frames[s->location_ids[i] - 1];
	v = s->values[c->vi];
	err = profile__add(c->dst, c->stack, s->n_locations, &v, s->labels, s->n_labels);
	if (err && err != -ENOSPC) /* (full: counted in dst's dropped samples) */
		return c->err = err;
	return 0;
}

static int any_cb(const struct profile_sample_view *s, void *key)
{
	return has_label(s, key);
}

/* See profile.h. */
bool profile__any_labelled(const struct profile *p, const char *key)
{
	return p && key && profile__for_each_sample(p, any_cb, (void *)key) == 1;
}

/* See profile.h. */
int profile__add_selected(struct profile *dst, const struct profile *src, const char *key, int vi)
{
	size_t nl = profile__n_locations(src), nm = profile__n_mappings(src);
	struct select_ctx c = {.dst = dst, .key = key, .vi = vi};

	if (!dst || !src || !key || vi < 0 || vi >= profile__config(src)->n_sample_types ||
	    profile__config(dst)->n_sample_types != 1)
		return -EINVAL;
	if (!profile__n_samples(src))
		return 0;
	c.frames = calloc(nl ? nl : 1, sizeof(*c.frames));
	c.maps = calloc(nm ? nm : 1, sizeof(*c.maps));
	if (!c.frames || !c.maps) {
		c.err = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < nm; i++) {
		struct profile_mapping_view mv;

		profile__mapping(src, i, &mv);
		c.maps[i] =
			(struct frame_mapping){mv.start, mv.limit, mv.file_offset, mv.file,
					       mv.build_id && *mv.build_id ? mv.build_id : NULL};
	}
	for (size_t i = 0; i < nl; i++) {
		struct profile_location_view lv;
		struct frame *f = &c.frames[i];

		profile__location(src, i, &lv);
		*f = (struct frame){
			.kind = lv.kind, .addr = lv.address, .ident = frame__new_ident()};
		if (lv.mapping_id && lv.mapping_id <= nm)
			f->map = &c.maps[lv.mapping_id - 1];
		if (lv.function_id) {
			struct profile_function_view fv;

			profile__function(src, lv.function_id - 1, &fv);
			f->function = fv.name;
			f->file = fv.filename && *fv.filename ? fv.filename : NULL;
			f->start_line = (uint32_t)fv.start_line;
			f->line = (uint32_t)lv.line;
		}
	}
	profile__for_each_sample(src, add_cb, &c);
out:
	free(c.stack);
	free(c.frames);
	free(c.maps);
	return c.err;
}
