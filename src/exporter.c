// SPDX-License-Identifier: Apache-2.0
// Exporter core: bounded queue, sender thread, retries with jittered backoff, spool, limits.
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <curl/curl.h>
#include <zlib.h>

#include "exporter.h"
#include "spool.h"
#include "profile.pb-c.h"

#define LOG_MODULE "exporter"
#include "log.h"

/* Pyroscope's ingestion limits (distributor validation). */
#define LIMIT_PROFILE_BYTES (4u << 20)
#define LIMIT_SAMPLES	    16000
#define MAX_INFLATE	    (64u << 20)
#define SEEN_ERRORS	    64
#define FREE_FLUSH_MS	    500 /* exporter__free's own flush bound */

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
	CURL *curl;
	struct spool *spool;

	pthread_mutex_t lock;
	pthread_cond_t cond; /* wakes the sender */
	pthread_cond_t idle; /* wakes flush() */
	pthread_t thread;
	bool thread_started, stop;
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
	uint64_t next_order; /* order numbers when there is no spool */
	struct exporter_stats st;
};

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
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

/* ---- HTTP ---- */

struct body {
	char buf[1024];
	size_t len;
};

static size_t on_body(char *p, size_t sz, size_t n, void *ctx)
{
	struct body *b = ctx;
	size_t len = sz * n, room = sizeof(b->buf) - 1 - b->len;

	memcpy(b->buf + b->len, p, len < room ? len : room);
	b->len += len < room ? len : room;
	b->buf[b->len] = 0;
	return len;
}

/* Extracts "message" from Pyroscope's {"code":..,"message":".."}; else the raw text. */
static void server_message(const char *body, char *out, size_t len)
{
	const char *m = strstr(body, "\"message\"");
	size_t i = 0;

	if (m && (m = strchr(m + 9, '"'))) {
		for (m++; *m && *m != '"' && i + 1 < len; m++) {
			if (*m == '\\' && m[1])
				m++;
			out[i++] = *m;
		}
		out[i] = 0;
		return;
	}
	if (snprintf(out, len, "%s", body) >= (int)len)
		pr_debug("server message truncated to %zu bytes", len - 1);
	for (i = 0; out[i]; i++)
		if (out[i] == '\n' || out[i] == '\r')
			out[i] = ' ';
}

/* Aborts a transfer in flight once exporter__free asked the sender to stop. */
static int on_progress(void *ctx, curl_off_t dlt, curl_off_t dl, curl_off_t ult, curl_off_t ul)
{
	struct exporter *e = ctx;

	return __atomic_load_n(&e->stop, __ATOMIC_RELAXED) ? 1 : 0;
}

