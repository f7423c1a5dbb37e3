// SPDX-License-Identifier: Apache-2.0
/* Symbol indexes per ELF file, shared by every process mapping it, built off the hot path. */
#include "symbolize/symcache.h"

#include <errno.h>
#include <linux/elf.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <string.h>
#include <time.h>

#include "symbolize/debuginfod.h"
#include "symbolize/dwarf_lines.h"
#include "symbolize/elf.h"
#include "symbolize/gopclntab.h"
#include "symbolize/symindex.h"
#include "util/clock.h"
#include "util/hash.h"
#include "util/lru.h"

#define LOG_MODULE "symcache"
#include "util/log.h"

#define SC_BUCKETS	     1024 /* hash buckets for indexes (chained) */
#define SC_DEFAULT_MAX_BYTES (256u << 20)
#define SC_FRONT_SLOTS	     256  /* direct-mapped (elf_file -> index) front cache */
#define SC_QUEUE_MAX	     64	  /* builds queued or in progress at most */
#define SC_EVICTED_MEMORY    1024 /* keys of evicted indexes remembered (rebuilds) */
#define SC_NAME_MAX	     8192 /* longer symbol names are cut */
/*
 * The SC_RECENT functions named last, with their names: a new pc in one of them (a kernel
 * sampled at address after address) is named without searching the index, reading the name
 * from the file and looking up its demangled form (~6.6 kcycles a pc, cold, on PyTorch's
 * libraries; on the PyPI torch loop 28% of lookups were answered here, 11% with 16 slots).
 * Names longer than SC_RECENT_NAME are not kept here.
 */
#define SC_RECENT	    64
#define SC_RECENT_NAME	    480
#define SC_DEMANGLE_MAX_LEN 4096 /* longer demangled names are cut */
#define SC_DEMANGLE_BUCKETS 4096 /* demangled-name hash buckets (chained) */

enum symtab_state { ST_BUILDING = 0, ST_READY };

/* One file's entry: its index once built. */
struct symtab {
	char *key;
	uint64_t hash;
	uint64_t gen; /* unique id: keys the demangle and line caches, never reused */
	enum symtab_state state;
	struct symindex *ix; /* NULL while building, or when the build ran out of memory */
	size_t bytes;	     /* counted in stats.bytes once ready */
	uint64_t cpu_ns;     /* the build's CPU time */
	struct symtab *hnext;
	struct lru_node lru; /* ready entries only */
	/* build request, owned by the builder until the entry is done */
	struct elf_file *req_ef;
	char *req_root;
	struct symtab *qnext;
};

/*
 * A function named lately: [lo, hi) of index gen (0: empty). Apart from its name (kept in
 * recent_name[] at the same slot) so that the search of all slots reads 1.5 KB, not the
 * 33 KB the names take.
 */
struct recent_fn {
	uint64_t gen, lo, hi;
};

/* A demangled name of symbol idx of index gen, on a hash chain and the LRU list. */
struct demangled {
	uint64_t gen;
	uint32_t idx;
	size_t bytes;
	struct demangled *hnext;
	struct lru_node lru;
	char name[];
};

struct front_slot {
	uint64_t serial; /* elf_file__serial of the file, 0: empty */
	struct symtab *t;
	bool pending;  /* t waits for a debuginfod fetch ... */
	uint64_t dgen; /* ... and was built at this debuginfod generation */
};

/*
 * One consumer thread looks up (not thread-safe for several); in background mode one
 * builder thread builds, handing entries over under lock.
 */
struct symcache {
	struct symindex_config icfg;
	size_t max_bytes, demangle_max;
	char *debug_dirs;
	struct symtab *buckets[SC_BUCKETS];
	struct lru_list lru; /* ready indexes, most recently used at head */
	struct front_slot front[SC_FRONT_SLOTS];
	struct symcache_stats stats;
	uint64_t next_gen;
	uint64_t evicted[SC_EVICTED_MEMORY]; /* key hashes of evicted indexes (ring) */
	size_t nevicted;
	struct demangled *dm[SC_DEMANGLE_BUCKETS];
	struct lru_list dm_lru;
	char name[SC_NAME_MAX];
	struct recent_fn recent[SC_RECENT]; /* a ring: next_recent is the oldest */
	struct recent_name {
		const char *source;
		char name[SC_RECENT_NAME]; /* as shown */
	} recent_name[SC_RECENT];
	unsigned next_recent;
	struct dwarf_lines *lines; /* source lines, bounded on its own */
	struct debuginfod *dbgd;   /* debug files by build id from servers; NULL when off */

