// SPDX-License-Identifier: Apache-2.0
/* Unit tests for the frame cache: hits, what a put refuses, strings that last a sample. */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "pipeline/frame_cache.h"

static struct frame named(const char *fn, const char *file)
{
	return (struct frame){.kind = FRAME_NATIVE, .addr = 1, .function = fn, .file = file};
}

/*
 * One slot: every pc lands in it. A put into a slot whose entry is in a frame of the
 * current sample is refused (that frame's strings would be freed under it); from the next
 * sample on, the slot is replaced.
 */
static void test_one_sample(void)
{
	struct frame_cache *fc = frame_cache__new(1);
	struct frame_cache_stats st;
	char name[32];
	struct frame a, b, got;

	CHECK(fc != NULL, "new");
	frame_cache__begin_sample(fc);
	strcpy(name, "alpha");
	a = named(name, "a.c");
	CHECK(frame_cache__put(fc, 1, 0, 0x1000, &a), "first put kept");
	/* f now points at the cache's copies, not at the caller's buffer */
	strcpy(name, "XXXXX");
	CHECK_STR(a.function, "alpha");
	CHECK_STR(a.file, "a.c");
	b = named("beta", "b.c");
	CHECK(!frame_cache__put(fc, 1, 0, 0x2000, &b), "the slot is in use by this sample");
	CHECK_STR(b.function, "beta"); /* unchanged: the caller copies it */
	CHECK_STR(a.function, "alpha");
	CHECK(frame_cache__get(fc, 1, 0, 0x1000, &got), "still there");
	CHECK(!frame_cache__get(fc, 1, 0, 0x2000, &got), "never kept");
	frame_cache__stats(fc, &st);
	CHECK_INT(st.busy, 1);

	/* the next sample: the put replaces it */
	frame_cache__begin_sample(fc);
	CHECK(frame_cache__put(fc, 1, 0, 0x2000, &b), "kept in a new sample");
	CHECK_STR(b.function, "beta");
	CHECK(!frame_cache__get(fc, 1, 0, 0x1000, &got), "replaced");
	CHECK(frame_cache__get(fc, 1, 0, 0x2000, &got), "hit");
	CHECK_STR(got.function, "beta");
	CHECK_STR(got.file, "b.c");
	/* a get marks the entry as used too */
	frame_cache__begin_sample(fc);
	CHECK(frame_cache__get(fc, 1, 0, 0x2000, &got), "hit");
	a = named("gamma", NULL);
	CHECK(!frame_cache__put(fc, 1, 0, 0x3000, &a), "an entry got in this sample stays");
	CHECK_STR(got.function, "beta");
	/* another generation or epoch is another frame */
	CHECK(!frame_cache__get(fc, 2, 0, 0x2000, &got), "other generation");
	CHECK(!frame_cache__get(fc, 1, 1, 0x2000, &got), "other epoch");
	frame_cache__free(fc);
}

/* Prefetching empty and filled slots, the leaf and return addresses alike, changes nothing. */
static void test_prefetch(void)
{
	struct frame_cache *fc = frame_cache__new(64);
	uint64_t pcs[40];
	struct frame f, got;

	CHECK(fc != NULL, "new");
	frame_cache__prefetch(fc, 3, pcs, 0);
	for (int i = 0; i < 40; i++)
		pcs[i] = 0x400000 + 0x100 * (uint64_t)i;
	frame_cache__prefetch(fc, 3, pcs, 40);
	frame_cache__begin_sample(fc);
	f = named("leaf", NULL);
	CHECK(frame_cache__put(fc, 3, 0, pcs[0], &f), "put");
	frame_cache__prefetch(fc, 3, pcs, 40);
	CHECK(frame_cache__get(fc, 3, 0, pcs[0], &got), "hit after prefetch");
	CHECK_STR(got.function, "leaf");
	CHECK(got.file == NULL, "no file");
	frame_cache__free(fc);
}

int main(void)
{
	test_one_sample();
	test_prefetch();
	return check_done("frame_cache");
}
