// SPDX-License-Identifier: Apache-2.0
/* Trims a pprof over Pyroscope's limits: heaviest samples kept, the rest folded into one. */
#include "profile/pprof_limits.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "profile.pb-c.h"
#include "util/gzip.h"

#define LOG_MODULE "exporter"
#include "util/log.h"

/*
 * Pyroscope's ingestion limits (distributor validation). 16000 samples need well over
 * 64 KiB of encoded pprof: the fast path's bound.
 */
static const struct pprof_limits pyroscope_limits = {
	.max_bytes = 4u << 20,
	.max_samples = 16000,
	.fast_path_bytes = 64 * 1024,
	.max_inflate = 64u << 20,
};

/*
 * Drops the fields unknown to profile.proto from m and every message under it (freeing
 * them as protobuf-c's unpack allocated them). A trimmed profile is packed again, and
 * protobuf-c keeps and re-emits unknown fields as read, even ones it cannot read back
 * (field number 0 written as a two-byte varint: found by fuzz_pprof_limits).
 */
static void strip_unknown(ProtobufCMessage *m)
{
	const ProtobufCMessageDescriptor *d = m->descriptor;

	for (unsigned i = 0; i < m->n_unknown_fields; i++)
		free(m->unknown_fields[i].data);
	free(m->unknown_fields);
	m->unknown_fields = NULL;
	m->n_unknown_fields = 0;
	for (unsigned i = 0; i < d->n_fields; i++) {
		const ProtobufCFieldDescriptor *f = &d->fields[i];
		char *at = (char *)m + f->offset;

		if (f->type != PROTOBUF_C_TYPE_MESSAGE)
			continue;
		if (f->label == PROTOBUF_C_LABEL_REPEATED) {
			size_t n = *(size_t *)((char *)m + f->quantifier_offset);
			ProtobufCMessage **v = *(ProtobufCMessage ***)at;

			for (size_t j = 0; j < n; j++)
				if (v[j])
					strip_unknown(v[j]);
		} else if (*(ProtobufCMessage **)at) {
			strip_unknown(*(ProtobufCMessage **)at);
		}
	}
}

static int cmp_weight(const void *a, const void *b)
{
	const Perftools__Profiles__Sample *x = *(Perftools__Profiles__Sample *const *)a;
	const Perftools__Profiles__Sample *y = *(Perftools__Profiles__Sample *const *)b;
	int64_t wx = x->n_value ? x->value[0] : 0, wy = y->n_value ? y->value[0] : 0;

	return wx < wy ? 1 : wx > wy ? -1 : 0;
}

/* Everything a trim round allocates; the unpacked message's own arrays are left alone. */
struct trim_mem {
	Perftools__Profiles__Sample agg, **samples;
	Perftools__Profiles__Location loc, **locs;
	Perftools__Profiles__Line line, *linep;
	Perftools__Profiles__Function fn, **fns;
	int64_t *vals;
	uint64_t locid;
	char **strs, name[64];
	uint8_t *used;
};

static void trim_mem_free(struct trim_mem *m)
{
	free(m->samples);
	free(m->locs);
	free(m->fns);
	free(m->vals);
	free(m->strs);
	free(m->used);
	memset(m, 0, sizeof(*m));
}

static bool bit(const uint8_t *bm, uint64_t i)
{
	return bm[i / 8] & (1u << (i % 8));
}

static void set_bit(uint8_t *bm, uint64_t i)
{
	bm[i / 8] |= (uint8_t)(1u << (i % 8));
}

/*
 * Points pp at a view keeping its `keep` heaviest samples (by the first value; pp->sample
 * must already be sorted) plus one sample whose single frame is "[trimmed: N samples]" and
 * whose values are the sum of the others, so totals stay exact. Locations and functions no
 * longer referenced are left out. The view's memory is in m. Returns 0 or -ENOMEM.
 */
