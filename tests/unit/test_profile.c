// SPDX-License-Identifier: Apache-2.0
/* Unit tests for the in-memory profile: interning, merging, labels, memory bound, names. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "profile/profile.h"

static struct profile_config cfg(size_t max_bytes)
{
	struct profile_config c = {
		.n_sample_types = 2,
		.sample_types = {{"samples", "count"}, {"cpu", "nanoseconds"}},
		.period_type = {"cpu", "nanoseconds"},
		.period = 10000000,
		.max_bytes = max_bytes,
	};
	return c;
}

struct collected {
	int n;
	int64_t v0[16], v1[16];
	int n_locs[16];
	int n_labels[16];
	uint32_t locs[16][8];
	struct profile_label labels[16][4];
};

static int collect(const struct profile_sample_view *s, void *ctx)
{
	struct collected *c = ctx;

	if (c->n >= 16)
		return -1;
	c->v0[c->n] = s->values[0];
	c->v1[c->n] = s->values[1];
	c->n_locs[c->n] = s->n_locations;
	c->n_labels[c->n] = s->n_labels;
	for (int i = 0; i < s->n_locations && i < 8; i++)
		c->locs[c->n][i] = s->location_ids[i];
	for (int i = 0; i < s->n_labels && i < 4; i++)
		c->labels[c->n][i] = s->labels[i];
	c->n++;
	return 0;
}

static void test_merge_and_share(void)
{
	struct profile_config c = cfg(0);
	struct profile *p = profile__new(&c);
	struct frame_mapping libc = {0x7f0000000000, 0x7f0000200000, 0x28000,
				     "/usr/lib/x86_64-linux-gnu/libc.so.6", "abcdef0123"};
	/* strings in writable buffers: the profile must keep its own copies */
	char fname[32], fname2[32];
	struct frame st[3] = {
		{.kind = FRAME_NATIVE, .addr = 0x7f0000001234, .function = fname, .map = &libc},
		{.kind = FRAME_PYTHON, .function = "forward", .file = "/x/model.py", .line = 42},
		{.kind = FRAME_KERNEL, .addr = 0xffffffff81000010, .function = "do_syscall_64"},
	};
	int64_t v[2] = {1, 10};
	struct collected col = {0};
	char buf[256];

	CHECK(p != NULL, "profile__new");
	strcpy(fname, "memcpy");
	CHECK_INT(profile__add(p, st, 3, v, NULL, 0), 0);
	strcpy(fname, "XXXXXX"); /* same address: still the same location, name from first add */
	CHECK_INT(profile__add(p, st, 3, v, NULL, 0), 0);
	CHECK_INT(profile__n_samples(p), 1);
	CHECK_INT(profile__total(p, 0), 2);
	CHECK_INT(profile__total(p, 1), 20);
	CHECK_INT(profile__n_locations(p), 3);
	CHECK_INT(profile__n_mappings(p), 1);

	/* a different stack sharing the leaf location */
	strcpy(fname2, "forward");
	st[1].function = fname2;
	st[1].line = 43;
	CHECK_INT(profile__add(p, st, 2, v, NULL, 0), 0);
	CHECK_INT(profile__n_samples(p), 2);
	CHECK_INT(profile__n_locations(p), 4); /* python line 43 is a new location */
	CHECK_INT(profile__n_functions(p), 3); /* memcpy, forward, do_syscall_64 */
	profile__for_each_sample(p, collect, &col);
	CHECK_INT(col.n, 2);
	CHECK_INT(col.v0[0], 2);
	CHECK_INT(col.v1[0], 20);
	CHECK_INT(col.n_locs[0], 3);
	CHECK_INT(col.locs[0][0], col.locs[1][0]); /* shared leaf */
	CHECK(col.locs[0][1] != col.locs[1][1], "different python lines, different locations");
	CHECK(col.locs[0][0] >= 1 && col.locs[0][2] >= 1, "ids are 1-based");

	/* views */
	struct profile_location_view lv;
	struct profile_function_view fv;
	struct profile_mapping_view mv;

	profile__location(p, col.locs[0][0] - 1, &lv);
	CHECK_INT(lv.id, col.locs[0][0]);
	CHECK_INT(lv.address, 0x7f0000001234);
	CHECK_INT(lv.mapping_id, 1);
	CHECK_INT(lv.kind, FRAME_NATIVE);
	CHECK(lv.function_id >= 1, "native named frame has a function");
	profile__function(p, lv.function_id - 1, &fv);
	CHECK_STR(fv.name, "memcpy");
	CHECK_STR(fv.filename, "");
	profile__mapping(p, 0, &mv);
	CHECK_INT(mv.id, 1);
	CHECK_STR(mv.file, "/usr/lib/x86_64-linux-gnu/libc.so.6");
	CHECK_STR(mv.build_id, "abcdef0123");
	CHECK_INT(mv.file_offset, 0x28000);
	CHECK(mv.has_functions, "all locations of the mapping are named");

	CHECK_STR(profile__location_name(p, col.locs[0][0], buf, sizeof(buf)), "memcpy");
	CHECK_STR(profile__location_name(p, col.locs[0][1], buf, sizeof(buf)),
		  "forward (/x/model.py:42)");
	CHECK_STR(profile__location_name(p, col.locs[0][2], buf, sizeof(buf)), "do_syscall_64_[k]");
	CHECK(profile__bytes(p) > sizeof(void *) * 10, "bytes accounted");
	profile__free(p);
}

