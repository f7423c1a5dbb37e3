// SPDX-License-Identifier: Apache-2.0
/* Per-process cache of executable mappings with lazily opened ELF files shared by (dev, inode). */
#define LOG_MODULE "proc"
#include "util/log.h"

#include "symbolize/proc.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "symbolize/elf.h"
#include "symbolize/proc_files.h"
#include "symbolize/proc_maps.h"
#include "symbolize/proc_state.h"
#include "util/clock.h"

/*
 * A miss re-reads a process's maps at most once per REREAD_COST_FACTOR times what its last
 * read cost: a process whose maps take seconds to format is re-read rarely (its own frames
 * may stay unnamed a while) instead of taking the consumer's time from every other one.
 */
#define REREAD_COST_FACTOR 100
/* Bytes of map sets (cached, retired and buried processes) when none are configured. */
#define PROC_DEFAULT_MAX_BYTES (32ull << 20)
/*
 * Minimum interval between two re-reads of a live process's maps on a lookup miss; it
 * doubles (up to the max) each time a re-read finds nothing new: an address in no mapping
 * (JIT code, a bad return address) must not make every sample read a PyTorch process's
 * thousands of maps lines (up to 1 s apart). New executable mappings are seen through their
 * mmap events; an exec or a reused pid starts again from the shortest interval.
 */
#define REREAD_INTERVAL_NS     (10ull * 1000 * 1000)
#define REREAD_INTERVAL_MAX_NS (1000ull * 1000 * 1000)
#define REREAD_BACKOFF_AFTER   8 /* same-maps re-reads before the interval grows */
/* How long a gap found without executable mappings is trusted (NOEXEC_GAPS). */
#define NOEXEC_TTL_NS (1000ull * 1000 * 1000)
/* Replaced map sets kept (for borrowed pointers) per process until gc; beyond, no re-reads. */
#define RETIRED_MAX 32
/* Processes whose maps file stays open for PROCMAP_QUERY (query_fd_get). */
#define QUERY_FDS_MAX 64

static size_t bucket_of(const struct proc_cache *pc, pid_t pid)
{
	return ((uint32_t)pid * 2654435761u) & (pc->nbuckets - 1);
}

static void map_set_free(struct proc_cache *pc, struct map_set *ms)
{
	if (!ms)
		return;
	for (size_t i = 0; i < ms->n; i++)
		proc_files__unref(pc, ms->elfs[i]);
	pc->bytes -= ms->bytes;
	free(ms->maps);
	free(ms->strs);
	free(ms->elfs);
	free(ms->state);
	free(ms);
}

/* /proc/PID/maps of pid, opened read-only (-1 with errno). */
static int open_maps(const struct proc_cache *pc, pid_t pid)
{
	char path[320];

	snprintf(path, sizeof(path), "%s/%d/maps", pc->proc_root, (int)pid);
	return open(path, O_RDONLY | O_CLOEXEC);
}

/*
 * e's maps file for PROCMAP_QUERY, kept open (opening /proc/PID/maps was ~20 us, a few
 * times a second on a PyTorch loop whose stack scans try words in no mapping): at most
 * QUERY_FDS_MAX entries hold one, the others open and close it each time (*own set: the
 * caller closes it). The file answers for the image it was opened on: closed at exec.
 */
static int query_fd_get(struct proc_cache *pc, struct proc_entry *e, bool *own)
{
	int fd;

	*own = false;
	if (e->query_fd >= 0)
		return e->query_fd;
	fd = open_maps(pc, e->p.pid);
	if (fd < 0 || pc->query_fds >= QUERY_FDS_MAX) {
		*own = fd >= 0;
		return fd;
	}
	pc->query_fds++;
	e->query_fd = fd;
	return fd;
}

static void query_fd_close(struct proc_cache *pc, struct proc_entry *e)
{
	if (e->query_fd < 0)
		return;
	close(e->query_fd);
	e->query_fd = -1;
	pc->query_fds--;
}