	/* background builds */
	bool background, started;
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t wake, done_cv;
	struct symtab *q_head, *q_tail; /* requests, oldest first (lock) */
	struct symtab *done;		/* built, waiting to be taken in (lock) */
	unsigned inflight;		/* queued + building + done not taken in (lock) */
	unsigned ndone;			/* entries on done (atomic reads) */
	bool stop;			/* (lock; also the builder's cancel flag) */
	unsigned test_delay_ms;		/* MLPROF_TEST_INDEX_DELAY_MS: each build starts late */
	uint64_t ready_gen;
	uint64_t epoch; /* bumped when an index goes (evicted, or rebuilt with more) */
};

static void *builder_main(void *arg);

/* See symcache.h. */
struct symcache *symcache__new(const struct symcache_config *cfg)
{
	struct symcache *sc = calloc(1, sizeof(*sc));
	const char *dirs = cfg && cfg->debug_dirs ? cfg->debug_dirs : "/usr/lib/debug";

	if (!sc)
		return NULL;
	sc->max_bytes = cfg && cfg->max_bytes ? cfg->max_bytes : SC_DEFAULT_MAX_BYTES;
	sc->demangle_max =
		cfg && cfg->demangle_bytes ? cfg->demangle_bytes : SYMCACHE_DEMANGLE_BYTES;
	sc->debug_dirs = strdup(dirs);
	if (!(cfg && cfg->no_source_lines)) {
		struct dwarf_lines_config lc = {.max_dwarf_bytes = cfg ? cfg->max_dwarf_bytes : 0};

		sc->lines = dwarf_lines__new(&lc);
	}
	if (!sc->debug_dirs || (!sc->lines && !(cfg && cfg->no_source_lines)))
		goto fail;
	sc->next_gen = 1;
	/* tests only: an index that takes long to build (a cold, slow disk) without a huge file */
	if (getenv("MLPROF_TEST_INDEX_DELAY_MS"))
		sc->test_delay_ms =
			(unsigned)strtoul(getenv("MLPROF_TEST_INDEX_DELAY_MS"), NULL, 10);
	/* from DEBUGINFOD_URLS; without it (or when it cannot start) symbols stay local */
	sc->dbgd = debuginfod__from_env();
	sc->icfg = (struct symindex_config){
		.debug_dirs = sc->debug_dirs,
		.dbgd = sc->dbgd,
		.want_lines = sc->lines != NULL,
		.cancel = &sc->stop,
	};
	pthread_mutex_init(&sc->lock, NULL);
	pthread_cond_init(&sc->wake, NULL);
	pthread_cond_init(&sc->done_cv, NULL);
	sc->background = cfg && cfg->background;
	if (sc->background) {
		int err = pthread_create(&sc->thread, NULL, builder_main, sc);

		if (err) {
			pr_warn("cannot start the symbol index builder: %s; building inline",
				strerror(err));
			sc->background = false;
		} else {
			sc->started = true;
		}
	}
	return sc;
fail:
	free(sc->debug_dirs);
	dwarf_lines__free(sc->lines);
	free(sc);
	errno = ENOMEM;
	return NULL;
}

static void symtab_free(struct symtab *t)
{
	if (!t)
		return;
	free(t->key);
	symindex__free(t->ix);
	elf_file__put(t->req_ef);
	free(t->req_root);
	free(t);
}

static void free_chain(struct symtab *t, bool by_qnext)
{
	while (t) {
		struct symtab *next = by_qnext ? t->qnext : t->hnext;

		symtab_free(t);
		t = next;
	}
}