enum export_status exporter__http_post(struct exporter *e, const char *url,
				       const char *content_type, const char *const *hdrs,
				       const void *body, size_t len, struct export_result *res)
{
	const struct exporter_config *c = &e->cfg;
	struct curl_slist *h = NULL, *nh;
	struct body rb = {.len = 0};
	char line[1024];
	CURLcode rc;
	long status = 0;
	int i;

	res->http_status = 0;
	res->message[0] = 0;
	curl_easy_reset(e->curl);
	snprintf(line, sizeof(line), "Content-Type: %s", content_type);
	nh = curl_slist_append(h, line);
	h = nh ? nh : h;
	if (c->tenant && *c->tenant) {
		snprintf(line, sizeof(line), "X-Scope-OrgID: %s", c->tenant);
		nh = curl_slist_append(h, line);
		h = nh ? nh : h;
	}
	if (c->bearer_token && *c->bearer_token) {
		snprintf(line, sizeof(line), "Authorization: Bearer %s", c->bearer_token);
		nh = curl_slist_append(h, line);
		h = nh ? nh : h;
	}
	for (i = 0; hdrs && hdrs[i]; i++) {
		nh = curl_slist_append(h, hdrs[i]);
		h = nh ? nh : h;
	}
	for (i = 0; c->headers && c->headers[i]; i++) {
		nh = curl_slist_append(h, c->headers[i]);
		h = nh ? nh : h;
	}
	/* no "Expect: 100-continue" round trip for big bodies */
	nh = curl_slist_append(h, "Expect:");
	h = nh ? nh : h;
	if (!h) {
		snprintf(res->message, sizeof(res->message), "out of memory");
		return EXPORT_RETRYABLE;
	}
	curl_easy_setopt(e->curl, CURLOPT_URL, url);
	curl_easy_setopt(e->curl, CURLOPT_POST, 1L);
	curl_easy_setopt(e->curl, CURLOPT_POSTFIELDS, body);
	curl_easy_setopt(e->curl, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)len);
	curl_easy_setopt(e->curl, CURLOPT_HTTPHEADER, h);
	curl_easy_setopt(e->curl, CURLOPT_USERAGENT, "mlprof/" MLPROF_VERSION);
	curl_easy_setopt(e->curl, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(e->curl, CURLOPT_CONNECTTIMEOUT_MS, (long)c->connect_timeout_ms);
	curl_easy_setopt(e->curl, CURLOPT_TIMEOUT_MS, (long)c->timeout_ms);
	curl_easy_setopt(e->curl, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(e->curl, CURLOPT_WRITEDATA, &rb);
	curl_easy_setopt(e->curl, CURLOPT_NOPROGRESS, 0L);
	curl_easy_setopt(e->curl, CURLOPT_XFERINFOFUNCTION, on_progress);
	curl_easy_setopt(e->curl, CURLOPT_XFERINFODATA, e);
	curl_easy_setopt(e->curl, CURLOPT_SSL_VERIFYPEER, c->insecure_skip_verify ? 0L : 1L);
	curl_easy_setopt(e->curl, CURLOPT_SSL_VERIFYHOST, c->insecure_skip_verify ? 0L : 2L);
	if (c->ca_file && *c->ca_file)
		curl_easy_setopt(e->curl, CURLOPT_CAINFO, c->ca_file);
	if (c->basic_user && *c->basic_user) {
		curl_easy_setopt(e->curl, CURLOPT_HTTPAUTH, (long)CURLAUTH_BASIC);
		curl_easy_setopt(e->curl, CURLOPT_USERNAME, c->basic_user);
		curl_easy_setopt(e->curl, CURLOPT_PASSWORD,
				 c->basic_password ? c->basic_password : "");
	}
	rc = curl_easy_perform(e->curl);
	curl_slist_free_all(h);
	if (rc != CURLE_OK) {
		snprintf(res->message, sizeof(res->message), "%s: %s", url, curl_easy_strerror(rc));
		return EXPORT_RETRYABLE;
	}
	curl_easy_getinfo(e->curl, CURLINFO_RESPONSE_CODE, &status);
	res->http_status = status;
	if (status >= 200 && status < 300)
		return EXPORT_SENT;
	server_message(rb.buf, res->message, sizeof(res->message));
	if (status == 429 || status >= 500 || status == 408)
		return EXPORT_RETRYABLE;
	return EXPORT_REJECTED;
}

/* ---- pprof limits ---- */

static bool is_gzip(const uint8_t *p, size_t len)
{
	return len >= 2 && p[0] == 0x1f && p[1] == 0x8b;
}

/* Inflates gzip data (bounded by MAX_INFLATE). Returns 0 or -errno. */
static int gunzip(const uint8_t *in, size_t len, uint8_t **out, size_t *out_len)
{
	z_stream zs = {0};
	size_t cap = len * 4 + 1024;
	uint8_t *buf = malloc(cap), *nb;
	int zr, err = 0;

	if (!buf)
		return -ENOMEM;
	if (inflateInit2(&zs, 16 + MAX_WBITS) != Z_OK) {
		free(buf);
		return -ENOMEM;
	}
	zs.next_in = (Bytef *)in;
	zs.avail_in = (uInt)len;
	do {
		if (zs.total_out == cap) {
			if (cap >= MAX_INFLATE) {
				err = -E2BIG;
				goto cleanup;
			}
			cap *= 2;
			nb = realloc(buf, cap);
			if (!nb) {
				err = -ENOMEM;
				goto cleanup;
			}
			buf = nb;
		}
		zs.next_out = buf + zs.total_out;
		zs.avail_out = (uInt)(cap - zs.total_out);
		zr = inflate(&zs, Z_NO_FLUSH);
	} while (zr == Z_OK);
	if (zr != Z_STREAM_END) {
		err = -EBADMSG;
		goto cleanup;
	}
	*out = buf;
	*out_len = zs.total_out;
	buf = NULL;
cleanup:
	inflateEnd(&zs);
	free(buf);
	return err;
}

static int gzip_buf(const uint8_t *in, size_t len, uint8_t **out, size_t *out_len)
{
	z_stream zs = {0};
	size_t cap;
	uint8_t *buf;
	int err = 0;

	if (deflateInit2(&zs, 6, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY) != Z_OK)
		return -ENOMEM;
	cap = deflateBound(&zs, (uLong)len);
	buf = malloc(cap);
	if (!buf) {
		deflateEnd(&zs);
		return -ENOMEM;
	}
	zs.next_in = (Bytef *)in;
	zs.avail_in = (uInt)len;
	zs.next_out = buf;
	zs.avail_out = (uInt)cap;
	if (deflate(&zs, Z_FINISH) != Z_STREAM_END) {
		err = -EIO;
		free(buf);
	} else {
		*out = buf;
		*out_len = zs.total_out;
	}
	deflateEnd(&zs);
	return err;
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
		memcpy(m->locs, orig->location, orig->n_location * sizeof(*m->locs));
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

/*
 * Makes a pprof fit Pyroscope's limits (4 MiB decompressed, 16000 samples). Choice: trim,
 * not split. The heaviest samples are kept and the rest folded into one "[trimmed: N
 * samples]" frame, so per-window totals stay exact and one window stays one profile.
 * Returns 0 with *out NULL when it already fits, 0 with a new gzipped pprof in *out
 * (caller frees) when trimmed, or -errno when it cannot be decoded or made to fit.
 */
static int fit_limits(struct exporter *e, const uint8_t *pprof, size_t len, uint8_t **out,
		      size_t *out_len)
{
	Perftools__Profiles__Profile *orig = NULL, view;
	struct trim_mem m = {.samples = NULL};
	uint8_t *raw = NULL, *packed = NULL;
	size_t raw_len = len, keep, plen = 0;
	int err = 0, round;

	*out = NULL;
	if (is_gzip(pprof, len)) {
		err = gunzip(pprof, len, &raw, &raw_len);
		if (err)
			return err;
	}
	/* 16000 samples need well over 64 KiB of encoded pprof: fast path */
	if (raw_len < 64 * 1024)
		goto cleanup;
	orig = perftools__profiles__profile__unpack(NULL, raw_len, raw ? raw : pprof);
	if (!orig) {
		err = -EBADMSG;
		goto cleanup;
	}
	if (raw_len <= LIMIT_PROFILE_BYTES && orig->n_sample <= LIMIT_SAMPLES)
		goto cleanup;
	if (orig->n_sample < 2) {
		err = -E2BIG;
		goto cleanup;
	}
	qsort(orig->sample, orig->n_sample, sizeof(*orig->sample), cmp_weight);
	keep = orig->n_sample <= LIMIT_SAMPLES ? orig->n_sample - 1 : LIMIT_SAMPLES - 1;
	for (round = 0; round < 16 && keep > 0; round++) {
		trim_mem_free(&m);
		err = trim_view(&view, orig, keep, &m);
		if (err)
			goto cleanup;
		plen = perftools__profiles__profile__get_packed_size(&view);
		if (plen <= LIMIT_PROFILE_BYTES)
			break;
		keep /= 2;
	}
	if (plen > LIMIT_PROFILE_BYTES || !m.samples) {
		err = -E2BIG;
		goto cleanup;
	}
	packed = malloc(plen);
	if (!packed) {
		err = -ENOMEM;
		goto cleanup;
	}
	perftools__profiles__profile__pack(&view, packed);
	err = gzip_buf(packed, plen, out, out_len);
	if (!err) {
		pthread_mutex_lock(&e->lock);
		e->st.trimmed++;
		pthread_mutex_unlock(&e->lock);
		pr_info("profile over Pyroscope's limits (%zu samples, %zu bytes): kept the %zu "
			"heaviest samples, folded the rest into one [trimmed] frame",
			orig->n_sample, raw_len, keep);
	}
cleanup:
	trim_mem_free(&m);
	if (orig)
		perftools__profiles__profile__free_unpacked(orig, NULL);
	free(packed);
	free(raw);
	return err;
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

static void sync_spool_stats(struct exporter *e)
{
	struct spool_stats ss;

	if (!e->spool)
		return;
	spool__stats(e->spool, &ss);
	e->st.spool_bytes = ss.bytes;
	e->st.spool_files = ss.files;
	e->st.spool_dropped = ss.dropped;
	e->st.spool_corrupt = ss.corrupt;
}

/* Writes one item to the spool under its order number. Lock held. Frees nothing. */
static int spool_item(struct exporter *e, uint64_t order, const struct export_item *it)
{
	int err;

	if (!e->spool) {
		e->st.queue_dropped++;
		return -ENOSPC;
	}
	err = spool__put(e->spool, order, it);
	if (err) {
		pr_warn("cannot spool profile seq %" PRIu64 ": %s (dropped)", it->seq,
			strerror(-err));
		e->st.queue_dropped++;
	} else {
		e->st.spooled++;
		pr_debug("spooled seq %" PRIu64 " start_ns %" PRId64, it->seq, it->start_ns);
	}
	sync_spool_stats(e);
	return err;
}

/* Moves every queued item to the spool, oldest first. Lock held. */
static void spill_queue(struct exporter *e)
{
	struct qitem *q;

	while ((q = e->head)) {
		e->head = q->next;
		if (!e->head)
			e->tail = NULL;
		e->n_queued--;
		e->st.queue_bytes -= q->bytes;
		spool_item(e, q->order, &q->item);
		qitem_free(q);
	}
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
		       e->cfg.url, r->message);
	else if (r->http_status == 401 || r->http_status == 403)
		pr_err("%s: authentication failed (HTTP %ld \"%s\"): check the credentials",
		       e->cfg.url, r->http_status, r->message);
	else if (r->http_status == 404)
		pr_err("%s: HTTP 404 \"%s\": wrong URL? (expected the Pyroscope base URL)%s",
		       e->cfg.url, r->message,
		       e->spool ? "; profiles kept in the spool until restarted with the right URL"
				: "; profile dropped");
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
		err = fit_limits(e, it->pprof, it->pprof_len, &trimmed, &tlen);
		if (err == -EBADMSG) {
			/* not our job to judge: let the server answer */
		} else if (err) {
			snprintf(r->message, sizeof(r->message),
				 "profile cannot be made to fit the server limits: %s",
				 strerror(-err));
			return EXPORT_REJECTED;
		}
		if (trimmed) {
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
		if (try) {
			e->st.retries++;
			if (wait_ms(e, backoff_ms(e, try - 1)))
				return false;
		}
		pthread_mutex_unlock(&e->lock);
		st = attempt(e, it, &r);
		pthread_mutex_lock(&e->lock);
		if (st == EXPORT_SENT) {
			e->st.pushed++;
			pr_debug("delivered seq %" PRIu64 " start_ns %" PRId64 " (attempt %u)",
				 it->seq, it->start_ns, try + 1);
			if (e->down)
				pr_info("%s: backend reachable again",
					e->cfg.url ? e->cfg.url : "");
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

/* Sends the oldest spool file; lock held. */
static void send_from_spool(struct exporter *e, bool probe)
{
	struct spool_record *rec = NULL;
	int err;

	err = spool__read_oldest(e->spool, &rec);
	sync_spool_stats(e);
	if (err) {
		if (err == -ENOMEM) /* the file stays for later: do not spin on it */
			wait_ms(e, e->cfg.backoff_min_ms ? e->cfg.backoff_min_ms : 500);
		return;
	}
	e->busy = true;
	if (deliver(e, &rec->item, probe))
		spool__remove(e->spool, rec->order);
	e->busy = false;
	sync_spool_stats(e);
	spool__record_free(rec);
}

static void *sender(void *arg)
{
	struct exporter *e = arg;

	pthread_mutex_lock(&e->lock);
	while (!e->stop) {
		uint64_t sp = e->spool ? spool__oldest(e->spool) : UINT64_MAX;
		uint64_t now = now_ms();
		struct qitem *q;

		if (e->down && e->spool) {
			/* backend down: keep the queue bounded on disk, probe with the oldest */
			spill_queue(e);
			sp = e->spool ? spool__oldest(e->spool) : UINT64_MAX;
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
		q = e->head;
		if (!q) {
			pthread_cond_broadcast(&e->idle);
			pthread_cond_wait(&e->cond, &e->lock);
			continue;
		}
		e->head = q->next;
		if (!e->head)
			e->tail = NULL;
		e->n_queued--;
		e->st.queue_bytes -= q->bytes;
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
	pthread_mutex_lock(&e->lock);
	q->order = e->spool ? spool__next_order(e->spool) : ++e->next_order;
	if (e->st.queue_bytes + q->bytes > e->cfg.queue_max_bytes || e->stop) {
		if (e->spool) {
			/* keep order: everything queued is older, so it goes to the spool first */
			spill_queue(e);
			err = spool_item(e, q->order, &q->item);
		} else {
			e->st.queue_dropped++;
			err = -ENOSPC;
			pr_debug("queue full and no spool: dropped profile seq %" PRIu64,
				 item->seq);
		}
		qitem_free(q);
	} else {
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
	while ((e->n_queued || e->busy ||
		(!e->down && e->spool && spool__oldest(e->spool) != UINT64_MAX)) &&
	       e->thread_started)
		if (pthread_cond_timedwait(&e->idle, &e->lock, &ts))
			break;
	left = (int)e->n_queued + (e->busy ? 1 : 0);
	pthread_mutex_unlock(&e->lock);
	return left;
}

void exporter__stats(struct exporter *e, struct exporter_stats *out)
{
	pthread_mutex_lock(&e->lock);
	sync_spool_stats(e);
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
		 * delivery that is about to finish finish. A transfer still in flight is then
		 * aborted and everything undelivered goes to the spool.
		 */
		exporter__flush(e, FREE_FLUSH_MS);
		pthread_mutex_lock(&e->lock);
		__atomic_store_n(&e->stop, true, __ATOMIC_RELAXED);
		pthread_cond_broadcast(&e->cond);
		pthread_mutex_unlock(&e->lock);
		pthread_join(e->thread, NULL);
	}
	while (e->head) {
		struct qitem *q = e->head;

		e->head = q->next;
		qitem_free(q);
	}
	spool__close(e->spool);
	if (e->curl)
		curl_easy_cleanup(e->curl);
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
	if (cfg->kind != EXPORTER_FILE && (!cfg->url || strncmp(cfg->url, "http", 4))) {
		pr_err("exporter needs an http:// or https:// URL (got \"%s\")",
		       cfg->url ? cfg->url : "");
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
		curl_global_init(CURL_GLOBAL_DEFAULT);
		e->curl = curl_easy_init();
		if (!e->curl) {
			err = -ENOMEM;
			goto cleanup;
		}
	}
	if (e->cfg.spool_dir && *e->cfg.spool_dir) {
		e->spool = spool__open(e->cfg.spool_dir, e->cfg.spool_max_bytes,
				       e->cfg.spool_max_age_s);
		if (!e->spool) {
			err = -errno;
			goto cleanup;
		}
		sync_spool_stats(e);
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
