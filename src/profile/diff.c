// SPDX-License-Identifier: Apache-2.0
/* mlprof diff: reads two pprof profiles and compares each function's share of the total. */
#include "profile/diff.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "profile.pb-c.h"
#include "util/fsutil.h"
#include "util/gzip.h"

/* Larger inputs are refused (-E2BIG/-EFBIG) rather than exhausting memory. */
#define MAX_PPROF_BYTES (1ULL << 30)
/* Changes below this many points print as 0.00 and count as no change. */
#define MIN_POINTS 0.005

/* ---- function keys: (name, source file), interned; strings are borrowed ---- */

struct key {
	const char *name;
	const char *file;
};

struct keytab {
	struct key *keys;
	size_t n, cap;
	uint32_t *slots; /* index + 1, 0 = empty */
	size_t nslots;
};

static uint64_t key_hash(const char *name, const char *file)
{
	uint64_t h = 0xcbf29ce484222325ULL;

	for (const char *s = name; *s; s++)
		h = (h ^ (unsigned char)*s) * 0x100000001b3ULL;
	h = (h ^ 0xff) * 0x100000001b3ULL;
	for (const char *s = file; *s; s++)
		h = (h ^ (unsigned char)*s) * 0x100000001b3ULL;
	return h;
}

static int keytab_rehash(struct keytab *t)
{
	size_t ns = t->nslots ? t->nslots * 2 : 1024;
	uint32_t *slots = calloc(ns, sizeof(*slots));

	if (!slots)
		return -ENOMEM;
	for (size_t i = 0; i < t->n; i++) {
		size_t j = key_hash(t->keys[i].name, t->keys[i].file) & (ns - 1);

		while (slots[j])
			j = (j + 1) & (ns - 1);
		slots[j] = (uint32_t)i + 1;
	}
	free(t->slots);
	t->slots = slots;
	t->nslots = ns;
	return 0;
}

/* Finds or adds (name, file); *out is its index, *added whether it is new. */
static int keytab_add(struct keytab *t, const char *name, const char *file, uint32_t *out,
		      bool *added)
{
	size_t j;
	int err;

	if ((t->n + 1) * 2 > t->nslots && (err = keytab_rehash(t)))
		return err;
	for (j = key_hash(name, file) & (t->nslots - 1); t->slots[j];
	     j = (j + 1) & (t->nslots - 1)) {
		const struct key *k = &t->keys[t->slots[j] - 1];

		if (!strcmp(k->name, name) && !strcmp(k->file, file)) {
			*out = t->slots[j] - 1;
			if (added)
				*added = false;
			return 0;
		}
	}
	if (t->n == t->cap) {
		size_t nc = t->cap ? t->cap * 2 : 256;
		struct key *nk = realloc(t->keys, nc * sizeof(*nk));

		if (!nk)
			return -ENOMEM;
		t->keys = nk;
		t->cap = nc;
	}
	t->keys[t->n] = (struct key){name, file};
	t->slots[j] = (uint32_t)++t->n;
	*out = (uint32_t)t->n - 1;
	if (added)
		*added = true;
	return 0;
}

static void keytab_free(struct keytab *t)
{
	free(t->keys);
	free(t->slots);
}

/* ---- id -> index maps for the pprof tables (ids are usually 1..n, but need not be) ---- */

struct idpair {
	uint64_t id;
	uint32_t idx;
};

struct idmap {
	struct idpair *pairs; /* sorted by id; NULL when ids are 1..n in order */
	size_t n;
};

static int idpair_cmp(const void *a, const void *b)
{
	uint64_t x = ((const struct idpair *)a)->id, y = ((const struct idpair *)b)->id;

	return x < y ? -1 : x > y;
}

static int idmap_build(struct idmap *m, const uint64_t *ids, size_t n)
{
	bool dense = true;

	m->n = n;
	m->pairs = NULL;
	for (size_t i = 0; i < n && dense; i++)
		dense = ids[i] == i + 1;
	if (dense)
		return 0;
	m->pairs = malloc((n ? n : 1) * sizeof(*m->pairs));
	if (!m->pairs)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++)
		m->pairs[i] = (struct idpair){ids[i], (uint32_t)i};
	qsort(m->pairs, n, sizeof(*m->pairs), idpair_cmp);
	return 0;
}