/*
 * Whether an executable mapping of e's process covers addr now: one PROCMAP_QUERY, so that
 * an address in no mapping (a stack or heap word taken for a return address) costs a
 * syscall, not a re-read of every mapping. True when unsure (no answer).
 */
static bool exec_vma_at(struct proc_cache *pc, struct proc_entry *e, uint64_t addr, uint64_t *next)
{
	bool found, own;
	int fd = query_fd_get(pc, e, &own);

	*next = 0;
	if (fd < 0)
		return true;
	found = proc_maps__exec_at(fd, addr, next);
	if (own)
		close(fd);
	return found;
}

/* True when addr lies in a stretch found without executable mappings (not expired). */
static bool in_noexec_gap(const struct proc_entry *e, uint64_t addr, uint64_t now)
{
	for (int i = 0; i < NOEXEC_GAPS; i++)
		if (addr >= e->gaps[i].lo && addr < e->gaps[i].hi && now < e->gaps[i].until_ns)
			return true;
	return false;
}

/* Remembers [lo, hi) as free of executable mappings, merged with a gap of the same end. */
static void add_noexec_gap(struct proc_entry *e, uint64_t lo, uint64_t hi, uint64_t now)
{
	struct noexec_gap *g = NULL;

	for (int i = 0; i < NOEXEC_GAPS && !g; i++)
		if (e->gaps[i].hi == hi && now < e->gaps[i].until_ns)
			g = &e->gaps[i];
	if (!g) {
		g = &e->gaps[e->gap_next++ % NOEXEC_GAPS];
		*g = (struct noexec_gap){lo, hi, now + NOEXEC_TTL_NS};
	} else if (lo < g->lo) {
		g->lo = lo;
	}
}

/*
 * A lookup found no mapping: where the kernel says the address is executable all the same,
 * say what it maps there (at most DIAG_MISS_LOGS lines, one query a second per process):
 * code that runs where mlprof's maps have nothing (on a GPU host: numpy's OpenBLAS threads,
 * mapped while the process was at RETIRED_MAX).
 */
#define DIAG_MISS_LOGS 8
static void diag_miss(struct proc_cache *pc, struct proc_entry *e, uint64_t addr, uint64_t now)
{
	char what[320];
	bool own;
	int fd;

	if (pc->no_query || pc->diag_logged >= DIAG_MISS_LOGS || now - e->diag_ns < 1000000000ull)
		return;
	e->diag_ns = now;
	fd = query_fd_get(pc, e, &own);
	if (fd < 0)
		return;
	if (proc_maps__describe(fd, addr, what, sizeof(what))) {
		pc->diag_logged++;
		pr_info("pid %d: code at 0x%llx is in no mapping read (%zu executable ones, "
			"read %.1f s ago); the kernel maps it as %s",
			(int)e->p.pid, (unsigned long long)addr, e->p.n_maps,
			(double)(now - e->last_read_ns) / 1e9, what);
	}
	if (own)
		close(fd);
}

/* Reads the executable mappings of pid into a new map set. */
static int read_maps(struct proc_cache *pc, pid_t pid, struct map_set **out)
{
	struct proc_maps pm = {0};
	struct map_set *ms = NULL;
	int fd = open_maps(pc, pid), err;

	if (fd < 0)
		return -errno;
	err = proc_maps__read(fd, &pc->no_query, &pm);
	close(fd);
	if (err)
		goto cleanup;
	ms = calloc(1, sizeof(*ms));
	if (!ms || !(ms->elfs = calloc(pm.n, sizeof(*ms->elfs))) ||
	    !(ms->state = calloc(pm.n, sizeof(*ms->state)))) {
		err = -ENOMEM;
		goto cleanup;
	}
	ms->maps = pm.maps;
	ms->n = pm.n;
	ms->strs = pm.strs;
	ms->bytes = sizeof(*ms) + pm.bytes + pm.n * (sizeof(*ms->elfs) + sizeof(*ms->state));
	pc->bytes += ms->bytes;
	if (pm.cut) {
		pc->stats.maps_truncated++;
		pr_debug("maps of %d cut at %zu executable mappings / %zu bytes read", (int)pid,
			 pm.n, pm.bytes_read);
	}
	pm.maps = NULL;
	pm.strs = NULL;
	*out = ms;
	ms = NULL;
	pc->stats.maps_reads++;
	pr_debug("maps of %d: %zu executable mappings (%s, %zu KiB)", (int)pid, pm.n,
		 pc->no_query ? "text" : "PROCMAP_QUERY", pm.bytes_read >> 10);
cleanup:
	proc_maps__release(&pm);
	map_set_free(pc, ms);
	return err;
}

