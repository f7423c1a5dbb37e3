// SPDX-License-Identifier: Apache-2.0
/* Unit tests of `mlprof agent` configuration: precedence, parsing, validation errors. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent/agent_config.h"
#include "check.h"

static char tmpdir[] = "/tmp/test_agent_config.XXXXXX";

static const char *write_file(const char *name, const char *text)
{
	static char path[512];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", tmpdir, name);
	f = fopen(path, "w");
	if (!f)
		return NULL;
	fputs(text, f);
	fclose(f);
	return path;
}

static int load(struct agent_config *c, char **argv, char **envp, char *err)
{
	int argc = 0;

	while (argv[argc])
		argc++;
	return agent_config__load(c, argc, argv, envp, err, 512);
}

static void test_defaults(void)
{
	struct agent_config c;
	char err[512];
	char *argv[] = {"agent", NULL};
	char *envp[] = {NULL};

	CHECK_INT(load(&c, argv, envp, err), 0);
	CHECK_INT(c.freq_hz, 19);
	CHECK_INT(c.upload_interval_s, 15);
	CHECK_STR(c.url, "");
	CHECK_STR(c.api, "connect");
	CHECK_STR(c.metrics_addr, "127.0.0.1:9740");
	CHECK_STR(c.output_dir, "/var/lib/mlprof/profiles");
	CHECK_INT(c.output_max_bytes, 256ull << 20);
	CHECK_INT(c.connect_timeout_ms, 5000);
	CHECK_INT(c.timeout_ms, 10000);
	CHECK_INT(c.kernel_frames, 1);
	CHECK_INT(c.ml_only, 0);
	CHECK_INT(c.help, 0);
	agent_config__free(&c);
}

static void test_precedence(void)
{
	struct agent_config c;
	char err[512], envcfg[600];
	const char *path = write_file("a.conf", "# comment\n"
						"upload-interval = 30\n"
						"frequency = 49\n"
						"log_level = debug\n"
						"url = \"http://file:4040\"\n"
						"label = team=file\n"
						"label = tier=gold\n"
						"ml-only = yes\n");
	snprintf(envcfg, sizeof(envcfg), "MLPROF_CONFIG=%s", path);

	/* file only */
	{
		char *argv[] = {"agent", NULL};
		char *envp[] = {envcfg, NULL};
		CHECK_INT(load(&c, argv, envp, err), 0);
		CHECK_INT(c.upload_interval_s, 30);
		CHECK_INT(c.freq_hz, 49);
		CHECK_STR(c.log_level, "debug");
		CHECK_STR(c.url, "http://file:4040");
		CHECK_INT(c.labels.n, 2);
		CHECK_STR(c.labels.v[1], "tier=gold");
		CHECK_INT(c.ml_only, 1);
		agent_config__free(&c);
	}
	/* env over file; list from env replaces the file's list */
	{
		char *argv[] = {"agent", NULL};
		char *envp[] = {envcfg,
				"MLPROF_UPLOAD_INTERVAL=20",
				"MLPROF_URL=https://env:443",
				"MLPROF_LABEL=a=1, b=2",
				"OTHER=1",
				NULL};
		CHECK_INT(load(&c, argv, envp, err), 0);
		CHECK_INT(c.upload_interval_s, 20);
		CHECK_INT(c.freq_hz, 49);
		CHECK_STR(c.url, "https://env:443");
		CHECK_INT(c.labels.n, 2);
		CHECK_STR(c.labels.v[0], "a=1");
		CHECK_STR(c.labels.v[1], "b=2");
		agent_config__free(&c);
	}
	/* flags over env over file; --config flag over MLPROF_CONFIG */
	{
		const char *p2 = write_file("b.conf", "frequency = 97\n");
		char p2c[512];
		snprintf(p2c, sizeof(p2c), "%s", p2);
		char *argv[] = {"agent", "--upload-interval", "5", "--label=x=y", "--config",
				p2c,	 "--ml-only=false",   NULL};
		char *envp[] = {envcfg, "MLPROF_UPLOAD_INTERVAL=20", "MLPROF_LABEL=a=1", NULL};
		CHECK_INT(load(&c, argv, envp, err), 0);
		CHECK_INT(c.upload_interval_s, 5);
		CHECK_INT(c.freq_hz, 97); /* from b.conf, a.conf not read */
		CHECK_STR(c.url, "");
		CHECK_INT(c.labels.n, 1);
		CHECK_STR(c.labels.v[0], "x=y");
		CHECK_INT(c.ml_only, 0);
		CHECK_STR(c.config_file, p2c);
		agent_config__free(&c);
	}
}