/* Index of id, or -1 when absent. */
static int64_t idmap_find(const struct idmap *m, uint64_t id)
{
	struct idpair key = {.id = id}, *hit;

	if (!m->pairs)
		return id >= 1 && id <= m->n ? (int64_t)id - 1 : -1;
	hit = bsearch(&key, m->pairs, m->n, sizeof(*m->pairs), idpair_cmp);
	return hit ? (int64_t)hit->idx : -1;
}

/* ---- one decoded profile ---- */

struct diff_side {
	Perftools__Profiles__Profile *pb; /* owns the strings that keys point at */
	int n_types;
	const char **types, **units;
	int default_type; /* -1 when the profile names none (or an unknown one) */
	int64_t *totals;
	struct keytab keys;
	char **owned; /* names made up for locations without functions */
	size_t n_owned, cap_owned;
	size_t *stack_off; /* sample i's stack: stack[stack_off[i] .. stack_off[i + 1]) */
	uint32_t *stack;   /* key indexes, leaf first */
};

/* Parse state: table lookups and per-location key lists. */
struct parse {
	struct diff_side *s;
	const char *why;
	struct idmap fn_ids, loc_ids, map_ids;
	size_t *loc_off; /* location i's keys: loc_keys[loc_off[i] .. loc_off[i + 1]) */
	uint32_t *loc_keys;
};

static const char *str_at(struct parse *ps, int64_t i)
{
	const Perftools__Profiles__Profile *pb = ps->s->pb;

	if (i < 0 || (uint64_t)i >= pb->n_string_table) {
		ps->why = "a string index is out of range";
		return NULL;
	}
	return pb->string_table[i];
}

/* Interns a made-up "module+0xoffset" / "0xaddress" name for a location without lines. */
static int address_key(struct parse *ps, const Perftools__Profiles__Location *l, uint32_t *out)
{
	const Perftools__Profiles__Profile *pb = ps->s->pb;
	struct diff_side *s = ps->s;
	int64_t mi = l->mapping_id ? idmap_find(&ps->map_ids, l->mapping_id) : -1;
	const char *file = "";
	char **no, *name;
	bool added;
	int err, n;

	if (mi >= 0) {
		file = str_at(ps, pb->mapping[mi]->filename);
		if (!file)
			return -EBADMSG;
	}
	if (*file && l->address >= pb->mapping[mi]->memory_start)
		n = asprintf(&name, "%s+0x%" PRIx64, fsutil__base_name(file),
			     l->address - pb->mapping[mi]->memory_start +
				     pb->mapping[mi]->file_offset);
	else
		n = asprintf(&name, "0x%" PRIx64, l->address);
	if (n < 0)
		return -ENOMEM;
	if (s->n_owned == s->cap_owned) {
		size_t nc = s->cap_owned ? s->cap_owned * 2 : 64;

		no = realloc(s->owned, nc * sizeof(*no));
		if (!no) {
			free(name);
			return -ENOMEM;
		}
		s->owned = no;
		s->cap_owned = nc;
	}
	s->owned[s->n_owned++] = name;
	err = keytab_add(&s->keys, name, "", out, &added);
	if (!err && !added) { /* same name from another location: keep the first copy */
		free(name);
		s->n_owned--;
	}
	return err;
}