static int trim_view(Perftools__Profiles__Profile *pp, const Perftools__Profiles__Profile *orig,
		     size_t keep, struct trim_mem *m)
{
	size_t i, j, nv = orig->n_sample_type, nloc = 0, nfn = 0;
	uint64_t max_loc = 0, max_fn = 0;
	uint8_t *ul, *uf;
	size_t ul_len;

	m->samples = malloc((keep + 1) * sizeof(*m->samples));
	m->vals = calloc(nv ? nv : 1, sizeof(*m->vals));
	m->strs = malloc((orig->n_string_table + 1) * sizeof(*m->strs));
	m->locs = malloc((orig->n_location + 1) * sizeof(*m->locs));
	m->fns = malloc((orig->n_function + 1) * sizeof(*m->fns));
	if (!m->samples || !m->vals || !m->strs || !m->locs || !m->fns)
		return -ENOMEM;
	for (i = keep; i < orig->n_sample; i++)
		for (j = 0; j < nv && j < orig->sample[i]->n_value; j++)
			m->vals[j] += orig->sample[i]->value[j];
	for (i = 0; i < orig->n_location; i++)
		if (orig->location[i]->id > max_loc)
			max_loc = orig->location[i]->id;
	for (i = 0; i < orig->n_function; i++)
		if (orig->function[i]->id > max_fn)
			max_fn = orig->function[i]->id;
	/* the unpacked arrays are NULL when empty: memcpy's arguments are nonnull */
	if (orig->n_string_table)
		memcpy(m->strs, orig->string_table, orig->n_string_table * sizeof(*m->strs));
	snprintf(m->name, sizeof(m->name), "[trimmed: %zu samples]", orig->n_sample - keep);
	m->strs[orig->n_string_table] = m->name;

	perftools__profiles__function__init(&m->fn);
	perftools__profiles__line__init(&m->line);
	perftools__profiles__location__init(&m->loc);
	perftools__profiles__sample__init(&m->agg);
	m->fn.id = max_fn + 1;
	m->fn.name = (int64_t)orig->n_string_table;
	m->fn.system_name = m->fn.name;
	m->line.function_id = m->fn.id;
	m->linep = &m->line;
	m->loc.id = max_loc + 1;
	m->loc.n_line = 1;
	m->loc.line = &m->linep;
	m->locid = m->loc.id;
	m->agg.n_location_id = 1;
	m->agg.location_id = &m->locid;
	m->agg.n_value = nv;
	m->agg.value = m->vals;
	memcpy(m->samples, orig->sample, keep * sizeof(*m->samples));
	m->samples[keep] = &m->agg;

	*pp = *orig;
	pp->sample = m->samples;
	pp->n_sample = keep + 1;
	pp->string_table = m->strs;
	pp->n_string_table = orig->n_string_table + 1;
	if (max_loc > (16u << 20) || max_fn > (16u << 20)) {
		/* ids too sparse to index cheaply: keep the full tables */
		if (orig->n_location)
			memcpy(m->locs, orig->location, orig->n_location * sizeof(*m->locs));
		if (orig->n_function)
			memcpy(m->fns, orig->function, orig->n_function * sizeof(*m->fns));
		nloc = orig->n_location;
		nfn = orig->n_function;
	} else {
		ul_len = max_loc / 8 + 1;
		m->used = calloc(1, ul_len + max_fn / 8 + 1);
		if (!m->used)
			return -ENOMEM;
		ul = m->used;
		uf = m->used + ul_len;
		for (i = 0; i < keep; i++)
			for (j = 0; j < orig->sample[i]->n_location_id; j++)
				if (orig->sample[i]->location_id[j] <= max_loc)
					set_bit(ul, orig->sample[i]->location_id[j]);
		for (i = 0; i < orig->n_location; i++) {
			Perftools__Profiles__Location *l = orig->location[i];

			if (!bit(ul, l->id))
				continue;
			for (j = 0; j < l->n_line; j++)
				if (l->line[j]->function_id <= max_fn)
					set_bit(uf, l->line[j]->function_id);
			m->locs[nloc++] = l;
		}
		for (i = 0; i < orig->n_function; i++)
			if (bit(uf, orig->function[i]->id))
				m->fns[nfn++] = orig->function[i];
	}
	m->locs[nloc] = &m->loc;
	m->fns[nfn] = &m->fn;
	pp->location = m->locs;
	pp->n_location = nloc + 1;
	pp->function = m->fns;
	pp->n_function = nfn + 1;
	return 0;
}

/* See pprof_limits.h: 4 MiB decompressed, 16000 samples. */
int pprof_limits__fit(const uint8_t *pprof, size_t len, uint8_t **out, size_t *out_len)
{
	return pprof_limits__fit_to(&pyroscope_limits, pprof, len, out, out_len);
}

/* See pprof_limits.h. */
int pprof_limits__fit_to(const struct pprof_limits *lim, const uint8_t *pprof, size_t len,
			 uint8_t **out, size_t *out_len)
{
	Perftools__Profiles__Profile *orig = NULL, view;
	struct trim_mem m = {.samples = NULL};
	uint8_t *raw = NULL, *packed = NULL;
	size_t raw_len = len, keep, plen = 0;
	int err = 0, round;

	*out = NULL;
	if (gzip__is_gzip(pprof, len)) {
		err = gzip__decompress(pprof, len, lim->max_inflate, &raw, &raw_len);
		if (err)
			return err;
	}
	if (raw_len < lim->fast_path_bytes)
		goto cleanup;
	orig = perftools__profiles__profile__unpack(NULL, raw_len, raw ? raw : pprof);
	if (!orig) {
		err = -EBADMSG;
		goto cleanup;
	}
	if (raw_len <= lim->max_bytes && orig->n_sample <= lim->max_samples)
		goto cleanup;
	if (orig->n_sample < 2) {
		err = -E2BIG;
		goto cleanup;
	}
	strip_unknown(&orig->base);
	qsort(orig->sample, orig->n_sample, sizeof(*orig->sample), cmp_weight);
	keep = orig->n_sample <= lim->max_samples ? orig->n_sample - 1 : lim->max_samples - 1;
	for (round = 0; round < 16 && keep > 0; round++) {
		trim_mem_free(&m);
		err = trim_view(&view, orig, keep, &m);
		if (err)
			goto cleanup;
		plen = perftools__profiles__profile__get_packed_size(&view);
		if (plen <= lim->max_bytes)
			break;
		keep /= 2;
	}
	if (plen > lim->max_bytes || !m.samples) {
		err = -E2BIG;
		goto cleanup;
	}
	packed = malloc(plen);
	if (!packed) {
		err = -ENOMEM;
		goto cleanup;
	}
	perftools__profiles__profile__pack(&view, packed);
	err = gzip__compress(packed, plen, out, out_len);
	if (!err)
		pr_info("profile over Pyroscope's limits (%zu samples, %zu bytes): kept the %zu "
			"heaviest samples, folded the rest into one [trimmed] frame",
			orig->n_sample, raw_len, keep);
cleanup:
	trim_mem_free(&m);
	if (orig)
		perftools__profiles__profile__free_unpacked(orig, NULL);
	free(packed);
	free(raw);
	return err;
}
