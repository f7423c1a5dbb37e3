// SPDX-License-Identifier: Apache-2.0
/* Unit tests for mlprof diff: pprof decoding, shares, ordering, errors, the flame graph page. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "profile.pb-c.h"
#include "profile/diff.h"
#include "profile/diff_flamegraph.h"
#include "profile/output.h"

#define NASTY "A</script><b>&"

#define CHECK_NEAR(a, b)                                                                           \
	do {                                                                                       \
		double _a = (a), _b = (b);                                                         \
		CHECK(fabs(_a - _b) < 1e-9, "%.12f != %.12f", _a, _b);                             \
	} while (0)

/* Adds one stack given root first ("main;run;A") with values {count, count * ns}. */
static int add(struct profile *p, const char *stack, int64_t count, int64_t ns)
{
	struct frame f[16];
	char buf[256], *save = NULL, *tok;
	const char *names[16];
	int n = 0;
	int64_t v[2] = {count, count * ns};

	snprintf(buf, sizeof(buf), "%s", stack);
	for (tok = strtok_r(buf, ";", &save); tok && n < 16; tok = strtok_r(NULL, ";", &save))
		names[n++] = tok;
	for (int i = 0; i < n; i++)
		f[i] = (struct frame){.kind = FRAME_NATIVE, .function = names[n - 1 - i]};
	return profile__add(p, f, n, v, NULL, 0);
}

/* Encodes a profile of the given stacks ("stack", count pairs) as pprof. */
static uint8_t *encode(const char *const *stacks, const int64_t *counts, int n, int64_t ns,
		       bool gzip, size_t *len)
{
	struct profile_config cfg = {
		.n_sample_types = 2,
		.sample_types = {{"samples", "count"}, {"cpu", "nanoseconds"}},
		.period_type = {"cpu", "nanoseconds"},
		.period = ns,
	};
	struct profile *p = profile__new(&cfg);
	uint8_t *out = NULL;
	int err = p ? 0 : -ENOMEM;

	for (int i = 0; i < n && !err; i++)
		err = add(p, stacks[i], counts[i], ns);
	if (!err)
		err = pprof__encode(p, gzip, &out, len);
	CHECK_INT(err, 0);
	profile__free(p);
	return out;
}

static struct diff_side *parse(const uint8_t *buf, size_t len)
{
	struct diff_side *s = NULL;
	const char *why = NULL;
	int err = diff__parse(buf, len, &s, &why);

	CHECK(err == 0, "parse: %d (%s)", err, why ? why : "");
	return s;
}

static const struct diff_row *find(const struct diff_result *r, const char *name)
{
	for (size_t i = 0; i < diff__n_rows(r); i++)
		if (!strcmp(diff__row(r, i)->name, name))
			return diff__row(r, i);
	CHECK(0, "no row %s", name);
	return NULL;
}

static const char *const base_stacks[] = {"main;run;A", "main;run;B", "main;A"};
static const int64_t base_counts[] = {60, 10, 30}; /* A 90%, B 10% */
static const char *const new_stacks[] = {"main;run;A", "main;run;B", "main;A", "main;" NASTY};
static const int64_t new_counts[] = {40, 60, 100, 100}; /* A 46.67%, B 20%, NASTY 33.3% */