static void test_labels(void)
{
	struct profile_config c = cfg(0);
	struct profile *p = profile__new(&c);
	struct frame f = {.kind = FRAME_PYTHON, .function = "train", .file = "t.py", .line = 1};
	int64_t v[2] = {1, 5};
	struct profile_label a[2] = {{.key = "thread", .str = "worker-1"},
				     {.key = "pid", .num = 1234, .num_unit = "pid"}};
	struct profile_label b[2] = {{.key = "pid", .num = 1234, .num_unit = "pid"},
				     {.key = "thread", .str = "worker-1"}};
	struct profile_label d[1] = {{.key = "thread", .str = "worker-2"}};
	char key[16], val[16];
	struct profile_label e[1] = {{.key = key, .str = val}};
	struct collected col = {0};

	CHECK_INT(profile__add(p, &f, 1, v, a, 2), 0);
	CHECK_INT(profile__add(p, &f, 1, v, b, 2), 0); /* same labels, other order */
	CHECK_INT(profile__n_samples(p), 1);
	CHECK_INT(profile__add(p, &f, 1, v, d, 1), 0);
	CHECK_INT(profile__n_samples(p), 2);
	CHECK_INT(profile__add(p, &f, 1, v, NULL, 0), 0);
	CHECK_INT(profile__n_samples(p), 3);
	strcpy(key, "thread");
	strcpy(val, "worker-2");
	CHECK_INT(profile__add(p, &f, 1, v, e, 1), 0);
	memset(val, 'Z', 8); /* the profile copied the label strings */
	CHECK_INT(profile__n_samples(p), 3);
	CHECK_INT(profile__n_locations(p), 1);
	CHECK_INT(profile__total(p, 1), 25);
	profile__for_each_sample(p, collect, &col);
	CHECK_INT(col.n, 3);
	CHECK_INT(col.v0[0], 2);
	CHECK_INT(col.n_labels[0], 2);
	CHECK_STR(col.labels[0][0].key, "pid");
	CHECK_INT(col.labels[0][0].num, 1234);
	CHECK_STR(col.labels[0][0].num_unit, "pid");
	CHECK(col.labels[0][0].str == NULL, "numeric label has no str");
	CHECK_STR(col.labels[0][1].str, "worker-1");
	CHECK_INT(col.v0[1], 2);
	CHECK_STR(col.labels[1][0].str, "worker-2");
	CHECK_INT(col.n_labels[2], 0);
	profile__free(p);
}

static void test_memory_bound(void)
{
	struct profile_config c = cfg(64 * 1024);
	struct profile *p = profile__new(&c);
	struct frame f[2] = {
		{.kind = FRAME_KERNEL, .function = "leaf"},
		{.kind = FRAME_KERNEL, .addr = 0xffffffff81000000, .function = "root"},
	};
	int64_t v[2] = {1, 1};
	int ok = 0, nospc = 0, first_err = 0;

	for (uint64_t i = 0; i < 20000; i++) {
		int err;

		f[0].addr = 0xffffffff82000000 + i * 16;
		err = profile__add(p, f, 2, v, NULL, 0);
		if (!err)
			ok++;
		else if (err == -ENOSPC)
			nospc++;
		else if (!first_err)
			first_err = err;
	}
	CHECK_INT(first_err, 0);
	CHECK(ok > 10 && nospc > 0, "ok=%d nospc=%d", ok, nospc);
	CHECK_INT(profile__dropped(p), nospc);
	CHECK(profile__bytes(p) <= 64 * 1024, "bytes %zu within bound", profile__bytes(p));
	CHECK_INT(profile__n_samples(p), ok);
	/* merging into an existing sample still works when full */
	f[0].addr = 0xffffffff82000000;
	CHECK_INT(profile__add(p, f, 2, v, NULL, 0), 0);
	CHECK_INT(profile__total(p, 0), ok + 1);
	/* and a new stack is refused */
	f[0].addr = 0xffffffff8f000000;
	CHECK_INT(profile__add(p, f, 2, v, NULL, 0), -ENOSPC);
	CHECK_INT(profile__dropped(p), nospc + 1);
	profile__free(p);
}