/* Fills loc_off/loc_keys: each location's functions, inlined callee first. */
static int parse_locations(struct parse *ps)
{
	const Perftools__Profiles__Profile *pb = ps->s->pb;
	size_t n_keys = 0, k = 0;

	for (size_t i = 0; i < pb->n_location; i++)
		n_keys += pb->location[i]->n_line ? pb->location[i]->n_line : 1;
	ps->loc_off = malloc((pb->n_location + 1) * sizeof(*ps->loc_off));
	ps->loc_keys = malloc((n_keys ? n_keys : 1) * sizeof(*ps->loc_keys));
	if (!ps->loc_off || !ps->loc_keys)
		return -ENOMEM;
	for (size_t i = 0; i < pb->n_location; i++) {
		const Perftools__Profiles__Location *l = pb->location[i];
		int err;

		ps->loc_off[i] = k;
		for (size_t j = 0; j < l->n_line; j++) {
			const Perftools__Profiles__Function *fn;
			const char *name, *file;
			int64_t fi;

			if (!l->line[j]->function_id)
				continue;
			fi = idmap_find(&ps->fn_ids, l->line[j]->function_id);
			if (fi < 0) {
				ps->why = "a location refers to a missing function";
				return -EBADMSG;
			}
			fn = pb->function[fi];
			name = str_at(ps, fn->name);
			file = str_at(ps, fn->filename);
			if (name && !*name)
				name = str_at(ps, fn->system_name);
			if (!name || !file)
				return -EBADMSG;
			if (!*name)
				continue;
			err = keytab_add(&ps->s->keys, name, file, &ps->loc_keys[k++], NULL);
			if (err)
				return err;
		}
		if (k == ps->loc_off[i]) {
			err = address_key(ps, l, &ps->loc_keys[k++]);
			if (err)
				return err;
		}
	}
	ps->loc_off[pb->n_location] = k;
	return 0;
}

static int parse_samples(struct parse *ps)
{
	const Perftools__Profiles__Profile *pb = ps->s->pb;
	struct diff_side *s = ps->s;
	size_t n = 0, k = 0;

	s->totals = calloc((size_t)s->n_types, sizeof(*s->totals));
	s->stack_off = malloc((pb->n_sample + 1) * sizeof(*s->stack_off));
	if (!s->totals || !s->stack_off)
		return -ENOMEM;
	for (size_t i = 0; i < pb->n_sample; i++) {
		const Perftools__Profiles__Sample *smp = pb->sample[i];

		if (smp->n_value != (size_t)s->n_types) {
			ps->why = "a sample's values do not match the sample types";
			return -EBADMSG;
		}
		for (int t = 0; t < s->n_types; t++) {
			if (__builtin_add_overflow(s->totals[t], smp->value[t], &s->totals[t])) {
				ps->why = "sample values overflow";
				return -EBADMSG;
			}
		}
		for (size_t j = 0; j < smp->n_location_id; j++) {
			int64_t li = idmap_find(&ps->loc_ids, smp->location_id[j]);

			if (li < 0) {
				ps->why = "a sample refers to a missing location";
				return -EBADMSG;
			}
			n += ps->loc_off[li + 1] - ps->loc_off[li];
		}
	}
	s->stack = malloc((n ? n : 1) * sizeof(*s->stack));
	if (!s->stack)
		return -ENOMEM;
	for (size_t i = 0; i < pb->n_sample; i++) {
		const Perftools__Profiles__Sample *smp = pb->sample[i];

		s->stack_off[i] = k;
		for (size_t j = 0; j < smp->n_location_id; j++) {
			int64_t li = idmap_find(&ps->loc_ids, smp->location_id[j]);

			for (size_t m = ps->loc_off[li]; m < ps->loc_off[li + 1]; m++)
				s->stack[k++] = ps->loc_keys[m];
		}
	}
	s->stack_off[pb->n_sample] = k;
	return 0;
}

static int parse_types(struct parse *ps)
{
	const Perftools__Profiles__Profile *pb = ps->s->pb;
	struct diff_side *s = ps->s;
	const char *def = NULL;

	if (!pb->n_sample_type) {
		ps->why = "no sample types";
		return -EBADMSG;
	}
	if (pb->n_sample_type > 64) {
		ps->why = "too many sample types";
		return -EBADMSG;
	}
	s->n_types = (int)pb->n_sample_type;
	s->types = calloc(pb->n_sample_type, sizeof(*s->types));
	s->units = calloc(pb->n_sample_type, sizeof(*s->units));
	if (!s->types || !s->units)
		return -ENOMEM;
	for (int i = 0; i < s->n_types; i++) {
		s->types[i] = str_at(ps, pb->sample_type[i]->type);
		s->units[i] = str_at(ps, pb->sample_type[i]->unit);
		if (!s->types[i] || !s->units[i])
			return -EBADMSG;
	}
	s->default_type = -1;
	if (pb->default_sample_type && !(def = str_at(ps, pb->default_sample_type)))
		return -EBADMSG;
	for (int i = 0; def && i < s->n_types; i++)
		if (!strcmp(s->types[i], def))
			s->default_type = i;
	return 0;
}

