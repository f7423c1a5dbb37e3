/* SPDX-License-Identifier: Apache-2.0 */
/* One profile for one series: what the exporter delivers and the spool keeps. */
#ifndef MLPROF_EXPORT_ITEM_H
#define MLPROF_EXPORT_ITEM_H

#include <stddef.h>
#include <stdint.h>

#include "profile/label.h"

/* One profile for one series (e.g. one service for one upload window). */
struct export_item {
	const struct label_pair *labels; /* series labels incl. __name__ and service_name */
	int n_labels;
	const uint8_t *pprof; /* pprof bytes (gzip-compressed or not) */
	size_t pprof_len;
	int64_t start_ns, end_ns; /* window, wall clock ns since epoch */
	uint64_t seq;		  /* window sequence number (ordering, logs) */
};

#endif
