/* SPDX-License-Identifier: Apache-2.0 */
/* On-disk spool of undelivered profiles: one zstd file per item, ordered by sequence. */
#ifndef MLPROF_SPOOL_H
#define MLPROF_SPOOL_H

#include <stdint.h>

#include "export/export_item.h"

struct spool;

/* A profile read back from the spool; owns all its memory (spool__record_free). */
struct spool_record {
	uint64_t order;		 /* spool order number (file name), oldest first */
	struct export_item item; /* labels/pprof point into this record */
};

struct spool_stats {
	uint64_t files, bytes;
	uint64_t dropped; /* evicted for bytes/age bounds */
	uint64_t corrupt; /* unreadable files skipped and removed */
	uint64_t written;
};

/*
 * Opens (creating if needed) dir and indexes the files already there, so that a new
 * process delivers them first. max_bytes / max_age_s bound the spool (0 = no bound).
 * Returns NULL with errno set.
 */
struct spool *spool__open(const char *dir, uint64_t max_bytes, unsigned int max_age_s);
void spool__close(struct spool *s);

/* Next order number: larger than any file in the spool and any number handed out before. */
uint64_t spool__next_order(struct spool *s);

/*
 * Writes item as file number order (atomically: temp file + rename), then evicts the
 * oldest files (counted in dropped) while over the bounds. Returns 0 or -errno.
 */
int spool__put(struct spool *s, uint64_t order, const struct export_item *item);

/* Order number of the oldest file, or UINT64_MAX when the spool is empty. Evicts aged files. */
uint64_t spool__oldest(struct spool *s);

/*
 * Reads the oldest valid file into *out (caller frees with spool__record_free). Corrupt
 * files are removed and counted. Returns 0, -ENOENT when empty, or -errno.
 */
int spool__read_oldest(struct spool *s, struct spool_record **out);

/* Deletes file number order (after delivery or rejection). Returns 0 or -errno. */
int spool__remove(struct spool *s, uint64_t order);

void spool__record_free(struct spool_record *r);
void spool__stats(struct spool *s, struct spool_stats *out);
/* The spool's directory (valid until spool__close). */
const char *spool__path(const struct spool *s);

/*
 * Profiles are only ever sent to the destination they were made for, so each destination
 * (API, URL and tenant, as one line of text) spools into its own directory under root:
 * root/<16 hex digits of a hash of destination>, created with a DESTINATION file holding
 * the text. Writes that directory into out (len bytes) for spool__open(). Logs what other
 * destinations left in root (kept, never sent here). Returns 0, -EEXIST when the directory
 * belongs to another destination (hash collision), or -errno.
 */
int spool__dest_dir(const char *root, const char *destination, char *out, size_t len);

#endif
