/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Where in a function to place an entry uprobe so that the kernel emulates the probed
 * instruction instead of single-stepping it out of line (x86-64).
 */
#ifndef MLPROF_UPROBE_SITE_H
#define MLPROF_UPROBE_SITE_H

#include <stddef.h>
#include <stdint.h>

/* Register bit of x86-64 register number n (rax 0, rcx 1, rdx 2, ..., rsi 6, rdi 7, r8 8). */
#define UPROBE_REG(n) (1u << (n))
#define UPROBE_RDI    UPROBE_REG(7)
#define UPROBE_RSI    UPROBE_REG(6)
#define UPROBE_RDX    UPROBE_REG(2)
#define UPROBE_RSP    UPROBE_REG(4)

/*
 * The offset, from a function's entry (code: its first len bytes), of the first
 * instruction the kernel emulates on a uprobe hit (push of a register, a conditional or
 * direct jump or call), reached by straight-line code from the entry that wrote none of
 * the registers in keep: a probe there sees every call with its arguments intact. A probe
 * on another instruction is single-stepped out of line, which costs a debug trap: ~14 us
 * a hit instead of ~0.9 us on this project's virtual machines (glibc 2.36's free starts
 * with test %rdi,%rdi). A function whose return is probed too must keep UPROBE_RSP: the
 * kernel takes the return address from the top of the stack when the probe hits. Returns
 * 0 (the entry) when the entry is emulated or no such instruction is found among the
 * forms decoded.
 */
uint64_t uprobe_site__emulated(const uint8_t *code, size_t len, uint32_t keep);

#endif
