// SPDX-License-Identifier: Apache-2.0
/*
 * libFuzzer target: .eh_frame_hdr validation, the table synthesized from .eh_frame and the
 * .debug_frame translation (src/unwind_table.c), and the CFI rules the unwinder's fast
 * path evaluates from the FDEs (src/unwind_cfi.c). The input is wrapped in a small ELF file
 * (one PT_LOAD, optional PT_GNU_EH_FRAME) so that every byte lands in a section:
 *   u8 flags | u16 hdr_len | u16 eh_len | hdr bytes | .eh_frame bytes | .debug_frame bytes
 * flags bit 0: PT_GNU_EH_FRAME; bit 1: no .eh_frame_hdr section header (located through
 * PT_GNU_EH_FRAME only); bit 2: code above the file image (p_memsz > p_filesz).
 */
#include <linux/elf.h>
#include <stdint.h>
#include <string.h>

#include "fuzz_util.h"
#include "unwind/unwind_cfi.h"
#include "unwind/unwind_table.h"

#ifndef PT_GNU_EH_FRAME
#define PT_GNU_EH_FRAME 0x6474e550
#endif

#define CODE_SPAN 0x10000 /* bytes of code past the file image when flags bit 2 is set */

enum { S_NULL, S_HDR, S_EH, S_DBG, S_SHSTR, S_COUNT };

static const char shstr[] = "\0.eh_frame_hdr\0.eh_frame\0.debug_frame\0.shstrtab";
static const uint32_t shname[S_COUNT] = {0, 1, 15, 25, 38};

static size_t align8(size_t v)
{
	return (v + 7) & ~(size_t)7;
}

