// SPDX-License-Identifier: Apache-2.0
/*
 * Unit tests of the CPython line-table port: every instruction of real code objects
 * checked against co_lines() of each installed interpreter, plus hostile tables.
 */
#include <errno.h>
#include <glob.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "runtimes/python/pyline.h"

#define SKIP_CODE      77
#define PYENV_GLOB     "/root/.pyenv/versions/3.1[0-4]*/bin/python3"
#define SYSTEM_PYTHON  "/usr/bin/python3"
#define MAX_SHOWN      20  /* mismatches printed in full per interpreter */
#define TRUNC_MAX_LEN  160 /* tables this long or shorter get the truncation test */
#define TRUNC_EVERY    8   /* ... one code object in this many */
#define RANDOM_TABLES  3000
#define RANDOM_MAX_LEN 96

struct run_stats {
	long code_objects;
	long instructions; /* of real code objects */
	long synthetic;	   /* of random well-formed tables */
	long mismatches;
	long truncations;
	long addr2line_called;	/* code objects PyCode_Addr2Line() was asked about */
	long addr2line_differs; /* instructions where it disagreed with co_lines() */
};

/* Per CPython minor version: instructions checked and interpreters that ran. */
static long version_instructions[PYLINE_MINOR_MAX + 1];
static int version_interpreters[PYLINE_MINOR_MAX + 1];

static uint8_t *copy_table(const uint8_t *t, size_t len)
{
	/* exact-size heap copy: ASan flags any read past len */
	uint8_t *c = malloc(len ? len : 1);

	if (!c) {
		perror("pyline: malloc");
		exit(2);
	}
	if (len)
		memcpy(c, t, len);
	return c;
}

/*
 * What the entries wholly inside t[0..len) cover, in bytes: an independent reading of
 * the entry lengths only (3.11+: first bytes have bit 7; 3.10: pairs of byte deltas).
 */
static int64_t coverage(int minor, const uint8_t *t, size_t len)
{
	int64_t cov = 0;
	size_t i;

	if (minor == 10) {
		for (i = 0; i + 1 < len; i += 2)
			cov += t[i];
		return cov;
	}
	for (i = 0; i < len; i++)
		if (i == 0 || (t[i] & 0x80))
			cov += ((t[i] & 7) + 1) * 2;
	return cov;
}

/* Whether t[0..cut) ends on an entry boundary of the table t[0..len). */
static bool entry_boundary(int minor, const uint8_t *t, size_t len, size_t cut)
{
	if (cut == 0 || cut == len)
		return true;
	if (minor == 10)
		return cut % 2 == 0;
	return t[cut] & 0x80;
}

/*
 * Every prefix of a real table: the offsets of the entries wholly inside it keep their
 * line, those past what its entries cover have none, and an entry cut short in the
 * middle gives a line or none but reads nothing past the cut.
 */
static void check_truncations(int minor, const uint8_t *t, size_t len, int firstlineno,
			      struct run_stats *st)
{
	int64_t full_cov = coverage(minor, t, len);
	size_t cut, keep;

	for (cut = 0; cut <= len; cut++) {
		uint8_t *c = copy_table(t, cut);
		int64_t cov = coverage(minor, t, cut), intact, off;

		for (keep = cut; !entry_boundary(minor, t, len, keep); keep--)
			;
		intact = coverage(minor, t, keep);
		for (off = 0; off < full_cov && off <= cov + 8; off += 2) {
			int got = pyline__addr2line(minor, c, cut, firstlineno, off);
			int want = pyline__addr2line(minor, t, len, firstlineno, off);

			if (off >= cov)
				want = -1;
			else if (off >= intact && got >= -1)
				continue; /* the entry cut short */
			if (got != want) {
				st->mismatches++;
				fprintf(stderr,
					"pyline: 3.%d cut at %zu/%zu: offset %lld: %d != %d\n",
					minor, cut, len, (long long)off, got, want);
			}
		}
		free(c);
	}
	st->truncations++;
}

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return -1;
}

