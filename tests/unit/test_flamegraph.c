// SPDX-License-Identifier: Apache-2.0
/* Unit tests for the text outputs: folded stacks, HTML flame graph (escaping, totals), SVG. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "profile/output.h"

#define NASTY "std::map<K, V>::operator[](\"k\\\\\") & </script><b>"

static struct profile *make_profile(void)
{
	struct profile_config cfg = {
		.n_sample_types = 2,
		.sample_types = {{"samples", "count"}, {"cpu", "nanoseconds"}},
		.period = 1000000,
	};
	struct frame_mapping so = {0x7f0000000000, 0x7f0000100000, 0x2000, "/lib/libtorch_cpu.so",
				   NULL};
	struct frame a[3] = {
		{.kind = FRAME_NATIVE, .addr = 0x7f0000000100, .function = NASTY, .map = &so},
		{.kind = FRAME_PYTHON, .function = "step", .file = "train.py", .line = 10},
		{.kind = FRAME_PROCESS, .function = "python3"},
	};
	struct frame b[3] = {
		{.kind = FRAME_KERNEL, .addr = 0xffffffff81000000, .function = "schedule"},
		{.kind = FRAME_NATIVE, .addr = 0x7f0000000300, .map = &so}, /* unnamed */
		{.kind = FRAME_PROCESS, .function = "python3"},
	};
	struct frame c[2] = {
		{.kind = FRAME_CUDA_KERNEL, .function = "ampere_sgemm_128x64"},
		{.kind = FRAME_TRUNCATED, .function = "[truncated: stack copy limit]"},
	};
	struct profile_label l1 = {.key = "tid", .num = 1}, l2 = {.key = "tid", .num = 2};
	int64_t v3[2] = {3, 3000}, v2[2] = {2, 2000}, v1[2] = {1, 1000};
	struct profile *p = profile__new(&cfg);

	if (!p)
		return NULL;
	/* the first stack twice with different labels: one folded line */
	if (profile__add(p, a, 3, v3, &l1, 1) || profile__add(p, a, 3, v2, &l2, 1) ||
	    profile__add(p, b, 3, v2, NULL, 0) || profile__add(p, c, 2, v1, NULL, 0))
		return NULL;
	return p;
}

static char *render(struct profile *p, int which, const char *title)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	int err;

	if (!f)
		return NULL;
	if (which == 0)
		err = folded__write(p, 0, f);
	else if (which == 1)
		err = flamegraph__write_html(p, 0, title, f);
	else
		err = flamegraph__write_svg(p, 1, title, f);
	fclose(f);
	CHECK_INT(err, 0);
	return buf;
}

static int count(const char *hay, const char *needle)
{
	/* memmem with a running length: strstr would rescan the whole (multi-MB) document
	 * for its length at every hit under ASan's interceptor. */
	size_t hl = strlen(hay), nl = strlen(needle);
	const char *s = hay, *end = hay + hl;
	int n = 0;

	while ((s = memmem(s, (size_t)(end - s), needle, nl)) != NULL) {
		n++;
		s++;
	}
	return n;
}

static void test_folded(struct profile *p)
{
	char *out = render(p, 0, NULL);

	CHECK_STR(out, "[truncated: stack copy limit];ampere_sgemm_128x64 1\n"
		       "python3;libtorch_cpu.so+0x2300;schedule_[k] 2\n"
		       "python3;step (train.py:10);" NASTY " 5\n");
	free(out);
}

static void test_html(struct profile *p)
{
	char *out = render(p, 1, "GPU <host> & \"train\"");
	const char *data;

	CHECK(out != NULL, "html rendered");
	if (!out)
		return;
	CHECK(!strncmp(out, "<!DOCTYPE html>", 15), "doctype");
	CHECK(strstr(out, "</html>\n") != NULL, "complete document");
	/* title escaped in <title> and in the JSON metadata */
	CHECK(strstr(out, "<title>GPU &lt;host&gt; &amp; &quot;train&quot;</title>") != NULL,
	      "title escaped");
	CHECK(strstr(out, "\"title\":\"GPU \\u003chost\\u003e \\u0026 \\\"train\\\"\"") != NULL,
	      "title in json");
	/* self-contained: no external resources */
	CHECK(!strstr(out, "src=\"http") && !strstr(out, "href=\"http") && !strstr(out, "@import"),
	      "no external resources");
	/* exactly one closing script tag per script element: names cannot close it */
	CHECK_INT(count(out, "</script>"), count(out, "<script"));
	data = strstr(out, "id=\"fg-data\">");
	CHECK(data != NULL, "embedded data");
	if (data) {
		static const char root[] =
			"{\"name\":\"all\",\"value\":8,\"kind\":-1,\"children\":["
			"{\"name\":\"[truncated: stack copy limit]\"";

		CHECK(!strncmp(data + 13, root, strlen(root)), "root total: %.80s", data + 13);
		CHECK(strstr(data, "{\"name\":\"std::map\\u003cK, "
				   "V\\u003e::operator[](\\\"k\\\\\\\\\\\") "
				   "\\u0026 \\u003c/script\\u003e\\u003cb\\u003e\",\"value\":5,"
				   "\"kind\":0}") != NULL,
		      "escaped nasty name with its value");
		CHECK(strstr(data, "{\"name\":\"python3\",\"value\":7,\"kind\":5,\"children\":[") !=
			      NULL,
		      "merged process node");
		CHECK(strstr(data, "{\"name\":\"schedule_[k]\",\"value\":2,\"kind\":1}") != NULL,
		      "kernel frame");
		CHECK(strstr(data, "{\"name\":\"ampere_sgemm_128x64\",\"value\":1,\"kind\":3}") !=
			      NULL,
		      "cuda frame");
		CHECK(strstr(data,
			     "\"name\":\"[truncated: stack copy limit]\",\"value\":1,\"kind\":4") !=
			      NULL,
		      "truncated frame");
	}
	CHECK(!strstr(out, "<b>"), "raw markup from names never appears");
	CHECK(strstr(out, "\"total\":8") != NULL, "meta total");
	CHECK(strstr(out, "id=\"search\"") && strstr(out, "id=\"reset\"") &&
		      strstr(out, "Matched: "),
	      "search and reset controls");
	free(out);
}

