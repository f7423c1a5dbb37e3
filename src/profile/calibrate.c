// SPDX-License-Identifier: Apache-2.0
/* Sampled profiles calibrated to exact counts (see calibrate.h). */
#include "profile/calibrate.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "profile/profile.h"
#include "util/hash.h"

struct group {
	int64_t pid;
	const char *leaf; /* the caller's string */
	uint64_t hash;
	int64_t count;	 /* exact total */
	int64_t sampled; /* sum of the matched samples' values */
	int64_t acc;	 /* running sum while rescaling */
	int64_t given;	 /* new values handed out so far */
};

struct calib {
	const struct profile *p;
	int vi;
	struct group *g;
	size_t ng;
	size_t *slots; /* open addressing: group index + 1, 0 empty */
	size_t mask;
	int32_t *of; /* per sample: its group index, -1 none */
	size_t i;    /* sample being visited */
};

static uint64_t key_hash(int64_t pid, const char *leaf)
{
	return hash__fnv1a(&pid, sizeof(pid), leaf ? hash__str(leaf) : 0);
}

static struct group *find(const struct calib *c, int64_t pid, const char *leaf)
{
	uint64_t h = key_hash(pid, leaf);

	for (size_t k = h & c->mask; c->slots[k]; k = (k + 1) & c->mask) {
		struct group *g = &c->g[c->slots[k] - 1];

		if (g->hash == h && g->pid == pid &&
		    (g->leaf && leaf ? !strcmp(g->leaf, leaf) : g->leaf == leaf))
			return g;
	}
	return NULL;
}

/* Adds target t (summed into an existing group of the same pid and leaf). */
static void insert(struct calib *c, const struct calib_target *t)
{
	struct group *g = find(c, t->pid, t->leaf);
	size_t k;

	if (g) {
		g->count += t->count;
		return;
	}
	g = &c->g[c->ng++];
	*g = (struct group){.pid = t->pid,
			    .leaf = t->leaf,
			    .hash = key_hash(t->pid, t->leaf),
			    .count = t->count};
	for (k = g->hash & c->mask; c->slots[k]; k = (k + 1) & c->mask)
		;
	c->slots[k] = c->ng;
}

/* The sample's "pid" label and leaf function name (NULL when it has none). */
static void sample_key(const struct profile *p, const struct profile_sample_view *s, int64_t *pid,
		       const char **leaf, bool *has_pid)
{
	*has_pid = false;
	*leaf = NULL;
	for (int i = 0; i < s->n_labels; i++) {
		if (!s->labels[i].str && !strcmp(s->labels[i].key, "pid")) {
			*pid = s->labels[i].num;
			*has_pid = true;
		}
	}
	if (s->n_locations > 0) {
		struct profile_location_view loc;

		profile__location(p, s->location_ids[0] - 1, &loc);
		if (loc.function_id) {
			struct profile_function_view fn;

			profile__function(p, loc.function_id - 1, &fn);
			*leaf = fn.name;
		}
	}
}

static int match_cb(const struct profile_sample_view *s, void *ctx)
{
	struct calib *c = ctx;
	struct group *g = NULL;
	const char *leaf;
	int64_t pid = 0;
	bool has_pid;

	sample_key(c->p, s, &pid, &leaf, &has_pid);
	if (has_pid) {
		g = leaf ? find(c, pid, leaf) : NULL;
		if (!g)
			g = find(c, pid, NULL);
	}
	c->of[c->i++] = g ? (int32_t)(g - c->g) : -1;
	if (g)
		g->sampled += s->values[c->vi];
	return 0;
}

/* floor(a * b / d) for non-negative a, b and d > 0, without overflow. */
static int64_t muldiv(int64_t a, int64_t b, int64_t d)
{
	return (int64_t)((unsigned __int128)a * (unsigned __int128)b / (unsigned __int128)d);
}

static void rescale_cb(const struct profile_sample_view *s, int64_t *values, void *ctx)
{
	struct calib *c = ctx;
	int32_t gi = c->of[c->i++];
	struct group *g;
	int64_t v, nv;
	const struct profile_config *cfg = profile__config(c->p);

	(void)s;
	if (gi < 0)
		return;
	g = &c->g[gi];
	v = values[c->vi];
	if (g->sampled <= 0 || v < 0)
		return;
	/* running-sum rounding: the group's new values add up to exactly its count */
	g->acc += v;
	nv = muldiv(g->acc, g->count, g->sampled) - g->given;
	g->given += nv;
	for (int t = 0; t < cfg->n_sample_types; t++)
		if (t != c->vi)
			values[t] = v ? muldiv(values[t] < 0 ? 0 : values[t], nv, v) : 0;
	values[c->vi] = nv;
}

/* See calibrate.h. */
int calibrate__profile(struct profile *p, int vi, enum frame_kind leaf_kind,
		       const struct calib_target *t, size_t n, struct calib_stats *st)
{
	struct calib c = {.p = p, .vi = vi};
	struct calib_stats local = {0};
	size_t nslots = 16, ns = profile__n_samples(p);
	int err = 0;

	if (!st)
		st = &local;
	memset(st, 0, sizeof(*st));
	while (nslots < 2 * n)
		nslots <<= 1;
	c.mask = nslots - 1;
	c.g = calloc(n ? n : 1, sizeof(*c.g));
	c.slots = calloc(nslots, sizeof(*c.slots));
	c.of = malloc((ns ? ns : 1) * sizeof(*c.of));
	if (!c.g || !c.slots || !c.of) {
		err = -ENOMEM;
		goto cleanup;
	}
	for (size_t i = 0; i < n; i++)
		if (t[i].count > 0)
			insert(&c, &t[i]);
	profile__for_each_sample(p, match_cb, &c);
	for (size_t i = 0; i < c.ng; i++) {
		if (c.g[i].sampled > 0) {
			st->groups++;
			st->before += c.g[i].sampled;
			st->after += c.g[i].count;
		}
	}
	c.i = 0;
	profile__rescale(p, rescale_cb, &c);
	/* counts without a single captured stack: their weight is not lost */
	for (size_t i = 0; i < c.ng && !err; i++) {
		struct group *g = &c.g[i];
		struct frame fr[2] = {
			{.kind = leaf_kind, .function = g->leaf},
			{.kind = FRAME_TRUNCATED, .function = "[stack not captured]"},
		};
		struct profile_label lab = {.key = "pid", .num = g->pid};
		int64_t values[PROFILE_MAX_SAMPLE_TYPES] = {0};

		if (g->sampled > 0)
			continue;
		values[vi] = g->count;
		err = profile__add(p, g->leaf ? fr : fr + 1, g->leaf ? 2 : 1, values, &lab, 1);
		if (!err) {
			st->added++;
			st->after += g->count;
		}
	}
cleanup:
	free(c.g);
	free(c.slots);
	free(c.of);
	return err;
}