/* Decodes hex (or "-" for an empty table) into a new buffer; NULL on bad input. */
static uint8_t *unhex(const char *hex, size_t *len)
{
	size_t n = strcmp(hex, "-") == 0 ? 0 : strlen(hex), i;
	uint8_t *out;

	if (n % 2)
		return NULL;
	out = malloc(n / 2 + 1);
	if (!out)
		return NULL;
	for (i = 0; i < n / 2; i++) {
		int hi = hexval(hex[2 * i]), lo = hexval(hex[2 * i + 1]);

		if (hi < 0 || lo < 0) {
			free(out);
			return NULL;
		}
		out[i] = (uint8_t)(hi << 4 | lo);
	}
	*len = n / 2;
	return out;
}

static bool next_long(char **save, long long *v)
{
	char *tok = strtok_r(NULL, " \n", save), *end;

	if (!tok)
		return false;
	errno = 0;
	*v = strtoll(tok, &end, 10);
	return errno == 0 && *end == '\0' && end != tok;
}

/* A co_lines() triple, or (start, start, line) for a PyCode_Addr2Line() answer. */
struct span {
	long long start, end, line;
};

/* Reads n spans (3 numbers each, or 2 when pairs) after the token at *save. */
static struct span *read_spans(char **save, long long n, bool pairs)
{
	struct span *v;
	long long i;

	if (n < 0 || n > 10000000)
		return NULL;
	v = calloc((size_t)n + 1, sizeof(*v));
	if (!v)
		return NULL;
	for (i = 0; i < n; i++) {
		if (!next_long(save, &v[i].start) || (!pairs && !next_long(save, &v[i].end)) ||
		    !next_long(save, &v[i].line)) {
			free(v);
			return NULL;
		}
		if (pairs)
			v[i].end = v[i].start;
		if (v[i].line < 0)
			v[i].line = -1; /* a negative line is no line (see pyline.h) */
	}
	return v;
}

/*
 * One "C TAG NAME FIRSTLINENO HEX N (START END LINE)*N K (OFFSET LINE)*K" record: every
 * even offset of every co_lines() range, expecting what PyCode_Addr2Line() said where
 * it differs from co_lines() (the K pairs), then the offsets past the last range and
 * -1. Returns false when the record does not parse.
 */
static bool check_code_object(int minor, char *rec, const char *interp, struct run_stats *st)
{
	char *save = NULL, *tag, *name, *hex;
	long long firstlineno, n, k = 0, i, off, last_end = 0;
	struct span *lines = NULL, *a2l = NULL;
	uint8_t *table;
	size_t len, next_a2l = 0;
	bool ok = false, synthetic;

	strtok_r(rec, " \n", &save);
	tag = strtok_r(NULL, " \n", &save);
	name = strtok_r(NULL, " \n", &save);
	if (!tag || !name || !next_long(&save, &firstlineno))
		return false;
	hex = strtok_r(NULL, " \n", &save);
	if (!hex)
		return false;
	table = unhex(hex, &len);
	if (!table)
		return false;
	if (!next_long(&save, &n) || !(lines = read_spans(&save, n, false)) ||
	    !next_long(&save, &k) || !(a2l = read_spans(&save, k < 0 ? 0 : k, true)))
		goto cleanup;
	synthetic = strcmp(tag, "synthetic") == 0;
	st->addr2line_differs += k > 0 ? k : 0;
	for (i = 0; i < n; i++) {
		for (off = lines[i].start; off < lines[i].end; off += 2) {
			int got = pyline__addr2line(minor, table, len, (int)firstlineno, off);
			long long want = lines[i].line;

			if (k > 0 && next_a2l < (size_t)k && a2l[next_a2l].start == off)
				want = a2l[next_a2l++].line;
			if (synthetic)
				st->synthetic++;
			else
				st->instructions++;
			if (got == want)
				continue;
			if (st->mismatches++ < MAX_SHOWN)
				fprintf(stderr,
					"pyline: %s: %s %s: offset %lld: got %d, CPython %lld\n",
					interp, tag, name, off, got, want);
		}
		if (lines[i].end > last_end)
			last_end = lines[i].end;
	}
	CHECK(k <= 0 || next_a2l == (size_t)k, "%s: %s: PyCode_Addr2Line offsets off co_lines()",
	      interp, name);
	CHECK_INT(pyline__addr2line(minor, table, len, (int)firstlineno, -1),
		  firstlineno < 0 ? -1 : firstlineno);
	CHECK_INT(pyline__addr2line(minor, table, len, (int)firstlineno, last_end), -1);
	CHECK_INT(pyline__addr2line(minor, table, len, (int)firstlineno, last_end + 2), -1);
	CHECK_INT(pyline__addr2line(minor, table, len, (int)firstlineno, INT64_MAX), -1);
	if (len <= TRUNC_MAX_LEN && st->code_objects % TRUNC_EVERY == 0)
		check_truncations(minor, table, len, (int)firstlineno, st);
	st->code_objects++;
	st->addr2line_called += k >= 0;
	ok = true;
cleanup:
	free(a2l);
	free(lines);
	free(table);
	return ok;
}

