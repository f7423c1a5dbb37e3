// SPDX-License-Identifier: Apache-2.0
/* `mlprof diff BASE NEW`: options, report table, regression gate, differential flame graph. */
#include "profile/diff.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/commands.h"
#include "profile.pb-c.h"
#include "profile/diff_flamegraph.h"
#include "util/fsutil.h"
#include "util/gzip.h"

/* Larger inputs are refused (-E2BIG/-EFBIG) rather than exhausting memory. */
#define MAX_PPROF_BYTES (1ULL << 30)
/* Changes below this many points print as 0.00 and count as no change. */
#define MIN_POINTS 0.005

/* ---- the command ---- */

struct options {
	const char *paths[2];
	const char *sample_index; /* NULL: pprof's default */
	const char *output;	  /* differential flame graph, or NULL */
	const char *title;
	double threshold; /* points; < 0 when not given */
	long top;	  /* 0 = all */
	bool by_cum;
};

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: mlprof diff [options] BASE NEW\n"
		"\n"
		"Compares two pprof profiles (mlprof's or any other with the same sample type,\n"
		"gzip-compressed or not): which functions' share of the total changed most, self\n"
		"and cumulative, in points and in absolute values, and how the total changed.\n"
		"Each profile is normalized to its own total, so profiles of different lengths\n"
		"compare fairly.\n"
		"\n"
		"Options:\n"
		"      --sample-index NAME|N  the value to compare: a sample type name (cpu,\n"
		"                             inuse_space, alloc_space, ...) or a 0-based index.\n"
		"                             Default, as pprof: the profile's default sample\n"
		"                             type, else the last one (cpu for mlprof's CPU\n"
		"                             profiles, inuse_space for memory profiles)\n"
		"      --self                 order by the change of self share (default)\n"
		"      --cum                  order by the change of cumulative share\n"
		"      --top N                rows to print (default 20, 0 for all)\n"
		"      --threshold P          exit 1 when a function's share (self, or cumulative\n"
		"                             with --cum) grew by more than P points\n"
		"  -o, --output FILE          write a differential flame graph page (HTML):\n"
		"                             width is the average share of both profiles,\n"
		"                             red grew, blue shrank\n"
		"      --title TEXT           title of that page\n"
		"  -h, --help                 this help\n"
		"Options also take pprof's spelling: -sample_index=inuse_space, -top 10.\n"
		"\n"
		"Exit status: 0 no regression (or no --threshold), 1 over the threshold,\n"
		"2 error (unreadable file, not a pprof profile, different sample types, empty\n"
		"profile, bad option).\n"
		"\n"
		"Examples:\n"
		"  mlprof diff before.pb.gz after.pb.gz\n"
		"  mlprof diff --threshold 5 -o diff.html main.pb.gz branch.pb.gz\n"
		"  mlprof diff --sample-index inuse_space --threshold 2 old.mem.pb.gz mem.pb.gz\n");
}

/* One clear line, then exit status 2. */
#define usage_error(...) return cli__usage_error("diff", __VA_ARGS__)

enum {
	OPT_SAMPLE_INDEX = 256,
	OPT_THRESHOLD,
	OPT_TOP,
	OPT_SELF,
	OPT_CUM,
	OPT_TITLE,
};