static int ids_of(struct idmap *m, size_t n, void **items, size_t id_offset)
{
	uint64_t *ids = malloc((n ? n : 1) * sizeof(*ids));
	int err;

	if (!ids)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++)
		memcpy(&ids[i], (const char *)items[i] + id_offset, sizeof(ids[i]));
	err = idmap_build(m, ids, n);
	free(ids);
	return err;
}

static int parse_pb(struct parse *ps)
{
	Perftools__Profiles__Profile *pb = ps->s->pb;
	int err;

	if (!pb->n_string_table && !pb->n_sample_type) {
		ps->why = "no sample types, no strings";
		return -EBADMSG;
	}
	if (!pb->n_string_table || !pb->string_table[0] || pb->string_table[0][0]) {
		ps->why = "its string table does not start with an empty string";
		return -EBADMSG;
	}
	err = parse_types(ps);
	if (err)
		return err;
	err = ids_of(&ps->fn_ids, pb->n_function, (void **)pb->function,
		     offsetof(Perftools__Profiles__Function, id));
	if (!err)
		err = ids_of(&ps->loc_ids, pb->n_location, (void **)pb->location,
			     offsetof(Perftools__Profiles__Location, id));
	if (!err)
		err = ids_of(&ps->map_ids, pb->n_mapping, (void **)pb->mapping,
			     offsetof(Perftools__Profiles__Mapping, id));
	if (!err)
		err = parse_locations(ps);
	if (!err)
		err = parse_samples(ps);
	return err;
}

/* See diff.h. */
int diff__parse(const uint8_t *data, size_t len, struct diff_side **out, const char **why)
{
	struct parse ps = {.why = NULL};
	uint8_t *raw = NULL;
	size_t raw_len = len;
	int err;

	*out = NULL;
	if (why)
		*why = NULL;
	if (!len) {
		ps.why = "empty file";
		err = -EBADMSG;
		goto cleanup;
	}
	if (gzip__is_gzip(data, len)) {
		err = gzip__decompress(data, len, MAX_PPROF_BYTES, &raw, &raw_len);
		if (err == -EBADMSG)
			ps.why = "corrupt gzip data";
		if (err)
			goto cleanup;
		data = raw;
	}
	ps.s = calloc(1, sizeof(*ps.s));
	if (!ps.s) {
		err = -ENOMEM;
		goto cleanup;
	}
	ps.s->pb = perftools__profiles__profile__unpack(NULL, raw_len, data);
	if (!ps.s->pb) {
		ps.why = "cannot decode it as a protobuf Profile message";
		err = -EBADMSG;
		goto cleanup;
	}
	err = parse_pb(&ps);
	if (err)
		goto cleanup;
	*out = ps.s;
	ps.s = NULL;
cleanup:
	if (why)
		*why = err == -EBADMSG ? ps.why : NULL;
	diff__side_free(ps.s);
	free(ps.fn_ids.pairs);
	free(ps.loc_ids.pairs);
	free(ps.map_ids.pairs);
	free(ps.loc_off);
	free(ps.loc_keys);
	free(raw);
	return err;
}

/* See diff.h. */
int diff__load(const char *path, struct diff_side **out, const char **why)
{
	uint8_t *buf = NULL;
	struct stat st;
	size_t len = 0;
	FILE *f;
	int err;

	*out = NULL;
	if (why)
		*why = NULL;
	f = fopen(path, "rb");
	if (!f)
		return -errno;
	if (fstat(fileno(f), &st)) {
		err = -errno;
		goto cleanup;
	}
	if (S_ISDIR(st.st_mode)) {
		err = -EISDIR;
		goto cleanup;
	}
	if ((uint64_t)st.st_size > MAX_PPROF_BYTES) {
		err = -EFBIG;
		goto cleanup;
	}
	buf = malloc(st.st_size > 0 ? (size_t)st.st_size : 1);
	if (!buf) {
		err = -ENOMEM;
		goto cleanup;
	}
	len = fread(buf, 1, (size_t)st.st_size, f);
	if (ferror(f)) {
		err = -EIO;
		goto cleanup;
	}
	err = diff__parse(buf, len, out, why);
cleanup:
	free(buf);
	fclose(f);
	return err;
}

