// SPDX-License-Identifier: Apache-2.0
// Exporter core: bounded queue, sender thread, retries with jittered backoff, spool.
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "export/export_backend.h"
#include "export/export_http.h"
#include "export/exporter.h"
#include "export/spool.h"
#include "profile/pprof_limits.h"
#include "util/clock.h"
#include "util/fsutil.h"

#define LOG_MODULE "exporter"
#include "util/log.h"
#include "util/redact.h"

#define SEEN_ERRORS   64
#define FREE_FLUSH_MS 500	 /* exporter__free's own flush bound */
#define QUEUE_SLACK   (8u << 20) /* least room over queue_max_bytes while the spool writes */

struct qitem {
	struct qitem *next;
	uint64_t order; /* global delivery order, shared with the spool's file numbers */
	size_t bytes;
	struct export_item item; /* owns labels and pprof */
};

struct exporter {
	struct exporter_config cfg; /* deep copy */
	char **owned;		    /* strings owned by cfg */
	int n_owned;
	bool own_failed; /* a copy into owned failed (out of memory) */
	const struct export_ops *ops;
	struct export_http *http; /* NULL for the file backend */
	struct spool *spool;

	/*
	 * Guards the queue, the flags and the stats, and is never held across disk or network
	 * I/O: exporter__submit (the agent's sampling thread) and exporter__stats (/metrics)
	 * take it. The spool belongs to the sender thread alone, outside the lock.
	 */
	pthread_mutex_t lock;
	pthread_cond_t cond; /* wakes the sender */
	pthread_cond_t idle; /* wakes flush() */
	pthread_t thread;
	bool thread_started, stop;
	bool flush_ran_out; /* the last exporter__flush ended at its deadline */
	struct qitem *head, *tail;
	size_t n_queued;
	bool busy; /* sender holds an item outside the queue */
	bool down; /* backend unreachable: queue drains to the spool */
	uint64_t next_probe_ms;
	unsigned int probe_backoff_ms;
	uint64_t rnd;
	uint32_t seen[SEEN_ERRORS];
	int n_seen;
	bool down_logged;
	bool last_failed;    /* the last attempt failed: the next one is a retry */
	uint64_t next_order; /* the next item's order (continues the spool's numbering) */
	char url_log[1024];  /* cfg.url as logs show it (credentials redacted) */
	uint64_t sp_oldest;  /* the spool's oldest order (UINT64_MAX: empty), sender-updated */
	bool full_logged;    /* a drop for a full queue was logged (until one fits again) */
	struct exporter_stats st;
};

static uint64_t now_ms(void)
{
	return clock__mono_ns() / 1000000;
}

static uint64_t rnd_next(struct exporter *e)
{
	/* xorshift64*: jitter only, no need for quality */
	e->rnd ^= e->rnd >> 12;
	e->rnd ^= e->rnd << 25;
	e->rnd ^= e->rnd >> 27;
	return e->rnd * 2685821657736338717ULL;
}

/* Full jitter: uniform in [min, min(max, min * 2^attempt)]. */
static unsigned int backoff_ms(struct exporter *e, unsigned int attempt)
{
	uint64_t cap = e->cfg.backoff_min_ms;
	unsigned int i;

	for (i = 0; i < attempt && cap < e->cfg.backoff_max_ms; i++)
		cap *= 2;
	if (cap > e->cfg.backoff_max_ms)
		cap = e->cfg.backoff_max_ms;
	if (cap <= e->cfg.backoff_min_ms)
		return (unsigned int)cap;
	return e->cfg.backoff_min_ms +
	       (unsigned int)(rnd_next(e) % (cap - e->cfg.backoff_min_ms + 1));
}

const struct exporter_config *exporter__config(const struct exporter *e)
{
	return &e->cfg;
}

enum export_status exporter__http_post(struct exporter *e, const char *url,
				       const char *content_type, const char *const *hdrs,
				       const void *body, size_t len, struct export_result *res)
{
	return export_http__post(e->http, url, content_type, hdrs, body, len, res);
}