/* Returns 0, 1 after --help, or -EINVAL after printing the error. */
static int parse_args(int argc, char **argv, struct options *o)
{
	static const struct option longopts[] = {
		{"sample-index", required_argument, NULL, OPT_SAMPLE_INDEX},
		{"sample_index", required_argument, NULL, OPT_SAMPLE_INDEX}, /* pprof's spelling */
		{"threshold", required_argument, NULL, OPT_THRESHOLD},
		{"top", required_argument, NULL, OPT_TOP},
		{"self", no_argument, NULL, OPT_SELF},
		{"cum", no_argument, NULL, OPT_CUM},
		{"output", required_argument, NULL, 'o'},
		{"title", required_argument, NULL, OPT_TITLE},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	char *end;
	int c;

	*o = (struct options){.threshold = -1, .top = 20};
	opterr = 0;
	optind = 1;
	/* _only: single-dash long options too, as Go's pprof takes them */
	while ((c = getopt_long_only(argc, argv, "o:h", longopts, NULL)) != -1) {
		switch (c) {
		case OPT_SAMPLE_INDEX:
			if (!*optarg)
				usage_error("empty --sample-index");
			o->sample_index = optarg;
			break;
		case OPT_THRESHOLD:
			errno = 0;
			o->threshold = strtod(optarg, &end);
			if (errno || end == optarg || *end || !(o->threshold >= 0) ||
			    o->threshold > 100)
				usage_error("invalid --threshold '%s' (points, 0..100)", optarg);
			break;
		case OPT_TOP:
			errno = 0;
			o->top = strtol(optarg, &end, 10);
			if (errno || end == optarg || *end || o->top < 0)
				usage_error("invalid --top '%s' (rows, 0 for all)", optarg);
			break;
		case OPT_SELF:
			o->by_cum = false;
			break;
		case OPT_CUM:
			o->by_cum = true;
			break;
		case 'o':
			o->output = optarg;
			break;
		case OPT_TITLE:
			o->title = optarg;
			break;
		case 'h':
			usage(stdout);
			return 1;
		case '?':
		default:
			return cli__bad_option("diff", optopt, argv[optind - 1],
					       "invalid or incomplete option");
		}
	}
	if (argc - optind != 2)
		usage_error("give two profiles: BASE NEW");
	o->paths[0] = argv[optind];
	o->paths[1] = argv[optind + 1];
	if (o->output) {
		const char *dot = strrchr(fsutil__base_name(o->output), '.');

		if (dot && (!strcmp(dot, ".gz") || !strcmp(dot, ".pprof") || !strcmp(dot, ".svg") ||
			    !strcmp(dot, ".folded") || !strcmp(dot, ".txt")))
			usage_error("-o writes an HTML page: name it .html, not '%s'", o->output);
	}
	return 0;
}

/* Loads both profiles; prints one line and returns -errno on failure. */
static int load_sides(const struct options *o, struct diff_side *sides[2])
{
	for (int s = 0; s < 2; s++) {
		const char *why;
		int err = diff__load(o->paths[s], &sides[s], &why);

		if (err == -EBADMSG) {
			fprintf(stderr, "mlprof: diff: %s: not a pprof profile (%s)\n", o->paths[s],
				why ? why : "invalid");
			return err;
		}
		if (err == -E2BIG || err == -EFBIG) {
			fprintf(stderr, "mlprof: diff: %s: too large (over %llu MiB)\n",
				o->paths[s], (unsigned long long)(MAX_PPROF_BYTES >> 20));
			return err;
		}
		if (err) {
			fprintf(stderr, "mlprof: diff: cannot read %s: %s\n", o->paths[s],
				strerror(-err));
			return err;
		}
	}
	return 0;
}

static void type_list(FILE *f, const struct diff_side *s)
{
	for (int i = 0; i < diff__n_types(s); i++)
		fprintf(f, "%s%s", i ? ", " : "", diff__type(s, i));
}

/* Resolves the sample type in both profiles; prints one line and returns -errno on failure. */
static int pick_types(const struct options *o, struct diff_side *sides[2], int vi[2])
{
	for (int s = 0; s < 2; s++) {
		vi[s] = diff__sample_index(sides[s], o->sample_index);
		if (vi[s] == -ENOENT) {
			fprintf(stderr,
				"mlprof: diff: %s has no sample type '%s' (it has: ", o->paths[s],
				o->sample_index);
			type_list(stderr, sides[s]);
			fprintf(stderr, ")\n");
			return -ENOENT;
		}
		if (vi[s] < 0) {
			fprintf(stderr,
				"mlprof: diff: --sample-index %s is out of range: %s has %d sample "
				"types\n",
				o->sample_index, o->paths[s], diff__n_types(sides[s]));
			return vi[s];
		}
	}
	if (strcmp(diff__type(sides[0], vi[0]), diff__type(sides[1], vi[1])) ||
	    strcmp(diff__unit(sides[0], vi[0]), diff__unit(sides[1], vi[1]))) {
		fprintf(stderr,
			"mlprof: diff: different sample types: %s has %s (%s), %s has %s (%s)%s\n",
			o->paths[0], diff__type(sides[0], vi[0]), diff__unit(sides[0], vi[0]),
			o->paths[1], diff__type(sides[1], vi[1]), diff__unit(sides[1], vi[1]),
			o->sample_index ? "" : "; choose one with --sample-index");
		return -EINVAL;
	}
	for (int s = 0; s < 2; s++) {
		if (diff__total(sides[s], vi[s]) <= 0) {
			fprintf(stderr, "mlprof: diff: %s: empty profile (no %s samples)\n",
				o->paths[s], diff__type(sides[s], vi[s]));
			return -ENODATA;
		}
	}
	return 0;
}

static void print_header(FILE *f, const struct options *o, struct diff_side *sides[2],
			 const int vi[2])
{
	const char *unit = diff__unit(sides[0], vi[0]);
	int64_t tb = diff__total(sides[0], vi[0]), tn = diff__total(sides[1], vi[1]);
	int64_t db = diff__duration(sides[0]), dn = diff__duration(sides[1]);
	char a[32], b[32], d[32];

	fprintf(f, "base: %s\nnew:  %s\n", o->paths[0], o->paths[1]);
	fprintf(f, "sample type: %s (%s)", diff__type(sides[0], vi[0]), unit);
	if (o->sample_index)
		fprintf(f, ", from --sample-index %s\n", o->sample_index);
	else if (diff__n_types(sides[0]) == 1)
		fprintf(f, ", the only one\n");
	else if (diff__default_type(sides[0]) >= 0)
		fprintf(f, ", the profile's default (--sample-index to choose another)\n");
	else
		fprintf(f, ", the last one (--sample-index to choose another)\n");
	diff__format_value(tn - tb, unit, d, sizeof(d));
	fprintf(f, "total: %s -> %s (%s%s, %+.1f%%)\n", diff__format_value(tb, unit, a, sizeof(a)),
		diff__format_value(tn, unit, b, sizeof(b)), tn >= tb ? "+" : "", d,
		100.0 * ((double)tn - (double)tb) / (double)tb);
	if (db > 0 && dn > 0)
		fprintf(f, "profiled: %s -> %s\n",
			diff__format_value(db, "nanoseconds", a, sizeof(a)),
			diff__format_value(dn, "nanoseconds", b, sizeof(b)));
}

static bool changed(const struct diff_row *r)
{
	return fabs(diff_row__delta(r, false)) >= MIN_POINTS ||
	       fabs(diff_row__delta(r, true)) >= MIN_POINTS;
}

/* A change in points; "0.00" without a sign when it rounds to nothing. */
static const char *points(double d, char *buf, size_t len)
{
	if (fabs(d) < MIN_POINTS)
		snprintf(buf, len, "0.00");
	else
		snprintf(buf, len, "%+.2f", d);
	return buf;
}

/* A share, or "-" when the function is not in that profile (present: its cum value). */
static const char *pct(double v, int64_t present, char *buf, size_t len)
{
	if (!present)
		snprintf(buf, len, "-");
	else
		snprintf(buf, len, "%.2f%%", v);
	return buf;
}

/* A value, or "-" when the function is not in that profile. */
static const char *value(int64_t v, int64_t present, const char *unit, char *buf, size_t len)
{
	if (!present)
		snprintf(buf, len, "-");
	else
		diff__format_value(v, unit, buf, len);
	return buf;
}

/* Prints s centered in width columns (no trailing spaces when last). */
static void centered(FILE *f, const char *s, int width, bool last)
{
	int len = (int)strlen(s), left = len < width ? (width - len) / 2 : 0;

	fprintf(f, "%*s%s", left, "", s);
	if (!last)
		fprintf(f, "%*s", width - left - len > 0 ? width - left - len : 0, "");
}

static void print_table(FILE *f, const struct options *o, const struct diff_result *r,
			const char *unit)
{
	size_t n_changed = 0, shown = 0;

	for (size_t i = 0; i < diff__n_rows(r); i++)
		n_changed += changed(diff__row(r, i));
	if (!n_changed) {
		fprintf(f,
			"\nno change: every function has the same share of the total in both "
			"profiles (within %.2f points)\n",
			MIN_POINTS * 2);
		return;
	}
	fprintf(f, "\nShares are %% of each profile's own total, changes in points; - = not in "
		   "that profile.\n");
	if (o->top && (size_t)o->top < n_changed)
		fprintf(f, "Top %ld of %zu functions that changed, by %s share change:\n", o->top,
			n_changed, o->by_cum ? "cumulative" : "self");
	else
		fprintf(f, "All %zu functions that changed, by %s share change:\n", n_changed,
			o->by_cum ? "cumulative" : "self");
	/* column groups: 3 x 8 + 2 spaces, twice; 2 x 11 + 1 space, twice; 2 spaces apart */
	centered(f, "self share", 26, false);
	fputs("  ", f);
	centered(f, "cum share", 26, false);
	fputs("  ", f);
	centered(f, "self", 23, false);
	fputs("  ", f);
	centered(f, "cum", 23, true);
	fputc('\n', f);
	fprintf(f, "%8s %8s %8s  %8s %8s %8s  %11s %11s  %11s %11s  %s\n", "change", "base", "new",
		"change", "base", "new", "base", "new", "base", "new", "function");
	for (size_t i = 0; i < diff__n_rows(r); i++) {
		const struct diff_row *row = diff__row(r, i);
		char d[2][16], s[2][16], c[2][16], v[4][32];

		if (!changed(row))
			continue;
		if (o->top && shown == (size_t)o->top)
			break;
		shown++;
		fprintf(f, "%8s %8s %8s  %8s %8s %8s  %11s %11s  %11s %11s  %s\n",
			points(diff_row__delta(row, false), d[0], 16),
			pct(row->self_pct[0], row->cum[0], s[0], 16),
			pct(row->self_pct[1], row->cum[1], s[1], 16),
			points(diff_row__delta(row, true), d[1], 16),
			pct(row->cum_pct[0], row->cum[0], c[0], 16),
			pct(row->cum_pct[1], row->cum[1], c[1], 16),
			value(row->self[0], row->cum[0], unit, v[0], 32),
			value(row->self[1], row->cum[1], unit, v[1], 32),
			value(row->cum[0], row->cum[0], unit, v[2], 32),
			value(row->cum[1], row->cum[1], unit, v[3], 32), row->name);
	}
}

/* Prints the gate's verdict; returns the exit status (0 pass, 1 regression). */
static int gate(FILE *f, const struct options *o, const struct diff_result *r)
{
	const char *what = o->by_cum ? "cumulative" : "self";
	const struct diff_row *top = NULL;
	size_t over = 0, listed = 0;

	for (size_t i = 0; i < diff__n_rows(r); i++) {
		const struct diff_row *row = diff__row(r, i);
		double d = diff_row__delta(row, o->by_cum);

		if (d > o->threshold + 1e-9 && d >= MIN_POINTS)
			over++;
		if (d >= MIN_POINTS && (!top || d > diff_row__delta(top, o->by_cum)))
			top = row;
	}
	if (!over) {
		fprintf(f, "\nok: no function's %s share grew by more than %.2f points", what,
			o->threshold);
		if (top)
			fprintf(f, " (largest growth: %s %+.2f)\n", top->name,
				diff_row__delta(top, o->by_cum));
		else
			fprintf(f, " (none grew)\n");
		return 0;
	}
	fprintf(f,
		"\nregression: the %s share of %zu function%s grew by more than %.2f points:", what,
		over, over == 1 ? "" : "s", o->threshold);
	for (size_t i = 0; i < diff__n_rows(r) && listed < 5; i++) {
		const struct diff_row *row = diff__row(r, i);
		double d = diff_row__delta(row, o->by_cum);

		if (d > o->threshold + 1e-9 && d >= MIN_POINTS)
			fprintf(f, "%s %s %+.2f", listed++ ? "," : "", row->name, d);
	}
	fprintf(f, "%s\n", over > listed ? ", ..." : "");
	return 1;
}

/* Writes the page next to its final name, then renames it: never a half-written file. */
static int write_flamegraph(const struct options *o, const struct diff_result *r,
			    struct diff_side *sides[2], const int vi[2])
{
	char title[512], *tmp = NULL;
	FILE *f = NULL;
	int err;

	if (o->title)
		snprintf(title, sizeof(title), "%s", o->title);
	else
		snprintf(title, sizeof(title), "mlprof diff: %s -> %s",
			 fsutil__base_name(o->paths[0]), fsutil__base_name(o->paths[1]));
	if (asprintf(&tmp, "%s.tmp.%d", o->output, (int)getpid()) < 0) {
		tmp = NULL;
		err = -ENOMEM;
		goto cleanup;
	}
	f = fopen(tmp, "w");
	if (!f) {
		err = -errno;
		goto cleanup;
	}
	err = diff_flamegraph__write_html(r, title, diff__type(sides[0], vi[0]),
					  diff__unit(sides[0], vi[0]), f);
	if (fclose(f) && !err)
		err = -EIO;
	f = NULL;
	if (!err && rename(tmp, o->output))
		err = -errno;
cleanup:
	if (err) {
		fprintf(stderr, "mlprof: diff: cannot write %s: %s\n", o->output, strerror(-err));
		if (tmp)
			unlink(tmp);
	}
	free(tmp);
	return err;
}

/* See commands.h. */
int diff__main(int argc, char **argv)
{
	struct diff_side *sides[2] = {NULL, NULL};
	struct diff_result *r = NULL;
	struct options o;
	int vi[2], err, status = 2;

	err = parse_args(argc, argv, &o);
	if (err)
		return err > 0 ? 0 : 2;
	err = load_sides(&o, sides);
	if (!err)
		err = pick_types(&o, sides, vi);
	if (err)
		goto cleanup;
	err = diff__compare(sides[0], sides[1], vi, &r);
	if (err) {
		fprintf(stderr, "mlprof: diff: cannot compare the profiles: %s\n", strerror(-err));
		goto cleanup;
	}
	if (o.output) {
		err = write_flamegraph(&o, r, sides, vi);
		if (err)
			goto cleanup;
	}
	diff__sort(r, o.by_cum);
	print_header(stdout, &o, sides, vi);
	print_table(stdout, &o, r, diff__unit(sides[0], vi[0]));
	if (o.output)
		printf("\ndifferential flame graph: %s\n", o.output);
	status = o.threshold >= 0 ? gate(stdout, &o, r) : 0;
cleanup:
	fflush(stdout);
	diff__result_free(r);
	diff__side_free(sides[0]);
	diff__side_free(sides[1]);
	return status;
}