/* See symcache.h. */
void symcache__free(struct symcache *sc)
{
	struct demangled *d, *dnext;

	if (!sc)
		return;
	if (sc->started) {
		pthread_mutex_lock(&sc->lock);
		__atomic_store_n(&sc->stop, true, __ATOMIC_RELAXED); /* also cancels a build */
		pthread_cond_signal(&sc->wake);
		pthread_mutex_unlock(&sc->lock);
		pthread_join(sc->thread, NULL);
	}
	/* queued and done entries are on the hash chains too: free them there only */
	for (int i = 0; i < SC_BUCKETS; i++)
		free_chain(sc->buckets[i], false);
	for (d = lru_entry(sc->dm_lru.head, struct demangled, lru); d; d = dnext) {
		dnext = lru_entry(d->lru.next, struct demangled, lru);
		free(d);
	}
	pthread_mutex_destroy(&sc->lock);
	pthread_cond_destroy(&sc->wake);
	pthread_cond_destroy(&sc->done_cv);
	dwarf_lines__free(sc->lines);
	debuginfod__free(sc->dbgd);
	free(sc->debug_dirs);
	free(sc);
}

/* See symcache.h. */
void symcache__stats(const struct symcache *sc, struct symcache_stats *out)
{
	struct dwarf_lines_stats ls;

	*out = sc->stats;
	pthread_mutex_lock((pthread_mutex_t *)&sc->lock);
	out->building = sc->inflight;
	pthread_mutex_unlock((pthread_mutex_t *)&sc->lock);
	if (!sc->lines)
		return;
	dwarf_lines__stats(sc->lines, &ls);
	out->line_lookups = ls.lookups;
	out->line_hits = ls.hits;
	out->line_bytes = ls.bytes;
	out->line_evictions = ls.evictions;
}

static void front_clear(struct symcache *sc)
{
	memset(sc->front, 0, sizeof(sc->front));
}

static void hash_unlink(struct symcache *sc, struct symtab *t)
{
	struct symtab **pp = &sc->buckets[t->hash % SC_BUCKETS];

	while (*pp && *pp != t)
		pp = &(*pp)->hnext;
	if (*pp)
		*pp = t->hnext;
}

/* Removes a ready entry (evicted, or to be rebuilt). */
static void table_remove(struct symcache *sc, struct symtab *t)
{
	sc->epoch++;
	hash_unlink(sc, t);
	lru__unlink(&sc->lru, &t->lru);
	front_clear(sc);
	sc->stats.tables--;
	sc->stats.bytes -= t->bytes;
	if (sc->lines)
		dwarf_lines__forget(sc->lines, t->gen);
	symtab_free(t);
}

static bool was_evicted(const struct symcache *sc, uint64_t hash)
{
	size_t n = sc->nevicted < SC_EVICTED_MEMORY ? sc->nevicted : SC_EVICTED_MEMORY;

	for (size_t i = 0; i < n; i++)
		if (sc->evicted[i] == hash)
			return true;
	return false;
}

/* Evicts least recently used indexes until under the bound, never keep itself. */
static void evict(struct symcache *sc, const struct symtab *keep)
{
	while (sc->stats.bytes > sc->max_bytes && sc->lru.tail && sc->lru.tail != &keep->lru) {
		struct symtab *t = lru_entry(sc->lru.tail, struct symtab, lru);

		sc->stats.evictions++;
		sc->evicted[sc->nevicted++ % SC_EVICTED_MEMORY] = t->hash;
		table_remove(sc, t);
	}
}

/* Builds t's index from its request (any thread). */
static void build_entry(struct symcache *sc, struct symtab *t)
{
	uint64_t t0 = clock__ns(CLOCK_THREAD_CPUTIME_ID);

	t->ix = symindex__build(&sc->icfg, t->req_ef, t->req_root);
	if (!t->ix && errno != ECANCELED)
		pr_warn("cannot index %s: %s", elf_file__path(t->req_ef), strerror(errno));
	t->cpu_ns = clock__ns(CLOCK_THREAD_CPUTIME_ID) - t0;
	if (t->ix)
		pr_debug("indexed %s: %u symbols in %.1f ms of CPU", elf_file__path(t->req_ef),
			 symindex__count(t->ix), (double)t->cpu_ns / 1e6);
	elf_file__put(t->req_ef);
	t->req_ef = NULL;
	free(t->req_root);
	t->req_root = NULL;
}

