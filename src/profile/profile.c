// SPDX-License-Identifier: Apache-2.0
/* In-memory profile: interns strings, mappings, functions and locations; merges samples. */
#include "profile/profile.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/array.h"
#include "util/fsutil.h"
#include "util/hash.h"
#include "util/htab.h"

#define LOG_MODULE "profile"
#include "util/log.h"

/*
 * Design notes:
 *  - Every table is a growable array of records (util/array.h) plus an open-addressing
 *    index over them (util/htab.h).
 *  - Strings live in one chunked arena (stable pointers) and are interned, so every
 *    other table compares strings by pointer.
 *  - Text outputs name kernel frames "func_[k]" (Brendan Gregg's stackcollapse convention,
 *    understood by flamegraph.pl --color=java); pprof keeps the plain function name.
 */

#define ARENA_CHUNK (64 * 1024)

struct arena_chunk {
	struct arena_chunk *next;
	size_t used, size;
	char data[];
};

struct mapping {
	uint64_t start, limit, file_offset;
	const char *file;	  /* interned, "" when none */
	const char *build_id;	  /* interned, "" when none */
	uint32_t n_locs, n_named; /* locations in this mapping, those with a function */
};

struct function {
	const char *name;    /* interned */
	const char *file;    /* interned, "" when unknown */
	uint32_t start_line; /* first line of the function, 0 when unknown */
};

struct location {
	uint64_t address;
	uint32_t mapping_id;  /* 0 when none */
	uint32_t function_id; /* 0 when unknown */
	int64_t line;
	enum frame_kind kind;
};

struct sample {
	uint32_t loc_start, n_locs;	/* into p->loc_ids */
	uint32_t label_start, n_labels; /* into p->labels */
	uint32_t hash;
};

/* Mapping ids remembered by the address of the caller's frame_mapping (direct-mapped). */
#define MAP_MEMO_SLOTS 64

struct map_memo {
	const struct frame_mapping *fm;
	uint64_t start, limit, file_offset;
	uint32_t id;
};

/*
 * Location ids remembered by frame ident (frame.h): a frame seen before skips the hashing
 * and comparing of its strings. Direct-mapped; it starts small (a profile per service and
 * window in the agent) and doubles while more frames overwrite its slots than it has, up
 * to LOC_MEMO_MAX_SLOTS, within the profile's byte bound (counted in profile__bytes).
 */
#define LOC_MEMO_MIN_SLOTS 512
#define LOC_MEMO_MAX_SLOTS 16384

struct loc_memo {
	uint64_t ident, addr;
	uint32_t line, kind;
	uint32_t id; /* 0: empty */
};

struct profile {
	struct profile_config cfg;
	int n_types;

	struct arena_chunk *arena;
	size_t arena_bytes;
	size_t chunk_size; /* ARENA_CHUNK, smaller for small memory bounds */
	const char **strs;
	uint32_t n_strs, cap_strs;
	struct htab str_idx;

	struct mapping *maps;
	uint32_t n_maps, cap_maps;
	struct map_memo map_memo[MAP_MEMO_SLOTS]; /* mapping ids by the caller's struct */
	struct htab map_idx;

	struct function *funcs;
	uint32_t n_funcs, cap_funcs;
	struct htab func_idx;

	struct location *locs;
	uint32_t n_locs, cap_locs;
	struct htab loc_idx;
	struct loc_memo *loc_memo; /* LOC_MEMO_* above; NULL until a frame has an ident */
	uint32_t loc_memo_slots, loc_memo_overwrites;

	struct sample *samples;
	uint32_t n_samples, cap_samples;
	struct htab sample_idx;
	uint32_t *loc_ids; /* location id sequences of all samples */
	size_t n_loc_ids, cap_loc_ids;
	struct profile_label *labels; /* interned labels of all samples */
	size_t n_labels, cap_labels;
	int64_t *values; /* n_types per sample */
	size_t cap_values;

	int64_t totals[PROFILE_MAX_SAMPLE_TYPES];
	uint64_t dropped;
};

/* ---- hashing ---- */

static uint64_t mix64(uint64_t h, uint64_t v)
{
	h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
	h *= 0xff51afd7ed558ccdULL;
	return h ^ (h >> 33);
}

static uint32_t fold32(uint64_t h)
{
	return (uint32_t)(h ^ (h >> 32));
}

/* ---- strings ---- */

