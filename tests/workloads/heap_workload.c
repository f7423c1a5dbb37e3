// SPDX-License-Identifier: Apache-2.0
/*
 * Heap workload of it.record_heap: allocations whose memory the allocator reuses.
 *   heap_workload reuse KEEP_MIB    each step keeps a 256 KiB block (keep_site, touched,
 *                                   never freed) and allocates, touches and frees a 1 MiB
 *                                   one (temp_site); every 16th step also keeps 64 blocks
 *                                   of 1 KiB (keep_small_site). After glibc raises its
 *                                   mmap threshold (the first free of a mapped 1 MiB
 *                                   block) both come from the heap, and the kept blocks
 *                                   reuse pages the temporaries faulted in.
 *   heap_workload mmap KEEP_MIB     each step keeps a 256 KiB anonymous mmap (mmap_keep_site),
 *                                   maps and unmaps a 1 MiB one (mmap_temp_site) and keeps a
 *                                   1 MiB malloc (big_keep_site: glibc maps it itself,
 *                                   which must not count twice).
 *   heap_workload balanced MIB      allocates MIB in blocks of mixed sizes (malloc,
 *                                   calloc, realloc, posix_memalign, aligned_alloc) and
 *                                   frees them all: nothing stays in use.
 * Prints one JSON line with the exact bytes kept, then exits without freeing (reuse).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#define KEEP_BYTES  (256u << 10)
#define TEMP_BYTES  (1u << 20)
#define SMALL_BYTES 1024u
#define SMALL_N	    64

static void *volatile sink;

__attribute__((noinline)) static void *keep_site(void)
{
	void *p = malloc(KEEP_BYTES);

	if (p)
		memset(p, 1, KEEP_BYTES);
	return p;
}

__attribute__((noinline)) static void *keep_small_site(void)
{
	void *p = malloc(SMALL_BYTES);

	if (p)
		memset(p, 2, SMALL_BYTES);
	return p;
}

__attribute__((noinline)) static void temp_site(void)
{
	char *p = malloc(TEMP_BYTES);

	if (!p)
		return;
	memset(p, 3, TEMP_BYTES);
	sink = p;
	free(p);
}

__attribute__((noinline)) static int run_reuse(unsigned long keep_mib)
{
	unsigned long steps = (keep_mib << 20) / KEEP_BYTES, kept = 0, small = 0;
	void **keep = calloc(steps * (1 + SMALL_N), sizeof(*keep));
	size_t n = 0;

	if (!keep)
		return 1;
	for (unsigned long i = 0; i < steps; i++) {
		if ((keep[n] = keep_site()))
			kept += KEEP_BYTES, n++;
		temp_site();
		if (i % 16 == 0)
			for (int k = 0; k < SMALL_N; k++)
				if ((keep[n] = keep_small_site()))
					small += SMALL_BYTES, n++;
	}
	sink = keep;
	printf("{\"kept_bytes\": %lu, \"kept_small_bytes\": %lu, \"temp_bytes\": %lu}\n", kept,
	       small, steps * (unsigned long)TEMP_BYTES);
	fflush(stdout);
	return 0;
}

__attribute__((noinline)) static void *mmap_keep_site(void)
{
	void *p =
		mmap(NULL, KEEP_BYTES, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED)
		return NULL;
	memset(p, 4, KEEP_BYTES);
	return p;
}

__attribute__((noinline)) static void mmap_temp_site(void)
{
	void *p =
		mmap(NULL, TEMP_BYTES, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED)
		return;
	memset(p, 5, TEMP_BYTES);
	munmap(p, TEMP_BYTES);
}

__attribute__((noinline)) static void *big_keep_site(void)
{
	void *p = malloc(TEMP_BYTES);

	if (p)
		memset(p, 6, TEMP_BYTES);
	return p;
}

__attribute__((noinline)) static int run_mmap(unsigned long keep_mib)
{
	unsigned long steps = (keep_mib << 20) / KEEP_BYTES, kept = 0, big = 0;

	for (unsigned long i = 0; i < steps; i++) {
		if ((sink = mmap_keep_site()))
			kept += KEEP_BYTES;
		mmap_temp_site();
		/* one 1 MiB malloc every 4 steps: as many bytes as the kept mappings */
		if (i % 4 == 0 && (sink = big_keep_site()))
			big += TEMP_BYTES;
	}
	printf("{\"kept_bytes\": %lu, \"kept_big_bytes\": %lu, \"temp_bytes\": %lu}\n", kept, big,
	       steps * (unsigned long)TEMP_BYTES);
	fflush(stdout);
	return 0;
}

__attribute__((noinline)) static int run_balanced(unsigned long mib)
{
	unsigned long total = 0, target = mib << 20, i = 0;

	while (total < target) {
		size_t sz = (size_t)64 << (i % 12); /* 64 B .. 128 KiB */
		void *a = malloc(sz), *b = calloc(1, sz), *c = NULL, *d = NULL, *e;

		if (posix_memalign(&c, 64, sz))
			c = NULL;
		d = aligned_alloc(4096, (sz + 4095) & ~(size_t)4095);
		e = realloc(malloc(16), sz);
		if (a)
			memset(a, 1, sz);
		/* through a volatile: the compiler may not elide a malloc and free pair */
		sink = a, sink = b, sink = c, sink = d, sink = e;
		total += 5 * sz;
		free(a);
		free(b);
		free(c);
		free(d);
		free(e);
		i++;
	}
	printf("{\"allocated_bytes\": %lu, \"kept_bytes\": 0}\n", total);
	fflush(stdout);
	return 0;
}

int main(int argc, char **argv)
{
	unsigned long mib = argc > 2 ? strtoul(argv[2], NULL, 10) : 64;

	if (argc > 1 && !strcmp(argv[1], "balanced"))
		return run_balanced(mib);
	if (argc > 1 && !strcmp(argv[1], "reuse"))
		return run_reuse(mib);
	if (argc > 1 && !strcmp(argv[1], "mmap"))
		return run_mmap(mib);
	fprintf(stderr, "usage: heap_workload reuse|mmap|balanced MIB\n");
	return 2;
}