/* See diff.h. */
void diff__side_free(struct diff_side *s)
{
	if (!s)
		return;
	if (s->pb)
		perftools__profiles__profile__free_unpacked(s->pb, NULL);
	free(s->types);
	free(s->units);
	free(s->totals);
	keytab_free(&s->keys);
	for (size_t i = 0; i < s->n_owned; i++)
		free(s->owned[i]);
	free(s->owned);
	free(s->stack_off);
	free(s->stack);
	free(s);
}

int diff__n_types(const struct diff_side *s)
{
	return s->n_types;
}

const char *diff__type(const struct diff_side *s, int i)
{
	return s->types[i];
}

const char *diff__unit(const struct diff_side *s, int i)
{
	return s->units[i];
}

int64_t diff__total(const struct diff_side *s, int i)
{
	return s->totals[i];
}

int64_t diff__duration(const struct diff_side *s)
{
	return s->pb->duration_nanos;
}

/* See diff.h. */
int diff__sample_index(const struct diff_side *s, const char *spec)
{
	char *end;
	long v;

	if (!spec)
		return s->default_type >= 0 ? s->default_type : s->n_types - 1;
	for (int i = 0; i < s->n_types; i++)
		if (!strcmp(s->types[i], spec))
			return i;
	if (*spec < '0' || *spec > '9')
		return -ENOENT;
	errno = 0;
	v = strtol(spec, &end, 10);
	if (*end)
		return -ENOENT;
	return errno || v >= s->n_types ? -ERANGE : (int)v;
}

/* ---- comparison ---- */

struct diff_result {
	const struct diff_side *side[2];
	int vi[2];
	int64_t total[2];
	struct keytab keys; /* both profiles' functions; row i is key i */
	uint32_t *map[2];   /* a side's key index -> row index */
	struct diff_row *rows;
	char **names; /* display names (owned) */
	uint32_t *order;
	size_t n;
};

/* Display names: the function name, with its file when another function shares the name. */
static int name_rows(struct diff_result *r)
{
	struct keytab by_name = {0}, by_base = {0};
	uint32_t *cnt_name = NULL, *cnt_base = NULL, *idx_name = NULL, *idx_base = NULL;
	int err = -ENOMEM;

	r->names = calloc(r->n ? r->n : 1, sizeof(*r->names));
	idx_name = calloc(r->n ? r->n : 1, sizeof(*idx_name));
	idx_base = calloc(r->n ? r->n : 1, sizeof(*idx_base));
	cnt_name = calloc(r->n ? r->n : 1, sizeof(*cnt_name));
	cnt_base = calloc(r->n ? r->n : 1, sizeof(*cnt_base));
	if (!r->names || !idx_name || !idx_base || !cnt_name || !cnt_base)
		goto cleanup;
	for (size_t i = 0; i < r->n; i++) {
		const struct key *k = &r->keys.keys[i];

		err = keytab_add(&by_name, k->name, "", &idx_name[i], NULL);
		if (!err)
			err = keytab_add(&by_base, k->name, fsutil__base_name(k->file),
					 &idx_base[i], NULL);
		if (err)
			goto cleanup;
		cnt_name[idx_name[i]]++;
		cnt_base[idx_base[i]]++;
	}
	err = -ENOMEM;
	for (size_t i = 0; i < r->n; i++) {
		const struct key *k = &r->keys.keys[i];
		int n;

		if (cnt_name[idx_name[i]] == 1 || !*k->file)
			n = asprintf(&r->names[i], "%s", k->name);
		else if (cnt_base[idx_base[i]] == 1)
			n = asprintf(&r->names[i], "%s (%s)", k->name, fsutil__base_name(k->file));
		else
			n = asprintf(&r->names[i], "%s (%s)", k->name, k->file);
		if (n < 0) {
			r->names[i] = NULL;
			goto cleanup;
		}
		r->rows[i].name = r->names[i];
	}
	err = 0;
cleanup:
	keytab_free(&by_name);
	keytab_free(&by_base);
	free(cnt_name);
	free(cnt_base);
	free(idx_name);
	free(idx_base);
	return err;
}