static bool str_eq(const void *ctx, uint32_t idx, const void *key)
{
	const struct profile *p = ctx;

	return strcmp(p->strs[idx - 1], key) == 0;
}

static char *arena_alloc(struct profile *p, size_t len)
{
	struct arena_chunk *c = p->arena;

	if (!c || c->size - c->used < len) {
		size_t sz = len > p->chunk_size ? len : p->chunk_size;

		c = malloc(sizeof(*c) + sz);
		if (!c)
			return NULL;
		c->size = sz;
		c->used = 0;
		/* keep the partly used chunk at the head when the new one is a one-off */
		if (p->arena && len > p->chunk_size) {
			c->next = p->arena->next;
			p->arena->next = c;
		} else {
			c->next = p->arena;
			p->arena = c;
		}
		p->arena_bytes += sizeof(*c) + sz;
	}
	c->used += len;
	return c->data + c->used - len;
}

/* Looks s up; when insert is set, copies it into the arena if new. NULL if absent/ENOMEM. */
static const char *intern(struct profile *p, const char *s, bool insert)
{
	uint32_t h, idx;
	size_t len;
	char *copy;

	if (!s)
		s = "";
	h = fold32(hash__str_words(s, &len));
	idx = htab__find(&p->str_idx, h, str_eq, p, s);
	if (idx)
		return p->strs[idx - 1];
	if (!insert)
		return NULL;
	if (htab__reserve(&p->str_idx) || ARRAY_GROW(p->strs, p->cap_strs, p->n_strs + 1))
		return NULL;
	len++;
	copy = arena_alloc(p, len);
	if (!copy)
		return NULL;
	memcpy(copy, s, len);
	p->strs[p->n_strs++] = copy;
	htab__insert(&p->str_idx, h, p->n_strs);
	return copy;
}

/* ---- mappings ---- */

static uint32_t map_hash(const struct mapping *m)
{
	uint64_t h = mix64(mix64(mix64(1, m->start), m->limit), m->file_offset);

	h = mix64(h, (uintptr_t)m->file);
	return fold32(mix64(h, (uintptr_t)m->build_id));
}

static bool map_eq(const void *ctx, uint32_t idx, const void *key)
{
	const struct profile *p = ctx;

	const struct mapping *a = &p->maps[idx - 1], *b = key;

	return a->start == b->start && a->limit == b->limit && a->file_offset == b->file_offset &&
	       a->file == b->file && a->build_id == b->build_id;
}

/* Returns the 1-based mapping id, 0 if absent (lookup) or on error (*err set). */
static uint32_t map_get(struct profile *p, const struct frame_mapping *fm, bool insert, int *err)
{
	struct mapping m = {
		.start = fm->start,
		.limit = fm->limit,
		.file_offset = fm->file_offset,
	};
	struct map_memo *mm = &p->map_memo[((uintptr_t)fm >> 4) % MAP_MEMO_SLOTS];
	uint32_t h, id;

	/*
	 * The frames of one mapping come again and again: its id is remembered by the caller's
	 * struct, checked against the mapping's values (the struct may have been reused).
	 */
	if (mm->fm == fm && mm->id && mm->start == fm->start && mm->limit == fm->limit &&
	    mm->file_offset == fm->file_offset) {
		const struct mapping *x = &p->maps[mm->id - 1];

		if (!strcmp(x->file, fm->file ? fm->file : "") &&
		    !strcmp(x->build_id, fm->build_id ? fm->build_id : ""))
			return mm->id;
	}

	m.file = intern(p, fm->file, insert);
	m.build_id = intern(p, fm->build_id, insert);
	if (!m.file || !m.build_id) {
		if (insert)
			*err = -ENOMEM;
		return 0;
	}
	h = map_hash(&m);
	id = htab__find(&p->map_idx, h, map_eq, p, &m);
	if (!id && insert) {
		if (htab__reserve(&p->map_idx) || ARRAY_GROW(p->maps, p->cap_maps, p->n_maps + 1)) {
			*err = -ENOMEM;
			return 0;
		}
		p->maps[p->n_maps++] = m;
		htab__insert(&p->map_idx, h, p->n_maps);
		id = p->n_maps;
	}
	if (id)
		*mm = (struct map_memo){fm, fm->start, fm->limit, fm->file_offset, id};
	return id;
}

/* ---- functions ---- */

