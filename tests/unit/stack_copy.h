/* SPDX-License-Identifier: Apache-2.0 */
/* Copying live stack memory into test snapshots, shared by the unwinder tests. */
#ifndef MLPROF_TEST_STACK_COPY_H
#define MLPROF_TEST_STACK_COPY_H

#include <stddef.h>
#include <stdint.h>

/* Raw copy of live stack memory: sanitizers must not check it (redzones are expected). */
__attribute__((no_sanitize_address, noinline)) static void
copy_stack(uint8_t *dst, const uint8_t *src, size_t len)
{
	for (size_t i = 0; i < len; i++)
		((volatile uint8_t *)dst)[i] = src[i];
}

#endif
