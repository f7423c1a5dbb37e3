// SPDX-License-Identifier: Apache-2.0
/* Unit tests for the pprof encoder: encode, gunzip, unpack with protobuf-c, check every field. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "check.h"
#include "profile.pb-c.h"
#include "profile/output.h"

static const char *str_at(const Perftools__Profiles__Profile *pb, int64_t i)
{
	if (i < 0 || (size_t)i >= pb->n_string_table)
		return "(out of range)";
	return pb->string_table[i];
}

static uint8_t *gunzip(const uint8_t *in, size_t len, size_t *out_len)
{
	z_stream zs = {0};
	size_t cap = 1 << 20;
	uint8_t *out = malloc(cap);
	int ret;

	if (!out || inflateInit2(&zs, 15 + 16) != Z_OK)
		return NULL;
	zs.next_in = (Bytef *)in;
	zs.avail_in = (uInt)len;
	zs.next_out = out;
	zs.avail_out = (uInt)cap;
	ret = inflate(&zs, Z_FINISH);
	inflateEnd(&zs);
	if (ret != Z_STREAM_END) {
		free(out);
		return NULL;
	}
	*out_len = zs.total_out;
	return out;
}

static const Perftools__Profiles__Location *loc_by_id(const Perftools__Profiles__Profile *pb,
						      uint64_t id)
{
	for (size_t i = 0; i < pb->n_location; i++)
		if (pb->location[i]->id == id)
			return pb->location[i];
	return NULL;
}

static const Perftools__Profiles__Function *fn_by_id(const Perftools__Profiles__Profile *pb,
						     uint64_t id)
{
	for (size_t i = 0; i < pb->n_function; i++)
		if (pb->function[i]->id == id)
			return pb->function[i];
	return NULL;
}

/* Function name of a location ("" when it has none). */
static const char *loc_fn(const Perftools__Profiles__Profile *pb, uint64_t id)
{
	const Perftools__Profiles__Location *l = loc_by_id(pb, id);
	const Perftools__Profiles__Function *f;

	if (!l || l->n_line != 1)
		return "";
	f = fn_by_id(pb, l->line[0]->function_id);
	return f ? str_at(pb, f->name) : "(bad function id)";
}

static struct profile *make_profile(void)
{
	struct profile_config cfg = {
		.n_sample_types = 2,
		.sample_types = {{"samples", "count"}, {"cpu", "nanoseconds"}},
		.period_type = {"cpu", "nanoseconds"},
		.period = 10101010,
		.time_nanos = 1700000000123456789LL,
	};
	struct frame_mapping exe = {0x555555554000, 0x555555600000, 0x1000, "/usr/bin/trainer",
				    "0123456789abcdef"};
	struct frame st[4] = {
		{.kind = FRAME_KERNEL, .addr = 0xffffffff81001000, .function = "copy_page"},
		{.kind = FRAME_NATIVE, .addr = 0x555555555123, .map = &exe}, /* unnamed */
		{.kind = FRAME_NATIVE,
		 .addr = 0x555555556000,
		 .function = "Foo<int>::run()",
		 .file = "foo.cc",
		 .line = 77,
		 .map = &exe},
		{.kind = FRAME_PYTHON, .function = "main", .file = "train.py", .line = 3},
	};
	struct profile_label labels[2] = {
		{.key = "thread_name", .str = "dataloader"},
		{.key = "bytes", .num = 4096, .num_unit = "bytes"},
	};
	int64_t v1[2] = {2, 20202020}, v2[2] = {1, 10101010};
	struct profile *p = profile__new(&cfg);

	if (!p)
		return NULL;
	if (profile__add(p, st, 4, v1, labels, 2) || profile__add(p, st + 2, 2, v2, NULL, 0) ||
	    profile__add(p, st, 4, v2, labels, 2))
		return NULL;
	profile__set_duration(p, 5000000000LL);
	return p;
}