/* ---- queue, spool and the sender thread ---- */

static void qitem_free(struct qitem *q)
{
	int i;

	if (!q)
		return;
	for (i = 0; i < q->item.n_labels; i++) {
		free((char *)q->item.labels[i].name);
		free((char *)q->item.labels[i].value);
	}
	free((void *)q->item.labels);
	free((void *)q->item.pprof);
	free(q);
}

static struct qitem *qitem_copy(const struct export_item *it)
{
	struct qitem *q = calloc(1, sizeof(*q));
	struct label_pair *l;
	uint8_t *pp;
	int i;

	if (!q)
		return NULL;
	l = calloc(it->n_labels ? (size_t)it->n_labels : 1, sizeof(*l));
	pp = malloc(it->pprof_len ? it->pprof_len : 1);
	q->item = *it;
	q->item.labels = l;
	q->item.pprof = pp;
	q->item.n_labels = 0;
	if (!l || !pp)
		goto fail;
	memcpy(pp, it->pprof, it->pprof_len);
	q->bytes = sizeof(*q) + it->pprof_len;
	for (i = 0; i < it->n_labels; i++) {
		l[i].name = strdup(it->labels[i].name ? it->labels[i].name : "");
		l[i].value = strdup(it->labels[i].value ? it->labels[i].value : "");
		q->item.n_labels = i + 1;
		if (!l[i].name || !l[i].value)
			goto fail;
		q->bytes += strlen(l[i].name) + strlen(l[i].value) + 2 + sizeof(*l);
	}
	return q;
fail:
	if (!l)
		q->item.labels = NULL;
	qitem_free(q);
	errno = ENOMEM;
	return NULL;
}

/*
 * The sender's view of the spool, copied for the other threads. Sender thread only (or
 * before it starts), lock held; reads no disk.
 */
static void sync_spool_stats(struct exporter *e, uint64_t oldest)
{
	struct spool_stats ss;

	if (!e->spool)
		return;
	e->sp_oldest = oldest;
	spool__stats(e->spool, &ss);
	e->st.spool_bytes = ss.bytes;
	e->st.spool_files = ss.files;
	e->st.spool_dropped = ss.dropped;
	e->st.spool_corrupt = ss.corrupt;
}

/*
 * Writes one item to the spool under its order number. Sender thread; lock held on entry
 * and exit, dropped around the write (and its fsync). Frees nothing.
 */
static int spool_item(struct exporter *e, uint64_t order, const struct export_item *it)
{
	uint64_t oldest;
	int err;

	if (!e->spool) {
		e->st.queue_dropped++;
		return -ENOSPC;
	}
	pthread_mutex_unlock(&e->lock);
	err = spool__put(e->spool, order, it);
	oldest = spool__oldest(e->spool);
	pthread_mutex_lock(&e->lock);
	if (err) {
		pr_warn("cannot spool profile seq %" PRIu64 ": %s (dropped)", it->seq,
			strerror(-err));
		e->st.queue_dropped++;
	} else {
		e->st.spooled++;
		pr_debug("spooled seq %" PRIu64 " start_ns %" PRId64, it->seq, it->start_ns);
	}
	sync_spool_stats(e, oldest);
	return err;
}

/* Takes the oldest item off the queue (NULL: empty). Lock held. */
static struct qitem *queue_pop(struct exporter *e)
{
	struct qitem *q = e->head;

	if (!q)
		return NULL;
	e->head = q->next;
	if (!e->head)
		e->tail = NULL;
	e->n_queued--;
	e->st.queue_bytes -= q->bytes;
	return q;
}

/*
 * Moves every queued item to the spool, oldest first. Sender thread, lock held (dropped
 * for each write; items submitted meanwhile are newer and go after). busy stays set while
 * an item is between the queue and the spool, so that flush() waits for it.
 */
static void spill_queue(struct exporter *e)
{
	struct qitem *q;
	bool was_busy = e->busy;

	while ((q = queue_pop(e))) {
		e->busy = true;
		spool_item(e, q->order, &q->item);
		qitem_free(q);
	}
	e->busy = was_busy;
}

