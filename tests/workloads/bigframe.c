// SPDX-License-Identifier: Apache-2.0
/*
 * For it.record_go: a hand-written kernel shaped like OpenBLAS's GEMM kernels (numpy's):
 * no CFI, no frame pointer (rbp holds data), ~29 KiB of stack aligned down to 4 KiB, so
 * its return address lies that far above the sampled stack pointer; under it
 * main -> bf_outer -> bf_mid, C with CFI. Before the kernel runs, bf_litter leaves return
 * addresses of a deep recursion in the stack the kernel then takes as scratch: stale return
 * addresses a scan could mistake for the kernel's.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

/* bigframe_kernel(iterations): spins with its stack as described, returns. */
__asm__(".text\n"
	".globl bigframe_kernel\n"
	".type bigframe_kernel, @function\n"
	"bigframe_kernel:\n"
	"	sub $0x60, %rsp\n"
	"	mov %rbx, (%rsp)\n"
	"	mov %rbp, 8(%rsp)\n"
	"	mov %rsp, %rbx\n"
	"	sub $0x7080, %rsp\n"
	"	and $-4096, %rsp\n"
	"	movabs $0x3fe63d9bd69ac49a, %rbp\n"
	/* the buffer is written (OpenBLAS packs panels into it): its pages are present */
	"	xor %rax, %rax\n"
	"2:	mov %rbp, (%rsp,%rax)\n"
	"	add $512, %rax\n"
	"	cmp $0x7000, %rax\n"
	"	jb 2b\n"
	"1:	mov %rdi, 0x40(%rsp)\n"
	"	add %rdi, %rbp\n"
	"	dec %rdi\n"
	"	jnz 1b\n"
	"	mov %rbx, %rsp\n"
	"	mov (%rsp), %rbx\n"
	"	mov 8(%rsp), %rbp\n"
	"	add $0x60, %rsp\n"
	"	ret\n"
	".size bigframe_kernel, .-bigframe_kernel\n");

void bigframe_kernel(long iterations);

static volatile uint64_t sink;

/* Recursion ~24 KiB deep: its frames' return addresses stay behind in the stack. */
__attribute__((noinline)) uint64_t bf_litter(int depth)
{
	volatile char pad[96];

	pad[0] = (char)depth;
	if (depth <= 0)
		return pad[0];
	return bf_litter(depth - 1) + pad[0];
}

__attribute__((noinline)) void bf_mid(int secs)
{
	time_t end = time(NULL) + secs; /* (whole seconds are enough here) */

	while (time(NULL) < end) {
		sink += bf_litter(200);
		bigframe_kernel(20000000);
	}
}

__attribute__((noinline)) void bf_outer(int secs)
{
	bf_mid(secs);
	sink++;
}

int main(int argc, char **argv)
{
	int secs = argc > 1 ? atoi(argv[1]) : 2;

	if (secs <= 0) {
		fprintf(stderr, "usage: %s SECONDS\n", argv[0]);
		return 2;
	}
	bf_outer(secs);
	printf("{\"pid\": %d}\n", (int)getpid());
	return 0;
}