/* Makes a built entry ready for lookups (consumer thread). False: it was dropped. */
static bool install(struct symcache *sc, struct symtab *t)
{
	sc->stats.build_cpu_ns += t->cpu_ns;
	if (t->cpu_ns > sc->stats.build_max_cpu_ns)
		sc->stats.build_max_cpu_ns = t->cpu_ns;
	if (!t->ix) {
		/* out of memory (or shut down): nothing kept, a later lookup tries again */
		hash_unlink(sc, t);
		front_clear(sc);
		symtab_free(t);
		return false;
	}
	if (symindex__count(t->ix) > sc->stats.build_max_syms)
		sc->stats.build_max_syms = symindex__count(t->ix);
	t->state = ST_READY;
	t->bytes = sizeof(*t) + strlen(t->key) + 1 + symindex__bytes(t->ix);
	lru__push_head(&sc->lru, &t->lru);
	sc->stats.tables++;
	sc->stats.bytes += t->bytes;
	evict(sc, t);
	return true;
}

static void *builder_main(void *arg)
{
	struct symcache *sc = arg;

	pthread_setname_np(pthread_self(), "mlprof-symbols"); /* top -H, perf */
	pthread_mutex_lock(&sc->lock);
	for (;;) {
		struct symtab *t;

		while (!sc->stop && !sc->q_head)
			pthread_cond_wait(&sc->wake, &sc->lock);
		if (sc->stop)
			break;
		t = sc->q_head;
		sc->q_head = t->qnext;
		if (!sc->q_head)
			sc->q_tail = NULL;
		pthread_mutex_unlock(&sc->lock);
		if (sc->test_delay_ms)
			usleep(sc->test_delay_ms * 1000u);
		build_entry(sc, t);
		pthread_mutex_lock(&sc->lock);
		t->qnext = sc->done;
		sc->done = t;
		__atomic_add_fetch(&sc->ndone, 1, __ATOMIC_RELEASE);
		pthread_cond_broadcast(&sc->done_cv);
	}
	pthread_mutex_unlock(&sc->lock);
	return NULL;
}

/* Takes in what the builder finished (consumer thread). */
static void collect(struct symcache *sc)
{
	struct symtab *t, *next, *rev = NULL;

	if (!__atomic_load_n(&sc->ndone, __ATOMIC_ACQUIRE))
		return;
	pthread_mutex_lock(&sc->lock);
	t = sc->done;
	sc->done = NULL;
	sc->inflight -= sc->ndone;
	__atomic_store_n(&sc->ndone, 0, __ATOMIC_RELAXED);
	pthread_mutex_unlock(&sc->lock);
	for (; t; t = next) { /* oldest first */
		next = t->qnext;
		t->qnext = rev;
		rev = t;
	}
	for (t = rev; t; t = next) {
		next = t->qnext;
		t->qnext = NULL;
		if (install(sc, t))
			sc->ready_gen++;
	}
}

/* See symcache.h. */
uint64_t symcache__ready_gen(struct symcache *sc)
{
	collect(sc);
	return sc->ready_gen;
}

/* See symcache.h. */
uint64_t symcache__epoch(const struct symcache *sc)
{
	/* a debuginfod fetch that ended may name what was unnamed: its indexes get rebuilt */
	return sc->epoch + (sc->dbgd ? debuginfod__generation(sc->dbgd) << 32 : 0);
}

