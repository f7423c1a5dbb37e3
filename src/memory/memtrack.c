// SPDX-License-Identifier: Apache-2.0
/* Memory still in use by the stack that brought it in (device allocations, memory growth). */
#include "memory/memtrack.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define STACK_BUCKETS 4096
#define PID_BUCKETS   512
#define MAX_KINDS     16

/* A stack shared by the entries it brought in (refcounted, hashed by content). */
struct mt_stack {
	struct mt_stack *hnext;
	uint64_t hash;
	uint32_t refs;
	uint32_t kind;
	int64_t inuse;
	size_t bytes;
	struct unwound u;
	uint64_t data[]; /* pcs, then Python frames */
};

struct mt_entry {
	uint64_t addr;
	int64_t size;
	struct mt_stack *st;
};

/* One process's entries of one kind, sorted by address. */
struct mt_proc {
	struct mt_proc *hnext;
	uint32_t pid, kind;
	size_t n, cap;
	struct mt_entry *v;
};

struct memtrack {
	size_t max_entries, max_stack_bytes;
	struct mt_stack *stacks[STACK_BUCKETS];
	struct mt_proc *procs[PID_BUCKETS];
	struct memtrack_stats st;
};

static uint64_t mix(uint64_t h, uint64_t v)
{
	h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
	return h * 0xff51afd7ed558ccdull;
}

/* Content hash of the parts of a stack that name it (not the time or the value). */
static uint64_t stack_hash(uint32_t kind, const struct unwound *u)
{
	const struct mlprof_sample *s = &u->hdr;
	uint64_t h = mix(kind, s->pid);

	h = mix(h, s->tid);
	h = mix(h, s->aux[1]); /* heap and device allocations: the size asked for */
	h = mix(h, (uint64_t)u->nu << 32 | s->kstack_len);
	h = mix(h, (uint64_t)u->end << 1 | u->have_proc);
	for (int i = 0; i < u->nu; i++)
		h = mix(h, u->pcs[i]);
	for (uint32_t i = 0; i < s->kstack_len && i < MLPROF_MAX_KSTACK; i++)
		h = mix(h, s->kstack[i]);
	if (u->py)
		for (uint32_t i = 0; i < s->py_nframes; i++)
			h = mix(mix(h, u->py[i].code),
				(uint64_t)u->py[i].instr << 32 | u->py[i].validator);
	return h;
}

static bool stack_equal(const struct mt_stack *a, uint32_t kind, const struct unwound *u)
{
	const struct mlprof_sample *x = &a->u.hdr, *y = &u->hdr;
	uint32_t np = u->py ? y->py_nframes : 0;
	uint32_t anp = a->u.py ? x->py_nframes : 0;

	return a->kind == kind && x->pid == y->pid && x->tid == y->tid && x->aux[1] == y->aux[1] &&
	       a->u.nu == u->nu && a->u.end == u->end && x->kstack_len == y->kstack_len &&
	       anp == np && !memcmp(a->u.pcs, u->pcs, (size_t)u->nu * sizeof(uint64_t)) &&
	       !memcmp(x->kstack, y->kstack, x->kstack_len * sizeof(uint64_t)) &&
	       (!np || !memcmp(a->u.py, u->py, np * sizeof(*u->py)));
}

/* Returns the shared copy of stack u (one more reference), or NULL. */
static struct mt_stack *stack_get(struct memtrack *mt, uint32_t kind, const struct unwound *u)
{
	uint64_t h = stack_hash(kind, u);
	size_t np = u->py ? u->hdr.py_nframes : 0;
	size_t bytes = sizeof(struct mt_stack) + (size_t)u->nu * sizeof(uint64_t) +
		       np * sizeof(struct mlprof_py_frame);
	struct mt_stack *s;

	for (s = mt->stacks[h % STACK_BUCKETS]; s; s = s->hnext)
		if (s->hash == h && stack_equal(s, kind, u)) {
			s->refs++;
			return s;
		}
	if (mt->st.stack_bytes + bytes > mt->max_stack_bytes)
		return NULL;
	s = malloc(bytes);
	if (!s)
		return NULL;
	s->hash = h;
	s->refs = 1;
	s->kind = kind;
	s->inuse = 0;
	s->bytes = bytes;
	s->u = *u;
	memcpy(s->data, u->pcs, (size_t)u->nu * sizeof(uint64_t));
	s->u.pcs = s->data;
	if (np) {
		memcpy(s->data + u->nu, u->py, np * sizeof(struct mlprof_py_frame));
		s->u.py = (const void *)(s->data + u->nu);
	} else {
		s->u.py = NULL;
	}
	s->hnext = mt->stacks[h % STACK_BUCKETS];
	mt->stacks[h % STACK_BUCKETS] = s;
	mt->st.stacks++;
	mt->st.stack_bytes += bytes;
	return s;
}

static void stack_put(struct memtrack *mt, struct mt_stack *s)
{
	struct mt_stack **pp;

	if (--s->refs)
		return;
	for (pp = &mt->stacks[s->hash % STACK_BUCKETS]; *pp != s; pp = &(*pp)->hnext)
		;
	*pp = s->hnext;
	mt->st.stacks--;
	mt->st.stack_bytes -= s->bytes;
	free(s);
}

/* See memtrack.h. */
/* See memtrack.h. */
uint64_t memtrack__bound_bytes(size_t max_entries, size_t max_stack_bytes)
{
	return 2ull * max_entries * sizeof(struct mt_entry) + max_stack_bytes;
}