/* See exporter.h. */
size_t exporter__queue_hard_max(size_t queue_max_bytes, bool spool)
{
	size_t q = queue_max_bytes;

	return spool ? q + (q > QUEUE_SLACK ? q : QUEUE_SLACK) : q;
}

static uint32_t hash_err(long status, const char *msg)
{
	uint32_t h = 2166136261u ^ (uint32_t)status;

	for (; *msg; msg++)
		h = (h ^ (uint8_t)*msg) * 16777619u;
	return h;
}

/* Logs a rejection once per distinct (status, message). */
static void log_rejected(struct exporter *e, const struct export_item *it,
			 const struct export_result *r)
{
	uint32_t h = hash_err(r->http_status, r->message);
	int i;

	for (i = 0; i < e->n_seen; i++)
		if (e->seen[i] == h)
			return;
	if (e->n_seen < SEEN_ERRORS)
		e->seen[e->n_seen++] = h;
	if (r->http_status == 401 && strstr(r->message, "no org id"))
		pr_err("%s: server requires a tenant (HTTP 401 \"%s\"): set the tenant "
		       "(X-Scope-OrgID) in the exporter configuration",
		       e->url_log, r->message);
	else if (r->http_status == 401 || r->http_status == 403)
		pr_err("%s: authentication failed (HTTP %ld \"%s\"): check the credentials",
		       e->url_log, r->http_status, r->message);
	else if (r->http_status == 404)
		pr_err("%s: HTTP 404 \"%s\": wrong URL? (expected the Pyroscope base URL)%s%s%s",
		       e->url_log, r->message,
		       e->spool ? "; profiles kept in the spool directory " : "; profile dropped",
		       e->spool ? spool__path(e->spool) : "",
		       e->spool ? " (spooled profiles only go to the URL they were made for: move "
				  "the *.spool files into the right URL's directory to send them "
				  "there)"
				: "");
	else
		pr_err("%s rejected profile seq %" PRIu64 " (HTTP %ld): %s; not retried, dropped",
		       e->ops->name, it->seq, r->http_status, r->message);
}

/* Waits up to ms or until stop. Lock held. Returns true when stopping. */
static bool wait_ms(struct exporter *e, unsigned int ms)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += ms / 1000;
	ts.tv_nsec += (long)(ms % 1000) * 1000000;
	if (ts.tv_nsec >= 1000000000) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000;
	}
	while (!e->stop)
		if (pthread_cond_timedwait(&e->cond, &e->lock, &ts))
			break;
	return e->stop;
}

/* One delivery attempt, lock NOT held. Applies the size limits first for HTTP backends. */
static enum export_status attempt(struct exporter *e, const struct export_item *it,
				  struct export_result *r)
{
	struct export_item fit = *it;
	uint8_t *trimmed = NULL;
	size_t tlen = 0;
	enum export_status st;
	uint64_t t0 = now_ms();
	int err;

	memset(r, 0, sizeof(*r));
	if (e->cfg.kind != EXPORTER_FILE) {
		err = pprof_limits__fit(it->pprof, it->pprof_len, &trimmed, &tlen);
		if (err == -EBADMSG) {
			/* not our job to judge: let the server answer */
		} else if (err) {
			snprintf(r->message, sizeof(r->message),
				 "profile cannot be made to fit the server limits: %s",
				 strerror(-err));
			return EXPORT_REJECTED;
		}
		if (trimmed) {
			pthread_mutex_lock(&e->lock);
			e->st.trimmed++;
			pthread_mutex_unlock(&e->lock);
			fit.pprof = trimmed;
			fit.pprof_len = tlen;
		}
	}
	st = e->ops->send(e, &fit, r);
	free(trimmed);
	pthread_mutex_lock(&e->lock);
	if (st == EXPORT_SENT) {
		uint64_t us = (now_ms() - t0) * 1000;

		e->st.last_latency_us = us;
		e->st.latency_us_sum += us;
		e->st.latency_count++;
	}
	e->st.files_deleted += r->files_deleted;
	pthread_mutex_unlock(&e->lock);
	return st;
}

