// SPDX-License-Identifier: Apache-2.0
/* Heap profiling by allocation site: allocator probes per process, sample weights. */
#define LOG_MODULE "heap"
#include "util/log.h"

#include "memory/heap.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "capture/heap_probes.h"
#include "capture/uprobe_link.h"
#include "capture/uprobe_site.h"
#include "symbolize/elf.h"
#include "symbolize/elf_lookup.h"
#include "symbolize/proc.h"
#include "symbolize/proc_files.h"
#include "util/fsutil.h"

#define DEFAULT_SAMPLE_BYTES (512u << 10)
#define DEFAULT_MAX_PROCS    1024
#define PROC_BUCKETS	     1024
#define MAX_TARGETS	     16
#define MAX_ENTRIES	     16384 /* processes looked at, probed or not */

/* The entry points probed, by exported (or .symtab) name. */
static const struct {
	const char *sym;
	enum mlprof_heap_fn fn;
} heap_syms[] = {
	{"malloc", MLPROF_HEAP_MALLOC},
	{"calloc", MLPROF_HEAP_CALLOC},
	{"realloc", MLPROF_HEAP_REALLOC},
	{"free", MLPROF_HEAP_FREE},
	{"cfree", MLPROF_HEAP_FREE},
	{"memalign", MLPROF_HEAP_MEMALIGN},
	{"aligned_alloc", MLPROF_HEAP_MEMALIGN},
	{"posix_memalign", MLPROF_HEAP_POSIX_MEMALIGN},
	{"valloc", MLPROF_HEAP_MALLOC},
	{"pvalloc", MLPROF_HEAP_MALLOC},
};

/* Allocators that replace glibc's when a process maps them (LD_PRELOAD or linked). */
static const char *const replacements[] = {"libjemalloc", "libtcmalloc", "libmimalloc"};

/* One process: whether its allocator is probed, and the maps generation last looked at. */
struct hproc {
	struct hproc *next;
	pid_t pid;
	uint64_t gen;
	struct uprobe_link *links;
	uint64_t dev, ino; /* the file probed */
	bool recheck;	   /* exec'd: is the probed file still its allocator? */
};

struct heap {
	struct heap_probes *hp;
	struct proc_cache *pc;
	uint64_t sample_bytes;
	uint32_t max_procs;
	char *comms; /* ",name,name," or NULL: every process */
	uint32_t nentries;
	struct hproc *procs[PROC_BUCKETS];
	struct heap_stats st;
};

/* See heap.h. */
struct heap *heap__new(const struct heap_config *cfg, struct proc_cache *pc, struct sampler *s)
{
	struct heap *h = calloc(1, sizeof(*h));

	if (!h)
		return NULL;
	h->pc = pc;
	h->sample_bytes = cfg->sample_bytes ? cfg->sample_bytes : DEFAULT_SAMPLE_BYTES;
	h->max_procs = cfg->max_procs ? cfg->max_procs : DEFAULT_MAX_PROCS;
	if (cfg->comms) {
		size_t n = strlen(cfg->comms) + 3;

		h->comms = malloc(n);
		if (!h->comms) {
			free(h);
			return NULL;
		}
		snprintf(h->comms, n, ",%s,", cfg->comms);
	}
	h->hp = heap_probes__new(s, h->sample_bytes);
	if (!h->hp) {
		int err = errno;

		free(h->comms);
		free(h);
		errno = err;
		return NULL;
	}
	return h;
}

/* See heap.h. */
void heap__free(struct heap *h)
{
	if (!h)
		return;
	for (int b = 0; b < PROC_BUCKETS; b++) {
		struct hproc *e = h->procs[b], *next;

		for (; e; e = next) {
			next = e->next;
			uprobe_link__release(e->links);
			free(e);
		}
	}
	heap_probes__free(h->hp);
	free(h->comms);
	free(h);
}

/* Whether p is selected (heap_config.comms names it, or there is no list). */
static bool selected(const struct heap *h, const struct proc *p)
{
	char needle[sizeof(p->comm) + 2];

	if (!h->comms)
		return true;
	snprintf(needle, sizeof(needle), ",%s,", p->comm);
	return p->comm[0] && strstr(h->comms, needle);
}

/* How well map m's file fits as p's allocator: 3 a replacement, 2 the executable, 1 libc. */
static int allocator_rank(const struct proc *p, const struct proc_map *m)
{
	const char *b = fsutil__base_name(m->path);

	for (size_t i = 0; i < sizeof(replacements) / sizeof(replacements[0]); i++)
		if (!strncmp(b, replacements[i], strlen(replacements[i])))
			return 3;
	if (m == &p->maps[0] || (p->n_maps && !strcmp(m->path, p->maps[0].path)))
		return 2; /* counts only when it defines malloc itself (static, bundled) */
	if (!strncmp(b, "libc.so", 7) || !strncmp(b, "libc-", 5))
		return 1;
	return 0;
}