static void test_shares(void)
{
	size_t lb, ln;
	uint8_t *b = encode(base_stacks, base_counts, 3, 10000000, true, &lb);
	uint8_t *n = encode(new_stacks, new_counts, 4, 1000000, false, &ln); /* plain, 1 ms */
	struct diff_side *sb = b ? parse(b, lb) : NULL, *sn = n ? parse(n, ln) : NULL;
	struct diff_result *r = NULL;
	const struct diff_row *row;
	int vi[2];

	if (!sb || !sn)
		goto cleanup;
	CHECK_INT(diff__n_types(sb), 2);
	CHECK_STR(diff__type(sb, 1), "cpu");
	CHECK_STR(diff__unit(sb, 1), "nanoseconds");
	vi[0] = diff__sample_index(sb, NULL);
	vi[1] = diff__sample_index(sn, NULL);
	CHECK_INT(vi[0], 1); /* the last sample type, as pprof */
	CHECK_INT(vi[1], 1);
	CHECK_INT(diff__total(sb, 1), 100 * 10000000LL);
	CHECK_INT(diff__total(sn, 1), 300 * 1000000LL);
	CHECK_INT(diff__compare(sb, sn, vi, &r), 0);
	if (!r)
		goto cleanup;
	CHECK_INT(diff__n_rows(r), 5);
	/* rows start in name order */
	CHECK_STR(diff__row(r, 0)->name, "A");
	CHECK_STR(diff__row(r, 1)->name, NASTY);
	CHECK_STR(diff__row(r, 4)->name, "run");
	row = find(r, "A");
	if (row) {
		CHECK_NEAR(row->self_pct[0], 90.0);
		CHECK_NEAR(row->self_pct[1], 140.0 / 3);
		CHECK_NEAR(diff_row__delta(row, false), 140.0 / 3 - 90);
		CHECK_INT(row->self[0], 900000000);
		CHECK_INT(row->self[1], 140000000);
		CHECK_NEAR(row->cum_pct[1], 140.0 / 3);
	}
	row = find(r, "B");
	if (row) {
		CHECK_NEAR(diff_row__delta(row, false), 10.0);
		CHECK_NEAR(diff_row__delta(row, true), 10.0);
	}
	row = find(r, "run");
	if (row) {
		CHECK_INT(row->self[0], 0);
		CHECK_NEAR(row->cum_pct[0], 70.0);
		CHECK_NEAR(row->cum_pct[1], 100.0 / 3);
	}
	row = find(r, "main");
	if (row)
		CHECK_NEAR(diff_row__delta(row, true), 0.0);
	row = find(r, NASTY);
	if (row) {
		CHECK_INT(row->cum[0], 0);
		CHECK_NEAR(row->self_pct[1], 100.0 / 3);
	}
	/* by self change: A -43.33, NASTY +33.33, then run (cum -36.67) before main (0) */
	diff__sort(r, false);
	CHECK_STR(diff__row(r, 0)->name, "A");
	CHECK_STR(diff__row(r, 1)->name, NASTY);
	CHECK_STR(diff__row(r, 2)->name, "B");
	CHECK_STR(diff__row(r, 3)->name, "run");
	CHECK_STR(diff__row(r, 4)->name, "main");
	diff__sort(r, true);
	CHECK_STR(diff__row(r, 0)->name, "A");
	CHECK_STR(diff__row(r, 1)->name, "run");
	/* the other sample type: counts */
	vi[0] = vi[1] = 0;
	diff__result_free(r);
	r = NULL;
	CHECK_INT(diff__compare(sb, sn, vi, &r), 0);
	row = r ? find(r, "B") : NULL;
	if (row)
		CHECK_INT(row->self[1], 60);
cleanup:
	diff__result_free(r);
	diff__side_free(sb);
	diff__side_free(sn);
	free(b);
	free(n);
}

static void test_same(void)
{
	size_t len;
	uint8_t *b = encode(base_stacks, base_counts, 3, 10000000, true, &len);
	struct diff_side *s = b ? parse(b, len) : NULL;
	struct diff_result *r = NULL;
	int vi[2] = {1, 1};

	if (s && !diff__compare(s, s, vi, &r)) {
		for (size_t i = 0; i < diff__n_rows(r); i++) {
			CHECK_NEAR(diff_row__delta(diff__row(r, i), false), 0);
			CHECK_NEAR(diff_row__delta(diff__row(r, i), true), 0);
		}
	}
	diff__result_free(r);
	diff__side_free(s);
	free(b);
}