/*
 * Runs pyline_dump.py under interp and checks every record. The minor version comes
 * from the interpreter's own "V MAJOR MINOR MICRO" line (sys.version_info). Returns
 * false when interp is not a version this port reads (nothing was checked).
 */
static bool check_interpreter(const char *interp)
{
	struct run_stats st = {0};
	char cmd[PATH_MAX * 2 + 64], *rec = NULL;
	size_t cap = 0;
	int major = 0, minor = 0, micro = 0, status;
	bool complete = false, versioned = false;
	FILE *f;

	if (strchr(interp, '\'')) {
		CHECK(false, "odd interpreter path %s", interp);
		return true;
	}
	snprintf(cmd, sizeof(cmd), "'%s' -I '%s/tools/pyline_dump.py'", interp, TEST_SRC_DIR);
	f = popen(cmd, "r");
	if (!f) {
		CHECK(false, "popen %s: %s", cmd, strerror(errno));
		return true;
	}
	while (getline(&rec, &cap, f) > 0) {
		if (rec[0] == 'V') {
			versioned = sscanf(rec, "V %d %d %d", &major, &minor, &micro) == 3;
			if (!versioned || major != 3 || minor < PYLINE_MINOR_MIN ||
			    minor > PYLINE_MINOR_MAX)
				break;
		} else if (rec[0] == 'C' && versioned) {
			if (!check_code_object(minor, rec, interp, &st)) {
				CHECK(false, "%s: bad record: %.80s", interp, rec);
				break;
			}
		} else if (rec[0] == 'E') {
			complete = true;
		}
	}
	free(rec);
	status = pclose(f);
	if (versioned && major == 3 && (minor < PYLINE_MINOR_MIN || minor > PYLINE_MINOR_MAX)) {
		printf("pyline: %s: CPython %d.%d.%d: not a supported version, skipped\n", interp,
		       major, minor, micro);
		return false;
	}
	CHECK(versioned && complete && status == 0, "%s: dump incomplete (exit status %d)", interp,
	      status);
	CHECK(st.mismatches == 0, "%s: %ld mismatches", interp, st.mismatches);
	CHECK(st.code_objects > 100 && st.instructions > 10000, "%s: too little checked", interp);
	printf("pyline: %s: CPython %d.%d.%d: %ld code objects, %ld instructions checked "
	       "(+%ld of synthetic tables), %ld tables truncated, %ld mismatches; "
	       "PyCode_Addr2Line() asked on %ld code objects, differs from co_lines() on %ld\n",
	       interp, major, minor, micro, st.code_objects, st.instructions, st.synthetic,
	       st.truncations, st.mismatches, st.addr2line_called, st.addr2line_differs);
	if (versioned && minor >= PYLINE_MINOR_MIN && minor <= PYLINE_MINOR_MAX) {
		version_instructions[minor] += st.instructions;
		version_interpreters[minor]++;
	}
	return true;
}

/* Returns how many interpreters were found and checked. */
static int check_interpreters(void)
{
	glob_t g = {0};
	int found = 0, minor;
	size_t i;

	if (glob(PYENV_GLOB, 0, NULL, &g) == 0) {
		for (i = 0; i < g.gl_pathc; i++) {
			if (access(g.gl_pathv[i], X_OK) != 0)
				continue;
			found += check_interpreter(g.gl_pathv[i]);
		}
	}
	globfree(&g);
	if (access(SYSTEM_PYTHON, X_OK) == 0) {
		found += check_interpreter(SYSTEM_PYTHON);
	}
	for (minor = PYLINE_MINOR_MIN; minor <= PYLINE_MINOR_MAX; minor++) {
		if (version_interpreters[minor])
			printf("pyline: 3.%d: %ld instructions checked (%d interpreter%s)\n", minor,
			       version_instructions[minor], version_interpreters[minor],
			       version_interpreters[minor] > 1 ? "s" : "");
		else
			printf("pyline: 3.%d: skipped (no interpreter)\n", minor);
	}
	return found;
}