static bool func_eq(const void *ctx, uint32_t idx, const void *key)
{
	const struct profile *p = ctx;

	const struct function *a = &p->funcs[idx - 1], *b = key;

	return a->name == b->name && a->file == b->file && a->start_line == b->start_line;
}

static uint32_t func_get(struct profile *p, const char *name, const char *file, uint32_t start_line,
			 bool insert, int *err)
{
	struct function f;
	uint32_t h, id;

	f.start_line = start_line;
	f.name = intern(p, name, insert);
	f.file = intern(p, file, insert);
	if (!f.name || !f.file) {
		if (insert)
			*err = -ENOMEM;
		return 0;
	}
	h = fold32(mix64(mix64(mix64(2, (uintptr_t)f.name), (uintptr_t)f.file), start_line));
	id = htab__find(&p->func_idx, h, func_eq, p, &f);
	if (id || !insert)
		return id;
	if (htab__reserve(&p->func_idx) || ARRAY_GROW(p->funcs, p->cap_funcs, p->n_funcs + 1)) {
		*err = -ENOMEM;
		return 0;
	}
	p->funcs[p->n_funcs++] = f;
	htab__insert(&p->func_idx, h, p->n_funcs);
	return p->n_funcs;
}

/* ---- locations ---- */

/*
 * A location's identity: native frames by mapping + address, kernel frames by address,
 * everything else (python, cuda, truncated, process, address-less frames) by
 * function + line + kind. Fields not part of the identity are zero in the key.
 */
struct loc_key {
	enum frame_kind kind;
	uint64_t address;
	uint32_t mapping_id;
	uint32_t function_id;
	int64_t line;
};

static bool loc_eq(const void *ctx, uint32_t idx, const void *key)
{
	const struct profile *p = ctx;

	const struct location *a = &p->locs[idx - 1];
	const struct loc_key *k = key;

	if (a->kind != k->kind)
		return false;
	if (k->address)
		return a->address == k->address && a->mapping_id == k->mapping_id;
	return a->address == 0 && a->function_id == k->function_id && a->line == k->line;
}

static uint32_t loc_hash(const struct loc_key *k)
{
	uint64_t h = mix64(3, (uint64_t)k->kind);

	if (k->address)
		h = mix64(mix64(h, k->address), k->mapping_id);
	else
		h = mix64(mix64(h, k->function_id), (uint64_t)k->line);
	return fold32(h);
}

static const char *default_name(const struct frame *f)
{
	switch (f->kind) {
	case FRAME_TRUNCATED:
		return "[truncated]";
	case FRAME_PROCESS:
		return "[unknown process]";
	case FRAME_PYTHON:
		return "[unknown python]";
	case FRAME_CUDA_KERNEL:
		return "[unknown cuda kernel]";
	default:
		return NULL;
	}
}

/* Whether bytes more of memo keep it within a sixteenth of the profile's bound, and under it. */
static bool memo_fits(const struct profile *p, size_t bytes)
{
	size_t memo = p->loc_memo_slots * sizeof(*p->loc_memo);

	return !p->cfg.max_bytes || ((memo + bytes) * 16 <= p->cfg.max_bytes &&
				     profile__bytes(p) + bytes <= p->cfg.max_bytes);
}

/* The memo slot of a frame with an ident; NULL when there is no memo (no memory, no room). */
static struct loc_memo *loc_memo_slot(struct profile *p, const struct frame *f)
{
	uint64_t h;

	if (!p->loc_memo) {
		size_t bytes = LOC_MEMO_MIN_SLOTS * sizeof(*p->loc_memo);

		if (!memo_fits(p, bytes))
			return NULL;
		p->loc_memo = calloc(LOC_MEMO_MIN_SLOTS, sizeof(*p->loc_memo));
		if (!p->loc_memo)
			return NULL;
		p->loc_memo_slots = LOC_MEMO_MIN_SLOTS;
	}
	h = mix64(mix64(mix64(f->ident, f->addr), f->line), (uint64_t)f->kind);
	return &p->loc_memo[fold32(h) & (p->loc_memo_slots - 1)];
}