/*
 * Delivers one item with retries. Lock held on entry and exit (dropped around network
 * I/O). Returns true when the item is finished (sent or rejected), false when it must
 * stay (the caller spools it / keeps it spooled).
 */
static bool deliver(struct exporter *e, const struct export_item *it, bool probe)
{
	struct export_result r;
	enum export_status st;
	unsigned int try, tries = probe ? 1 : e->cfg.max_retries + 1;

	for (try = 0; try < tries; try++) {
		if (try && wait_ms(e, backoff_ms(e, try - 1)))
			return false;
		/*
		 * Any attempt after a failed one is a retry: the backoff retries here and the
		 * probes of a down backend with the oldest spooled profile alike.
		 */
		if (e->last_failed)
			e->st.retries++;
		pthread_mutex_unlock(&e->lock);
		st = attempt(e, it, &r);
		pthread_mutex_lock(&e->lock);
		/* a rejection (4xx, a 404 that keeps the profile spooled too) is an answer */
		e->last_failed = st == EXPORT_RETRYABLE;
		if (st == EXPORT_SENT) {
			e->st.pushed++;
			pr_debug("delivered seq %" PRIu64 " start_ns %" PRId64 " (attempt %u)",
				 it->seq, it->start_ns, try + 1);
			if (e->down)
				pr_info("%s: backend reachable again", e->url_log);
			e->down = false;
			e->down_logged = false;
			e->probe_backoff_ms = 0;
			return true;
		}
		if (st == EXPORT_REJECTED && r.http_status == 404 && e->spool) {
			/*
			 * Wrong URL: a configuration error that no retry fixes, but the data
			 * is fine; keep it in the spool for a restart with the right URL.
			 */
			e->st.failed++;
			log_rejected(e, it, &r);
			e->down_logged = true;
			break;
		}
		if (st == EXPORT_REJECTED) {
			e->st.rejected_4xx++;
			log_rejected(e, it, &r);
			return true;
		}
		e->st.failed++;
		pr_debug("seq %" PRIu64 " attempt %u failed: HTTP %ld %s", it->seq, try + 1,
			 r.http_status, r.message);
		if (e->stop)
			return false;
		/*
		 * Newer profiles are waiting: stop retrying this one in memory and treat the
		 * backend as down, so that everything goes to the (durable) spool in order and
		 * the oldest is probed with backoff. A lone item keeps its retries.
		 */
		if (e->spool && e->head && !probe)
			break;
	}
	if (!e->down_logged) {
		if (r.http_status)
			pr_warn("%s: HTTP %ld %s; spooling until it recovers", e->ops->name,
				r.http_status, r.message);
		else
			pr_warn("cannot deliver (%s); spooling until the backend is back",
				r.message);
		e->down_logged = true;
	}
	e->down = true;
	e->probe_backoff_ms = e->probe_backoff_ms ? e->probe_backoff_ms * 2 : e->cfg.backoff_min_ms;
	if (e->probe_backoff_ms > e->cfg.backoff_max_ms)
		e->probe_backoff_ms = e->cfg.backoff_max_ms;
	e->next_probe_ms = now_ms() + backoff_ms(e, 0) / 2 + e->probe_backoff_ms / 2;
	return false;
}

/* Sends the oldest spool file. Sender thread; lock held, dropped for the spool's I/O. */
static void send_from_spool(struct exporter *e, bool probe)
{
	struct spool_record *rec = NULL;
	uint64_t oldest;
	bool done;
	int err;

	e->busy = true;
	pthread_mutex_unlock(&e->lock);
	err = spool__read_oldest(e->spool, &rec);
	oldest = spool__oldest(e->spool);
	pthread_mutex_lock(&e->lock);
	sync_spool_stats(e, oldest);
	if (err) {
		e->busy = false;
		if (err == -ENOMEM) /* the file stays for later: do not spin on it */
			wait_ms(e, e->cfg.backoff_min_ms ? e->cfg.backoff_min_ms : 500);
		return;
	}
	done = deliver(e, &rec->item, probe);
	pthread_mutex_unlock(&e->lock);
	if (done)
		spool__remove(e->spool, rec->order);
	oldest = spool__oldest(e->spool);
	spool__record_free(rec);
	pthread_mutex_lock(&e->lock);
	e->busy = false;
	sync_spool_stats(e, oldest);
}