/* Adds one side's self and cumulative values to the rows. */
static int accumulate(struct diff_result *r, int side)
{
	const struct diff_side *s = r->side[side];
	int vi = r->vi[side];
	size_t *seen = calloc(r->n ? r->n : 1, sizeof(*seen));

	if (!seen)
		return -ENOMEM;
	for (size_t i = 0; i < s->pb->n_sample; i++) {
		int64_t v = s->pb->sample[i]->value[vi];
		size_t a = s->stack_off[i], b = s->stack_off[i + 1];

		if (!v || a == b)
			continue;
		r->rows[r->map[side][s->stack[a]]].self[side] += v;
		for (size_t j = a; j < b; j++) {
			uint32_t row = r->map[side][s->stack[j]];

			if (seen[row] == i + 1)
				continue; /* recursion: once per sample */
			seen[row] = i + 1;
			r->rows[row].cum[side] += v;
		}
	}
	free(seen);
	return 0;
}

static int name_order_cmp(const void *a, const void *b, void *ctx)
{
	const struct diff_result *r = ctx;
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	int c = strcmp(r->rows[x].name, r->rows[y].name);

	return c ? c : (x > y) - (x < y);
}

/* See diff.h. */
int diff__compare(const struct diff_side *base, const struct diff_side *new, const int vi[2],
		  struct diff_result **out)
{
	struct diff_result *r;
	int err = -ENOMEM;

	*out = NULL;
	if (vi[0] < 0 || vi[0] >= base->n_types || vi[1] < 0 || vi[1] >= new->n_types ||
	    base->totals[vi[0]] <= 0 || new->totals[vi[1]] <= 0)
		return -EINVAL;
	r = calloc(1, sizeof(*r));
	if (!r)
		return -ENOMEM;
	r->side[0] = base;
	r->side[1] = new;
	for (int s = 0; s < 2; s++) {
		const struct diff_side *sd = r->side[s];

		r->vi[s] = vi[s];
		r->total[s] = sd->totals[vi[s]];
		r->map[s] = malloc((sd->keys.n ? sd->keys.n : 1) * sizeof(*r->map[s]));
		if (!r->map[s])
			goto cleanup;
		for (size_t i = 0; i < sd->keys.n; i++) {
			err = keytab_add(&r->keys, sd->keys.keys[i].name, sd->keys.keys[i].file,
					 &r->map[s][i], NULL);
			if (err)
				goto cleanup;
		}
	}
	err = -ENOMEM;
	r->n = r->keys.n;
	r->rows = calloc(r->n ? r->n : 1, sizeof(*r->rows));
	r->order = malloc((r->n ? r->n : 1) * sizeof(*r->order));
	if (!r->rows || !r->order)
		goto cleanup;
	err = name_rows(r);
	if (!err)
		err = accumulate(r, 0);
	if (!err)
		err = accumulate(r, 1);
	if (err)
		goto cleanup;
	for (size_t i = 0; i < r->n; i++) {
		struct diff_row *row = &r->rows[i];

		for (int s = 0; s < 2; s++) {
			row->self_pct[s] = 100.0 * (double)row->self[s] / (double)r->total[s];
			row->cum_pct[s] = 100.0 * (double)row->cum[s] / (double)r->total[s];
		}
		r->order[i] = (uint32_t)i;
	}
	qsort_r(r->order, r->n, sizeof(*r->order), name_order_cmp, r);
	*out = r;
	r = NULL;
	err = 0;
cleanup:
	diff__result_free(r);
	return err;
}

/* See diff.h. */
void diff__result_free(struct diff_result *r)
{
	if (!r)
		return;
	keytab_free(&r->keys);
	free(r->map[0]);
	free(r->map[1]);
	for (size_t i = 0; r->names && i < r->n; i++)
		free(r->names[i]);
	free(r->names);
	free(r->rows);
	free(r->order);
	free(r);
}