struct memtrack *memtrack__new(size_t max_entries, size_t max_stack_bytes)
{
	struct memtrack *mt = calloc(1, sizeof(*mt));

	if (!mt)
		return NULL;
	mt->max_entries = max_entries;
	mt->max_stack_bytes = max_stack_bytes;
	return mt;
}

static struct mt_proc **proc_slot(struct memtrack *mt, uint32_t kind, uint32_t pid)
{
	struct mt_proc **pp = &mt->procs[(pid * 31 + kind) % PID_BUCKETS];

	while (*pp && ((*pp)->pid != pid || (*pp)->kind != kind))
		pp = &(*pp)->hnext;
	return pp;
}

/* Index of the first entry with addr >= a. */
static size_t lower_bound(const struct mt_proc *p, uint64_t a)
{
	size_t lo = 0, hi = p->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (p->v[mid].addr < a)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* Removes entries [i, j) of p. */
static void remove_span(struct memtrack *mt, struct mt_proc *p, size_t i, size_t j)
{
	for (size_t k = i; k < j; k++) {
		p->v[k].st->inuse -= p->v[k].size;
		stack_put(mt, p->v[k].st);
	}
	memmove(p->v + i, p->v + j, (p->n - j) * sizeof(*p->v));
	p->n -= j - i;
	mt->st.entries -= j - i;
}

static void proc_free(struct memtrack *mt, struct mt_proc **pp)
{
	struct mt_proc *p = *pp;

	remove_span(mt, p, 0, p->n);
	*pp = p->hnext;
	free(p->v);
	free(p);
}

/* See memtrack.h. */
void memtrack__free(struct memtrack *mt)
{
	if (!mt)
		return;
	for (size_t b = 0; b < PID_BUCKETS; b++)
		while (mt->procs[b])
			proc_free(mt, &mt->procs[b]);
	free(mt);
}

/* See memtrack.h. */
int memtrack__add(struct memtrack *mt, uint32_t kind, uint64_t addr, int64_t size,
		  const struct unwound *u)
{
	struct mt_proc **pp = proc_slot(mt, kind, u->hdr.pid), *p = *pp;
	struct mt_stack *st;
	size_t i;

	if (mt->st.entries >= mt->max_entries) {
		mt->st.dropped++;
		return -ENOSPC;
	}
	if (!p) {
		p = calloc(1, sizeof(*p));
		if (!p)
			return -ENOMEM;
		p->pid = u->hdr.pid;
		p->kind = kind;
		*pp = p;
	}
	if (p->n == p->cap) {
		size_t cap = p->cap ? p->cap * 2 : 16;
		struct mt_entry *v = realloc(p->v, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		p->v = v;
		p->cap = cap;
	}
	st = stack_get(mt, kind, u);
	if (!st) {
		mt->st.dropped++;
		return -ENOSPC;
	}
	i = lower_bound(p, addr);
	if (i < p->n && p->v[i].addr == addr)
		remove_span(mt, p, i, i + 1);
	memmove(p->v + i + 1, p->v + i, (p->n - i) * sizeof(*p->v));
	p->v[i] = (struct mt_entry){.addr = addr, .size = size, .st = st};
	p->n++;
	st->inuse += size;
	mt->st.entries++;
	return 0;
}

/* See memtrack.h. */
void memtrack__free_at(struct memtrack *mt, uint32_t kind, uint32_t pid, uint64_t addr)
{
	struct mt_proc *p = *proc_slot(mt, kind, pid);
	size_t i;

	if (!p || (i = lower_bound(p, addr)) >= p->n || p->v[i].addr != addr) {
		mt->st.unmatched++;
		return;
	}
	remove_span(mt, p, i, i + 1);
}

/* See memtrack.h. */
void memtrack__free_range(struct memtrack *mt, uint32_t kind, uint32_t pid, uint64_t start,
			  uint64_t len)
{
	struct mt_proc *p = *proc_slot(mt, kind, pid);
	uint64_t end = start + len < start ? UINT64_MAX : start + len;

	if (!p || !len)
		return;
	remove_span(mt, p, lower_bound(p, start), lower_bound(p, end));
}

/* See memtrack.h. */
void memtrack__drop_pid(struct memtrack *mt, uint32_t pid)
{
	for (uint32_t kind = 0; kind < MAX_KINDS; kind++) {
		struct mt_proc **pp = proc_slot(mt, kind, pid);

		if (*pp)
			proc_free(mt, pp);
	}
}

/* See memtrack.h. */
int memtrack__for_each(struct memtrack *mt, uint32_t kind, uint32_t pid, memtrack_cb cb, void *ctx)
{
	for (size_t b = 0; b < STACK_BUCKETS; b++)
		for (struct mt_stack *s = mt->stacks[b]; s; s = s->hnext) {
			int err;

			if (s->kind != kind || s->inuse <= 0 || (pid && s->u.hdr.pid != pid))
				continue;
			err = cb(ctx, &s->u, s->inuse);
			if (err)
				return err;
		}
	return 0;
}

/* See memtrack.h. */
int64_t memtrack__inuse(const struct memtrack *mt, uint32_t kind, uint32_t pid)
{
	const struct mt_proc *p = mt->procs[(pid * 31 + kind) % PID_BUCKETS];
	int64_t sum = 0;

	for (; p && (p->pid != pid || p->kind != kind); p = p->hnext)
		;
	for (size_t i = 0; p && i < p->n; i++)
		sum += p->v[i].size;
	return sum;
}

/* See memtrack.h. */
void memtrack__stats(const struct memtrack *mt, struct memtrack_stats *out)
{
	*out = mt->st;
}