static void *sender(void *arg)
{
	struct exporter *e = arg;

	pthread_setname_np(pthread_self(), "mlprof-export"); /* top -H, perf */
	pthread_mutex_lock(&e->lock);
	while (!e->stop) {
		uint64_t sp, now = now_ms();
		struct qitem *q;

		/* over the memory bound: the queue goes to disk here, never in submit */
		if (e->spool && e->st.queue_bytes > e->cfg.queue_max_bytes)
			spill_queue(e);
		sp = e->sp_oldest;
		if (e->down && e->spool) {
			/* backend down: keep the queue bounded on disk, probe with the oldest */
			spill_queue(e);
			sp = e->sp_oldest;
			pthread_cond_broadcast(&e->idle);
			if (now < e->next_probe_ms || sp == UINT64_MAX) {
				if (sp == UINT64_MAX)
					e->down = false; /* nothing to probe with: try the queue */
				else
					wait_ms(e, (unsigned int)(e->next_probe_ms - now));
				continue;
			}
			send_from_spool(e, true);
			continue;
		}
		if (sp != UINT64_MAX && (!e->head || sp < e->head->order)) {
			send_from_spool(e, false);
			continue;
		}
		q = queue_pop(e);
		if (!q) {
			pthread_cond_broadcast(&e->idle);
			pthread_cond_wait(&e->cond, &e->lock);
			continue;
		}
		e->busy = true;
		if (!deliver(e, &q->item, false))
			spool_item(e, q->order, &q->item);
		e->busy = false;
		qitem_free(q);
	}
	spill_queue(e);
	pthread_cond_broadcast(&e->idle);
	pthread_mutex_unlock(&e->lock);
	return NULL;
}

int exporter__submit(struct exporter *e, const struct export_item *item)
{
	struct qitem *q;
	int err = 0;

	if (!e || !item || !item->pprof || item->n_labels < 0 || item->n_labels > EXPORT_MAX_LABELS)
		return -EINVAL;
	q = qitem_copy(item);
	if (!q)
		return -ENOMEM;
	/*
	 * Memory only: with a spool the sender moves the queue to disk once it is over
	 * queue_max_bytes; it may be inside one push attempt (bounded by the timeout) or a
	 * stalled write, so the queue may hold up to the hard bound meanwhile. Past that, or
	 * with no spool past the bound, the profile is dropped and counted.
	 */
	pthread_mutex_lock(&e->lock);
	q->order = e->next_order++;
	if (e->st.queue_bytes + q->bytes >
		    exporter__queue_hard_max(e->cfg.queue_max_bytes, e->spool != NULL) ||
	    e->stop) {
		e->st.queue_dropped++;
		err = -ENOSPC;
		if (!e->full_logged)
			pr_warn("exporter queue full (%zu bytes%s): profile seq %" PRIu64
				" dropped, and any more while it stays full (counted in "
				"queue_dropped)",
				e->st.queue_bytes,
				e->spool ? ", the spool writes behind" : ", no spool", item->seq);
		e->full_logged = true;
		qitem_free(q);
	} else {
		e->full_logged = false;
		q->next = NULL;
		if (e->tail)
			e->tail->next = q;
		else
			e->head = q;
		e->tail = q;
		e->n_queued++;
		e->st.queue_bytes += q->bytes;
	}
	pthread_cond_signal(&e->cond);
	pthread_mutex_unlock(&e->lock);
	return err;
}