static void test_names(void)
{
	struct profile_config c = cfg(0);
	struct profile *p = profile__new(&c);
	struct frame_mapping m = {0x400000, 0x500000, 0x1000, "/opt/app/bin/trainer", NULL};
	struct frame f[6] = {
		{.kind = FRAME_NATIVE, .addr = 0x401234, .map = &m}, /* unnamed */
		{.kind = FRAME_NATIVE,
		 .addr = 0x402000,
		 .function = "std::vector<std::pair<int, \"q\">>::push_back(a\\b&)",
		 .map = &m},
		{.kind = FRAME_TRUNCATED, .function = "[truncated: stack copy limit]"},
		{.kind = FRAME_CUDA_KERNEL, .function = "void gemm<float, 128>(float*)"},
		{.kind = FRAME_PYTHON,
		 .function = "forward",
		 .file = "/usr/lib/python3/site-packages/torch/nn/modules/module.py",
		 .line = 1501},
		{.kind = FRAME_PROCESS, .function = "python3"},
	};
	int64_t v[2] = {3, 30};
	struct collected col = {0};
	struct profile_mapping_view mv;
	struct profile_location_view lv;
	char buf[256];

	CHECK_INT(profile__add(p, f, 6, v, NULL, 0), 0);
	profile__for_each_sample(p, collect, &col);
	CHECK_INT(col.n, 1);
	CHECK_STR(profile__location_name(p, col.locs[0][0], buf, sizeof(buf)), "trainer+0x2234");
	CHECK_STR(profile__location_name(p, col.locs[0][1], buf, sizeof(buf)),
		  "std::vector<std::pair<int, \"q\">>::push_back(a\\b&)");
	CHECK_STR(profile__location_name(p, col.locs[0][2], buf, sizeof(buf)),
		  "[truncated: stack copy limit]");
	CHECK_STR(profile__location_name(p, col.locs[0][3], buf, sizeof(buf)),
		  "void gemm<float, 128>(float*)");
	CHECK_STR(profile__location_name(p, col.locs[0][4], buf, sizeof(buf)),
		  "forward (torch/nn/modules/module.py:1501)");
	CHECK_STR(profile__location_name(p, col.locs[0][5], buf, sizeof(buf)), "python3");
	profile__location(p, col.locs[0][0] - 1, &lv);
	CHECK_INT(lv.function_id, 0);
	CHECK_INT(lv.line, 0);
	profile__location(p, col.locs[0][2] - 1, &lv);
	CHECK_INT(lv.kind, FRAME_TRUNCATED);
	CHECK(lv.function_id > 0, "truncated marker has a function");
	profile__mapping(p, 0, &mv);
	CHECK_STR(mv.build_id, "");
	CHECK(!mv.has_functions, "one location of the mapping is unnamed");
	/* invalid input */
	CHECK_INT(profile__add(p, f, -1, v, NULL, 0), -EINVAL);
	CHECK_INT(profile__add(p, f, 1, v, NULL, PROFILE_MAX_LABELS + 1), -EINVAL);
	profile__free(p);

	struct profile_config bad = cfg(0);

	bad.n_sample_types = 0;
	errno = 0;
	CHECK(profile__new(&bad) == NULL && errno == EINVAL, "zero sample types rejected");
}

static void test_many(void)
{
	struct profile_config c = cfg(0);
	struct profile *p = profile__new(&c);
	int64_t v[2] = {1, 2};
	char name[32];
	int err = 0;

	/* enough to force several table doublings */
	for (int r = 0; r < 2; r++) {
		for (int i = 0; i < 5000 && !err; i++) {
			struct frame f[2] = {
				{.kind = FRAME_PYTHON, .function = name, .file = "a.py", .line = 1},
				{.kind = FRAME_PROCESS, .function = "proc"},
			};

			snprintf(name, sizeof(name), "fn%d", i);
			err = profile__add(p, f, 2, v, NULL, 0);
		}
	}
	CHECK_INT(err, 0);
	CHECK_INT(profile__n_samples(p), 5000);
	CHECK_INT(profile__n_functions(p), 5001);
	CHECK_INT(profile__total(p, 0), 10000);
	CHECK_INT(profile__total(p, 1), 20000);
	CHECK_INT(profile__total(p, 2), 0); /* out of range */
	profile__free(p);
}

