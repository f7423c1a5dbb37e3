// SPDX-License-Identifier: Apache-2.0
/* Unit test: entry uprobes placed on an instruction the kernel emulates (uprobe_site.c). */
#include "capture/uprobe_site.h"
#include "check.h"

/* Prologues of Debian 12's glibc 2.36 (objdump -d libc.so.6). */
static const uint8_t glibc_free[] = {
	0x48, 0x85, 0xff,		    /* test %rdi,%rdi */
	0x0f, 0x84, 0xbf, 0x00, 0x00, 0x00, /* je ... (free(NULL)) */
	0x55,				    /* push %rbp */
	0x48, 0x8d, 0x77, 0xf0,		    /* lea -0x10(%rdi),%rsi */
};
static const uint8_t glibc_malloc[] = {
	0x41, 0x54, /* push %r12 */
	0x55,	    /* push %rbp */
};
static const uint8_t glibc_memalign[] = {
	0x80, 0x3d, 0x71, 0x0e, 0x14, 0x00, 0x00, /* cmpb $0x0,0x140e71(%rip) */
	0x74, 0x07,				  /* je ... */
};
static const uint8_t glibc_posix_memalign[] = {
	0x80, 0x3d, 0x01, 0x02, 0x14, 0x00, 0x00, /* cmpb $0x0,0x140201(%rip) */
	0x41, 0x54,				  /* push %r12 */
};
/* endbr64; mov %rdi,%rbx; sub $0x18,%rsp; push %rbx */
static const uint8_t cet_copy[] = {0xf3, 0x0f, 0x1e, 0xfa, 0x48, 0x89,
				   0xfb, 0x48, 0x83, 0xec, 0x18, 0x53};
/* at::RecordFunction::end in PyPI torch 2.15: cmpb $0x0,0x68(%rdi); je ...; push %r14 */
static const uint8_t torch_end[] = {0x80, 0x7f, 0x68, 0x00, 0x74, 0x5a, 0x41, 0x56};
/* torch 2.x record_function_enter: mov 0x10(%rdx),%ecx; test %ecx,%ecx; je */
static const uint8_t torch_enter[] = {0x8b, 0x4a, 0x10, 0x85, 0xc9, 0x74, 0x71};
/* record_function_exit_new: mov (%rdi),%rdi; add $0x10,%rdi; jmp */
static const uint8_t torch_exit[] = {0x48, 0x8b, 0x3f, 0x48, 0x83, 0xc7, 0x10, 0xe9, 0, 0, 0, 0};
/* a load through a SIB byte is not decoded: mov 0x10(%rsp,%rax),%ecx; push %rbp */
static const uint8_t sib_load[] = {0x8b, 0x4c, 0x04, 0x10, 0x55};
/* mov %rsi,%rdi (writes rdi); push %rbp */
static const uint8_t clobber[] = {0x48, 0x89, 0xf7, 0x55};
/* an instruction not decoded: lea -0x10(%rdi),%rsi; push %rbp */
static const uint8_t unknown[] = {0x48, 0x8d, 0x77, 0xf0, 0x55};

int main(void)
{
	CHECK_INT(uprobe_site__emulated(glibc_free, sizeof(glibc_free), UPROBE_RDI), 3);
	CHECK_INT(uprobe_site__emulated(glibc_malloc, sizeof(glibc_malloc), UPROBE_RDI), 0);
	CHECK_INT(uprobe_site__emulated(glibc_memalign, sizeof(glibc_memalign), UPROBE_RSI), 7);
	CHECK_INT(uprobe_site__emulated(glibc_posix_memalign, sizeof(glibc_posix_memalign),
					UPROBE_RDI | UPROBE_RDX),
		  7);
	/* rbx and rsp written, rdi kept: the push after them */
	CHECK_INT(uprobe_site__emulated(cet_copy, sizeof(cet_copy), UPROBE_RDI), 11);
	/* with a return probe the stack pointer must not have moved: stay at the entry */
	CHECK_INT(uprobe_site__emulated(cet_copy, sizeof(cet_copy), UPROBE_RDI | UPROBE_RSP), 0);
	CHECK_INT(uprobe_site__emulated(glibc_posix_memalign, sizeof(glibc_posix_memalign),
					UPROBE_RDI | UPROBE_RDX | UPROBE_RSP),
		  7);
	/* rdi overwritten before the first emulated instruction: stay at the entry */
	CHECK_INT(uprobe_site__emulated(clobber, sizeof(clobber), UPROBE_RDI), 0);
	CHECK_INT(uprobe_site__emulated(clobber, sizeof(clobber), UPROBE_RSI), 3);
	CHECK_INT(uprobe_site__emulated(unknown, sizeof(unknown), UPROBE_RDI), 0);
	CHECK_INT(uprobe_site__emulated(torch_end, sizeof(torch_end), UPROBE_RDI), 4);
	/* a 32-bit load into rcx keeps the arguments: the je after the test */
	CHECK_INT(uprobe_site__emulated(torch_enter, sizeof(torch_enter), UPROBE_RDI | UPROBE_RDX),
		  5);
	CHECK_INT(uprobe_site__emulated(torch_enter, sizeof(torch_enter), UPROBE_REG(1)), 0);
	/* a load into rdi: stay at the entry */
	CHECK_INT(uprobe_site__emulated(torch_exit, sizeof(torch_exit), UPROBE_RDI), 0);
	CHECK_INT(uprobe_site__emulated(sib_load, sizeof(sib_load), UPROBE_RDI), 0);
	CHECK_INT(uprobe_site__emulated(torch_enter, 6, UPROBE_RDI), 0);
	/* a truncated instruction is not read past the buffer */
	CHECK_INT(uprobe_site__emulated(glibc_free, 4, UPROBE_RDI), 0);
	return check_done("uprobe_site");
}