static void test_values(void)
{
	struct agent_config c;
	char err[512];
	char *argv[] = {"agent",
			"--output-max-bytes",
			"2G",
			"--connect-timeout",
			"1.5",
			"--timeout",
			"750ms",
			"--pid",
			"12",
			"--pid=34",
			"--ml-only",
			"--header",
			"X-A: 1",
			"--metrics-addr",
			"[::1]:9100",
			"--api",
			"ingest",
			"--url",
			"http://[::1]:4040/pyroscope",
			NULL};
	char *envp[] = {"MLPROF_BEARER_TOKEN=sekret", NULL};

	CHECK_INT(load(&c, argv, envp, err), 0);
	CHECK_INT(c.output_max_bytes, 2ull << 30);
	CHECK_INT(c.connect_timeout_ms, 1500);
	CHECK_INT(c.timeout_ms, 750);
	CHECK_INT(c.pids.n, 2);
	CHECK_STR(c.pids.v[1], "34");
	CHECK_INT(c.ml_only, 1);
	CHECK_STR(c.headers.v[0], "X-A: 1");
	CHECK_STR(c.api, "ingest");
	CHECK_STR(c.bearer_token, "sekret");
	agent_config__free(&c);
}

static void test_secret_file(void)
{
	struct agent_config c;
	char err[512], pf[512];
	snprintf(pf, sizeof(pf), "%s", write_file("pw", "tok-123\n"));
	char *argv[] = {"agent",     "--url",
			"https://x", "--basic-auth-user",
			"42",	     "--basic-auth-password-file",
			pf,	     NULL};
	char *envp[] = {"MLPROF_BASIC_AUTH_PASSWORD=from-env", NULL};

	CHECK_INT(load(&c, argv, envp, err), 0);
	CHECK_STR(c.basic_auth_user, "42");
	CHECK_STR(c.basic_auth_password, "tok-123");
	agent_config__free(&c);
}

/* Every invalid input gives -EINVAL (or -errno) and one line naming the problem. */
static void expect_error(char **argv, char **envp, const char *needle)
{
	struct agent_config c;
	char err[512];
	int ret = load(&c, argv, envp, err);

	CHECK(ret < 0, "'%s' accepted", needle);
	CHECK(strstr(err, needle) != NULL, "error '%s' lacks '%s'", err, needle);
	CHECK(strchr(err, '\n') == NULL, "multi-line error '%s'", err);
	agent_config__free(&c);
}

static void test_errors(void)
{
	char *env0[] = {NULL};
	char cfgenv[700], badcfg[600];

	expect_error((char *[]){"agent", "--upload-interval", "abc", NULL}, env0,
		     "invalid --upload-interval 'abc'");
	expect_error((char *[]){"agent", "--upload-interval", "0", NULL}, env0, "from 1 to 3600");
	expect_error((char *[]){"agent", "--frequency", NULL}, env0, "needs a value");
	expect_error((char *[]){"agent", "--bogus", NULL}, env0, "unknown option '--bogus'");
	expect_error((char *[]){"agent", "stray", NULL}, env0, "unexpected argument 'stray'");
	expect_error((char *[]){"agent", "--url", "ftp://x", NULL}, env0, "invalid --url");
	/* an empty host is caught at startup, not at the first push */
	expect_error((char *[]){"agent", "--url", "http://", NULL}, env0,
		     "invalid --url 'http://': no host (expected http[s]://HOST[:PORT][/PATH])");
	expect_error((char *[]){"agent", "--url", "https:///pyroscope", NULL}, env0,
		     "invalid --url 'https:///pyroscope': no host");
	expect_error((char *[]){"agent", "--url", "http://:4040", NULL}, env0,
		     "invalid --url 'http://:4040': no host");
	expect_error((char *[]){"agent", "--url", "http://user@/x", NULL}, env0,
		     "invalid --url 'http://<redacted>@/x': no host");
	expect_error((char *[]){"agent", "--url", "http://host:99999", NULL}, env0,
		     "invalid --url 'http://host:99999': port must be 1..65535");
	expect_error((char *[]){"agent", "--url", "http://host:", NULL}, env0,
		     "port must be 1..65535");
	expect_error((char *[]){"agent", "--service-min-age", "-1", NULL}, env0,
		     "invalid --service-min-age '-1'");
	expect_error((char *[]){"agent", "--api", "grpc", NULL}, env0, "invalid --api 'grpc'");
	expect_error((char *[]){"agent", "--label", "1bad=x", NULL}, env0, "invalid --label");
	expect_error((char *[]){"agent", "--process-regex", "a(", NULL}, env0,
		     "invalid --process-regex");
	expect_error((char *[]){"agent", "--pid", "12x", NULL}, env0, "invalid --pid '12x'");
	expect_error((char *[]){"agent", "--kernel-frames=maybe", NULL}, env0,
		     "expected true or false");
	expect_error((char *[]){"agent", "--metrics-addr", "nope", NULL}, env0,
		     "invalid --metrics-addr");
	expect_error((char *[]){"agent", "--service-rule", "proc=x", NULL}, env0,
		     "invalid --service-rule");
	expect_error((char *[]){"agent", "--header", "NoColon", NULL}, env0, "invalid --header");
	expect_error((char *[]){"agent", "--url", "https://x", "--basic-auth-user", "u", NULL},
		     env0, "--basic-auth-user needs");
	expect_error((char *[]){"agent", "--basic-auth-password", "x", NULL}, env0,
		     "unknown option '--basic-auth-password'");
	expect_error((char *[]){"agent", "--spool-max-bytes", "12Q", NULL}, env0,
		     "invalid --spool-max-bytes");
	expect_error((char *[]){"agent", NULL}, (char *[]){"MLPROF_FREQUENCY=0", NULL},
		     "invalid MLPROF_FREQUENCY '0'");
	snprintf(badcfg, sizeof(badcfg), "%s", write_file("bad.conf", "\nfrequency = 19\nnope\n"));
	snprintf(cfgenv, sizeof(cfgenv), "MLPROF_CONFIG=%s", badcfg);
	expect_error((char *[]){"agent", NULL}, (char *[]){cfgenv, NULL},
		     "bad.conf:3: expected 'key = value'");
	write_file("bad2.conf", "colour = blue\n");
	snprintf(cfgenv, sizeof(cfgenv), "MLPROF_CONFIG=%s/bad2.conf", tmpdir);
	expect_error((char *[]){"agent", NULL}, (char *[]){cfgenv, NULL},
		     "bad2.conf:1: unknown key 'colour'");
	expect_error((char *[]){"agent", "--k8s", "on", NULL}, env0,
		     "--k8s=on needs the node name");
	expect_error((char *[]){"agent", "--k8s", "maybe", NULL}, env0, "invalid --k8s 'maybe'");
	expect_error((char *[]){"agent", "--config", "/nonexistent/x.conf", NULL}, env0,
		     "cannot open config file /nonexistent/x.conf");
}