/* Each sample's location names joined, in sample order (a profile's whole content). */
struct names_of {
	const struct profile *p;
	char *out;
	size_t used, cap;
};

static int append_names(const struct profile_sample_view *s, void *ctx)
{
	struct names_of *no = ctx;
	char buf[128];

	for (int i = 0; i < s->n_locations; i++) {
		const char *n = profile__location_name(no->p, s->location_ids[i], buf, sizeof(buf));
		int w = snprintf(no->out + no->used, no->cap - no->used, "%s;", n);

		if (w < 0 || (size_t)w >= no->cap - no->used)
			return -1;
		no->used += (size_t)w;
	}
	no->used += (size_t)snprintf(no->out + no->used, no->cap - no->used, "=%lld\n",
				     (long long)s->values[0]);
	return 0;
}

/*
 * Frames with idents (frame.h) go through the location memo: the same profile as without
 * them, over enough distinct frames to overwrite the memo's first slots and grow it, with
 * names in buffers rewritten between samples (the memo keys on idents, not pointers).
 */
static void test_idents(void)
{
	struct profile_config c = cfg(0);
	struct profile *plain = profile__new(&c), *memo = profile__new(&c);
	struct frame_mapping m = {0x400000, 0x900000, 0, "/opt/app/bin/trainer", "0123abcd"};
	struct names_of a = {plain, malloc(4u << 20), 0, 4u << 20};
	struct names_of b = {memo, malloc(4u << 20), 0, 4u << 20};
	int64_t v[2] = {1, 10};
	char fn[32], nat[32];
	char buf[128];
	int err = 0;

	CHECK(a.out && b.out, "buffers");
	for (int r = 0; r < 3; r++) {
		for (int i = 0; i < 3000 && !err; i++) {
			struct frame f[2] = {
				{.kind = FRAME_NATIVE,
				 .addr = 0x400000 + 16u * (unsigned)i,
				 .function = nat,
				 .map = &m},
				{.kind = FRAME_PYTHON,
				 .function = fn,
				 .file = "loop.py",
				 .start_line = 10,
				 .line = 10 + (uint32_t)(i % 13)},
			};

			snprintf(nat, sizeof(nat), "native_%d", i);
			snprintf(fn, sizeof(fn), "step_%d", i % 700);
			err = profile__add(plain, f, 2, v, NULL, 0);
			f[0].ident = 7; /* one maps generation: by address */
			f[1].ident = 100 + (uint64_t)(i % 700); /* one per function */
			err = err ?: profile__add(memo, f, 2, v, NULL, 0);
		}
	}
	CHECK_INT(err, 0);
	CHECK_INT(profile__n_samples(memo), profile__n_samples(plain));
	CHECK_INT(profile__n_locations(memo), profile__n_locations(plain));
	CHECK_INT(profile__n_functions(memo), profile__n_functions(plain));
	CHECK_INT(profile__total(memo, 0), 9000);
	CHECK_INT(profile__for_each_sample(plain, append_names, &a), 0);
	CHECK_INT(profile__for_each_sample(memo, append_names, &b), 0);
	CHECK(a.used == b.used && !memcmp(a.out, b.out, a.used), "same samples, same names");
	CHECK(profile__bytes(memo) >= profile__bytes(plain) + 1024 * 24,
	      "the memo grew past its first 512 slots");

	/* an unnamed frame remembered by its ident, then named under another (a debug file
	 * came): the location is named, and the first ident finds it named */
	struct frame u = {.kind = FRAME_NATIVE, .addr = 0x8f0000, .map = &m, .ident = 900};
	struct frame nm = u;
	struct collected col = {0};

	nm.function = "late_name";
	nm.ident = 901;
	CHECK_INT(profile__add(memo, &u, 1, v, NULL, 0), 0);
	CHECK_INT(profile__add(memo, &nm, 1, v, NULL, 0), 0);
	CHECK_INT(profile__add(memo, &u, 1, v, NULL, 0), 0);
	profile__free(plain);
	plain = profile__new(&c);
	CHECK_INT(profile__add(plain, &nm, 1, v, NULL, 0), 0);
	profile__for_each_sample(plain, collect, &col);
	CHECK_INT(col.n, 1);
	CHECK_STR(profile__location_name(plain, col.locs[0][0], buf, sizeof(buf)), "late_name");
	b.used = 0;
	CHECK_INT(profile__for_each_sample(memo, append_names, &b), 0);
	CHECK(strstr(b.out, "late_name;=3\n") != NULL, "the three samples on one named location");
	free(a.out);
	free(b.out);
	profile__free(plain);
	profile__free(memo);
}

