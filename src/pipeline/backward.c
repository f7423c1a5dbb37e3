// SPDX-License-Identifier: Apache-2.0
/* PyTorch backward passes: the autograd workers' samples under the caller of backward(). */
#include "pipeline/backward.h"

#include <stdlib.h>
#include <string.h>

#include <mlprof/cuda.h>

#define MAX_PASSES 64 /* passes in progress at once (one per process) */

struct pass {
	bool used;
	uint64_t seq;
	uint64_t age;	  /* order of arrival, for eviction */
	struct unwound u; /* the caller's stack; pcs and py in data */
	uint64_t *data;
};

struct backward {
	struct pass passes[MAX_PASSES];
	uint64_t clock;
	int max_pcs;
	struct backward_stats st;
	uint64_t pcs[]; /* max_pcs: a grafted sample's program counters */
};

struct backward *backward__new(int max_pcs)
{
	struct backward *b = calloc(1, sizeof(*b) + (size_t)max_pcs * sizeof(uint64_t));

	if (b)
		b->max_pcs = max_pcs;
	return b;
}

static void pass_clear(struct pass *p)
{
	free(p->data);
	memset(p, 0, sizeof(*p));
}

void backward__free(struct backward *b)
{
	if (!b)
		return;
	for (int i = 0; i < MAX_PASSES; i++)
		pass_clear(&b->passes[i]);
	free(b);
}

static struct pass *find(struct backward *b, uint32_t pid)
{
	for (int i = 0; i < MAX_PASSES; i++)
		if (b->passes[i].used && b->passes[i].u.hdr.pid == pid)
			return &b->passes[i];
	return NULL;
}

void backward__begin(struct backward *b, const struct unwound *u)
{
	struct pass *p = find(b, u->hdr.pid), *old = NULL;
	uint64_t *data;

	for (int i = 0; !p && i < MAX_PASSES; i++) {
		if (!b->passes[i].used)
			p = &b->passes[i];
		else if (!old || b->passes[i].age < old->age)
			old = &b->passes[i];
	}
	if (!p) {
		p = old;
		b->st.evicted++;
	}
	data = malloc(unwound__data_bytes(u) + sizeof(uint64_t));
	if (!data)
		return;
	pass_clear(p);
	p->used = true;
	p->seq = u->hdr.aux[0];
	p->age = ++b->clock;
	p->data = data;
	unwound__copy(&p->u, data, u);
	b->st.passes++;
}

bool backward__end(struct backward *b, uint32_t pid, uint32_t tid, uint64_t seq)
{
	struct pass *p = find(b, pid);

	if (!p || p->u.hdr.tid != tid || p->seq != seq)
		return false;
	pass_clear(p);
	return true;
}

bool backward__graft(struct backward *b, struct unwound *u)
{
	static const char worker[] = MLPROF_AUTOGRAD_COMM;
	struct pass *p;
	int room, n;

	if (strncmp((const char *)u->hdr.comm, worker, sizeof(worker) - 1) ||
	    !(p = find(b, u->hdr.pid)) || p->u.hdr.tid == u->hdr.tid)
		return false;
	/* the worker's own frames (its thread's start at the bottom), then the caller's */
	room = b->max_pcs;
	n = u->nu < room ? u->nu : room;
	memcpy(b->pcs, u->pcs, (size_t)n * sizeof(uint64_t));
	if (p->u.nu > 0 && n < room) {
		int m = p->u.nu < room - n ? p->u.nu : room - n;

		memcpy(b->pcs + n, p->u.pcs, (size_t)m * sizeof(uint64_t));
		/* the caller's innermost pc is where it was stopped (Engine::execute's entry), not
		 * a return address: frames past the leaf are named at pc - 1 */
		b->pcs[n]++;
		n += m;
	}
	u->pcs = b->pcs;
	u->nu = n;
	u->end = p->u.end;
	if (!u->py || !u->hdr.py_nframes) {
		u->py = p->u.py;
		u->hdr.py_nframes = p->u.py ? p->u.hdr.py_nframes : 0;
		u->hdr.py_status = p->u.hdr.py_status;
	}
	b->st.grafted++;
	return true;
}

void backward__forget(struct backward *b, uint32_t pid)
{
	struct pass *p = b ? find(b, pid) : NULL;

	if (p)
		pass_clear(p);
}

void backward__stats(const struct backward *b, struct backward_stats *out)
{
	*out = b ? b->st : (struct backward_stats){0};
}
