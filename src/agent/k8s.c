// SPDX-License-Identifier: Apache-2.0
/* Kubernetes pod list: PodList parsing, container/pod lookup, and the refresh thread. */
#define LOG_MODULE "k8s"
#include "agent/k8s.h"

#include <ctype.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <curl/curl.h>

#include "util/json.h"
#include "util/log.h"

/* ------------------------------------------------------------------ pod list */

struct k8s_pods {
	struct json_doc doc; /* strings of the entries point into it */
	struct k8s_container *c;
	size_t n, cap;
};

static int cmp_container(const void *a, const void *b)
{
	return strcmp(((const struct k8s_container *)a)->id, ((const struct k8s_container *)b)->id);
}

static int pods_add(struct k8s_pods *pods, const char *id, const char *pod, const char *ns,
		    const char *uid, const char *name)
{
	const char *sep = strstr(id, "://");
	size_t l;

	if (sep)
		id = sep + 3;
	l = strlen(id);
	if (l < 12 || l > 64 || strspn(id, "0123456789abcdefABCDEF") != l)
		return 0; /* not started yet, or an id format we cannot match */
	if (pods->n == pods->cap) {
		size_t cap = pods->cap ? pods->cap * 2 : 64;
		struct k8s_container *nc = realloc(pods->c, sizeof(*nc) * cap);
		if (!nc)
			return -ENOMEM;
		pods->c = nc;
		pods->cap = cap;
	}
	struct k8s_container *c = &pods->c[pods->n++];
	for (size_t i = 0; i <= l; i++)
		c->id[i] = (char)tolower((unsigned char)id[i]);
	c->pod = pod;
	c->ns = ns ? ns : "";
	c->uid = uid ? uid : "";
	c->name = name ? name : "";
	return 0;
}

/* See k8s.h. */
struct k8s_pods *k8s_pods__parse(const char *json, size_t len)
{
	static const char *const lists[] = {"containerStatuses", "initContainerStatuses",
					    "ephemeralContainerStatuses"};
	struct k8s_pods *pods = calloc(1, sizeof(*pods));
	const struct json_node *root, *items;
	int r, err = 0;

	if (!pods)
		return NULL;
	r = json_doc__parse(&pods->doc, json, len);
	if (r < 0) {
		err = r;
		goto cleanup;
	}
	root = &pods->doc.nodes[r];
	items = json_doc__get(&pods->doc, root, "items");
	if (!items || items->t != JSON_ARR) {
		err = -EINVAL;
		goto cleanup;
	}
	for (int i = items->child; i >= 0; i = pods->doc.nodes[i].next) {
		const struct json_node *item = &pods->doc.nodes[i];
		const struct json_node *md = json_doc__get(&pods->doc, item, "metadata");
		const struct json_node *st = json_doc__get(&pods->doc, item, "status");
		const char *name = json_doc__get_str(&pods->doc, md, "name");

		if (!name)
			continue;
		for (size_t k = 0; k < sizeof(lists) / sizeof(lists[0]); k++) {
			const struct json_node *cs = json_doc__get(&pods->doc, st, lists[k]);

			if (!cs || cs->t != JSON_ARR)
				continue;
			for (int j = cs->child; j >= 0; j = pods->doc.nodes[j].next) {
				const struct json_node *c = &pods->doc.nodes[j];
				const char *id = json_doc__get_str(&pods->doc, c, "containerID");

				if (!id)
					continue;
				err = pods_add(pods, id, name,
					       json_doc__get_str(&pods->doc, md, "namespace"),
					       json_doc__get_str(&pods->doc, md, "uid"),
					       json_doc__get_str(&pods->doc, c, "name"));
				if (err)
					goto cleanup;
			}
		}
	}
	if (pods->n)
		qsort(pods->c, pods->n, sizeof(*pods->c), cmp_container);
cleanup:
	if (err) {
		k8s_pods__free(pods);
		errno = -err;
		return NULL;
	}
	return pods;
}

/* See k8s.h. */
void k8s_pods__free(struct k8s_pods *pods)
{
	if (!pods)
		return;
	json_doc__free(&pods->doc);
	free(pods->c);
	free(pods);
}

/* See k8s.h. */
size_t k8s_pods__count(const struct k8s_pods *pods)
{
	return pods ? pods->n : 0;
}

/* See k8s.h. */
const struct k8s_container *k8s_pods__find(const struct k8s_pods *pods, const char *id)
{
	size_t lo = 0, hi, l = strlen(id);

	if (!pods || !pods->n || l < 12)
		return NULL;
	hi = pods->n;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (strcmp(pods->c[mid].id, id) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo < pods->n && !strcmp(pods->c[lo].id, id))
		return &pods->c[lo];
	/* a shorter id on either side (prefix match, both directions) */
	for (size_t i = lo > 0 ? lo - 1 : 0; i < pods->n && i <= lo + 1; i++) {
		size_t cl = strlen(pods->c[i].id), m = cl < l ? cl : l;
		if (!strncmp(pods->c[i].id, id, m))
			return &pods->c[i];
	}
	return NULL;
}

