// SPDX-License-Identifier: Apache-2.0
/* Unwinder fixture library: a three-deep call chain without frame pointers that calls back. */
#include <stdint.h>

typedef void (*uwlib_cb)(void *arg);

/* Volatile sink so every level keeps live state across its call (no tail calls). */
static volatile uint64_t uwlib_sink;

__attribute__((noinline)) uint64_t uwlib_leaf(uwlib_cb cb, void *arg, uint64_t x)
{
	uint64_t a = x * 3, b = x ^ 0x55;

	cb(arg);
	__asm__ volatile("" ::: "memory");
	uwlib_sink = a + b;
	return a ^ b;
}

__attribute__((noinline)) uint64_t uwlib_mid(uwlib_cb cb, void *arg, uint64_t x)
{
	uint64_t r = uwlib_leaf(cb, arg, x + 1);

	__asm__ volatile("" ::: "memory");
	return r + x;
}

/* Entry point called by the test: entry -> mid -> leaf -> cb(arg). */
__attribute__((noinline)) uint64_t uwlib_entry(uwlib_cb cb, void *arg, uint64_t x)
{
	uint64_t r = uwlib_mid(cb, arg, x * 7);

	__asm__ volatile("" ::: "memory");
	return r - 1;
}