/* See symcache.h. */
unsigned symcache__wait(struct symcache *sc, int timeout_ms)
{
	uint64_t deadline =
		clock__mono_ns() + (uint64_t)(timeout_ms > 0 ? timeout_ms : 0) * 1000000ull;
	unsigned left;

	if (!sc->started)
		return 0;
	pthread_mutex_lock(&sc->lock);
	while (sc->inflight > sc->ndone) {
		uint64_t now = clock__mono_ns();
		struct timespec ts;

		if (now >= deadline)
			break;
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_sec += (time_t)((deadline - now) / 1000000000ull);
		ts.tv_nsec += (long)((deadline - now) % 1000000000ull);
		if (ts.tv_nsec >= 1000000000L) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000L;
		}
		pthread_cond_timedwait(&sc->done_cv, &sc->lock, &ts);
	}
	pthread_mutex_unlock(&sc->lock);
	collect(sc);
	pthread_mutex_lock(&sc->lock);
	left = sc->inflight;
	pthread_mutex_unlock(&sc->lock);
	return left;
}

/*
 * Cache key: the build id, or (without one) path, size and a hash of the ELF and section
 * headers, so that a rebuilt file at the same path gets a new index; then "@" and the
 * file's identity (device, inode, size, ctime; a unique id for in-memory images), so that
 * a file claiming another's build id (a container's, a user's) builds its own index and
 * never renames the frames of the file it imitates. Returns a malloc'd key, NULL on ENOMEM.
 */
static char *make_key(const struct elf_file *ef)
{
	const char *bid = elf_file__build_id(ef);
	const uint8_t *data;
	char id[96], *key;
	size_t len;
	uint64_t h;

	elf_file__identity_key(ef, id, sizeof(id));
	if (bid)
		return asprintf(&key, "%s@%s", bid, id) < 0 ? NULL : key;
	data = elf_file__data(ef, &len);
	h = hash__fnv1a(data, len < 64 ? len : 64, HASH_FNV1A_INIT);
	if (len >= 64) {
		Elf64_Ehdr eh;
		uint64_t sz;

		memcpy(&eh, data, sizeof(eh));
		sz = (uint64_t)eh.e_shnum * eh.e_shentsize;
		if (eh.e_shoff <= len && sz <= len - eh.e_shoff && sz <= (64u << 10))
			h = hash__fnv1a(data + eh.e_shoff, sz, h);
	}
	if (asprintf(&key, "path:%s:%zu:%016llx@%s", elf_file__path(ef), len, (unsigned long long)h,
		     id) < 0)
		return NULL;
	return key;
}

/*
 * Starts the index of ef: built now (inline mode) or queued for the builder. Returns the
 * entry, or NULL with errno ENOMEM / EBUSY (queue full).
 */
static struct symtab *request(struct symcache *sc, struct elf_file *ef, const char *root, char *key,
			      uint64_t hash)
{
	struct symtab *t;

	if (sc->background) {
		unsigned inflight;

		pthread_mutex_lock(&sc->lock);
		inflight = sc->inflight;
		pthread_mutex_unlock(&sc->lock);
		if (inflight >= SC_QUEUE_MAX) {
			free(key);
			sc->stats.queue_full++;
			errno = EBUSY;
			return NULL;
		}
	}
	t = calloc(1, sizeof(*t));
	if (!t || (root && !(t->req_root = strdup(root)))) {
		free(t);
		free(key);
		errno = ENOMEM;
		return NULL;
	}
	t->key = key;
	t->hash = hash;
	t->gen = sc->next_gen++;
	t->state = ST_BUILDING;
	t->req_ef = elf_file__get(ef);
	t->hnext = sc->buckets[hash % SC_BUCKETS];
	sc->buckets[hash % SC_BUCKETS] = t;
	sc->stats.builds++;
	if (was_evicted(sc, hash))
		sc->stats.rebuilds++;
	if (!sc->background) {
		build_entry(sc, t);
		return install(sc, t) ? t : (errno = ENOMEM, NULL);
	}
	pthread_mutex_lock(&sc->lock);
	if (sc->q_tail)
		sc->q_tail->qnext = t;
	else
		sc->q_head = t;
	sc->q_tail = t;
	sc->inflight++;
	pthread_cond_signal(&sc->wake);
	pthread_mutex_unlock(&sc->lock);
	return t;
}

