// SPDX-License-Identifier: Apache-2.0
// Pyroscope push backend: connect unary POST of push.v1.PushRequest (application/proto).
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "export/export_backend.h"
#include "push.pb-c.h"

static enum export_status push_send(struct exporter *e, const struct export_item *it,
				    struct export_result *res)
{
	static const char *const hdrs[] = {"Connect-Protocol-Version: 1", NULL};
	const struct exporter_config *c = exporter__config(e);
	Push__V1__LabelPair lp[EXPORT_MAX_LABELS], *lpp[EXPORT_MAX_LABELS];
	Push__V1__RawSample sample = PUSH__V1__RAW_SAMPLE__INIT, *samplep = &sample;
	Push__V1__RawProfileSeries series = PUSH__V1__RAW_PROFILE_SERIES__INIT, *seriesp = &series;
	Push__V1__PushRequest req = PUSH__V1__PUSH_REQUEST__INIT;
	enum export_status st;
	char url[2048];
	uint8_t *body;
	size_t len;
	int i;

	for (i = 0; i < it->n_labels && i < EXPORT_MAX_LABELS; i++) {
		push__v1__label_pair__init(&lp[i]);
		lp[i].name = (char *)it->labels[i].name;
		lp[i].value = (char *)it->labels[i].value;
		lpp[i] = &lp[i];
	}
	series.n_labels = (size_t)i;
	series.labels = lpp;
	sample.raw_profile.data = (uint8_t *)it->pprof;
	sample.raw_profile.len = it->pprof_len;
	series.n_samples = 1;
	series.samples = &samplep;
	req.n_series = 1;
	req.series = &seriesp;
	len = push__v1__push_request__get_packed_size(&req);
	body = malloc(len ? len : 1);
	if (!body) {
		snprintf(res->message, sizeof(res->message), "out of memory");
		return EXPORT_RETRYABLE;
	}
	push__v1__push_request__pack(&req, body);
	snprintf(url, sizeof(url), "%s/push.v1.PusherService/Push", c->url);
	st = exporter__http_post(e, url, "application/proto", hdrs, body, len, res);
	free(body);
	return st;
}

/* Pyroscope push API (default backend). */
const struct export_ops export_push_ops = {
	.name = "push",
	.send = push_send,
};