/* See k8s.h. */
const struct k8s_container *k8s_pods__find_pod(const struct k8s_pods *pods, const char *uid)
{
	if (!pods || !*uid)
		return NULL;
	for (size_t i = 0; i < pods->n; i++) {
		const char *a = pods->c[i].uid, *b = uid;
		for (; *a && *b; a++, b++)
			if (*a != *b && !((*a == '-' || *a == '_') && (*b == '-' || *b == '_')))
				break;
		if (!*a && !*b)
			return &pods->c[i];
	}
	return NULL;
}

/* ------------------------------------------------------------------ k8s client */

#define K8S_MIN_REFRESH_S 30
#define K8S_MAX_REFRESH_S 120
#define K8S_SA_DIR	  "/var/run/secrets/kubernetes.io/serviceaccount"

struct k8s_client {
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool stop, want_refresh, started;
	struct k8s_pods *pods;
	uint64_t gen; /* bumps with every successful fetch */
	uint64_t fetches, errors;
	char url[512];
};

struct membuf {
	char *p;
	size_t n, cap;
};

static size_t curl_write(char *ptr, size_t size, size_t nmemb, void *ud)
{
	struct membuf *b = ud;
	size_t len = size * nmemb;

	if (b->n + len + 1 > JSON_MAX_BYTES)
		return 0; /* aborts the transfer */
	if (b->n + len + 1 > b->cap) {
		size_t cap = (b->n + len + 1) * 2;
		char *np = realloc(b->p, cap);
		if (!np)
			return 0;
		b->p = np;
		b->cap = cap;
	}
	memcpy(b->p + b->n, ptr, len);
	b->n += len;
	return len;
}

static int k8s_fetch(struct k8s_client *k, struct k8s_pods **out)
{
	char token[8192], auth[8300];
	struct curl_slist *hdrs = NULL;
	struct membuf body = {0};
	long code = 0;
	CURL *curl = NULL;
	CURLcode rc;
	FILE *f;
	size_t n;
	int err = 0;

	/* tokens are rotated by the kubelet: read it on every fetch */
	f = fopen(K8S_SA_DIR "/token", "re");
	if (!f) {
		err = -errno;
		pr_warn("cannot open %s/token: %s", K8S_SA_DIR, strerror(errno));
		return err;
	}
	n = fread(token, 1, sizeof(token) - 1, f);
	fclose(f);
	while (n && isspace((unsigned char)token[n - 1]))
		n--;
	token[n] = '\0';
	snprintf(auth, sizeof(auth), "Authorization: Bearer %s", token);
	explicit_bzero(token, sizeof(token));
	curl = curl_easy_init();
	hdrs = curl_slist_append(NULL, auth);
	explicit_bzero(auth, sizeof(auth));
	if (!curl || !hdrs) {
		err = -ENOMEM;
		goto cleanup;
	}
	hdrs = curl_slist_append(hdrs, "Accept: application/json") ?: hdrs;
	curl_easy_setopt(curl, CURLOPT_URL, k->url);
	curl_easy_setopt(curl, CURLOPT_HTTPHEADER, hdrs);
	curl_easy_setopt(curl, CURLOPT_CAINFO, K8S_SA_DIR "/ca.crt");
	curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT_MS, 5000L);
	curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS, 20000L);
	curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, curl_write);
	curl_easy_setopt(curl, CURLOPT_WRITEDATA, &body);
	curl_easy_setopt(curl, CURLOPT_ACCEPT_ENCODING, "");
	rc = curl_easy_perform(curl);
	if (rc != CURLE_OK) {
		pr_warn("cannot fetch pods from %s: %s", k->url, curl_easy_strerror(rc));
		err = -EIO;
		goto cleanup;
	}
	curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &code);
	if (code != 200) {
		pr_warn("cannot fetch pods from %s: HTTP %ld", k->url, code);
		err = code == 401 || code == 403 ? -EACCES : -EIO;
		goto cleanup;
	}
	*out = k8s_pods__parse(body.p ? body.p : "", body.n);
	if (!*out) {
		err = -errno;
		pr_warn("cannot parse the pod list from %s: %s", k->url, strerror(errno));
	}
cleanup:
	curl_slist_free_all(hdrs);
	if (curl)
		curl_easy_cleanup(curl);
	free(body.p);
	return err;
}