static void test_encode(void)
{
	struct profile *p = make_profile();
	Perftools__Profiles__Profile *pb = NULL;
	uint8_t *gz = NULL, *raw = NULL, *raw2 = NULL;
	size_t gz_len = 0, raw_len = 0, raw2_len = 0;

	CHECK(p != NULL, "make_profile");
	if (!p)
		return;
	CHECK_INT(pprof__encode(p, true, &gz, &gz_len), 0);
	CHECK(gz_len > 18 && gz[0] == 0x1f && gz[1] == 0x8b, "gzip magic");
	raw = gunzip(gz, gz_len, &raw_len);
	CHECK(raw != NULL, "gunzip");
	/* the uncompressed encoding is byte-identical to the gunzipped one (deterministic) */
	CHECK_INT(pprof__encode(p, false, &raw2, &raw2_len), 0);
	CHECK(raw && raw2 && raw_len == raw2_len && !memcmp(raw, raw2, raw_len), "deterministic");
	if (!raw)
		goto cleanup;
	pb = perftools__profiles__profile__unpack(NULL, raw_len, raw);
	CHECK(pb != NULL, "unpack");
	if (!pb)
		goto cleanup;

	CHECK(pb->n_string_table > 0, "string table");
	CHECK_STR(pb->string_table[0], "");
	CHECK_INT(pb->n_sample_type, 2);
	CHECK_STR(str_at(pb, pb->sample_type[0]->type), "samples");
	CHECK_STR(str_at(pb, pb->sample_type[0]->unit), "count");
	CHECK_STR(str_at(pb, pb->sample_type[1]->type), "cpu");
	CHECK_STR(str_at(pb, pb->sample_type[1]->unit), "nanoseconds");
	CHECK(pb->period_type != NULL, "period type");
	if (pb->period_type) {
		CHECK_STR(str_at(pb, pb->period_type->type), "cpu");
		CHECK_STR(str_at(pb, pb->period_type->unit), "nanoseconds");
	}
	CHECK_INT(pb->period, 10101010);
	CHECK_INT(pb->time_nanos, 1700000000123456789LL);
	CHECK_INT(pb->duration_nanos, 5000000000LL);

	/* no duplicate strings */
	for (size_t i = 0; i < pb->n_string_table; i++)
		for (size_t j = i + 1; j < pb->n_string_table; j++)
			CHECK(strcmp(pb->string_table[i], pb->string_table[j]),
			      "duplicate string %s", pb->string_table[i]);

	CHECK_INT(pb->n_mapping, 1);
	CHECK_INT(pb->mapping[0]->id, 1);
	CHECK_INT(pb->mapping[0]->memory_start, 0x555555554000);
	CHECK_INT(pb->mapping[0]->memory_limit, 0x555555600000);
	CHECK_INT(pb->mapping[0]->file_offset, 0x1000);
	CHECK_STR(str_at(pb, pb->mapping[0]->filename), "/usr/bin/trainer");
	CHECK_STR(str_at(pb, pb->mapping[0]->build_id), "0123456789abcdef");
	CHECK(!pb->mapping[0]->has_functions, "one unnamed location: pprof may symbolize");

	CHECK_INT(pb->n_location, 4);
	CHECK_INT(pb->n_function, 3);
	for (size_t i = 0; i < pb->n_location; i++) {
		const Perftools__Profiles__Location *l = pb->location[i];

		CHECK_INT(l->id, i + 1);
		CHECK(l->mapping_id <= pb->n_mapping, "mapping id in range");
		for (size_t k = 0; k < l->n_line; k++)
			CHECK(fn_by_id(pb, l->line[k]->function_id) != NULL, "function exists");
	}
	for (size_t i = 0; i < pb->n_function; i++) {
		CHECK_INT(pb->function[i]->id, i + 1);
		CHECK(pb->function[i]->name > 0, "function has a name");
		CHECK_INT(pb->function[i]->system_name, pb->function[i]->name);
	}

	CHECK_INT(pb->n_sample, 2);
	if (pb->n_sample == 2) {
		const Perftools__Profiles__Sample *s = pb->sample[0], *t = pb->sample[1];
		const Perftools__Profiles__Location *l;

		CHECK_INT(s->n_location_id, 4);
		CHECK_INT(s->n_value, 2);
		CHECK_INT(s->value[0], 3);
		CHECK_INT(s->value[1], 30303030);
		CHECK_STR(loc_fn(pb, s->location_id[0]), "copy_page"); /* leaf first */
		CHECK_STR(loc_fn(pb, s->location_id[1]), "");
		CHECK_STR(loc_fn(pb, s->location_id[2]), "Foo<int>::run()");
		CHECK_STR(loc_fn(pb, s->location_id[3]), "main");
		l = loc_by_id(pb, s->location_id[1]);
		CHECK(l && l->mapping_id == 1 && l->address == 0x555555555123 && l->n_line == 0,
		      "unnamed native location keeps mapping + address");
		l = loc_by_id(pb, s->location_id[2]);
		CHECK(l && l->n_line == 1 && l->line[0]->line == 77, "line number");
		if (l && l->n_line == 1) {
			const Perftools__Profiles__Function *f =
				fn_by_id(pb, l->line[0]->function_id);

			CHECK(f && !strcmp(str_at(pb, f->filename), "foo.cc"), "function file");
		}
		l = loc_by_id(pb, s->location_id[0]);
		CHECK(l && l->mapping_id == 0 && l->address == 0xffffffff81001000,
		      "kernel location");

		CHECK_INT(s->n_label, 2);
		if (s->n_label == 2) {
			/* labels are sorted by key */
			CHECK_STR(str_at(pb, s->label[0]->key), "bytes");
			CHECK_INT(s->label[0]->num, 4096);
			CHECK_STR(str_at(pb, s->label[0]->num_unit), "bytes");
			CHECK_INT(s->label[0]->str, 0);
			CHECK_STR(str_at(pb, s->label[1]->key), "thread_name");
			CHECK_STR(str_at(pb, s->label[1]->str), "dataloader");
		}
		CHECK_INT(t->n_location_id, 2);
		CHECK_INT(t->value[0], 1);
		CHECK_INT(t->n_label, 0);
		CHECK_INT(t->location_id[0], s->location_id[2]); /* shared locations */
		CHECK_INT(t->location_id[1], s->location_id[3]);
	}

cleanup:
	if (pb)
		perftools__profiles__profile__free_unpacked(pb, NULL);
	free(gz);
	free(raw);
	free(raw2);
	profile__free(p);
}