int exporter__flush(struct exporter *e, unsigned int timeout_ms)
{
	struct timespec ts;
	int left;

	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += timeout_ms / 1000;
	ts.tv_nsec += (long)(timeout_ms % 1000) * 1000000;
	if (ts.tv_nsec >= 1000000000) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000;
	}
	pthread_mutex_lock(&e->lock);
	pthread_cond_signal(&e->cond);
	while ((e->n_queued || e->busy || (!e->down && e->spool && e->sp_oldest != UINT64_MAX)) &&
	       e->thread_started)
		if (pthread_cond_timedwait(&e->idle, &e->lock, &ts))
			break;
	left = (int)e->n_queued + (e->busy ? 1 : 0);
	e->flush_ran_out = left > 0;
	pthread_mutex_unlock(&e->lock);
	return left;
}

const char *exporter__spool_dir(const struct exporter *e)
{
	return e->spool ? spool__path(e->spool) : NULL;
}

void exporter__stats(struct exporter *e, struct exporter_stats *out)
{
	pthread_mutex_lock(&e->lock);
	*out = e->st;
	pthread_mutex_unlock(&e->lock);
}

static const char *own(struct exporter *e, const char *s)
{
	char *c;

	if (!s)
		return NULL;
	c = strdup(s);
	if (!c) {
		e->own_failed = true; /* exporter__new checks once after all copies */
		return NULL;
	}
	e->owned[e->n_owned++] = c;
	return c;
}

void exporter__free(struct exporter *e)
{
	int i;

	if (!e)
		return;
	if (e->thread_started) {
		/*
		 * Bounded: callers flush first with their own deadline; this only lets a
		 * delivery that is about to finish finish (not again when the caller's flush
		 * ran out of time). A transfer still in flight is then aborted at once (its
		 * sockets shut down) and everything undelivered goes to the spool.
		 */
		if (!e->flush_ran_out)
			exporter__flush(e, FREE_FLUSH_MS);
		pthread_mutex_lock(&e->lock);
		__atomic_store_n(&e->stop, true, __ATOMIC_RELAXED);
		pthread_cond_broadcast(&e->cond);
		pthread_mutex_unlock(&e->lock);
		export_http__abort(e->http);
		pthread_join(e->thread, NULL);
	}
	/* the sender spilled the queue on its way out; only a failed start leaves items */
	while (e->head)
		qitem_free(queue_pop(e));
	spool__close(e->spool);
	export_http__free(e->http);
	for (i = 0; i < e->n_owned; i++)
		free(e->owned[i]);
	free(e->owned);
	free((void *)e->cfg.headers);
	pthread_mutex_destroy(&e->lock);
	pthread_cond_destroy(&e->cond);
	pthread_cond_destroy(&e->idle);
	free(e);
}

struct exporter *exporter__new(const struct exporter_config *cfg)
{
	struct exporter *e;
	const char **hdrs = NULL;
	int n_hdr = 0, i, err;