static void read_comm(struct proc_cache *pc, struct proc *p)
{
	char path[320];
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "%s/%d/comm", pc->proc_root, (int)p->pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	n = read(fd, p->comm, sizeof(p->comm) - 1);
	close(fd);
	if (n <= 0)
		return;
	p->comm[n] = '\0';
	for (ssize_t i = 0; i < n; i++) {
		if (p->comm[i] == '\n') {
			p->comm[i] = '\0';
			break;
		}
	}
}

/* Installs ms as the current map set of e, retiring the previous one. */
static void install_maps(struct proc_cache *pc, struct proc_entry *e, struct map_set *ms)
{
	if (e->cur) {
		e->cur->next = e->retired;
		e->retired = e->cur;
		e->n_retired++;
	}
	e->cur = ms;
	e->p.maps = ms ? ms->maps : NULL;
	e->p.n_maps = ms ? ms->n : 0;
	e->p.gen = ++pc->gen;
	e->p.ident = 0;
	e->last_hit = 0;
	memset(e->gaps, 0, sizeof(e->gaps));
	e->maps_valid = ms != NULL;
	e->last_read_ns = clock__mono_ns();
}

/* ---- process entries ---- */

static void hash_unlink(struct proc_cache *pc, struct proc_entry *e)
{
	struct proc_entry **pp = &pc->buckets[bucket_of(pc, e->p.pid)];

	while (*pp && *pp != e)
		pp = &(*pp)->hnext;
	if (*pp)
		*pp = e->hnext;
	e->hnext = NULL;
}

/* Bytes held by e's map sets (current and retired). */
static uint64_t entry_bytes(const struct proc_entry *e)
{
	uint64_t n = e->cur ? e->cur->bytes : 0;

	for (const struct map_set *ms = e->retired; ms; ms = ms->next)
		n += ms->bytes;
	return n;
}

static void proc_entry_free(struct proc_cache *pc, struct proc_entry *e)
{
	struct map_set *ms, *next;

	pc->grave_bytes -= e->grave_bytes;
	query_fd_close(pc, e);
	map_set_free(pc, e->cur);
	for (ms = e->retired; ms; ms = next) {
		next = ms->next;
		map_set_free(pc, ms);
	}
	elf_file__put(e->vdso);
	free(e);
}

/* Removes e from the table; its memory stays valid until gc (bounded graveyard). */
static void proc_entry_bury(struct proc_cache *pc, struct proc_entry *e)
{
	hash_unlink(pc, e);
	lru__unlink(&pc->lru, &e->lru);
	pc->nprocs--;
	query_fd_close(pc, e);
	e->grave_bytes = entry_bytes(e);
	pc->grave_bytes += e->grave_bytes;
	e->gnext = pc->graveyard;
	pc->graveyard = e;
	pc->ngrave++;
	if (pc->ngrave > pc->cfg.max_procs) {
		/* free the oldest buried entry: the list is newest first */
		struct proc_entry **pp = &pc->graveyard;

		while ((*pp)->gnext)
			pp = &(*pp)->gnext;
		proc_entry_free(pc, *pp);
		*pp = NULL;
		pc->ngrave--;
	}
	pc->stats.procs = pc->nprocs;
}

static struct proc_entry *lookup(struct proc_cache *pc, pid_t pid)
{
	struct proc_entry *e;