static size_t put_varint(uint8_t *p, uint32_t u)
{
	size_t n = 0;

	while (u >= 64) {
		p[n++] = (uint8_t)(64 | (u & 63));
		u >>= 6;
	}
	p[n++] = (uint8_t)u;
	return n;
}

static size_t put_signed_varint(uint8_t *p, int32_t v)
{
	return put_varint(p, v < 0 ? ((uint32_t) - (int64_t)v << 1) | 1 : (uint32_t)v << 1);
}

static int at(int minor, const uint8_t *t, size_t len, int first, int64_t addrq)
{
	uint8_t *c = copy_table(t, len);
	int r = pyline__addr2line(minor, c, len, first, addrq);

	free(c);
	return r;
}

/* Hand-built tables with known answers, in both formats. */
static void test_known_tables(void)
{
	/*
	 * 3.11+: +5 (code 13), 2 units no line (15), +1 (code 11), 3 units same line
	 * (short form 0), -3 (code 14, long form), +100 (code 13, two-chunk varint).
	 */
	static const uint8_t t311[] = {0xe8, 0x0a, 0xf9, 0xd8, 0x00, 0x05, 0x82, 0x12,
				       0xf0, 0x07, 0x00, 0x01, 0x02, 0xe8, 0x48, 0x03};
	/* 3.10: (6, +1), (0, +127), (4, +2), (2, no line), (2, -3) */
	static const uint8_t t310[] = {6, 1, 0, 127, 4, 2, 2, 0x80, 2, 0xfd};
	int minor;

	for (minor = 11; minor <= PYLINE_MINOR_MAX; minor++) {
		CHECK_INT(at(minor, t311, sizeof(t311), 10, -1), 10);
		CHECK_INT(at(minor, t311, sizeof(t311), 10, 0), 15);
		CHECK_INT(at(minor, t311, sizeof(t311), 10, 1), 15);
		CHECK_INT(at(minor, t311, sizeof(t311), 10, 2), -1);
		CHECK_INT(at(minor, t311, sizeof(t311), 10, 4), -1);
		CHECK_INT(at(minor, t311, sizeof(t311), 10, 6), 16);
		CHECK_INT(at(minor, t311, sizeof(t311), 10, 8), 16);
		CHECK_INT(at(minor, t311, sizeof(t311), 10, 12), 16);
		CHECK_INT(at(minor, t311, sizeof(t311), 10, 14), 13);
		CHECK_INT(at(minor, t311, sizeof(t311), 10, 16), 113);
		CHECK_INT(at(minor, t311, sizeof(t311), 10, 18), -1);
		CHECK_INT(at(minor, t311, 0, 10, 0), -1);
		CHECK_INT(at(minor, t311, 0, 10, -1), 10);
	}
	CHECK_INT(at(10, t310, sizeof(t310), 5, -1), 5);
	CHECK_INT(at(10, t310, sizeof(t310), 5, 0), 6);
	CHECK_INT(at(10, t310, sizeof(t310), 5, 4), 6);
	CHECK_INT(at(10, t310, sizeof(t310), 5, 6), 135);
	CHECK_INT(at(10, t310, sizeof(t310), 5, 8), 135);
	CHECK_INT(at(10, t310, sizeof(t310), 5, 10), -1);
	CHECK_INT(at(10, t310, sizeof(t310), 5, 12), 132);
	CHECK_INT(at(10, t310, sizeof(t310), 5, 14), -1);
	/* a lone trailing byte is not a pair */
	CHECK_INT(at(10, t310, 3, 5, 0), 6);
	CHECK_INT(at(10, t310, 3, 5, 6), -1);
	/* the 3.11 table read as 3.10 and back: different answers, no crash */
	CHECK(at(10, t311, sizeof(t311), 10, 0) >= -1, "3.10 over a 3.11 table");
	CHECK(at(11, t310, sizeof(t310), 10, 0) >= -1, "3.11 over a 3.10 table");

	/* bad versions; no table */
	CHECK_INT(pyline__addr2line(9, t311, sizeof(t311), 10, 0), -2);
	CHECK_INT(pyline__addr2line(15, t311, sizeof(t311), 10, 0), -2);
	CHECK_INT(pyline__addr2line(-1, t311, sizeof(t311), 10, -1), -2);
	CHECK_INT(pyline__addr2line(11, NULL, 0, 10, 0), -1);
	CHECK_INT(pyline__addr2line(11, t311, sizeof(t311), 10, INT64_MIN), 10);
	CHECK_INT(pyline__addr2line(11, t311, sizeof(t311), -7, -1), -1);
}