/* Remembers id for f in slot m (from loc_memo_slot), growing the memo when it thrashes. */
static void loc_memo_put(struct profile *p, struct loc_memo *m, const struct frame *f, uint32_t id)
{
	if (m->id && ++p->loc_memo_overwrites > p->loc_memo_slots &&
	    p->loc_memo_slots < LOC_MEMO_MAX_SLOTS) {
		size_t bytes = 2 * (size_t)p->loc_memo_slots * sizeof(*m);
		struct loc_memo *nm;

		p->loc_memo_overwrites = 0;
		/* (what it held is dropped: refilled by the next frames) */
		if (memo_fits(p, bytes - bytes / 2) &&
		    (nm = calloc(2 * (size_t)p->loc_memo_slots, sizeof(*nm)))) {
			free(p->loc_memo);
			p->loc_memo = nm;
			p->loc_memo_slots *= 2;
			m = loc_memo_slot(p, f);
		}
	}
	*m = (struct loc_memo){f->ident, f->addr, f->line, (uint32_t)f->kind, id};
}

/* Resolves a frame to a location id; 0 if absent (lookup) or on error (*err set). */
static uint32_t loc_get_slow(struct profile *p, const struct frame *f, bool insert, int *err)
{
	bool by_addr = (f->kind == FRAME_NATIVE || f->kind == FRAME_KERNEL) && f->addr;
	const char *fname = f->function ? f->function : default_name(f);
	struct loc_key k = {.kind = f->kind};
	uint32_t h, id, fid = 0, mid = 0;

	if (by_addr) {
		k.address = f->addr;
		if (f->kind == FRAME_NATIVE && f->map) {
			mid = map_get(p, f->map, insert, err);
			if (!mid)
				return 0;
		}
		k.mapping_id = mid;
	} else {
		if (!fname)
			fname = "[unknown]";
		k.function_id = func_get(p, fname, f->file, f->start_line, insert, err);
		if (!k.function_id)
			return 0;
		k.line = f->line;
	}
	h = loc_hash(&k);
	id = htab__find(&p->loc_idx, h, loc_eq, p, &k);
	if (id && by_addr && fname && !p->locs[id - 1].function_id) {
		/* named now (a debug file arrived later, e.g. from debuginfod): the lookup pass
		 * reports it unknown so that the inserting pass names it */
		if (!insert)
			return 0;
		fid = func_get(p, fname, f->file, f->start_line, true, err);
		if (!fid)
			return 0;
		p->locs[id - 1].function_id = fid;
		p->locs[id - 1].line = f->line;
		if (mid)
			p->maps[mid - 1].n_named++;
	}
	if (id || !insert)
		return id;

	if (by_addr && fname) {
		fid = func_get(p, fname, f->file, f->start_line, true, err);
		if (!fid)
			return 0;
	} else if (!by_addr) {
		fid = k.function_id;
	}
	if (htab__reserve(&p->loc_idx) || ARRAY_GROW(p->locs, p->cap_locs, p->n_locs + 1)) {
		*err = -ENOMEM;
		return 0;
	}
	p->locs[p->n_locs++] = (struct location){
		.address = f->addr,
		.mapping_id = mid,
		.function_id = fid,
		.line = fid ? f->line : 0,
		.kind = f->kind,
	};
	if (mid) {
		p->maps[mid - 1].n_locs++;
		p->maps[mid - 1].n_named += fid != 0;
	}
	htab__insert(&p->loc_idx, h, p->n_locs);
	return p->n_locs;
}

/* loc_get_slow, through the memo for frames with an ident. */
static uint32_t loc_get(struct profile *p, const struct frame *f, bool insert, int *err)
{
	struct loc_memo *m = f->ident ? loc_memo_slot(p, f) : NULL;
	uint32_t id;

	if (m && m->id && m->ident == f->ident && m->addr == f->addr && m->line == f->line &&
	    m->kind == (uint32_t)f->kind)
		return m->id;
	id = loc_get_slow(p, f, insert, err);
	if (m && id)
		loc_memo_put(p, m, f, id);
	return id;
}

/* ---- samples ---- */

struct sample_key {
	const uint32_t *loc_ids;
	int n_locs;
	const struct profile_label *labels; /* interned */
	int n_labels;
};

static bool sample_eq(const void *ctx, uint32_t idx, const void *key)
{
	const struct profile *p = ctx;

	const struct sample *s = &p->samples[idx - 1];
	const struct sample_key *k = key;

	if (s->n_locs != (uint32_t)k->n_locs || s->n_labels != (uint32_t)k->n_labels)
		return false;
	if (memcmp(&p->loc_ids[s->loc_start], k->loc_ids, k->n_locs * sizeof(uint32_t)))
		return false;
	for (int i = 0; i < k->n_labels; i++) {
		const struct profile_label *a = &p->labels[s->label_start + i], *b = &k->labels[i];

		if (a->key != b->key || a->str != b->str || a->num != b->num ||
		    a->num_unit != b->num_unit)
			return false;
	}
	return true;
}

