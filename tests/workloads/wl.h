/* SPDX-License-Identifier: Apache-2.0 */
/* Workloads for mlprof's integration tests: known call chains with measured time splits. */
#ifndef MLPROF_WL_H
#define MLPROF_WL_H

#include <stdint.h>

extern volatile uint64_t wl_sink;
uint64_t lib_work(uint64_t n);
uint64_t lib_leaf(uint64_t n);

#endif
