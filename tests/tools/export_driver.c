// SPDX-License-Identifier: Apache-2.0
// Test driver: builds known CPU profiles with our encoder and delivers them via the exporter.
//
// Usage: export_driver --kind push|ingest|file --url URL [--service S] [--label k=v]...
//        [--windows N] [--gap-ms MS] [--tenant T] [--spool DIR] [--drain-s S] [--first W]
// Window w (1-based) has two stacks: main;train_step;matmul_kernel = 3 x 10 ms and
// main;load_batch = 1 x 10 ms (total 40 ms = 4e7 ns), label window=<w>. Prints one JSON line
// of exporter stats at the end; exit 0 when everything was delivered.
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "export/exporter.h"
#include "profile/output.h"
#include "profile/profile.h"

static int64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static int build_window(int64_t start, uint8_t **out, size_t *len)
{
	struct profile_config pc = {
		.n_sample_types = 1,
		.sample_types = {{"cpu", "nanoseconds"}},
		.period_type = {"cpu", "nanoseconds"},
		.period = 10000000,
		.time_nanos = start,
	};
	struct frame_mapping map = {.start = 0x400000, .limit = 0x500000, .file = "/usr/bin/train"};
	struct frame a[3] = {
		{.kind = FRAME_NATIVE, .addr = 0x401000, .function = "matmul_kernel", .map = &map},
		{.kind = FRAME_NATIVE, .addr = 0x402000, .function = "train_step", .map = &map},
		{.kind = FRAME_NATIVE, .addr = 0x403000, .function = "main", .map = &map},
	};
	struct frame b[2] = {
		{.kind = FRAME_NATIVE, .addr = 0x404000, .function = "load_batch", .map = &map},
		{.kind = FRAME_NATIVE, .addr = 0x403000, .function = "main", .map = &map},
	};
	int64_t va = 30000000, vb = 10000000;
	struct profile *p = profile__new(&pc);
	int err;

	if (!p)
		return -errno;
	err = profile__add(p, a, 3, &va, NULL, 0);
	if (!err)
		err = profile__add(p, b, 2, &vb, NULL, 0);
	profile__set_duration(p, 10000000000LL);
	if (!err)
		err = pprof__encode(p, true, out, len);
	profile__free(p);
	return err;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{"kind", 1, NULL, 'k'},	  {"url", 1, NULL, 'u'},     {"service", 1, NULL, 's'},
		{"label", 1, NULL, 'l'},  {"windows", 1, NULL, 'n'}, {"gap-ms", 1, NULL, 'g'},
		{"tenant", 1, NULL, 't'}, {"spool", 1, NULL, 'p'},   {"drain-s", 1, NULL, 'd'},
		{"first", 1, NULL, 'f'},  {"out", 1, NULL, 'o'},     {NULL, 0, NULL, 0},
	};
	struct exporter_config c = {
		.kind = EXPORTER_PUSH,
		.connect_timeout_ms = 1000,
		.timeout_ms = 5000,
		.max_retries = 2,
		.backoff_min_ms = 50,
		.backoff_max_ms = 500,
		.spool_max_bytes = 64 << 20,
		.spool_max_age_s = 3600,
		.queue_max_bytes = 8 << 20,
		.out_max_bytes = 64 << 20,
	};
	struct label_pair labels[EXPORT_MAX_LABELS];
	int n_extra = 0, windows = 1, gap = 0, drain = 30, first = 1, w, i, opt;
	const char *service = "mlprof-test";
	struct exporter_stats st;
	struct exporter *e;
	char wbuf[16];

	while ((opt = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (opt) {
		case 'k':
			c.kind = !strcmp(optarg, "ingest") ? EXPORTER_INGEST
				 : !strcmp(optarg, "file") ? EXPORTER_FILE
							   : EXPORTER_PUSH;
			break;
		case 'u':
			c.url = optarg;
			break;
		case 's':
			service = optarg;
			break;
		case 'l': {
			char *eq = strchr(optarg, '=');

			if (!eq || n_extra >= EXPORT_MAX_LABELS - 3)
				return 2;
			*eq = 0;
			labels[3 + n_extra++] = (struct label_pair){optarg, eq + 1};
			break;
		}
		case 'n':
			windows = atoi(optarg);
			break;
		case 'g':
			gap = atoi(optarg);
			break;
		case 't':
			c.tenant = optarg;
			break;
		case 'p':
			c.spool_dir = optarg;
			break;
		case 'd':
			drain = atoi(optarg);
			break;
		case 'f':
			first = atoi(optarg);
			break;
		case 'o':
			c.out_dir = optarg;
			break;
		default:
			return 2;
		}
	}
	labels[0] = (struct label_pair){"__name__", "process_cpu"};
	labels[1] = (struct label_pair){"service_name", service};
	labels[2] = (struct label_pair){"window", wbuf};
	e = exporter__new(&c);
	if (!e) {
		fprintf(stderr, "export_driver: exporter__new: %s\n", strerror(errno));
		return 1;
	}
	for (w = first; w < first + windows; w++) {
		int64_t end = now_ns(), start = end - 10000000000LL;
		struct export_item it = {.labels = labels,
					 .n_labels = 3 + n_extra,
					 .start_ns = start,
					 .end_ns = end,
					 .seq = (uint64_t)w};
		uint8_t *pp = NULL;
		size_t len = 0;
		int err;

		snprintf(wbuf, sizeof(wbuf), "%d", w);
		err = build_window(start, &pp, &len);
		if (err) {
			fprintf(stderr, "export_driver: encode: %s\n", strerror(-err));
			return 1;
		}
		it.pprof = pp;
		it.pprof_len = len;
		err = exporter__submit(e, &it);
		free(pp);
		if (err)
			fprintf(stderr, "export_driver: submit %d: %s\n", w, strerror(-err));
		if (gap)
			usleep((useconds_t)gap * 1000);
	}
	/* wait for the queue and the spool to drain (backend may be coming back) */
	for (i = 0; i < drain * 10; i++) {
		int left = exporter__flush(e, 100);

		exporter__stats(e, &st);
		if (!left && !st.queue_bytes && !st.spool_files)
			break;
		usleep(100000); /* flush returns at once while the backend is down */
	}
	exporter__stats(e, &st);
	printf("{\"pushed\":%llu,\"failed\":%llu,\"retries\":%llu,\"rejected_4xx\":%llu,"
	       "\"spooled\":%llu,\"spool_files\":%llu,\"spool_dropped\":%llu,"
	       "\"queue_dropped\":%llu,\"trimmed\":%llu}\n",
	       (unsigned long long)st.pushed, (unsigned long long)st.failed,
	       (unsigned long long)st.retries, (unsigned long long)st.rejected_4xx,
	       (unsigned long long)st.spooled, (unsigned long long)st.spool_files,
	       (unsigned long long)st.spool_dropped, (unsigned long long)st.queue_dropped,
	       (unsigned long long)st.trimmed);
	fflush(stdout);
	exporter__free(e);
	return st.pushed == (uint64_t)windows ? 0 : 3;
}