static void test_svg(struct profile *p)
{
	char *out = render(p, 2, "cpu & <gpu>");
	size_t len;

	CHECK(out != NULL, "svg rendered");
	if (!out)
		return;
	len = strlen(out);
	CHECK(!strncmp(out, "<svg ", 5), "starts with <svg");
	CHECK(len > 7 && !strcmp(out + len - 7, "</svg>\n"), "ends with </svg>");
	/* all + 7 frames; plus the background rect */
	CHECK_INT(count(out, "<title>"), 8);
	CHECK_INT(count(out, "<rect "), 9);
	CHECK_INT(count(out, "<g>"), count(out, "</g>"));
	CHECK(strstr(out, ">cpu &amp; &lt;gpu&gt;</text>") != NULL, "title escaped");
	CHECK(strstr(out, "<title>std::map&lt;K, V&gt;::operator[](&quot;k\\\\&quot;) &amp; "
			  "&lt;/script&gt;&lt;b&gt; (5000 nanoseconds, 62.50%)</title>") != NULL,
	      "escaped frame tooltip with value and percent");
	CHECK(strstr(out, "<title>all (8000 nanoseconds, 100.00%)</title>") != NULL, "root");
	CHECK(!strstr(out, "<b>") && !strstr(out, "</script>"), "no raw markup");
	free(out);
}

static void test_errors(struct profile *p)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	CHECK_INT(folded__write(p, 2, f), -EINVAL);
	CHECK_INT(flamegraph__write_html(p, -1, "x", f), -EINVAL);
	fclose(f);
	free(buf);
}

static void test_cap(void)
{
	/* more distinct frames than the page renders: the smallest are folded away */
	struct profile_config cfg = {.n_sample_types = 1, .sample_types = {{"s", "count"}}};
	struct profile *p = profile__new(&cfg);
	char name[32];
	int64_t v = 1;
	char *out;
	int err = 0;

	for (int i = 0; i < 201000 && !err; i++) {
		struct frame f[2] = {{.kind = FRAME_PYTHON, .function = name},
				     {.kind = FRAME_PROCESS, .function = "proc"}};

		snprintf(name, sizeof(name), "f%06d", i);
		v = 1 + (i % 7 == 0);
		err = profile__add(p, f, 2, &v, NULL, 0);
	}
	CHECK_INT(err, 0);
	out = render(p, 1, NULL);
	CHECK(out && strstr(out, "\"nodes\":200000,\"allNodes\":201002}") != NULL,
	      "node count in meta");
	CHECK(out && strstr(out, "Showing 200000 of 201002 frames") != NULL, "cut is announced");
	CHECK(out && strstr(out, "{\"name\":\"f000007\",\"value\":2,\"kind\":2}") != NULL,
	      "large frames kept");
	CHECK(out && strstr(out, "\"name\":\"all\",\"value\":229715,") != NULL,
	      "total unchanged by the cut");
	CHECK(out && strstr(out, "<title>mlprof flame graph</title>") != NULL, "default title");
	CHECK(out && count(out, "\"kind\":2") == 200000 - 2, "rendered node count");
	free(out);
	profile__free(p);
}

/*
 * Thread names reach the flame graph's tooltip: per node the two largest threads and the
 * rest as "other threads" (bounded whatever the thread count); a node that ran in the one
 * thread its parent ran in carries nothing (the page looks it up).
 */