static void count_cb(const char *k, const char *v, void *ctx)
{
	int *n = ctx;

	(*n)++;
	if (!strcmp(k, "bearer-token"))
		CHECK_STR(v, "<set>");
	if (!strcmp(k, "label"))
		CHECK_STR(v, "a=1,b=2");
}

static void test_help_and_dump(void)
{
	struct agent_config c;
	char err[512], *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	int n = 0;

	agent_config__usage(f);
	fclose(f);
	CHECK(strstr(buf, "--upload-interval SECONDS") != NULL, "usage lacks upload-interval");
	CHECK(strstr(buf, "MLPROF_UPLOAD_INTERVAL") != NULL, "usage lacks env names");
	CHECK(strstr(buf, "MLPROF_BEARER_TOKEN=TOKEN") != NULL, "usage lacks env-only secret");
	CHECK(strstr(buf, "[default: 15]") != NULL, "usage lacks defaults");
	/* value ranges are part of the help (README lists them from it) */
	CHECK(strstr(buf, "[default: 19] [range: 1..1000]") != NULL, "usage lacks ranges");
	CHECK(strstr(buf, "[default: 15] [range: 1..3600]") != NULL, "upload-interval range");
	CHECK(strstr(buf, "--service-min-age SECONDS") != NULL, "usage lacks service-min-age");
	free(buf);

	CHECK_INT(load(&c, (char *[]){"agent", "--help", "--bogus", NULL}, (char *[]){NULL}, err),
		  0);
	CHECK_INT(c.help, 1);
	agent_config__free(&c);

	CHECK_INT(load(&c, (char *[]){"agent", "--label", "a=1", "--label", "b=2", NULL},
		       (char *[]){"MLPROF_BEARER_TOKEN=x", NULL}, err),
		  0);
	agent_config__for_each(&c, false, count_cb, &n);
	CHECK(n > 30, "only %d options", n);
	CHECK(agent_config__reloadable("label"), "label not reloadable");
	CHECK(!agent_config__reloadable("url"), "url reloadable");
	agent_config__free(&c);
}

static void test_split_addr(void)
{
	char host[64];
	unsigned int port = 0;

	CHECK_INT(agent_config__split_addr("127.0.0.1:9740", host, sizeof(host), &port), 0);
	CHECK_STR(host, "127.0.0.1");
	CHECK_INT(port, 9740);
	CHECK_INT(agent_config__split_addr(":80", host, sizeof(host), &port), 0);
	CHECK_STR(host, "");
	CHECK_INT(agent_config__split_addr("[::]:1", host, sizeof(host), &port), 0);
	CHECK_STR(host, "::");
	CHECK_INT(agent_config__split_addr("::1:80", host, sizeof(host), &port), -EINVAL);
	CHECK_INT(agent_config__split_addr("h:99999", host, sizeof(host), &port), -EINVAL);
}

int main(void)
{
	if (!mkdtemp(tmpdir)) {
		perror("mkdtemp");
		return 1;
	}
	test_defaults();
	test_precedence();
	test_values();
	test_secret_file();
	test_errors();
	test_help_and_dump();
	test_split_addr();
	{
		char cmd[600];
		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
		if (system(cmd))
			fprintf(stderr, "cannot remove %s\n", tmpdir);
	}
	return check_done("agent_config");
}