int64_t diff__result_total(const struct diff_result *r, int side)
{
	return r->total[side];
}

size_t diff__n_rows(const struct diff_result *r)
{
	return r->n;
}

const struct diff_row *diff__row(const struct diff_result *r, size_t i)
{
	return &r->rows[r->order[i]];
}

const char *diff__row_name(const struct diff_result *r, uint32_t idx)
{
	return r->rows[idx].name;
}

struct sort_ctx {
	const struct diff_result *r;
	bool by_cum;
};

static int change_cmp(const void *a, const void *b, void *ctx)
{
	const struct sort_ctx *c = ctx;
	const struct diff_row *x = &c->r->rows[*(const uint32_t *)a];
	const struct diff_row *y = &c->r->rows[*(const uint32_t *)b];
	double kx = fabs(diff_row__delta(x, c->by_cum)), ky = fabs(diff_row__delta(y, c->by_cum));
	double ox = fabs(diff_row__delta(x, !c->by_cum)), oy = fabs(diff_row__delta(y, !c->by_cum));

	if (kx != ky)
		return kx < ky ? 1 : -1;
	if (ox != oy)
		return ox < oy ? 1 : -1;
	return strcmp(x->name, y->name);
}

/* See diff.h. */
void diff__sort(struct diff_result *r, bool by_cum)
{
	struct sort_ctx c = {r, by_cum};

	qsort_r(r->order, r->n, sizeof(*r->order), change_cmp, &c);
}

/* See diff.h. */
int diff__for_each_stack(const struct diff_result *r, int side, diff_stack_cb cb, void *ctx)
{
	const struct diff_side *s = r->side[side];
	uint32_t *rows = NULL;
	size_t cap = 0;
	int err = 0;

	for (size_t i = 0; i < s->pb->n_sample && !err; i++) {
		int64_t v = s->pb->sample[i]->value[r->vi[side]];
		size_t a = s->stack_off[i], n = s->stack_off[i + 1] - a;

		if (!v)
			continue;
		if (n > cap) {
			uint32_t *nr = realloc(rows, n * sizeof(*nr));

			if (!nr) {
				err = -ENOMEM;
				break;
			}
			rows = nr;
			cap = n;
		}
		for (size_t j = 0; j < n; j++)
			rows[j] = r->map[side][s->stack[a + j]];
		err = cb(rows, n > INT32_MAX ? INT32_MAX : (int)n, v, ctx);
	}
	free(rows);
	return err;
}

/* See diff.h. */
const char *diff__format_value(int64_t v, const char *unit, char *buf, size_t len)
{
	static const char *const bytes[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
	double ns = 0, x = (double)v;
	int i = 0;

	if (!strcmp(unit, "nanoseconds"))
		ns = 1;
	else if (!strcmp(unit, "microseconds"))
		ns = 1e3;
	else if (!strcmp(unit, "milliseconds"))
		ns = 1e6;
	else if (!strcmp(unit, "seconds"))
		ns = 1e9;
	if (ns) {
		x *= ns;
		if (fabs(x) < 1e3)
			snprintf(buf, len, "%.0f ns", x);
		else if (fabs(x) < 1e6)
			snprintf(buf, len, "%.2f us", x / 1e3);
		else if (fabs(x) < 1e9)
			snprintf(buf, len, "%.2f ms", x / 1e6);
		else
			snprintf(buf, len, "%.2f s", x / 1e9);
	} else if (!strcmp(unit, "bytes")) {
		if (v > -1024 && v < 1024) {
			snprintf(buf, len, "%" PRId64 " B", v);
			return buf;
		}
		while (fabs(x) >= 1024 && i < 5) {
			x /= 1024;
			i++;
		}
		snprintf(buf, len, "%.2f %s", x, bytes[i]);
	} else if (!*unit || !strcmp(unit, "count")) {
		snprintf(buf, len, "%" PRId64, v);
	} else {
		snprintf(buf, len, "%" PRId64 " %s", v, unit);
	}
	return buf;
}

/* See diff.h. */
int diff__default_type(const struct diff_side *s)
{
	return s->default_type;
}