	for (e = pc->buckets[bucket_of(pc, pid)]; e; e = e->hnext)
		if (e->p.pid == pid)
			return e;
	return NULL;
}

struct proc_cache *proc_cache__new(const struct proc_cache_config *cfg)
{
	struct proc_cache *pc;
	size_t nb = 16;

	pc = calloc(1, sizeof(*pc));
	if (!pc)
		return NULL;
	pc->cfg = *cfg;
	if (!pc->cfg.max_procs)
		pc->cfg.max_procs = 4096;
	if (!pc->cfg.max_elf_files)
		pc->cfg.max_elf_files = 1024;
	if (!pc->cfg.max_bytes)
		pc->cfg.max_bytes = PROC_DEFAULT_MAX_BYTES;
	snprintf(pc->proc_root, sizeof(pc->proc_root), "%s",
		 cfg->proc_root ? cfg->proc_root : "/proc");
	while (nb < pc->cfg.max_procs && nb < (1u << 20))
		nb <<= 1;
	pc->nbuckets = nb;
	pc->buckets = calloc(nb, sizeof(*pc->buckets));
	pc->elfs = calloc(pc->cfg.max_elf_files, sizeof(*pc->elfs));
	if (!pc->buckets || !pc->elfs) {
		free(pc->buckets);
		free(pc->elfs);
		free(pc);
		errno = ENOMEM;
		return NULL;
	}
	return pc;
}

void proc_cache__free(struct proc_cache *pc)
{
	struct proc_entry *e, *next;

	if (!pc)
		return;
	for (e = lru_entry(pc->lru.head, struct proc_entry, lru); e; e = next) {
		next = lru_entry(e->lru.next, struct proc_entry, lru);
		proc_entry_free(pc, e);
	}
	for (e = pc->graveyard; e; e = next) {
		next = e->gnext;
		proc_entry_free(pc, e);
	}
	proc_files__free(pc);
	free(pc->buckets);
	free(pc);
}

struct proc *proc_cache__get(struct proc_cache *pc, pid_t pid)
{
	struct proc_entry *e = lookup(pc, pid);
	struct map_set *ms = NULL;
	int err;

	if (e) {
		lru__touch(&pc->lru, &e->lru);
		if (!e->maps_valid && !e->p.dead) {
			read_comm(pc, &e->p);
			if (read_maps(pc, pid, &ms) == 0)
				install_maps(pc, e, ms);
		}
		return &e->p;
	}

	err = read_maps(pc, pid, &ms);
	if (err) {
		errno = err == -ENOENT ? ESRCH : -err;
		return NULL;
	}
	e = calloc(1, sizeof(*e));
	if (!e) {
		map_set_free(pc, ms);
		errno = ENOMEM;
		return NULL;
	}
	e->p.pid = pid;
	e->query_fd = -1;
	e->p.image = ++pc->gen;
	snprintf(e->p.root, sizeof(e->p.root), "/proc/%d/root", (int)pid);
	read_comm(pc, &e->p);
	install_maps(pc, e, ms);

	if (pc->nprocs >= pc->cfg.max_procs && pc->lru.tail) {
		proc_entry_bury(pc, lru_entry(pc->lru.tail, struct proc_entry, lru));
		pc->stats.proc_evictions++;
	}
	e->hnext = pc->buckets[bucket_of(pc, pid)];
	pc->buckets[bucket_of(pc, pid)] = e;
	lru__push_head(&pc->lru, &e->lru);
	pc->nprocs++;
	pc->stats.procs = pc->nprocs;
	/* past the byte bound, the least recently used others go (freed at the next gc) */
	while (pc->bytes - pc->grave_bytes > pc->cfg.max_bytes && pc->lru.tail &&
	       pc->lru.tail != &e->lru) {
		proc_entry_bury(pc, lru_entry(pc->lru.tail, struct proc_entry, lru));
		pc->stats.proc_evictions++;
		pc->stats.byte_evictions++;
	}
	return &e->p;
}

