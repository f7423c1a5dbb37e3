/* SPDX-License-Identifier: Apache-2.0 */
/* Fitting a pprof to Pyroscope's ingestion limits (decompressed size, sample count). */
#ifndef MLPROF_PPROF_LIMITS_H
#define MLPROF_PPROF_LIMITS_H

#include <stddef.h>
#include <stdint.h>

/*
 * Makes a pprof (gzipped or not) fit Pyroscope's limits. Choice: trim, not split. The
 * heaviest samples are kept and the rest folded into one "[trimmed: N samples]" frame, so
 * per-window totals stay exact and one window stays one profile. Returns 0 with *out NULL
 * when it already fits, 0 with a new gzipped pprof in *out (caller frees) when trimmed
 * (logged), -EBADMSG when it cannot be decoded, or -E2BIG/-ENOMEM when it cannot be made
 * to fit.
 */
int pprof_limits__fit(const uint8_t *pprof, size_t len, uint8_t **out, size_t *out_len);

/* Limits for pprof_limits__fit_to; pprof_limits__fit uses Pyroscope's. */
struct pprof_limits {
	size_t max_bytes;	/* decompressed profile size (Pyroscope: 4 MiB) */
	size_t max_samples;	/* samples (Pyroscope: 16000) */
	size_t fast_path_bytes; /* smaller profiles fit without decoding (64 KiB) */
	size_t max_inflate;	/* a gzipped profile that inflates past this is refused */
};

/* pprof_limits__fit with other limits (the fuzz target's are small, to run fast). */
int pprof_limits__fit_to(const struct pprof_limits *lim, const uint8_t *pprof, size_t len,
			 uint8_t **out, size_t *out_len);

#endif
