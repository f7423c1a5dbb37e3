// SPDX-License-Identifier: Apache-2.0
/*
 * TEST DOUBLE of PyTorch's CUDA caching allocator (libc10_cuda.so), for it.record_cuda only:
 * it is NOT PyTorch and allocates no device memory (its "device pointers" are numbers). It
 * carries the allocator's USDT probes as torch 2.x declares them, pytorch:malloc(ptr,
 * device, size, stream) and pytorch:free(ptr), each behind its semaphore, so that the probe
 * sites run only while a tracer has them attached (TORCH_SDT_WITH_SEMAPHORE): the real
 * allocator only runs with a GPU, which this machine has not.
 *
 * Usage: torch_alloc [STEPS]. Waits (up to 10 s) until a tracer attached its probes, then:
 * keep_tensors() allocates 64 tensors of 4 MiB and keeps them; each step, step_tensors()
 * allocates 8 tensors of 3 MiB and 64 of 16 KiB and frees them all. Prints one JSON line
 * with what it did.
 */
#define _SDT_HAS_SEMAPHORES 1
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/sdt.h>
#include <time.h>

__extension__ unsigned short pytorch_malloc_semaphore __attribute__((unused))
__attribute__((section(".probes")));
__extension__ unsigned short pytorch_free_semaphore __attribute__((unused))
__attribute__((section(".probes")));

static uint64_t next_ptr = 0x7f3000000000ull;
static unsigned long long allocs, frees;

static __attribute__((noinline)) uint64_t tensor_malloc(uint64_t size)
{
	uint64_t p = next_ptr;
	int8_t device = 0;
	int64_t stream = 7;

	next_ptr += (size + 511) & ~511ull;
	allocs++;
	if (pytorch_malloc_semaphore)
		STAP_PROBE4(pytorch, malloc, p, device, size, stream);
	return p;
}

static __attribute__((noinline)) void tensor_free(uint64_t p)
{
	frees++;
	if (pytorch_free_semaphore)
		STAP_PROBE1(pytorch, free, p);
}

static uint64_t kept[64];

static __attribute__((noinline)) void keep_tensors(void)
{
	for (int i = 0; i < 64; i++)
		kept[i] = tensor_malloc(4u << 20);
}

static __attribute__((noinline)) uint64_t step_tensors(void)
{
	uint64_t p[72], bytes = 0;

	for (int i = 0; i < 72; i++) {
		uint64_t size = i < 8 ? 3u << 20 : 16u << 10;

		p[i] = tensor_malloc(size);
		bytes += size;
	}
	for (int i = 0; i < 72; i++)
		tensor_free(p[i]);
	return bytes;
}

int main(int argc, char **argv)
{
	int steps = argc > 1 ? atoi(argv[1]) : 200;
	struct timespec ms = {0, 1000000};
	uint64_t step_bytes = 0;

	for (int i = 0; i < 10000 && !(pytorch_malloc_semaphore && pytorch_free_semaphore); i++)
		nanosleep(&ms, NULL);
	if (!(pytorch_malloc_semaphore && pytorch_free_semaphore)) {
		fprintf(stderr, "torch_alloc: no tracer attached the pytorch probes in 10 s\n");
		return 1;
	}
	keep_tensors();
	for (int s = 0; s < steps; s++)
		step_bytes += step_tensors();
	printf("{\"kept_bytes\": %llu, \"step_bytes\": %llu, \"allocs\": %llu, \"frees\": %llu}\n",
	       (unsigned long long)(64ull * (4u << 20)), (unsigned long long)step_bytes, allocs,
	       frees);
	return 0;
}