/* Recursion counts once in cum; self goes to the leaf only. */
static void test_recursion(void)
{
	static const char *const st[] = {"main;f;f;f;g", "main;f"};
	static const int64_t cnt[] = {3, 1};
	size_t len;
	uint8_t *b = encode(st, cnt, 2, 1, false, &len);
	struct diff_side *s = b ? parse(b, len) : NULL;
	struct diff_result *r = NULL;
	const struct diff_row *row;
	int vi[2] = {0, 0};

	if (!s || diff__compare(s, s, vi, &r))
		goto cleanup;
	row = find(r, "f");
	if (row) {
		CHECK_INT(row->cum[0], 4);
		CHECK_INT(row->self[0], 1);
	}
	row = find(r, "g");
	if (row)
		CHECK_INT(row->self[0], 3);
cleanup:
	diff__result_free(r);
	diff__side_free(s);
	free(b);
}

/* ---- hand-built pprof messages: inlined frames, unnamed frames, odd ids ---- */

struct msg {
	Perftools__Profiles__Profile pb;
	char *strs[16];
	Perftools__Profiles__ValueType vt[2], *vtp[2];
	Perftools__Profiles__Function fn[3], *fnp[3];
	Perftools__Profiles__Line ln[3], *lnp[3];
	Perftools__Profiles__Location loc[2], *locp[2];
	Perftools__Profiles__Mapping map, *mapp;
	Perftools__Profiles__Sample smp, *smpp;
	uint64_t loc_ids[2];
	int64_t values[2];
};

/*
 * Two sample types alloc_space/inuse_space (bytes); functions (ids 100, 7, 42): inner
 * inlined into outer at location 9; location 3 has no lines, in /usr/lib/libx.so.
 */
static void msg_init(struct msg *m)
{
	static const char *const strs[] = {
		"",	 "alloc_space", "inuse_space",	    "bytes",   "inner",
		"outer", "/src/a.c",	"/usr/lib/libx.so", "forward", "/m/model.py",
	};

	memset(m, 0, sizeof(*m));
	perftools__profiles__profile__init(&m->pb);
	for (size_t i = 0; i < sizeof(strs) / sizeof(strs[0]); i++)
		m->strs[i] = (char *)strs[i];
	m->pb.string_table = m->strs;
	m->pb.n_string_table = sizeof(strs) / sizeof(strs[0]);
	for (int i = 0; i < 2; i++) {
		perftools__profiles__value_type__init(&m->vt[i]);
		m->vt[i].type = 1 + i;
		m->vt[i].unit = 3;
		m->vtp[i] = &m->vt[i];
	}
	m->pb.sample_type = m->vtp;
	m->pb.n_sample_type = 2;
	for (int i = 0; i < 3; i++) {
		perftools__profiles__function__init(&m->fn[i]);
		m->fnp[i] = &m->fn[i];
		perftools__profiles__line__init(&m->ln[i]);
		m->lnp[i] = &m->ln[i];
	}
	m->fn[0].id = 100, m->fn[0].name = 4, m->fn[0].filename = 6;
	m->fn[1].id = 7, m->fn[1].name = 5, m->fn[1].filename = 6;
	m->fn[2].id = 42, m->fn[2].name = 8, m->fn[2].filename = 9;
	m->pb.function = m->fnp;
	m->pb.n_function = 3;
	m->ln[0].function_id = 100; /* callee first */
	m->ln[1].function_id = 7;
	perftools__profiles__mapping__init(&m->map);
	m->map.id = 5, m->map.memory_start = 0x1000, m->map.memory_limit = 0x9000;
	m->map.file_offset = 0x200, m->map.filename = 7;
	m->mapp = &m->map;
	m->pb.mapping = &m->mapp;
	m->pb.n_mapping = 1;
	for (int i = 0; i < 2; i++) {
		perftools__profiles__location__init(&m->loc[i]);
		m->locp[i] = &m->loc[i];
	}
	m->loc[0].id = 9, m->loc[0].line = m->lnp, m->loc[0].n_line = 2;
	m->loc[1].id = 3, m->loc[1].mapping_id = 5, m->loc[1].address = 0x1500;
	m->pb.location = m->locp;
	m->pb.n_location = 2;
	perftools__profiles__sample__init(&m->smp);
	m->loc_ids[0] = 9, m->loc_ids[1] = 3;
	m->smp.location_id = m->loc_ids, m->smp.n_location_id = 2;
	m->values[0] = 4096, m->values[1] = 1024;
	m->smp.value = m->values, m->smp.n_value = 2;
	m->smpp = &m->smp;
	m->pb.sample = &m->smpp;
	m->pb.n_sample = 1;
}