/*
 * profile__add_selected: the samples of a CPU profile that have an ml_phase label go to a
 * one-value profile with their nanoseconds, stacks (named, unnamed by address, Python,
 * kernel) and labels as they were; the others do not.
 */
static void test_selected(void)
{
	struct profile_config c = cfg(0), w = {
						  .n_sample_types = 1,
						  .sample_types = {{"wall", "nanoseconds"}},
						  .period_type = {"wall", "nanoseconds"},
					  };
	struct profile *src = profile__new(&c), *dst = profile__new(&w);
	struct frame_mapping m = {0x400000, 0x900000, 0x1000, "/opt/app/bin/trainer", "0123abcd"};
	struct frame named[3] = {
		{.kind = FRAME_NATIVE, .addr = 0x401234, .function = "gemm", .map = &m, .ident = 5},
		{.kind = FRAME_PYTHON,
		 .function = "train_step",
		 .file = "loop.py",
		 .line = 21,
		 .start_line = 19},
		{.kind = FRAME_KERNEL, .addr = 0xffffffff81000000, .function = "do_syscall_64"},
	};
	struct frame unnamed = {.kind = FRAME_NATIVE, .addr = 0x402000, .map = &m};
	struct profile_label opt[2] = {{.key = "pid", .num = 7},
				       {.key = "ml_phase", .str = "optimizer"}};
	struct profile_label cpu[2] = {{.key = "pid", .num = 7},
				       {.key = "ml_phase", .str = "cpu_compute"}};
	struct profile_label none[1] = {{.key = "pid", .num = 7}};
	int64_t v[2] = {1, 10000000};
	struct names_of a = {src, malloc(1 << 16), 0, 1 << 16};
	struct names_of b = {dst, malloc(1 << 16), 0, 1 << 16};
	struct collected col = {0};

	CHECK(src && dst && a.out && b.out, "profiles");
	CHECK_INT(profile__add(src, named, 3, v, opt, 2), 0);
	CHECK_INT(profile__add(src, named, 3, v, opt, 2), 0);
	CHECK_INT(profile__add(src, named, 2, v, cpu, 2), 0);
	CHECK_INT(profile__add(src, named, 3, v, none, 1), 0);
	CHECK_INT(profile__add(src, &unnamed, 1, v, cpu, 2), 0);
	CHECK(profile__any_labelled(src, "ml_phase"), "src has phases");
	CHECK(!profile__any_labelled(src, "nothing"), "no such label");
	CHECK_INT(profile__add_selected(src, src, "ml_phase", 1), -EINVAL); /* two values */
	CHECK_INT(profile__add_selected(dst, src, "ml_phase", 2), -EINVAL);

	CHECK_INT(profile__add_selected(dst, src, "ml_phase", 1), 0);
	CHECK_INT(profile__n_samples(dst), 3);
	CHECK_INT(profile__total(dst, 0), 40000000);
	CHECK_INT(profile__for_each_sample(dst, append_names, &b), 0);
	CHECK(strstr(b.out, "gemm;train_step (loop.py:21);do_syscall_64_[k];=20000000\n") != NULL,
	      "the optimizer's stack, merged");
	CHECK(strstr(b.out, "gemm;train_step (loop.py:21);=10000000\n") != NULL,
	      "the compute stack");
	/* (module+offset: the mapping and its file offset came along) */
	CHECK(strstr(b.out, "trainer+0x3000;=10000000\n") != NULL, "unnamed, by its mapping");
	CHECK(!strstr(b.out, "=30000000"), "the sample without a phase left out");
	profile__for_each_sample(dst, collect, &col);
	for (int i = 0; i < col.n; i++) {
		CHECK_INT(col.n_labels[i], 2);
		CHECK_STR(col.labels[i][0].key, "ml_phase");
		CHECK_STR(col.labels[i][1].key, "pid");
		CHECK_INT(col.labels[i][1].num, 7);
	}
	/* added again: the same samples, twice the values */
	CHECK_INT(profile__add_selected(dst, src, "ml_phase", 1), 0);
	CHECK_INT(profile__n_samples(dst), 3);
	CHECK_INT(profile__total(dst, 0), 80000000);
	free(a.out);
	free(b.out);
	profile__free(src);
	profile__free(dst);
}

int main(void)
{
	test_merge_and_share();
	test_labels();
	test_memory_bound();
	test_names();
	test_many();
	test_idents();
	test_selected();
	return check_done("profile");
}