/* True when two map sets list the same mappings of the same files. */
static bool same_maps(const struct map_set *a, const struct map_set *b)
{
	if (!a || !b || a->n != b->n)
		return false;
	for (size_t i = 0; i < a->n; i++) {
		const struct proc_map *x = &a->maps[i], *y = &b->maps[i];

		if (x->start != y->start || x->end != y->end || x->offset != y->offset ||
		    x->inode != y->inode || x->dev_major != y->dev_major ||
		    x->dev_minor != y->dev_minor || strcmp(x->path, y->path) != 0)
			return false;
	}
	return true;
}

static const struct proc_map *search(struct proc_entry *e, uint64_t addr)
{
	const struct proc_map *maps = e->p.maps;
	size_t lo = 0, hi = e->p.n_maps;

	if (!maps || !hi)
		return NULL;
	if (e->last_hit < hi && addr >= maps[e->last_hit].start && addr < maps[e->last_hit].end)
		return &maps[e->last_hit];
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (addr < maps[mid].start)
			hi = mid;
		else if (addr >= maps[mid].end)
			lo = mid + 1;
		else {
			e->last_hit = mid;
			return &maps[mid];
		}
	}
	return NULL;
}

/* See proc.h. */
const struct proc_map *proc_cache__find_map_cached(struct proc *p, uint64_t addr)
{
	return search((struct proc_entry *)p, addr);
}

const struct proc_map *proc_cache__find_map(struct proc_cache *pc, struct proc *p, uint64_t addr)
{
	struct proc_entry *e = (struct proc_entry *)p;
	const struct proc_map *m;
	struct map_set *ms = NULL;
	uint64_t now;
	int err;

	m = search(e, addr);
	if (m)
		return m;
	if (p->dead)
		goto miss;
	if (e->n_retired >= RETIRED_MAX) {
		pc->retired_full = true;
		goto miss;
	}
	now = clock__mono_ns();
	if (e->reread_ns < REREAD_INTERVAL_NS)
		e->reread_ns = REREAD_INTERVAL_NS;
	if (e->maps_valid && (now - e->last_read_ns < e->reread_ns ||
			      now - e->last_read_ns < e->read_cost_ns * REREAD_COST_FACTOR))
		goto miss;
	if (in_noexec_gap(e, addr, now)) {
		pc->stats.misses_in_gaps++;
		goto miss;
	}
	if (!pc->no_query) {
		uint64_t next;

		if (!exec_vma_at(pc, e, addr, &next)) {
			pc->stats.misses_checked++; /* no code there now either: nothing to re-read
						     */
			add_noexec_gap(e, addr & ~4095ull, next, now);
			goto miss;
		}
	}
	e->last_read_ns = now;
	err = read_maps(pc, p->pid, &ms);
	e->read_cost_ns = clock__mono_ns() - now;
	if (err)
		goto miss;
	if (e->maps_valid && same_maps(e->cur, ms)) {
		/* nothing changed: keep the current set (and every cache keyed on its gen) */
		map_set_free(pc, ms);
		pc->stats.rereads_unchanged++;
		/* short-lived processes (exec storms) keep the shortest interval */
		if (++e->same_rereads > REREAD_BACKOFF_AFTER)
			e->reread_ns = e->reread_ns * 2 < REREAD_INTERVAL_MAX_NS
					       ? e->reread_ns * 2
					       : REREAD_INTERVAL_MAX_NS;
		goto miss;
	}
	pr_debug("maps of %d changed (miss at 0x%llx)", (int)p->pid, (unsigned long long)addr);
	install_maps(pc, e, ms);
	e->same_rereads = 0;
	m = search(e, addr);
	if (m) {
		e->reread_ns = REREAD_INTERVAL_NS;
		return m;
	}
miss:
	pc->stats.lookups_failed++;
	if (!p->dead)
		diag_miss(pc, e, addr, clock__mono_ns());
	return NULL;
}

