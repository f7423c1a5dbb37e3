// SPDX-License-Identifier: Apache-2.0
// Pyroscope legacy ingest backend: POST /ingest?name=app{labels}&format=pprof with raw pprof.
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <curl/curl.h>

#include "export/export_backend.h"

/* Appends s to buf (bounded). */
static void cat(char *buf, size_t len, const char *s)
{
	size_t l = strlen(buf);

	snprintf(buf + l, len - l, "%s", s);
}

static enum export_status ingest_send(struct exporter *e, const struct export_item *it,
				      struct export_result *res)
{
	const struct exporter_config *c = exporter__config(e);
	const char *service = "unknown_service";
	char name[8192] = "", url[12288];
	enum export_status st;
	char *esc;
	bool first = true;
	int i;

	for (i = 0; i < it->n_labels; i++)
		if (!strcmp(it->labels[i].name, "service_name"))
			service = it->labels[i].value;
	cat(name, sizeof(name), service);
	cat(name, sizeof(name), "{");
	for (i = 0; i < it->n_labels; i++) {
		const char *k = it->labels[i].name;

		/* the app name is service_name; __name__ is derived from the sample types */
		if (!strcmp(k, "service_name") || !strncmp(k, "__", 2))
			continue;
		if (!first)
			cat(name, sizeof(name), ",");
		cat(name, sizeof(name), k);
		cat(name, sizeof(name), "=");
		cat(name, sizeof(name), it->labels[i].value);
		first = false;
	}
	cat(name, sizeof(name), "}");
	esc = curl_easy_escape(NULL, name, 0);
	if (!esc) {
		snprintf(res->message, sizeof(res->message), "out of memory");
		return EXPORT_RETRYABLE;
	}
	snprintf(url, sizeof(url),
		 "%s/ingest?name=%s&format=pprof&spyName=mlprof&from=%" PRId64 "&until=%" PRId64,
		 c->url, esc, it->start_ns / 1000000000, (it->end_ns + 999999999) / 1000000000);
	curl_free(esc);
	st = exporter__http_post(e, url, "application/octet-stream", NULL, it->pprof, it->pprof_len,
				 res);
	if (res->http_status == 413)
		st = EXPORT_REJECTED;
	return st;
}

/* Pyroscope legacy /ingest API. */
const struct export_ops export_ingest_ops = {
	.name = "ingest",
	.send = ingest_send,
};
