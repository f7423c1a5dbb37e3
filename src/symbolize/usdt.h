/* SPDX-License-Identifier: Apache-2.0 */
/*
 * USDT (SystemTap SDT) probes of an ELF file, from its .note.stapsdt notes: where each one
 * is (a file offset to attach a uprobe at), its semaphore (a file offset the kernel counts
 * attached probes in, so that guarded probe sites run), and where its arguments are at the
 * probe (x86-64 operand specs such as "-8@%rax" or "8@-56(%rbp)").
 */
#ifndef MLPROF_USDT_H
#define MLPROF_USDT_H

#include <stdint.h>

struct elf_file;

#define USDT_MAX_ARGS 12

struct usdt_probe {
	uint64_t off;	      /* file offset of the probe's instruction */
	uint64_t ref_ctr_off; /* file offset of its semaphore, 0 when it has none */
	int nargs;
	/* each argument as MLPROF_USDT_ARG (mlprof/cuda.h), 0 where it is not an 8-byte
	 * register or memory operand (a constant, a narrower value) */
	uint32_t args[USDT_MAX_ARGS];
};

/*
 * The probes provider:name of ef, at most max of them into out. Returns how many (0: none;
 * a corrupt note ends the walk there, never a crash).
 */
int usdt__find(const struct elf_file *ef, const char *provider, const char *name,
	       struct usdt_probe *out, int max);

/* One argument spec ("-8@%rax") as MLPROF_USDT_ARG, or 0 (see struct usdt_probe). */
uint32_t usdt__parse_arg(const char *spec);

#endif