static uint32_t sample_hash(const struct sample_key *k)
{
	uint64_t h = mix64(4, (uint64_t)k->n_locs);

	for (int i = 0; i < k->n_locs; i++)
		h = mix64(h, k->loc_ids[i]);
	for (int i = 0; i < k->n_labels; i++) {
		h = mix64(h, (uintptr_t)k->labels[i].key);
		h = mix64(h, (uintptr_t)k->labels[i].str);
		h = mix64(h, (uint64_t)k->labels[i].num);
		h = mix64(h, (uintptr_t)k->labels[i].num_unit);
	}
	return fold32(h);
}

static int label_cmp(const void *a, const void *b)
{
	const struct profile_label *x = a, *y = b;
	int c = strcmp(x->key, y->key);

	if (c)
		return c;
	if (!x->str != !y->str)
		return x->str ? -1 : 1;
	if (x->str)
		return strcmp(x->str, y->str);
	if (x->num != y->num)
		return x->num < y->num ? -1 : 1;
	return strcmp(x->num_unit ? x->num_unit : "", y->num_unit ? y->num_unit : "");
}

/* Interns labels (sorted, so the order callers pass them in does not matter). */
static int intern_labels(struct profile *p, const struct profile_label *in, int n,
			 struct profile_label *out, bool insert)
{
	for (int i = 0; i < n; i++) {
		out[i].key = intern(p, in[i].key, insert);
		out[i].str = in[i].str ? intern(p, in[i].str, insert) : NULL;
		out[i].num = in[i].str ? 0 : in[i].num;
		out[i].num_unit =
			(!in[i].str && in[i].num_unit) ? intern(p, in[i].num_unit, insert) : NULL;
		if (!out[i].key || (in[i].str && !out[i].str) ||
		    (!in[i].str && in[i].num_unit && !out[i].num_unit))
			return insert ? -ENOMEM : -ENOENT;
	}
	/* a handful, passed in the same order sample after sample: insertion sort (qsort's
	 * merge sort was 2% of the consumer's CPU on a PyTorch loop) */
	for (int i = 1; i < n; i++) {
		struct profile_label l = out[i];
		int j = i;

		for (; j > 0 && label_cmp(&out[j - 1], &l) > 0; j--)
			out[j] = out[j - 1];
		out[j] = l;
	}
	return 0;
}

static void add_values(struct profile *p, uint32_t sid, const int64_t *values)
{
	int64_t *v = &p->values[(size_t)(sid - 1) * p->n_types];

	for (int i = 0; i < p->n_types; i++) {
		v[i] += values[i];
		p->totals[i] += values[i];
	}
}

/* Adds values to the sample with key k if there is one; returns its id (0: none), *h its hash. */
static uint32_t sample_merge(struct profile *p, const struct sample_key *k, const int64_t *values,
			     uint32_t *h)
{
	uint32_t sid;

	*h = sample_hash(k);
	sid = htab__find(&p->sample_idx, *h, sample_eq, p, k);
	if (sid)
		add_values(p, sid, values);
	return sid;
}

static size_t opt_len(const char *s)
{
	return s ? strlen(s) + 1 : 0;
}

/*
 * Upper bound of the bytes a new sample adds, including array and index doublings and a
 * new arena chunk, so that profile__bytes() stays within max_bytes.
 */