static uint8_t *msg_pack(const struct msg *m, size_t *len)
{
	uint8_t *buf;

	*len = perftools__profiles__profile__get_packed_size(&m->pb);
	buf = malloc(*len ? *len : 1);
	if (buf)
		perftools__profiles__profile__pack(&m->pb, buf);
	return buf;
}

struct stack_rec {
	const struct diff_result *r;
	char names[8][64];
	int n;
	int64_t value;
};

static int record_cb(const uint32_t *rows, int n, int64_t value, void *ctx)
{
	struct stack_rec *rec = ctx;

	rec->n = n;
	rec->value = value;
	for (int i = 0; i < n && i < 8; i++)
		snprintf(rec->names[i], sizeof(rec->names[i]), "%s",
			 diff__row_name(rec->r, rows[i]));
	return 0;
}

static void test_inline_and_unnamed(void)
{
	struct msg m;
	struct stack_rec rec = {.n = 0};
	struct diff_side *s = NULL;
	struct diff_result *r = NULL;
	uint8_t *buf;
	size_t len;
	int vi[2];

	msg_init(&m);
	buf = msg_pack(&m, &len);
	s = buf ? parse(buf, len) : NULL;
	if (!s)
		goto cleanup;
	CHECK_INT(diff__sample_index(s, NULL), 1); /* inuse_space: the last */
	CHECK_INT(diff__sample_index(s, "alloc_space"), 0);
	CHECK_INT(diff__sample_index(s, "1"), 1);
	CHECK_INT(diff__sample_index(s, "2"), -ERANGE);
	CHECK_INT(diff__sample_index(s, "inuse_objects"), -ENOENT);
	vi[0] = vi[1] = 1;
	CHECK_INT(diff__compare(s, s, vi, &r), 0);
	if (!r)
		goto cleanup;
	rec.r = r;
	CHECK_INT(diff__for_each_stack(r, 0, record_cb, &rec), 0);
	CHECK_INT(rec.n, 3);
	CHECK_INT(rec.value, 1024);
	CHECK_STR(rec.names[0], "inner");
	CHECK_STR(rec.names[1], "outer");
	CHECK_STR(rec.names[2], "libx.so+0x700");
	CHECK_INT(find(r, "inner") ? find(r, "inner")->self[0] : -1, 1024);
	CHECK_INT(find(r, "outer") ? find(r, "outer")->cum[0] : -1, 1024);
cleanup:
	diff__result_free(r);
	diff__side_free(s);
	free(buf);
}

static void test_default_sample_type(void)
{
	struct msg m;
	struct diff_side *s;
	uint8_t *buf;
	size_t len;

	msg_init(&m);
	m.pb.default_sample_type = 1; /* "alloc_space" */
	buf = msg_pack(&m, &len);
	s = buf ? parse(buf, len) : NULL;
	if (s)
		CHECK_INT(diff__sample_index(s, NULL), 0);
	diff__side_free(s);
	free(buf);
}

