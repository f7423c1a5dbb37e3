/* SPDX-License-Identifier: Apache-2.0 */
/* The CIE of .eh_frame / .debug_frame parsed: what the unwind table and the CFI rules share. */
#ifndef MLPROF_CFI_CIE_H
#define MLPROF_CFI_CIE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* What a CIE of .eh_frame says. */
struct cfi_cie {
	uint64_t code_align;
	int64_t data_align;
	uint64_t ra_reg;
	uint8_t fde_enc;		/* DW_EH_PE_* of its FDEs' addresses */
	bool has_aug_data;		/* its FDEs have augmentation data ('z') */
	bool signal;			/* 'S': signal frames */
	bool unusual;			/* GCC 2.x "eh" augmentation */
	const uint8_t *insn, *insn_end; /* initial instructions */
	uint64_t insn_vaddr;
};

/*
 * Parses the CIE whose length field is at p (avail bytes readable there, untrusted; vaddr:
 * where p is in the file). False when malformed or of an unknown augmentation.
 */
bool cfi_cie__parse(const uint8_t *p, size_t avail, uint64_t vaddr, struct cfi_cie *cie);

#endif