static size_t add_cost(const struct profile *p, const struct frame *frames, int n_frames,
		       const uint32_t *ids, const struct profile_label *labels, int n_labels)
{
	size_t new_locs = 0, new_strs = 3 * (size_t)n_labels, str_bytes = 0, c = 0;
	const struct arena_chunk *a = p->arena;

	for (int i = 0; i < n_frames; i++) {
		const struct frame *f = &frames[i];

		if (ids[i])
			continue;
		new_locs++;
		new_strs += 4;
		str_bytes += opt_len(f->function) + opt_len(f->file) + 32;
		if (f->map)
			str_bytes += opt_len(f->map->file) + opt_len(f->map->build_id);
	}
	for (int i = 0; i < n_labels; i++)
		str_bytes += opt_len(labels[i].key) + opt_len(labels[i].str) +
			     opt_len(labels[i].num_unit);
	if (!a || a->size - a->used < str_bytes)
		c += sizeof(*a) + (str_bytes > p->chunk_size ? str_bytes : p->chunk_size);
	c += array__growth(p->n_strs, p->cap_strs, new_strs, sizeof(*p->strs));
	c += htab__growth(&p->str_idx, new_strs);
	c += array__growth(p->n_maps, p->cap_maps, new_locs, sizeof(*p->maps));
	c += htab__growth(&p->map_idx, new_locs);
	c += array__growth(p->n_funcs, p->cap_funcs, new_locs, sizeof(*p->funcs));
	c += htab__growth(&p->func_idx, new_locs);
	c += array__growth(p->n_locs, p->cap_locs, new_locs, sizeof(*p->locs));
	c += htab__growth(&p->loc_idx, new_locs);
	c += array__growth(p->n_samples, p->cap_samples, 1, sizeof(*p->samples));
	c += htab__growth(&p->sample_idx, 1);
	c += array__growth(p->n_loc_ids, p->cap_loc_ids, (size_t)n_frames, sizeof(*p->loc_ids));
	c += array__growth(p->n_labels, p->cap_labels, (size_t)n_labels, sizeof(*p->labels));
	c += array__growth((size_t)p->n_samples * p->n_types, p->cap_values, (size_t)p->n_types,
			   sizeof(*p->values));
	return c;
}

int profile__add(struct profile *p, const struct frame *frames, int n_frames, const int64_t *values,
		 const struct profile_label *labels, int n_labels)
{
	struct profile_label lab[PROFILE_MAX_LABELS];
	struct sample_key key;
	uint32_t *ids = NULL;
	size_t need;
	uint32_t h;
	bool known = true, full = false;
	int err = 0;

	if (!p || n_frames < 0 || (n_frames && !frames) || !values || n_labels < 0 ||
	    n_labels > PROFILE_MAX_LABELS || (n_labels && !labels))
		return -EINVAL;
	ids = malloc((n_frames ? n_frames : 1) * sizeof(*ids));
	if (!ids)
		return -ENOMEM;

	/* the memo's slots are cold (a sample comes every few ms): their misses overlap */
	for (int i = 0; i < n_frames; i++) {
		struct loc_memo *m = frames[i].ident ? loc_memo_slot(p, &frames[i]) : NULL;

		if (m)
			__builtin_prefetch(m);
	}
	/* Pass 1: lookup only, so a full profile can still merge into existing samples. */
	for (int i = 0; i < n_frames; i++) {
		ids[i] = loc_get(p, &frames[i], false, &err);
		if (!ids[i])
			known = false;
	}
	if (known && intern_labels(p, labels, n_labels, lab, false))
		known = false;
	if (known) {
		key = (struct sample_key){ids, n_frames, lab, n_labels};
		if (sample_merge(p, &key, values, &h))
			goto cleanup;
	}

	if (p->cfg.max_bytes) {
		need = add_cost(p, frames, n_frames, ids, labels, n_labels);
		full = profile__bytes(p) + need > p->cfg.max_bytes;
	}
	if (full) {
		p->dropped++;
		err = -ENOSPC;
		goto cleanup;
	}

	/* Pass 2: intern everything. */
	for (int i = 0; i < n_frames; i++) {
		if (!ids[i])
			ids[i] = loc_get(p, &frames[i], true, &err);
		if (!ids[i]) {
			err = err ? err : -ENOMEM;
			goto cleanup;
		}
	}
	err = intern_labels(p, labels, n_labels, lab, true);
	if (err)
		goto cleanup;
	key = (struct sample_key){ids, n_frames, lab, n_labels};
	if (sample_merge(p, &key, values, &h))
		goto cleanup;
	if (htab__reserve(&p->sample_idx) ||
	    ARRAY_GROW(p->samples, p->cap_samples, p->n_samples + 1) ||
	    ARRAY_GROW(p->loc_ids, p->cap_loc_ids, p->n_loc_ids + n_frames) ||
	    ARRAY_GROW(p->labels, p->cap_labels, p->n_labels + n_labels) ||
	    ARRAY_GROW(p->values, p->cap_values, (size_t)(p->n_samples + 1) * p->n_types)) {
		err = -ENOMEM;
		goto cleanup;
	}
	if (n_frames)
		memcpy(&p->loc_ids[p->n_loc_ids], ids, n_frames * sizeof(*ids));
	if (n_labels)
		memcpy(&p->labels[p->n_labels], lab, n_labels * sizeof(*lab));
	p->samples[p->n_samples] = (struct sample){
		.loc_start = (uint32_t)p->n_loc_ids,
		.n_locs = (uint32_t)n_frames,
		.label_start = (uint32_t)p->n_labels,
		.n_labels = (uint32_t)n_labels,
		.hash = h,
	};
	memset(&p->values[(size_t)p->n_samples * p->n_types], 0, p->n_types * sizeof(int64_t));
	p->n_loc_ids += n_frames;
	p->n_labels += n_labels;
	p->n_samples++;
	htab__insert(&p->sample_idx, h, p->n_samples);
	add_values(p, p->n_samples, values);
	err = 0;
cleanup:
	free(ids);
	return err;
}