/* Same function name in two files: the file tells them apart; else the bare name. */
static void test_names(void)
{
	struct msg m;
	struct diff_side *s;
	struct diff_result *r = NULL;
	uint8_t *buf;
	size_t len;
	int vi[2] = {0, 0};

	msg_init(&m);
	m.fn[1].name = 8;	  /* outer -> forward in /src/a.c, inlined at location 9 */
	m.ln[2].function_id = 42; /* location 3: forward in /m/model.py */
	m.loc[1].line = &m.lnp[2];
	m.loc[1].n_line = 1;
	buf = msg_pack(&m, &len);
	s = buf ? parse(buf, len) : NULL;
	if (s && !diff__compare(s, s, vi, &r)) {
		CHECK_INT(diff__n_rows(r), 3);
		CHECK_STR(diff__row(r, 0)->name, "forward (a.c)");
		CHECK_STR(diff__row(r, 1)->name, "forward (model.py)");
		CHECK_STR(diff__row(r, 2)->name, "inner");
	}
	diff__result_free(r);
	diff__side_free(s);
	free(buf);
}

static void expect_bad(const uint8_t *buf, size_t len, const char *why_part)
{
	struct diff_side *s = NULL;
	const char *why = NULL;

	CHECK_INT(diff__parse(buf, len, &s, &why), -EBADMSG);
	CHECK(s == NULL, "no side on error");
	CHECK(why && strstr(why, why_part), "why '%s' has '%s'", why ? why : "(null)", why_part);
}

static void test_bad_input(void)
{
	static const uint8_t text[] = "hello, this is not a profile\n";
	static const uint8_t bad_gz[] = {0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 3, 1, 2, 3, 4, 5};
	struct diff_side *s = NULL;
	struct msg m;
	uint8_t *buf;
	size_t len;

	expect_bad(text, sizeof(text) - 1, "");
	expect_bad(text, 0, "empty file");
	expect_bad(bad_gz, sizeof(bad_gz), "gzip");

	msg_init(&m);
	m.smp.n_value = 1;
	buf = msg_pack(&m, &len);
	if (buf)
		expect_bad(buf, len, "values do not match");
	free(buf);

	msg_init(&m);
	m.loc_ids[1] = 77;
	buf = msg_pack(&m, &len);
	if (buf)
		expect_bad(buf, len, "missing location");
	free(buf);

	msg_init(&m);
	m.ln[1].function_id = 8;
	buf = msg_pack(&m, &len);
	if (buf)
		expect_bad(buf, len, "missing function");
	free(buf);

	msg_init(&m);
	m.fn[0].name = 99;
	buf = msg_pack(&m, &len);
	if (buf)
		expect_bad(buf, len, "string index");
	free(buf);

	msg_init(&m);
	m.strs[0] = (char *)"x";
	buf = msg_pack(&m, &len);
	if (buf)
		expect_bad(buf, len, "string table");
	free(buf);

	msg_init(&m);
	m.pb.n_sample_type = 0;
	m.smp.n_value = 0;
	buf = msg_pack(&m, &len);
	if (buf)
		expect_bad(buf, len, "no sample types");
	free(buf);

	CHECK_INT(diff__load("/nonexistent/base.pb.gz", &s, NULL), -ENOENT);
	CHECK_INT(diff__load("/", &s, NULL), -EISDIR);
}

/* Zero totals cannot be shares: the command reports them as empty profiles first. */
static void test_empty(void)
{
	struct msg m;
	struct diff_side *s;
	struct diff_result *r = NULL;
	uint8_t *buf;
	size_t len;
	int vi[2] = {1, 1};

	msg_init(&m);
	m.values[1] = 0;
	buf = msg_pack(&m, &len);
	s = buf ? parse(buf, len) : NULL;
	if (s) {
		CHECK_INT(diff__total(s, 1), 0);
		CHECK_INT(diff__compare(s, s, vi, &r), -EINVAL);
		CHECK(r == NULL, "no result");
	}
	diff__side_free(s);
	free(buf);
}