/* Varints: longest real ones, endless ones, ones cut by the end of the table. */
static void test_varints(void)
{
	uint8_t t[512];
	size_t n;
	int minor;

	for (minor = 11; minor <= PYLINE_MINOR_MAX; minor++) {
		/* +2^30 and -2^30 in one go */
		t[0] = 0xe8;
		n = 1 + put_signed_varint(t + 1, 1 << 30);
		CHECK_INT(at(minor, t, n, 1, 0), 1 + (1 << 30));
		n = 1 + put_signed_varint(t + 1, -(1 << 30));
		CHECK_INT(at(minor, t, n, (1 << 30) + 3, 0), 3);
		/* past INT_MAX wraps negative, as CPython's int: no line */
		n = 1 + put_signed_varint(t + 1, 10);
		CHECK_INT(at(minor, t, n, INT_MAX - 5, 0), -1);
		/* a varint that never ends: 6 chunks count, the rest are skipped */
		t[0] = 0xe8;
		memset(t + 1, 0x7f, 300);
		CHECK_INT(at(minor, t, 301, 10, 0), -1); /* 10 - 0x7fffffff */
		CHECK_INT(at(minor, t, 301, 10, 2), -1);
		memset(t + 1, 0x40, 300);
		t[301] = 0x02;
		CHECK_INT(at(minor, t, 302, 10, 0), 10);
		/* long form cut inside its varints */
		t[0] = 0xf0;
		t[1] = 0x48; /* +4, and more chunks that are not there */
		CHECK_INT(at(minor, t, 2, 10, 0), 14);
		CHECK_INT(at(minor, t, 1, 10, 0), 10);
		/* entries whose varints run into the next entries' first bytes */
		memset(t, 0xe8 | 0x40, 200);
		for (n = 0; n < 200; n++)
			CHECK(at(minor, t, 200, 10, (int64_t)n * 2) >= -1, "entry %zu", n);
		CHECK_INT(at(minor, t, 200, 10, 400), -1);
	}
}

/* Random bytes, and random bytes biased to the awkward values, in every version. */
static void test_random_tables(void)
{
	static const uint8_t awkward[] = {0x00, 0x7f, 0x80, 0xe8, 0xf0, 0xf8, 0xff, 0x40, 0xc0};
	uint8_t t[RANDOM_MAX_LEN];
	long checked = 0;
	int i, k;

	srand(20240611);
	for (i = 0; i < RANDOM_TABLES; i++) {
		size_t len = (size_t)rand() % (RANDOM_MAX_LEN + 1), j;
		int first = rand() % 3 == 0 ? INT_MAX - rand() % 100 : rand() % 100000;
		bool biased = i % 2;
		int minor = PYLINE_MINOR_MIN + i % (PYLINE_MINOR_MAX - PYLINE_MINOR_MIN + 1);
		uint8_t *c;
		int64_t cov, off;

		for (j = 0; j < len; j++)
			t[j] = biased ? awkward[rand() % sizeof(awkward)] : (uint8_t)rand();
		c = copy_table(t, len);
		cov = coverage(minor, t, len);
		for (k = 0; k < 64; k++) {
			int r;

			off = rand() % (cov + 16) - 1;
			r = pyline__addr2line(minor, c, len, first, off);
			CHECK(r >= -1 && r == pyline__addr2line(minor, c, len, first, off),
			      "3.%d random table %d offset %lld: %d", minor, i, (long long)off, r);
			if (off >= cov)
				CHECK_INT(r, -1);
			checked++;
		}
		free(c);
	}
	printf("pyline: %d random tables, %ld lookups\n", RANDOM_TABLES, checked);
}

int main(void)
{
	int found;

	test_known_tables();
	test_varints();
	test_random_tables();
	found = check_interpreters();
	if (!found) {
		printf("pyline: no CPython 3.10-3.14 interpreter found: skipped\n");
		/* the table-only tests above still fail the run */
		return check_done("pyline") ? 1 : SKIP_CODE;
	}
	return check_done("pyline");
}