/* The entry for ef (ready, building, or just requested); NULL with errno. */
static struct symtab *entry_for(struct symcache *sc, struct elf_file *ef, const char *root)
{
	uint64_t serial = elf_file__serial(ef);
	struct front_slot *fs = &sc->front[(serial * 0x9e3779b97f4a7c15ull >> 56) % SC_FRONT_SLOTS];
	struct symtab *t;
	uint64_t hash, dgen = 0;
	bool pending;
	char *key;

	if (fs->serial == serial && fs->t->state == ST_READY &&
	    (!fs->pending || debuginfod__generation(sc->dbgd) == fs->dgen))
		return fs->t;
	key = make_key(ef);
	if (!key) {
		errno = ENOMEM;
		return NULL;
	}
	hash = hash__str(key);
	for (t = sc->buckets[hash % SC_BUCKETS]; t; t = t->hnext)
		if (t->hash == hash && strcmp(t->key, key) == 0)
			break;
	pending = t && t->state == ST_READY && symindex__debug_pending(t->ix, &dgen);
	if (pending && debuginfod__generation(sc->dbgd) != dgen) {
		/* a debuginfod fetch ended since t was built: build it again with what came */
		table_remove(sc, t);
		t = NULL;
	}
	if (t) {
		free(key);
		if (t->state == ST_READY) {
			fs->serial = serial;
			fs->t = t;
			fs->pending = pending;
			fs->dgen = dgen;
		}
		return t;
	}
	return request(sc, ef, root, key, hash); /* takes key */
}

static struct demangled **dm_slot(struct symcache *sc, uint64_t gen, uint32_t idx)
{
	uint64_t h = (gen * 0x9e3779b97f4a7c15ull) ^ ((uint64_t)idx * 0xff51afd7ed558ccdull);

	return &sc->dm[(h >> 32) % SC_DEMANGLE_BUCKETS];
}

/* The demangled form of symbol idx of index gen (plain is its mangled name), kept. */
static const char *demangled_name(struct symcache *sc, uint64_t gen, uint32_t idx,
				  const char *plain)
{
	struct demangled **slot = dm_slot(sc, gen, idx), *d;
	char *name;
	size_t len;

	for (d = *slot; d; d = d->hnext) {
		if (d->gen == gen && d->idx == idx) {
			lru__touch(&sc->dm_lru, &d->lru);
			return d->name;
		}
	}
	name = demangle(plain);
	if (!name)
		return plain;
	sc->stats.demangled++;
	len = strlen(name);
	if (len > SC_DEMANGLE_MAX_LEN) {
		memcpy(name + SC_DEMANGLE_MAX_LEN - 3, "...", 4);
		len = SC_DEMANGLE_MAX_LEN;
	}
	d = malloc(sizeof(*d) + len + 1);
	if (!d) {
		/* not kept: shown from the scratch buffer this once */
		snprintf(sc->name, sizeof(sc->name), "%s", name);
		free(name);
		return sc->name;
	}
	memcpy(d->name, name, len + 1);
	free(name);
	d->gen = gen;
	d->idx = idx;
	d->bytes = sizeof(*d) + len + 1;
	d->hnext = *slot;
	*slot = d;
	lru__push_head(&sc->dm_lru, &d->lru);
	sc->stats.demangle_bytes += d->bytes;
	/* over the bound: the least recently shown go (never the one just made) */
	while (sc->stats.demangle_bytes > sc->demangle_max && sc->dm_lru.tail != &d->lru) {
		struct demangled *old = lru_entry(sc->dm_lru.tail, struct demangled, lru);
		struct demangled **pp = dm_slot(sc, old->gen, old->idx);

		while (*pp != old)
			pp = &(*pp)->hnext;
		*pp = old->hnext;
		lru__unlink(&sc->dm_lru, &old->lru);
		sc->stats.demangle_bytes -= old->bytes;
		sc->stats.demangle_evictions++;
		free(old);
	}
	return d->name;
}