/* The registers a probe of fn reads (its arguments; %rsp for a return probe). */
static uint32_t fn_keep(enum mlprof_heap_fn fn)
{
	switch (fn) {
	case MLPROF_HEAP_FREE:
		return UPROBE_RDI;
	case MLPROF_HEAP_MALLOC:
		return UPROBE_RDI | UPROBE_RSP;
	case MLPROF_HEAP_CALLOC:
	case MLPROF_HEAP_REALLOC:
		return UPROBE_RDI | UPROBE_RSI | UPROBE_RSP;
	case MLPROF_HEAP_MEMALIGN:
		return UPROBE_RSI | UPROBE_RSP;
	case MLPROF_HEAP_POSIX_MEMALIGN:
		return UPROBE_RDI | UPROBE_RDX | UPROBE_RSP;
	default:
		return ~0u;
	}
}

/* The allocator's entry points in ef (aliases at one address probed once). */
static int find_targets(const struct elf_file *ef, struct heap_target *t)
{
	int n = 0, have = 0;

	for (size_t i = 0; i < sizeof(heap_syms) / sizeof(heap_syms[0]) && n < MAX_TARGETS; i++) {
		uint64_t v, off;
		bool dup = false;

		if (elf_file__find_function(ef, heap_syms[i].sym, &v) || !v ||
		    elf_file__vaddr_to_offset(ef, v, &off))
			continue;
		/* on the first instruction the kernel emulates, if the arguments (and, for a
		 * return probe, the return address on top of the stack) are intact there:
		 * glibc's free starts with test %rdi,%rdi and posix_memalign with a
		 * RIP-relative cmpb, single-stepped out of line (~14 us a hit on a VM instead
		 * of ~1 us) */
		{
			uint8_t code[48];

			if (!elf_file__read_vaddr(ef, v, code, sizeof(code)))
				off += uprobe_site__emulated(code, sizeof(code),
							     fn_keep(heap_syms[i].fn));
		}
		for (int k = 0; k < n; k++)
			dup |= t[k].off == off;
		if (dup)
			continue;
		t[n].fn = heap_syms[i].fn;
		t[n].off = off;
		n++;
	}
	/* malloc and free at least: anything less is not an allocator to profile */
	for (int k = 0; k < n; k++)
		have |= t[k].fn == MLPROF_HEAP_MALLOC ? 1 : t[k].fn == MLPROF_HEAP_FREE ? 2 : 0;
	return have == 3 ? n : 0;
}

/* p's allocator: the best-ranked map whose file has the entry points (t, *n). */
static const struct proc_map *find_allocator(struct heap *h, struct proc *p, struct heap_target *t,
					     int *n, struct elf_file **ef_out)
{
	const struct proc_map *best = NULL;
	int best_rank = 0;

	for (size_t i = 0; i < p->n_maps; i++) {
		const struct proc_map *m = &p->maps[i];
		struct heap_target mt[MAX_TARGETS];
		struct elf_file *ef;
		int rank, k;

		if (m->path[0] != '/' || !m->inode || (i && !strcmp(m->path, p->maps[i - 1].path)))
			continue;
		rank = allocator_rank(p, m);
		if (rank <= best_rank)
			continue;
		ef = proc_cache__map_elf(h->pc, p, m);
		if (!ef || !(k = find_targets(ef, mt)))
			continue;
		best = m;
		best_rank = rank;
		*ef_out = ef;
		*n = k;
		memcpy(t, mt, sizeof(mt));
	}
	return best;
}

static uint64_t map_dev(const struct proc_map *m)
{
	return (uint64_t)m->dev_major << 20 | m->dev_minor;
}

static bool same_file(const struct proc_map *a, const struct proc_map *b)
{
	return a->inode == b->inode && a->dev_major == b->dev_major && a->dev_minor == b->dev_minor;
}

/* Tells BPF where m's file's code is in p: the lowest start and highest end of its
 * executable mappings (its own mmap calls come from there). */
static void set_code_range(struct heap *h, const struct proc *p, const struct proc_map *m)
{
	uint64_t lo = UINT64_MAX, hi = 0;

	for (size_t i = 0; i < p->n_maps; i++) {
		const struct proc_map *x = &p->maps[i];

		if (!x->exec || !same_file(x, m))
			continue;
		lo = x->start < lo ? x->start : lo;
		hi = x->end > hi ? x->end : hi;
	}
	if (hi)
		heap_probes__set_proc(h->hp, p->pid, lo, hi);
}