	if (!cfg)
		goto inval;
	if (cfg->kind == EXPORTER_FILE && (!cfg->out_dir || !*cfg->out_dir)) {
		pr_err("file exporter needs an output directory");
		goto inval;
	}
	/* created (with its parents) now, or a clear error at start, not lost profiles later */
	if (cfg->kind == EXPORTER_FILE && (err = fsutil__mkdir_p(cfg->out_dir, 0755))) {
		pr_err("cannot use output directory %s: %s", cfg->out_dir, strerror(-err));
		errno = -err;
		return NULL;
	}
	if (cfg->kind != EXPORTER_FILE && (!cfg->url || strncmp(cfg->url, "http", 4))) {
		char shown[1024];

		pr_err("exporter needs an http:// or https:// URL (got \"%s\")",
		       redact__url(cfg->url, shown, sizeof(shown)));
		goto inval;
	}
	if (cfg->kind > EXPORTER_INGEST)
		goto inval;
	e = calloc(1, sizeof(*e));
	if (!e)
		return NULL;
	pthread_mutex_init(&e->lock, NULL);
	pthread_cond_init(&e->cond, NULL);
	pthread_cond_init(&e->idle, NULL);
	for (n_hdr = 0; cfg->headers && cfg->headers[n_hdr]; n_hdr++)
		;
	e->owned = calloc((size_t)n_hdr + 16, sizeof(*e->owned));
	hdrs = calloc((size_t)n_hdr + 1, sizeof(*hdrs));
	if (!e->owned || !hdrs) {
		free(hdrs);
		err = -ENOMEM;
		goto cleanup;
	}
	e->cfg = *cfg;
	e->cfg.headers = hdrs;
	e->cfg.url = own(e, cfg->url);
	/* "http://host/" and "http://host" address the same API */
	if (e->cfg.url) {
		char *u = (char *)e->cfg.url;
		size_t l = strlen(u);

		while (l && u[l - 1] == '/')
			u[--l] = 0;
	}
	redact__url(e->cfg.url ? e->cfg.url : "", e->url_log, sizeof(e->url_log));
	e->cfg.out_dir = own(e, cfg->out_dir);
	e->cfg.ca_file = own(e, cfg->ca_file);
	e->cfg.basic_user = own(e, cfg->basic_user);
	e->cfg.basic_password = own(e, cfg->basic_password);
	e->cfg.bearer_token = own(e, cfg->bearer_token);
	e->cfg.tenant = own(e, cfg->tenant);
	e->cfg.spool_dir = own(e, cfg->spool_dir);
	for (i = 0; i < n_hdr; i++)
		hdrs[i] = own(e, cfg->headers[i]);
	if (e->own_failed) {
		err = -ENOMEM;
		goto cleanup;
	}
	if (!e->cfg.connect_timeout_ms)
		e->cfg.connect_timeout_ms = 5000;
	if (!e->cfg.timeout_ms)
		e->cfg.timeout_ms = 10000;
	if (!e->cfg.backoff_min_ms)
		e->cfg.backoff_min_ms = 500;
	if (e->cfg.backoff_max_ms < e->cfg.backoff_min_ms)
		e->cfg.backoff_max_ms = e->cfg.backoff_min_ms * 64;
	if (!e->cfg.queue_max_bytes)
		e->cfg.queue_max_bytes = 64u << 20;
	e->ops = cfg->kind == EXPORTER_PUSH	? &export_push_ops
		 : cfg->kind == EXPORTER_INGEST ? &export_ingest_ops
						: &export_file_ops;
	e->rnd = (uint64_t)now_ms() ^ ((uint64_t)(uintptr_t)e << 16) ^ 0x9e3779b97f4a7c15ULL;
	if (cfg->kind != EXPORTER_FILE) {
		e->http = export_http__new(&e->cfg, &e->stop);
		if (!e->http) {
			err = -ENOMEM;
			goto cleanup;
		}
	}
	if (e->cfg.spool_dir && *e->cfg.spool_dir) {
		char dest[4096], dir[PATH_MAX];

		/*
		 * Profiles spooled for one URL and tenant never go to another. The URL is taken
		 * without its credentials: they never reach the disk (the DESTINATION file), and
		 * a rotated password keeps its spool.
		 */
		snprintf(dest, sizeof(dest), "%s %s tenant=%s", e->ops->name, e->url_log,
			 e->cfg.tenant ? e->cfg.tenant : "");
		err = spool__dest_dir(e->cfg.spool_dir, dest, dir, sizeof(dir));
		if (err)
			goto cleanup;
		e->spool = spool__open(dir, e->cfg.spool_max_bytes, e->cfg.spool_max_age_s);
		if (!e->spool) {
			err = -errno;
			goto cleanup;
		}
		e->next_order = spool__next_order(e->spool);
		sync_spool_stats(e, spool__oldest(e->spool));
	} else {
		e->next_order = 1;
		e->sp_oldest = UINT64_MAX;
	}
	err = -pthread_create(&e->thread, NULL, sender, e);
	if (err) {
		pr_err("cannot start the sender thread: %s", strerror(-err));
		goto cleanup;
	}
	e->thread_started = true;
	return e;
cleanup:
	exporter__free(e);
	errno = -err;
	return NULL;
inval:
	errno = EINVAL;
	return NULL;
}
