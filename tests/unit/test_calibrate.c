// SPDX-License-Identifier: Apache-2.0
/* Unit test: sampled profiles calibrated to exact counts (profile/calibrate.c). */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "profile/calibrate.h"
#include "profile/profile.h"

static struct profile *new_profile(int n_types)
{
	struct profile_config cfg = {
		.n_sample_types = n_types,
		.sample_types = {{"calls", "count"}, {"bytes", "bytes"}},
		.period_type = {"calls", "count"},
		.period = 1,
	};

	return profile__new(&cfg);
}

/* Adds a two-frame stack (leaf kernel over caller) of process pid with values v0, v1. */
static void add(struct profile *p, int64_t pid, const char *leaf, const char *caller, int64_t v0,
		int64_t v1)
{
	struct frame fr[2] = {
		{.kind = FRAME_CUDA_KERNEL, .function = leaf},
		{.kind = FRAME_PYTHON, .function = caller, .file = "train.py", .line = 7},
	};
	struct profile_label lab[2] = {{.key = "pid", .num = pid},
				       {.key = "process_name", .str = "python"}};
	int64_t v[2] = {v0, v1};

	CHECK_INT(profile__add(p, fr, 2, v, lab, 2), 0);
}

struct sums {
	int64_t pid;
	const char *leaf, *caller;
	int64_t v0, v1;
	int n;
};

static struct profile *cur;

static const char *frame_name(const struct profile_sample_view *s, int i)
{
	struct profile_location_view loc;
	struct profile_function_view fn;

	if (i >= s->n_locations)
		return NULL;
	profile__location(cur, s->location_ids[i] - 1, &loc);
	if (!loc.function_id)
		return NULL;
	profile__function(cur, loc.function_id - 1, &fn);
	return fn.name;
}

static int sum2_cb(const struct profile_sample_view *s, void *ctx)
{
	struct sums *q = ctx;
	int64_t pid = -1;

	for (int i = 0; i < s->n_labels; i++)
		if (!strcmp(s->labels[i].key, "pid"))
			pid = s->labels[i].num;
	if (pid != q->pid || strcmp(frame_name(s, 0) ? frame_name(s, 0) : "", q->leaf))
		return 0;
	if (q->caller && strcmp(frame_name(s, 1) ? frame_name(s, 1) : "", q->caller))
		return 0;
	q->v0 += s->values[0];
	q->v1 += s->values[1];
	q->n++;
	return 0;
}

static struct sums sum(struct profile *p, int64_t pid, const char *leaf, const char *caller)
{
	struct sums q = {.pid = pid, .leaf = leaf, .caller = caller};

	cur = p;
	profile__for_each_sample(p, sum2_cb, &q);
	return q;
}

/* Launch weights: each kernel ends at its exact count, split in proportion over its call
 * sites; a kernel without a captured stack is added; other processes are left alone. */
static void test_launches(void)
{
	struct profile *p = new_profile(2);
	struct calib_target t[] = {
		{.pid = 10, .leaf = "gemm", .count = 1000},
		{.pid = 10, .leaf = "relu", .count = 301},
		{.pid = 10, .leaf = "relu", .count = 200},   /* a second handle of the same name */
		{.pid = 10, .leaf = "softmax", .count = 77}, /* never captured */
		{.pid = 11, .leaf = "gemm", .count = 0},     /* nothing: ignored */
	};
	struct calib_stats st;
	struct sums a, b;

	/* sampled: gemm 3 captures of weight 300 (one site twice), relu 2 of 260 */
	add(p, 10, "gemm", "forward", 600, 6000);
	add(p, 10, "gemm", "backward", 300, 3000);
	add(p, 10, "relu", "forward", 260, 0);
	add(p, 10, "relu", "backward", 260, 0);
	add(p, 12, "gemm", "forward", 50, 0); /* no target: untouched */
	CHECK_INT(calibrate__profile(p, 0, FRAME_CUDA_KERNEL, t, 5, &st), 0);
	CHECK_INT(st.groups, 2);
	CHECK_INT(st.added, 1);
	CHECK_INT(st.before, 900 + 520);
	CHECK_INT(st.after, 1000 + 501 + 77);
	CHECK_INT(sum(p, 10, "gemm", NULL).v0, 1000);
	a = sum(p, 10, "gemm", "forward");
	b = sum(p, 10, "gemm", "backward");
	CHECK(a.v0 >= 666 && a.v0 <= 667, "forward %lld", (long long)a.v0);
	CHECK_INT(a.v0 + b.v0, 1000);
	/* the other value type follows its sample's factor */
	CHECK(a.v1 >= 6660 && a.v1 <= 6670, "forward bytes %lld", (long long)a.v1);
	CHECK_INT(sum(p, 10, "relu", NULL).v0, 501);
	a = sum(p, 10, "relu", "forward");
	CHECK(a.v0 == 250 || a.v0 == 251, "relu forward %lld", (long long)a.v0);
	a = sum(p, 10, "softmax", NULL);
	CHECK_INT(a.v0, 77);
	CHECK_INT(a.n, 1);
	a = sum(p, 10, "softmax", "[stack not captured]");
	CHECK_INT(a.v0, 77);
	CHECK_INT(sum(p, 12, "gemm", NULL).v0, 50);
	CHECK_INT(profile__total(p, 0), 1000 + 501 + 77 + 50);
	profile__free(p);
}

/* Per-process totals (leaf NULL): every sample of the process, whatever its leaf. */
static void test_per_process(void)
{
	struct profile *p = new_profile(2);
	struct calib_target t[] = {{.pid = 7, .leaf = NULL, .count = 9}};
	struct calib_stats st;

	add(p, 7, "ncclAllReduce", "step", 4, 4096);
	add(p, 7, "ncclBroadcast", "init", 4, 64);
	CHECK_INT(calibrate__profile(p, 0, FRAME_NATIVE, t, 1, &st), 0);
	CHECK_INT(st.groups, 1);
	CHECK_INT(profile__total(p, 0), 9);
	CHECK_INT(sum(p, 7, "ncclAllReduce", NULL).v0 + sum(p, 7, "ncclBroadcast", NULL).v0, 9);
	profile__free(p);
}

/* Large counts and weights do not overflow; many samples of one group round exactly. */
static void test_rounding(void)
{
	struct profile *p = new_profile(2);
	struct calib_target t[] = {{.pid = 1, .leaf = "k", .count = 3000000000000ll}};
	char caller[32];

	for (int i = 0; i < 997; i++) {
		snprintf(caller, sizeof(caller), "site%d", i);
		add(p, 1, "k", caller, 1 + i % 7, 0);
	}
	CHECK_INT(calibrate__profile(p, 0, FRAME_CUDA_KERNEL, t, 1, NULL), 0);
	CHECK_INT(profile__total(p, 0), 3000000000000ll);
	profile__free(p);
}

int main(void)
{
	test_launches();
	test_per_process();
	test_rounding();
	return check_done("calibrate");
}