/*
 * Attaches p's allocator probes (kept across an exec that maps the same allocator file:
 * the kernel places them in the new image as it maps it). 0, -ENOENT (no allocator found)
 * or -errno.
 */
static int attach(struct heap *h, struct proc *p, struct hproc *e)
{
	struct heap_target t[MAX_TARGETS];
	const struct proc_map *m;
	struct elf_file *ef = NULL;
	char path[64];
	int n = 0, fd;

	m = find_allocator(h, p, t, &n, &ef);
	if (e->links && !m)
		return -EAGAIN; /* exec'd, its allocator not mapped yet: look again */
	if (e->links && map_dev(m) == e->dev && m->inode == e->ino) {
		set_code_range(h, p, m); /* an exec maps it elsewhere */
		return 0;		 /* still the probed file */
	}
	if (e->links) {
		uprobe_link__release(e->links);
		e->links = NULL;
		h->st.procs--;
	}
	if (!m)
		return -ENOENT;
	fd = proc_cache__open_verified(h->pc, p, m, ef);
	if (fd < 0)
		return fd;
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	e->links = heap_probes__attach(h->hp, path, t, n, p->pid);
	close(fd); /* the probes hold the inode now */
	if (!e->links)
		return errno ? -errno : -EINVAL;
	e->dev = map_dev(m);
	e->ino = m->inode;
	set_code_range(h, p, m);
	h->st.procs++;
	h->st.procs_total++;
	pr_debug("pid %d: %d allocator entry points of %s probed", (int)p->pid, n, m->path);
	return 0;
}

static struct hproc **slot(struct heap *h, pid_t pid)
{
	struct hproc **pp = &h->procs[(uint32_t)pid % PROC_BUCKETS];

	while (*pp && (*pp)->pid != pid)
		pp = &(*pp)->next;
	return pp;
}

/* See heap.h. */
void heap__check(struct heap *h, struct proc *p)
{
	struct hproc **pp = slot(h, p->pid), *e = *pp;
	int err;

	if (e && ((e->links && !e->recheck) || e->gen == p->gen))
		return;
	if (!e) {
		if (h->nentries >= MAX_ENTRIES) {
			h->st.procs_limit++;
			return;
		}
		e = calloc(1, sizeof(*e));
		if (!e)
			return;
		e->pid = p->pid;
		*pp = e;
		h->nentries++;
	}
	e->gen = p->gen;
	/* looked at again when its maps change (an exec may give it another name) */
	if (!selected(h, p)) {
		h->st.not_selected++;
		return;
	}
	if (!e->links && h->st.procs >= h->max_procs) {
		h->st.procs_limit++;
		return;
	}
	err = attach(h, p, e);
	if (err != -EAGAIN)
		e->recheck = false;
	if (!err || err == -EAGAIN)
		return;
	if (err == -ENOENT) {
		h->st.no_allocator++;
	} else {
		h->st.attach_failed++;
		pr_warn("pid %d: cannot probe its allocator: %s (retried when its maps change)",
			(int)p->pid, strerror(-err));
	}
}

/* See heap.h. */
void heap__forget(struct heap *h, pid_t pid)
{
	struct hproc **pp = slot(h, pid), *e = *pp;

	if (!e)
		return;
	*pp = e->next;
	h->nentries--;
	if (e->links) {
		uprobe_link__release(e->links);
		h->st.procs--;
		heap_probes__forget_pid(h->hp, pid);
	}
	free(e);
}

/* See heap.h. */
void heap__on_exec(struct heap *h, pid_t pid)
{
	struct hproc *e = *slot(h, pid);

	if (!e)
		return;
	if (e->links)
		heap_probes__forget_pid(h->hp, pid);
	e->recheck = true;
}

/* See heap.h. */
int64_t heap__weight(uint64_t size, uint64_t mean)
{
	double s = (double)size, p;

	if (!size)
		return 0;
	p = -expm1(-s / (double)(mean ? mean : 1));
	return p > 0 ? (int64_t)llround(s / p) : (int64_t)size;
}

/* See heap.h. */
uint64_t heap__sample_bytes(const struct heap *h)
{
	return h->sample_bytes;
}

/* See heap.h. */
void heap__stats(const struct heap *h, struct heap_stats *out)
{
	*out = h->st;
	out->sample_bytes = h->sample_bytes;
	out->mode = heap_probes__mode(h->hp);
}