void proc_cache__on_exec(struct proc_cache *pc, pid_t pid)
{
	struct proc_entry *e = lookup(pc, pid);

	if (!e)
		return;
	install_maps(pc, e, NULL);
	query_fd_close(pc, e); /* (it answers for the old image) */
	e->p.image = ++pc->gen;
	e->p.dead = false;
	e->kept = false;
	e->reread_ns = 0; /* a new image: misses re-read at the shortest interval again */
	e->same_rereads = 0;
	if (e->vdso) {
		elf_file__put(e->vdso);
		e->vdso = NULL;
	}
	e->vdso_tried = false;
}

/* See proc.h. */
void proc_cache__refresh(struct proc_cache *pc, pid_t pid)
{
	struct proc_entry *e = lookup(pc, pid);
	struct map_set *ms = NULL;

	if (!e || e->p.dead)
		return;
	if (e->n_retired >= RETIRED_MAX) {
		/* re-read at the trim */
		pc->retired_full = true;
		e->refresh_pending = true;
		return;
	}
	/* after an exec the name changed too (a launcher such as env or numactl) */
	read_comm(pc, &e->p);
	if (read_maps(pc, pid, &ms))
		return;
	e->reread_ns = REREAD_INTERVAL_NS;
	if (e->maps_valid && same_maps(e->cur, ms)) {
		map_set_free(pc, ms); /* (several events of one mmap) */
		return;
	}
	install_maps(pc, e, ms);
}

/* See proc.h. */
void proc_cache__keep_dead(struct proc_cache *pc, pid_t pid, bool keep)
{
	struct proc_entry *e = lookup(pc, pid);

	if (e && e->p.dead)
		e->kept = keep;
}

void proc_cache__on_exit(struct proc_cache *pc, pid_t pid)
{
	struct proc_entry *e = lookup(pc, pid);

	if (e) {
		e->p.dead = true;
		query_fd_close(pc, e);
	}
}

/*
 * Frees e's replaced map sets (no pointer into them may be in use), and does the refresh
 * that came while they were at RETIRED_MAX.
 */
static void free_retired(struct proc_cache *pc, struct proc_entry *e)
{
	struct map_set *ms, *mnext;

	for (ms = e->retired; ms; ms = mnext) {
		mnext = ms->next;
		map_set_free(pc, ms);
	}
	e->retired = NULL;
	e->n_retired = 0;
	if (e->refresh_pending) {
		e->refresh_pending = false;
		proc_cache__refresh(pc, e->p.pid);
	}
}

/* See proc.h. */
bool proc_cache__retired_full(const struct proc_cache *pc)
{
	return pc->retired_full;
}

/* See proc.h. */
void proc_cache__trim(struct proc_cache *pc)
{
	if (!pc->retired_full)
		return;
	for (struct proc_entry *e = lru_entry(pc->lru.head, struct proc_entry, lru); e;
	     e = lru_entry(e->lru.next, struct proc_entry, lru)) {
		if (!e->p.dead)
			free_retired(pc, e);
	}
	pc->retired_full = false;
	pc->stats.trims++;
}

void proc_cache__gc(struct proc_cache *pc)
{
	struct proc_entry *e, *next;

	for (e = pc->graveyard; e; e = next) {
		next = e->gnext;
		proc_entry_free(pc, e);
	}
	pc->graveyard = NULL;
	pc->ngrave = 0;
	for (e = lru_entry(pc->lru.head, struct proc_entry, lru); e; e = next) {
		next = lru_entry(e->lru.next, struct proc_entry, lru);
		if (e->p.dead && !e->kept) {
			hash_unlink(pc, e);
			lru__unlink(&pc->lru, &e->lru);
			pc->nprocs--;
			proc_entry_free(pc, e);
			continue;
		}
		free_retired(pc, e);
	}
	pc->retired_full = false;
	proc_files__gc(pc);
	pc->stats.procs = pc->nprocs;
	pc->stats.elf_files = pc->nelfs;
}

void proc_cache__stats(const struct proc_cache *pc, struct proc_cache_stats *out)
{
	*out = pc->stats;
	out->bytes = pc->bytes;
	out->procs = pc->nprocs;
	out->elf_files = pc->nelfs;
}