static void test_empty_and_file(void)
{
	struct profile_config cfg = {
		.n_sample_types = 1,
		.sample_types = {{"cpu", "nanoseconds"}},
	};
	struct profile *p = profile__new(&cfg);
	Perftools__Profiles__Profile *pb;
	uint8_t *raw = NULL;
	size_t len = 0;
	char path[256], tmpl[] = "/tmp/mlprof-pprof-XXXXXX";
	enum output_format fmt;
	FILE *f;

	CHECK_INT(pprof__encode(p, false, &raw, &len), 0);
	pb = perftools__profiles__profile__unpack(NULL, len, raw);
	CHECK(pb != NULL, "empty profile unpacks");
	if (pb) {
		CHECK_INT(pb->n_string_table >= 1, 1);
		CHECK_STR(pb->string_table[0], "");
		CHECK_INT(pb->n_sample, 0);
		CHECK(pb->period_type == NULL, "no period type when unset");
		perftools__profiles__profile__free_unpacked(pb, NULL);
	}
	free(raw);

	/* formats */
	CHECK_INT(output__format_from_path("/x/a.pb.gz", &fmt), 0);
	CHECK_INT(fmt, OUTPUT_PPROF);
	CHECK_INT(output__format_from_path("a.PPROF", &fmt), 0);
	CHECK_INT(fmt, OUTPUT_PPROF);
	CHECK_INT(output__format_from_path("a.pb", &fmt), 0);
	CHECK_INT(output__format_from_path("a.txt", &fmt), 0);
	CHECK_INT(fmt, OUTPUT_FOLDED);
	CHECK_INT(output__format_from_path("a.folded", &fmt), 0);
	CHECK_INT(fmt, OUTPUT_FOLDED);
	CHECK_INT(output__format_from_path("a.htm", &fmt), 0);
	CHECK_INT(fmt, OUTPUT_HTML);
	CHECK_INT(output__format_from_path("a.svg", &fmt), 0);
	CHECK_INT(fmt, OUTPUT_SVG);
	CHECK_INT(output__format_from_path("a.gz", &fmt), -ENOENT);
	CHECK_INT(output__format_from_path(".svg", &fmt), -ENOENT);
	CHECK_INT(output__parse_format("html", &fmt), 0);
	CHECK_INT(fmt, OUTPUT_HTML);
	CHECK_INT(output__parse_format("jpeg", &fmt), -EINVAL);
	CHECK_STR(output__format_ext(OUTPUT_PPROF), ".pb.gz");
	CHECK_STR(output__format_name(OUTPUT_SVG), "svg");

	/* atomic write: the file appears complete, no temp files are left */
	CHECK(mkdtemp(tmpl) != NULL, "mkdtemp");
	snprintf(path, sizeof(path), "%s/out.pb.gz", tmpl);
	CHECK_INT(output__write_file(p, OUTPUT_PPROF, "t", path), 0);
	f = fopen(path, "rb");
	CHECK(f != NULL, "written file exists");
	if (f) {
		unsigned char m[2] = {0};

		CHECK_INT(fread(m, 1, 2, f), 2);
		CHECK(m[0] == 0x1f && m[1] == 0x8b, "file is gzip");
		fclose(f);
	}
	unlink(path);
	CHECK_INT(rmdir(tmpl), 0); /* empty: no temp file left behind */
	snprintf(path, sizeof(path), "%s/missing-dir/out.svg", tmpl);
	CHECK_INT(output__write_file(p, OUTPUT_SVG, "t", path), -ENOENT);
	profile__free(p);
}

int main(void)
{
	test_encode();
	test_empty_and_file();
	return check_done("pprof");
}