/* Lays out ehdr | 2 phdrs | hdr | eh | dbg | shstrtab | shdrs; returns the image length. */
static size_t build_elf(uint8_t *img, uint8_t flags, const uint8_t *part[3], const size_t len[3])
{
	Elf64_Ehdr *eh = (Elf64_Ehdr *)img;
	Elf64_Phdr *ph = (Elf64_Phdr *)(img + sizeof(*eh));
	Elf64_Shdr *sh;
	size_t off = sizeof(*eh) + 2 * sizeof(*ph), soff[S_COUNT] = {0}, slen[S_COUNT] = {0};

	for (int i = 0; i < 3; i++) {
		soff[S_HDR + i] = off;
		slen[S_HDR + i] = len[i];
		memcpy(img + off, part[i], len[i]);
		off = align8(off + len[i]);
	}
	soff[S_SHSTR] = off;
	slen[S_SHSTR] = sizeof(shstr);
	memcpy(img + off, shstr, sizeof(shstr));
	off = align8(off + sizeof(shstr));
	sh = (Elf64_Shdr *)(img + off);

	memcpy(eh->e_ident, ELFMAG, SELFMAG);
	eh->e_ident[EI_CLASS] = ELFCLASS64;
	eh->e_ident[EI_DATA] = ELFDATA2LSB;
	eh->e_ident[EI_VERSION] = EV_CURRENT;
	eh->e_type = ET_DYN;
	eh->e_machine = EM_X86_64;
	eh->e_version = EV_CURRENT;
	eh->e_phoff = sizeof(*eh);
	eh->e_shoff = off;
	eh->e_ehsize = sizeof(*eh);
	eh->e_phentsize = sizeof(*ph);
	eh->e_phnum = 2;
	eh->e_shentsize = sizeof(*sh);
	eh->e_shnum = S_COUNT;
	eh->e_shstrndx = S_SHSTR;

	/* file offset == vaddr: the whole image is one read-execute segment */
	ph[0].p_type = PT_LOAD;
	ph[0].p_flags = PF_R | PF_X;
	ph[0].p_filesz = off + S_COUNT * sizeof(*sh);
	ph[0].p_memsz = ph[0].p_filesz + (flags & 4 ? CODE_SPAN : 0);
	ph[0].p_align = 0x1000;
	ph[1].p_type = flags & 1 ? PT_GNU_EH_FRAME : PT_NULL;
	ph[1].p_offset = ph[1].p_vaddr = soff[S_HDR];
	ph[1].p_filesz = ph[1].p_memsz = slen[S_HDR];

	for (int i = 1; i < S_COUNT; i++) {
		sh[i].sh_name = shname[i];
		sh[i].sh_type = SHT_PROGBITS;
		sh[i].sh_flags = i == S_DBG || i == S_SHSTR ? 0 : SHF_ALLOC;
		sh[i].sh_addr = sh[i].sh_flags ? soff[i] : 0;
		sh[i].sh_offset = soff[i];
		sh[i].sh_size = slen[i];
		sh[i].sh_addralign = i == S_SHSTR ? 1 : 8;
	}
	sh[S_SHSTR].sh_type = SHT_STRTAB;
	if (flags & 2)
		sh[S_HDR].sh_type = SHT_NULL; /* no longer found by name */
	return off + S_COUNT * sizeof(*sh);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static uint8_t img[3 * 65536 + 4096];
	const uint8_t *part[3];
	size_t len[3], img_len;
	struct unwind_table *t = NULL;
	struct elf_file *ef = NULL;
	uint64_t v, bytes, n;
	uint8_t flags;
	volatile uint64_t sink = 0;

	fuzz__quiet();
	if (size < 1 || size > 3 * 65535)
		return 0;
	flags = data[0];
	data++;
	size--;
	len[0] = fuzz__take_u16(&data, &size);
	len[1] = fuzz__take_u16(&data, &size);
	if (len[0] > size)
		len[0] = size;
	if (len[1] > size - len[0])
		len[1] = size - len[0];
	len[2] = size - len[0] - len[1];
	part[0] = data;
	part[1] = data + len[0];
	part[2] = data + len[0] + len[1];
	memset(img, 0, sizeof(img));
	img_len = build_elf(img, flags, part, len);

	ef = elf_file__open_mem(img, img_len, "fuzz");
	if (!ef)
		return 0;
	t = unwind_table__new(ef);
	if (!t)
		goto cleanup;
	/* what libunwind reads: table pairs, then the FDE each pair points at */
	n = t->count < 256 ? t->count : 256;
	for (uint64_t i = 0; i < n; i++) {
		int32_t fde;

		if (t->synth) {
			fde = t->synth[2 * i + 1];
		} else if (unwind_table__read(t, t->table + 8 * i, &v)) {
			fde = (int32_t)(v >> 32);
		} else {
			continue;
		}
		if (unwind_table__read(t, t->segbase + (uint64_t)(int64_t)fde, &v))
			sink += v;
	}
	if (unwind_table__load_debug_frame(t, 1 << 20, &bytes) == 0) {
		for (uint64_t i = 0; i < t->dbg_count && i < 256; i++) {
			uint64_t fde = (uint32_t)t->dbg_tab[2 * i + 1];

			/* the index must point inside the image it came with */
			if (fde + 4 > t->dbg_image_len)
				__builtin_trap();
			sink += t->dbg_image[fde];
		}
		sink += bytes;
	}
	/* the rule of every pc a table entry starts at, and of pcs in between */
	for (uint64_t i = 0; i < n; i++) {
		int32_t pc = 0;
		struct cfi_rule r;

		if (t->synth)
			pc = t->synth[2 * i];
		else if (unwind_table__read(t, t->table + 8 * i, &v))
			pc = (int32_t)v;
		for (uint64_t d = 0; d < 64; d += 7) {
			unwind_cfi__rule(t, t->segbase + (uint64_t)(int64_t)pc + d, &r);
			if (r.kind > CFI_COMPLEX)
				__builtin_trap();
			sink += r.kind + (uint64_t)r.cfa_off;
		}
	}
	/* reads anywhere in and around the image (straddling segment ends) */
	for (uint64_t a = 0; a < img_len + (flags & 4 ? CODE_SPAN : 0) + 64; a += 61)
		if (unwind_table__read(t, a, &v))
			sink += v;
cleanup:
	unwind_table__free(t);
	elf_file__put(ef);
	(void)sink;
	return 0;
}
