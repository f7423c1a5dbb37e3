/* SPDX-License-Identifier: Apache-2.0 */
/* Differential flame graph of two profiles (mlprof diff -o): growth red, shrink blue. */
#ifndef MLPROF_DIFF_FLAMEGRAPH_H
#define MLPROF_DIFF_FLAMEGRAPH_H

#include <stdio.h>

#include "profile/diff.h"

/*
 * Writes r's two profiles merged into one interactive flame graph page. A frame's width is
 * its average share of both profiles' totals (so frames of either profile show); its colour
 * is the change of its share: red grew, blue shrank, grey about the same. type and unit
 * name the compared values. Returns 0, -ENOMEM or -EIO.
 */
int diff_flamegraph__write_html(const struct diff_result *r, const char *title, const char *type,
				const char *unit, FILE *f);

#endif