/* Names a Go function (with its file and line) from the binary's .gopclntab. */
static int go_lookup(const struct gopclntab *go, uint64_t vaddr, struct sym_result *out)
{
	struct gopclntab_func f;
	int err;

	err = gopclntab__lookup(go, vaddr, true, &f);
	if (err)
		return err;
	out->name = f.name;
	out->offset = vaddr - f.entry;
	out->source = "gopclntab";
	out->file = f.file;
	out->line = f.line;
	out->start_line = f.file ? f.start_line : 0;
	return 0;
}

/* Source file and line of vaddr from the DWARF of t's lines file, when it has them. */
static void add_line(struct symcache *sc, const struct symtab *t, uint64_t vaddr,
		     struct sym_result *out)
{
	struct elf_file *lef = sc->lines ? symindex__lines_file(t->ix) : NULL;
	struct elf_identity id;
	struct src_line sl;

	/* the path is reopened: only the file that was checked and mapped is read */
	if (!lef || !elf_file__identity(lef, &id))
		return;
	if (dwarf_lines__lookup(sc->lines, t->gen, elf_file__path(lef), &id, vaddr, &sl) == 0) {
		out->file = sl.file;
		out->line = sl.line;
		out->start_line = sl.start_line;
	}
}

/* Names vaddr of index gen from a function named lately: true when one covers it. */
static bool recent_find(struct symcache *sc, uint64_t gen, uint64_t vaddr, struct sym_result *out)
{
	for (unsigned i = 0; i < SC_RECENT; i++) {
		const struct recent_fn *r = &sc->recent[i];

		if (r->gen == gen && vaddr >= r->lo && vaddr < r->hi) {
			out->name = sc->recent_name[i].name;
			out->offset = vaddr - r->lo;
			out->source = sc->recent_name[i].source;
			return true;
		}
	}
	return false;
}

/* Remembers the function [lo, lo + size) of index gen as out names it (the oldest goes). */
static void recent_put(struct symcache *sc, uint64_t gen, uint64_t lo, uint64_t size,
		       const struct sym_result *out)
{
	struct recent_fn *r = &sc->recent[sc->next_recent];
	struct recent_name *rn = &sc->recent_name[sc->next_recent];
	size_t len = strlen(out->name);

	if (!size || len >= sizeof(rn->name))
		return;
	memcpy(rn->name, out->name, len + 1);
	rn->source = out->source;
	r->gen = gen;
	r->lo = lo;
	r->hi = lo + size;
	sc->next_recent = (sc->next_recent + 1) % SC_RECENT;
}

/* See symcache.h. stats.hits counts lookups whose index was ready. */
int symcache__lookup(struct symcache *sc, struct elf_file *ef, const char *root_prefix,
		     uint64_t vaddr, struct sym_result *out)
{
	struct symindex_hit hit;
	uint64_t builds = sc->stats.builds;
	struct symtab *t;
	const char *plain;

	sc->stats.lookups++;
	collect(sc);
	t = entry_for(sc, ef, root_prefix);
	if (!t)
		return errno == EBUSY ? -EBUSY : -ENOMEM;
	if (t->state != ST_READY) {
		sc->stats.waits++;
		return -EAGAIN;
	}
	if (sc->stats.builds == builds)
		sc->stats.hits++; /* (not the lookup that built it inline) */
	lru__touch(&sc->lru, &t->lru);

	if (symindex__go(t->ix) && go_lookup(symindex__go(t->ix), vaddr, out) == 0)
		return 0;
	out->file = NULL;
	out->line = out->start_line = 0;
	if (recent_find(sc, t->gen, vaddr, out)) {
		sc->stats.recent_hits++;
		add_line(sc, t, vaddr, out);
		return 0;
	}
	if (symindex__find(t->ix, vaddr, &hit))
		return -ENOENT;
	plain = symindex__plain_name(&hit, sc->name, sizeof(sc->name));
	out->name = plain[0] == '_' && (plain[1] == 'Z' || plain[1] == 'R')
			    ? demangled_name(sc, t->gen, hit.idx, plain)
			    : plain;
	out->offset = hit.offset;
	out->source = hit.source;
	recent_put(sc, t->gen, vaddr - hit.offset, hit.size, out);
	add_line(sc, t, vaddr, out);
	return 0;
}