static void test_threads(void)
{
	struct profile_config cfg = {
		.n_sample_types = 1, .sample_types = {{"samples", "count"}}, .period = 1};
	struct frame step[3] = {
		{.kind = FRAME_NATIVE, .addr = 0x1000, .function = "gemm"},
		{.kind = FRAME_NATIVE, .addr = 0x2000, .function = "step"},
		{.kind = FRAME_NATIVE, .addr = 0x3000, .function = "main"},
	};
	struct frame load[2] = {
		{.kind = FRAME_NATIVE, .addr = 0x4000, .function = "decode"},
		{.kind = FRAME_NATIVE, .addr = 0x5000, .function = "loader"},
	};
	struct profile *p = profile__new(&cfg);
	char *out, *data;

	CHECK(p != NULL, "profile");
	if (!p)
		return;
	for (int i = 0; i < 12; i++) {
		char name[16];
		struct profile_label l = {.key = "thread_name", .str = name};
		int64_t v = i < 2 ? 10 : 1;

		/* 12 worker threads run step(): two big ones, ten small ones */
		snprintf(name, sizeof(name), "worker-%d", i);
		CHECK_INT(profile__add(p, step, 3, &v, &l, 1), 0);
	}
	{
		struct profile_label l = {.key = "thread_name", .str = "pt_data_loader"};
		int64_t v = 5;

		CHECK_INT(profile__add(p, load, 2, &v, &l, 1), 0);
	}
	out = render(p, 1, "threads");
	data = out ? strstr(out, "id=\"fg-data\">") : NULL;
	CHECK(data != NULL, "html rendered");
	if (data) {
		/* step: worker-0 and worker-1 named, the ten others summed */
		CHECK(strstr(data, "{\"name\":\"step\",\"value\":30,\"kind\":0,\"th\":[["
				   "\"worker-0\",10],[\"worker-1\",10]],\"tho\":10,") != NULL,
		      "step threads: %.300s", strstr(data, "\"step\""));
		/* loader ran in one thread: named once, its callee inherits it */
		CHECK(strstr(data, "{\"name\":\"loader\",\"value\":5,\"kind\":0,\"th\":[["
				   "\"pt_data_loader\",5]],\"tho\":0,") != NULL,
		      "loader thread");
		CHECK(strstr(data, "{\"name\":\"decode\",\"value\":5,\"kind\":0}") != NULL,
		      "decode inherits its parent's thread");
		CHECK(count(data, "worker-5") == 0, "small threads listed one by one");
	}
	CHECK(out && strstr(out, "row(s.length>1?'Threads':'Thread'") != NULL, "tooltip row");
	free(out);
	profile__free(p);
}

/*
 * A profile whose every sample has ml_phase (the training steps' profile): its stacks hang
 * under one node per phase (kind 6); one sample without the label and nothing is grouped.
 */
static void test_phases(void)
{
	struct profile_config cfg = {
		.n_sample_types = 1, .sample_types = {{"wall", "nanoseconds"}}, .period = 1};
	struct frame st[2] = {
		{.kind = FRAME_PYTHON, .function = "__getitem__", .file = "d.py", .line = 3},
		{.kind = FRAME_PYTHON, .function = "train", .file = "t.py", .line = 9},
	};
	struct profile_label data = {.key = "ml_phase", .str = "data_wait"};
	struct profile_label cpu = {.key = "ml_phase", .str = "cpu_compute"};
	int64_t v5 = 5, v3 = 3;
	struct profile *p = profile__new(&cfg);
	char *out;

	CHECK(p && !profile__add(p, st, 2, &v5, &data, 1) &&
		      !profile__add(p, st + 1, 1, &v3, &cpu, 1),
	      "profile");
	out = render(p, 1, NULL);
	CHECK(out && strstr(out, "{\"name\":\"ml_phase=data_wait\",\"value\":5,\"kind\":6,"
				 "\"children\":[{\"name\":\"train (t.py:9)\"") != NULL,
	      "data_wait node: %.400s", out ? strstr(out, "fg-data") : "");
	CHECK(out && strstr(out, "{\"name\":\"ml_phase=cpu_compute\",\"value\":3,\"kind\":6") !=
			      NULL,
	      "cpu_compute node");
	CHECK(out && strstr(out, "training phase (click one") != NULL, "legend");
	free(out);
	CHECK_INT(profile__add(p, st + 1, 1, &v3, NULL, 0), 0);
	out = render(p, 1, NULL);
	CHECK(out && !strstr(out, "ml_phase=") && !strstr(out, "training phase (click"),
	      "not grouped with an unlabelled sample");
	free(out);
	profile__free(p);
}

int main(void)
{
	struct profile *p = make_profile();

	CHECK(p != NULL, "make_profile");
	if (!p)
		return check_done("flamegraph");
	test_folded(p);
	test_html(p);
	test_svg(p);
	test_errors(p);
	test_cap();
	test_threads();
	test_phases();
	profile__free(p);
	return check_done("flamegraph");
}