static void *k8s_thread(void *arg)
{
	struct k8s_client *k = arg;
	time_t last = 0;

	pthread_setname_np(pthread_self(), "mlprof-k8s"); /* top -H, perf */
	pthread_mutex_lock(&k->lock);
	while (!k->stop) {
		time_t now = time(NULL);
		struct k8s_pods *pods = NULL, *old;
		struct timespec ts;
		int err;

		if (last && now - last < K8S_MIN_REFRESH_S) {
			clock_gettime(CLOCK_REALTIME, &ts);
			ts.tv_sec += K8S_MIN_REFRESH_S - (now - last);
			pthread_cond_timedwait(&k->cond, &k->lock, &ts);
			continue;
		}
		if (last && !k->want_refresh && now - last < K8S_MAX_REFRESH_S) {
			clock_gettime(CLOCK_REALTIME, &ts);
			ts.tv_sec += K8S_MAX_REFRESH_S - (now - last);
			pthread_cond_timedwait(&k->cond, &k->lock, &ts);
			continue;
		}
		k->want_refresh = false;
		last = now;
		pthread_mutex_unlock(&k->lock);
		err = k8s_fetch(k, &pods);
		pthread_mutex_lock(&k->lock);
		k->fetches++;
		if (err) {
			k->errors++;
			continue;
		}
		old = k->pods;
		k->pods = pods;
		k->gen++;
		pthread_mutex_unlock(&k->lock);
		pr_debug("pod list refreshed: %zu containers", k8s_pods__count(pods));
		k8s_pods__free(old);
		pthread_mutex_lock(&k->lock);
	}
	pthread_mutex_unlock(&k->lock);
	return NULL;
}

/* See k8s.h. */
struct k8s_client *k8s_client__new(const char *source, const char *node)
{
	struct k8s_client *k;
	const char *host = getenv("KUBERNETES_SERVICE_HOST");
	const char *port = getenv("KUBERNETES_SERVICE_PORT");
	int err;

	if (!node || !*node) {
		pr_err("Kubernetes labels need the node name: set NODE_NAME (fieldRef "
		       "spec.nodeName) or --node-name");
		errno = EINVAL;
		return NULL;
	}
	k = calloc(1, sizeof(*k));
	if (!k)
		return NULL;
	if (!strcmp(source, "kubelet")) {
		snprintf(k->url, sizeof(k->url), "https://%s:10250/pods", node);
	} else if (host && *host) {
		snprintf(k->url, sizeof(k->url),
			 strchr(host, ':')
				 ? "https://[%s]:%s/api/v1/pods?fieldSelector=spec.nodeName%%3D%s"
				 : "https://%s:%s/api/v1/pods?fieldSelector=spec.nodeName%%3D%s",
			 host, port && *port ? port : "443", node);
	} else {
		snprintf(k->url, sizeof(k->url),
			 "https://kubernetes.default.svc/api/v1/"
			 "pods?fieldSelector=spec.nodeName%%3D%s",
			 node);
	}
	curl_global_init(CURL_GLOBAL_DEFAULT);
	pthread_mutex_init(&k->lock, NULL);
	pthread_cond_init(&k->cond, NULL);
	err = pthread_create(&k->thread, NULL, k8s_thread, k);
	if (err) {
		pr_err("cannot start the Kubernetes thread: %s", strerror(err));
		free(k);
		errno = err;
		return NULL;
	}
	k->started = true;
	pr_info("Kubernetes pod metadata from %s", k->url);
	return k;
}

/* See k8s.h. */
void k8s_client__free(struct k8s_client *k)
{
	if (!k)
		return;
	pthread_mutex_lock(&k->lock);
	k->stop = true;
	pthread_cond_broadcast(&k->cond);
	pthread_mutex_unlock(&k->lock);
	if (k->started)
		pthread_join(k->thread, NULL);
	k8s_pods__free(k->pods);
	pthread_mutex_destroy(&k->lock);
	pthread_cond_destroy(&k->cond);
	free(k);
}

/* See k8s.h. */
uint64_t k8s_client__lookup(struct k8s_client *k, const char *container_id, const char *pod_uid,
			    struct k8s_pod_meta *out, bool *found)
{
	const struct k8s_container *c = NULL;
	uint64_t gen;

	*found = false;
	pthread_mutex_lock(&k->lock);
	if (container_id[0])
		c = k8s_pods__find(k->pods, container_id);
	if (c) {
		snprintf(out->pod, sizeof(out->pod), "%s", c->pod);
		snprintf(out->ns, sizeof(out->ns), "%s", c->ns);
		snprintf(out->container, sizeof(out->container), "%s", c->name);
		*found = true;
	} else if (pod_uid[0] && (c = k8s_pods__find_pod(k->pods, pod_uid))) {
		/* container not started/listed yet: the pod is still known */
		snprintf(out->pod, sizeof(out->pod), "%s", c->pod);
		snprintf(out->ns, sizeof(out->ns), "%s", c->ns);
		out->container[0] = '\0';
	}
	if (!*found && (container_id[0] || pod_uid[0])) {
		k->want_refresh = true;
		pthread_cond_signal(&k->cond);
	}
	gen = k->gen;
	pthread_mutex_unlock(&k->lock);
	return gen;
}

/* See k8s.h. */
uint64_t k8s_client__gen(struct k8s_client *k)
{
	uint64_t gen;

	pthread_mutex_lock(&k->lock);
	gen = k->gen;
	pthread_mutex_unlock(&k->lock);
	return gen;
}

/* See k8s.h. */
void k8s_client__stats(struct k8s_client *k, struct k8s_client_stats *out)
{
	pthread_mutex_lock(&k->lock);
	out->fetches = k->fetches;
	out->errors = k->errors;
	out->pods = k8s_pods__count(k->pods);
	pthread_mutex_unlock(&k->lock);
}