/* ---- lifecycle and accessors ---- */

struct profile *profile__new(const struct profile_config *cfg)
{
	struct profile *p;

	if (!cfg || cfg->n_sample_types < 1 || cfg->n_sample_types > PROFILE_MAX_SAMPLE_TYPES) {
		errno = EINVAL;
		return NULL;
	}
	p = calloc(1, sizeof(*p));
	if (!p) {
		errno = ENOMEM;
		return NULL;
	}
	p->cfg = *cfg;
	p->n_types = cfg->n_sample_types;
	p->chunk_size = ARENA_CHUNK;
	if (cfg->max_bytes && cfg->max_bytes / 64 < ARENA_CHUNK)
		p->chunk_size = cfg->max_bytes / 64 > 256 ? cfg->max_bytes / 64 : 256;
	return p;
}

void profile__free(struct profile *p)
{
	struct arena_chunk *c, *next;

	if (!p)
		return;
	for (c = p->arena; c; c = next) {
		next = c->next;
		free(c);
	}
	free(p->strs);
	htab__free(&p->str_idx);
	free(p->maps);
	htab__free(&p->map_idx);
	free(p->funcs);
	htab__free(&p->func_idx);
	free(p->locs);
	htab__free(&p->loc_idx);
	free(p->loc_memo);
	free(p->samples);
	htab__free(&p->sample_idx);
	free(p->loc_ids);
	free(p->labels);
	free(p->values);
	free(p);
}

void profile__set_duration(struct profile *p, int64_t duration_nanos)
{
	p->cfg.duration_nanos = duration_nanos;
}

void profile__set_time(struct profile *p, int64_t time_nanos)
{
	p->cfg.time_nanos = time_nanos;
}

const struct profile_config *profile__config(const struct profile *p)
{
	return &p->cfg;
}

size_t profile__n_samples(const struct profile *p)
{
	return p->n_samples;
}

int64_t profile__total(const struct profile *p, int vi)
{
	if (vi < 0 || vi >= p->n_types)
		return 0;
	return p->totals[vi];
}

uint64_t profile__dropped(const struct profile *p)
{
	return p->dropped;
}

size_t profile__bytes(const struct profile *p)
{
	return sizeof(*p) + p->arena_bytes + p->cap_strs * sizeof(*p->strs) +
	       htab__bytes(&p->str_idx) + htab__bytes(&p->map_idx) + htab__bytes(&p->func_idx) +
	       htab__bytes(&p->loc_idx) + htab__bytes(&p->sample_idx) +
	       p->cap_maps * sizeof(*p->maps) + p->cap_funcs * sizeof(*p->funcs) +
	       p->cap_locs * sizeof(*p->locs) + p->cap_samples * sizeof(*p->samples) +
	       p->cap_loc_ids * sizeof(*p->loc_ids) + p->cap_labels * sizeof(*p->labels) +
	       p->cap_values * sizeof(*p->values) + p->loc_memo_slots * sizeof(*p->loc_memo);
}

int profile__for_each_sample(const struct profile *p, profile_sample_cb cb, void *ctx)
{
	for (uint32_t i = 0; i < p->n_samples; i++) {
		const struct sample *s = &p->samples[i];
		struct profile_sample_view v = {
			.location_ids = &p->loc_ids[s->loc_start],
			.n_locations = (int)s->n_locs,
			.values = &p->values[(size_t)i * p->n_types],
			.labels = &p->labels[s->label_start],
			.n_labels = (int)s->n_labels,
		};
		int ret = cb(&v, ctx);

		if (ret)
			return ret;
	}
	return 0;
}