static void test_format(void)
{
	char b[32];

	CHECK_STR(diff__format_value(999, "nanoseconds", b, sizeof(b)), "999 ns");
	CHECK_STR(diff__format_value(1500, "nanoseconds", b, sizeof(b)), "1.50 us");
	CHECK_STR(diff__format_value(2000000, "nanoseconds", b, sizeof(b)), "2.00 ms");
	CHECK_STR(diff__format_value(1500000000, "nanoseconds", b, sizeof(b)), "1.50 s");
	CHECK_STR(diff__format_value(-250000000, "nanoseconds", b, sizeof(b)), "-250.00 ms");
	CHECK_STR(diff__format_value(3, "milliseconds", b, sizeof(b)), "3.00 ms");
	CHECK_STR(diff__format_value(512, "bytes", b, sizeof(b)), "512 B");
	CHECK_STR(diff__format_value(1024, "bytes", b, sizeof(b)), "1.00 KiB");
	CHECK_STR(diff__format_value(1572864, "bytes", b, sizeof(b)), "1.50 MiB");
	CHECK_STR(diff__format_value(-3 * (1LL << 30), "bytes", b, sizeof(b)), "-3.00 GiB");
	CHECK_STR(diff__format_value(1234, "count", b, sizeof(b)), "1234");
	CHECK_STR(diff__format_value(7, "widgets", b, sizeof(b)), "7 widgets");
}

static int count(const char *hay, const char *needle)
{
	int n = 0;

	for (const char *s = hay; (s = strstr(s, needle)) != NULL; s++)
		n++;
	return n;
}

static void test_flamegraph(void)
{
	size_t lb, ln, len = 0;
	uint8_t *b = encode(base_stacks, base_counts, 3, 10000000, true, &lb);
	uint8_t *n = encode(new_stacks, new_counts, 4, 1000000, true, &ln);
	struct diff_side *sb = b ? parse(b, lb) : NULL, *sn = n ? parse(n, ln) : NULL;
	struct diff_result *r = NULL;
	char *out = NULL;
	int vi[2] = {1, 1};
	FILE *f;

	if (!sb || !sn || diff__compare(sb, sn, vi, &r))
		goto cleanup;
	f = open_memstream(&out, &len);
	if (!f)
		goto cleanup;
	CHECK_INT(diff_flamegraph__write_html(r, "base <vs> new", "cpu", "nanoseconds", f), 0);
	fclose(f);
	CHECK(!strncmp(out, "<!DOCTYPE html>", 15), "doctype");
	CHECK(strstr(out, "<title>base &lt;vs&gt; new</title>") != NULL, "title escaped");
	CHECK_INT(count(out, "</script>"), count(out, "<script"));
	CHECK(!strstr(out, "<b>"), "names never appear as markup");
	/* legend and hooks carry both colours */
	CHECK(strstr(out, "rgb(224,52,40)") != NULL, "growth colour");
	CHECK(strstr(out, "rgb(44,110,224)") != NULL, "shrink colour");
	CHECK(strstr(out, "window.FG_HOOKS") != NULL, "hooks");
	/* root 100%: width units 1e9; B: 10% -> 20%, average 15%; A: 90% -> 46.67% */
	CHECK(strstr(out, "{\"name\":\"all\",\"value\":1000000000,\"kind\":-1") != NULL, "root");
	CHECK(strstr(out, "{\"name\":\"B\",\"value\":150000000,\"kind\":0,\"b\":100000000,"
			  "\"n\":60000000,\"sb\":100000000,\"sn\":60000000,\"d\":10.0000}") != NULL,
	      "B grew by 10 points");
	CHECK(strstr(out, "{\"name\":\"A\\u003c/script\\u003e\\u003cb\\u003e\\u0026\",") != NULL,
	      "escaped name of a function only in new");
	CHECK(strstr(out, "\"d\":-46.6667}") != NULL, "run;A shrank");
cleanup:
	free(out);
	diff__result_free(r);
	diff__side_free(sb);
	diff__side_free(sn);
	free(b);
	free(n);
}

int main(void)
{
	test_shares();
	test_same();
	test_recursion();
	test_inline_and_unnamed();
	test_default_sample_type();
	test_names();
	test_bad_input();
	test_empty();
	test_format();
	test_flamegraph();
	return check_done("diff");
}