/* See profile.h. */
void profile__rescale(struct profile *p, profile_rescale_cb cb, void *ctx)
{
	memset(p->totals, 0, sizeof(p->totals[0]) * (size_t)p->n_types);
	for (uint32_t i = 0; i < p->n_samples; i++) {
		const struct sample *s = &p->samples[i];
		int64_t *values = &p->values[(size_t)i * p->n_types];
		struct profile_sample_view v = {
			.location_ids = &p->loc_ids[s->loc_start],
			.n_locations = (int)s->n_locs,
			.values = values,
			.labels = &p->labels[s->label_start],
			.n_labels = (int)s->n_labels,
		};

		cb(&v, values, ctx);
		for (int t = 0; t < p->n_types; t++)
			p->totals[t] += values[t];
	}
}

size_t profile__n_locations(const struct profile *p)
{
	return p->n_locs;
}

size_t profile__n_functions(const struct profile *p)
{
	return p->n_funcs;
}

size_t profile__n_mappings(const struct profile *p)
{
	return p->n_maps;
}

void profile__location(const struct profile *p, size_t idx, struct profile_location_view *out)
{
	const struct location *l = &p->locs[idx];

	*out = (struct profile_location_view){
		.id = idx + 1,
		.address = l->address,
		.mapping_id = l->mapping_id,
		.function_id = l->function_id,
		.line = l->line,
		.kind = l->kind,
	};
}

void profile__function(const struct profile *p, size_t idx, struct profile_function_view *out)
{
	const struct function *f = &p->funcs[idx];

	*out = (struct profile_function_view){
		.id = idx + 1,
		.name = f->name,
		.filename = f->file,
		.start_line = f->start_line,
	};
}

void profile__mapping(const struct profile *p, size_t idx, struct profile_mapping_view *out)
{
	const struct mapping *m = &p->maps[idx];

	*out = (struct profile_mapping_view){
		.id = idx + 1,
		.start = m->start,
		.limit = m->limit,
		.file_offset = m->file_offset,
		.file = m->file,
		.build_id = m->build_id,
		/* pprof only symbolizes mappings without has_functions: require all named */
		.has_functions = m->n_locs && m->n_named == m->n_locs,
	};
}

/* Python files are shown relative to site-packages, like py-spy does. */
static const char *short_py_file(const char *file)
{
	static const char *const roots[] = {"site-packages/", "dist-packages/"};

	for (size_t i = 0; i < sizeof(roots) / sizeof(roots[0]); i++) {
		const char *s = strstr(file, roots[i]);

		if (s)
			return s + strlen(roots[i]);
	}
	return file;
}

const char *profile__location_name(const struct profile *p, uint32_t location_id, char *buf,
				   size_t len)
{
	const struct location *l;
	const struct function *f;

	if (!len)
		return buf;
	if (!location_id || location_id > p->n_locs) {
		snprintf(buf, len, "[invalid location]");
		return buf;
	}
	l = &p->locs[location_id - 1];
	f = l->function_id ? &p->funcs[l->function_id - 1] : NULL;
	if (f) {
		if (l->kind == FRAME_KERNEL)
			snprintf(buf, len, "%s_[k]", f->name);
		else if (l->kind == FRAME_PYTHON && f->file[0] && l->line)
			snprintf(buf, len, "%s (%s:%" PRId64 ")", f->name, short_py_file(f->file),
				 l->line);
		else if (l->kind == FRAME_PYTHON && f->file[0])
			snprintf(buf, len, "%s (%s)", f->name, short_py_file(f->file));
		else
			snprintf(buf, len, "%s", f->name);
	} else if (l->mapping_id) {
		const struct mapping *m = &p->maps[l->mapping_id - 1];
		const char *mod = m->file[0] ? fsutil__base_name(m->file) : "[unknown]";

		snprintf(buf, len, "%s+0x%" PRIx64, mod, l->address - m->start + m->file_offset);
	} else if (l->kind == FRAME_KERNEL) {
		snprintf(buf, len, "0x%" PRIx64 "_[k]", l->address);
	} else {
		snprintf(buf, len, "0x%" PRIx64, l->address);
	}
	return buf;
}
