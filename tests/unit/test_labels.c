// SPDX-License-Identifier: Apache-2.0
/* Unit tests of series labels: sanitization, service names, cgroups, pod JSON, ML env. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent/agent_config.h"
#include "agent/cgroup.h"
#include "agent/k8s.h"
#include "agent/labels.h"
#include "agent/service_name.h"
#include "check.h"

#define CMD(s) s, sizeof(s) - 1

static void test_sanitize(void)
{
	char out[4096], big[3000];

	CHECK_STR(labels__sanitize_name("service_name", out, sizeof(out)), "service_name");
	CHECK_STR(labels__sanitize_name("k8s.pod-name", out, sizeof(out)), "k8s_pod_name");
	CHECK_STR(labels__sanitize_name("1abc", out, sizeof(out)), "_1abc");
	CHECK_STR(labels__sanitize_name("", out, sizeof(out)), "_");
	CHECK_STR(labels__sanitize_name("h\xc3\xa9llo", out, sizeof(out)), "h__llo");
	memset(big, 'a', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	CHECK_INT(strlen(labels__sanitize_name(big, out, sizeof(out))), 1024);
	CHECK_INT(strlen(labels__sanitize_value(big, out, sizeof(out))), 2048);
	CHECK_STR(labels__sanitize_value("caf\xc3\xa9 ok", out, sizeof(out)), "caf\xc3\xa9 ok");
	CHECK_STR(labels__sanitize_value("a\nb\x01\xff", out, sizeof(out)), "a_b__");
	/* truncation never splits a UTF-8 character */
	CHECK_STR(labels__sanitize_value("ab\xc3\xa9", out, 4), "ab");
	CHECK_STR(labels__sanitize_value("x", out, 1), "");
}

static const char *svc(const char *cmd, size_t len)
{
	static char out[256];

	return labels__service_from_cmdline(cmd, len, "comm", out, sizeof(out));
}

static void test_service_names(void)
{
	CHECK_STR(svc(CMD("python3\0train.py\0--lr\0001e-4\0")), "train");
	CHECK_STR(svc(CMD("/usr/bin/python3.11\0-u\0/srv/jobs/train.py\0")), "train");
	CHECK_STR(svc(CMD("python\0-W\0ignore\0-X\0dev\0serve.py\0")), "serve");
	CHECK_STR(
		svc(CMD("/usr/bin/python3\0-m\0vllm.entrypoints.openai.api_server\0--model\0x\0")),
		"vllm.entrypoints.openai.api_server");
	CHECK_STR(svc(CMD("python3\0-mhttp.server\0")), "http.server");
	CHECK_STR(svc(CMD("torchrun\0--nproc_per_node\0008\0--master-port\00029500\0train.py\0")),
		  "train");
	CHECK_STR(svc(CMD("/usr/bin/python3\0/usr/local/bin/torchrun\0--nproc-per-node=2\0"
			  "finetune.py\0")),
		  "finetune");
	CHECK_STR(svc(CMD("python\0-m\0torch.distributed.run\0--nnodes=1\0pretrain.py\0")),
		  "pretrain");
	CHECK_STR(svc(CMD("deepspeed\0--num_gpus\0008\0ds_train.py\0--deepspeed\0")), "ds_train");
	CHECK_STR(svc(CMD("mpirun\0-np\0004\0python\0-m\0horovod_job\0")), "horovod_job");
	CHECK_STR(svc(CMD("env\0CUDA_VISIBLE_DEVICES=0\0python3\0eval.py\0")), "eval");
	CHECK_STR(svc(CMD("uv\0run\0--frozen\0python\0bench.py\0")), "bench");
	CHECK_STR(svc(CMD("python3\0-c\0print(1)\0")), "python3");
	CHECK_STR(svc(CMD("python3\0")), "python3");
	CHECK_STR(svc(CMD("bash\0-e\0/opt/run_job.sh\0")), "run_job");
	CHECK_STR(svc(CMD("/usr/local/bin/nvidia-smi\0-l\0")), "nvidia-smi");
	CHECK_STR(svc(CMD("./build/agent_workload\0")), "agent_workload");
	CHECK_STR(svc(CMD("postgres: checkpointer\0")), "postgres");
	CHECK_STR(svc("", 0), "comm");
	CHECK_STR(labels__service_from_cmdline("", 0, NULL, (char[32]){0}, 32), "unknown");
	/* garbage never crashes and still yields something */
	CHECK(svc(CMD("\0\0\0-m\0")) != NULL, "garbage");
	CHECK_STR(svc(CMD("python\0-m\0")), "python");
}

/*
 * The service-name table: what a command line is named, and whether the name comes from a
 * script (names the job) or just the executable (grouped by the labeler when short-lived).
 */
static void test_service_table(void)
{
	static const struct {
		const char *cmd;
		size_t len;
		const char *comm, *name;
		enum service_origin origin;
	} rows[] = {
#define ROW(c, comm, name, origin) {c, sizeof(c) - 1, comm, name, origin}
		/* shell pipelines: options and their arguments are no script name */
		ROW("bash\0-o\0pipefail\0-c\0seq 1 9 | grep 3\0", "bash", "bash",
		    SERVICE_FROM_SHELL),
		ROW("bash\0-euo\0pipefail\0-c\0make\0", "bash", "bash", SERVICE_FROM_SHELL),
		ROW("/bin/sh\0-ec\0make -j2 | tee log\0", "sh", "sh", SERVICE_FROM_SHELL),
		ROW("bash\0-lc\0cd /srv && ./x\0", "bash", "bash", SERVICE_FROM_SHELL),
		ROW("bash\0+O\0extglob\0-s\0", "bash", "bash", SERVICE_FROM_SHELL),
		/* interactive and login shells */
		ROW("bash\0--rcfile\0/etc/x.rc\0-i\0", "bash", "bash", SERVICE_FROM_EXE),
		ROW("-bash\0", "bash", "bash", SERVICE_FROM_EXE),
		ROW("zsh\0-o\0pipefail\0/opt/nightly.sh\0", "zsh", "nightly", SERVICE_FROM_SCRIPT),
		ROW("bash\0-x\0/opt/run_job.sh\0arg\0", "bash", "run_job", SERVICE_FROM_SCRIPT),
		/* a script read through a descriptor: where the series "3" came from */
		ROW("bash\0/dev/fd/3\0", "bash", "bash", SERVICE_FROM_SHELL),
		ROW("/bin/bash\0/proc/self/fd/63\0", "bash", "bash", SERVICE_FROM_SHELL),
		ROW("python3\0/dev/fd/63\0", "python3", "python3", SERVICE_FROM_EXE),
		/* short-lived commands: their own name, marked as such */
		ROW("sleep\0003\0", "sleep", "sleep", SERVICE_FROM_EXE),
		ROW("grep\0-c\0007\0", "grep", "grep", SERVICE_FROM_EXE),
		ROW("/usr/bin/curl\0-sf\0http://x/y\0", "curl", "curl", SERVICE_FROM_EXE),
		ROW("env\0-u\0HOME\0python3\0job.py\0", "env", "job", SERVICE_FROM_SCRIPT),
		ROW("python3\0-c\0print(1)\0", "python3", "python3", SERVICE_FROM_EXE),
		ROW("python3\0train.py\0", "python3", "train", SERVICE_FROM_SCRIPT),
		ROW("torchrun\0--nproc-per-node=2\0", "torchrun", "torchrun", SERVICE_FROM_SCRIPT),
		/* kernel threads have no command line (the labeler names them "kernel") */
		ROW("", "kworker/1:1-events", "kworker/1:1-events", SERVICE_FROM_COMM),
#undef ROW
	};

	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		char out[256];
		enum service_origin o = labels__service_derive(rows[i].cmd, rows[i].len,
							       rows[i].comm, out, sizeof(out));

		CHECK(!strcmp(out, rows[i].name) && o == rows[i].origin,
		      "row %zu: '%s' (origin %d), expected '%s' (origin %d)", i, out, (int)o,
		      rows[i].name, (int)rows[i].origin);
	}
}

static void test_cgroups(void)
{
	struct cgroup_info cg;
	const char *id = "3f6b9a1c2d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f60718293a4b5c6d7e8";
	char text[2048];

	/* containerd, systemd driver, cgroup v2 */
	snprintf(text, sizeof(text),
		 "0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod1a2b3c4d_"
		 "0000_1111_2222_333344445555.slice/cri-containerd-%s.scope\n",
		 id);
	labels__parse_cgroup(text, strlen(text), &cg);
	CHECK_STR(cg.container_id, id);
	CHECK_STR(cg.pod_uid, "1a2b3c4d-0000-1111-2222-333344445555");
	CHECK(strncmp(cg.path, "/kubepods.slice/", 16) == 0, "path %s", cg.path);

	/* docker, cgroup v2 systemd */
	snprintf(text, sizeof(text), "0::/system.slice/docker-%s.scope\n", id);
	labels__parse_cgroup(text, strlen(text), &cg);
	CHECK_STR(cg.container_id, id);
	CHECK_STR(cg.pod_uid, "");

	/* a pod-uid-shaped segment with a bad character leaves no partial uid behind, and the
	 * uid of the parent segment is still found (tests/fuzz/corpus/cgroup/regress_*) */
	snprintf(text, sizeof(text),
		 "0::/kubepods-pod1a2b3c4d_0000_1111_2222_333344445555.slice/"
		 "x-pod1a2b3c4d_0000_11z1_2222_333344445555.slice/cri-containerd-%s.scope\n",
		 id);
	labels__parse_cgroup(text, strlen(text), &cg);
	CHECK_STR(cg.pod_uid, "1a2b3c4d-0000-1111-2222-333344445555");

	/* CRI-O (conmon scope ignored) */
	snprintf(text, sizeof(text),
		 "0::/kubepods.slice/kubepods-pod0a0b0c0d_1111_2222_3333_444455556666.slice/"
		 "crio-%s.scope\n",
		 id);
	labels__parse_cgroup(text, strlen(text), &cg);
	CHECK_STR(cg.container_id, id);
	CHECK_STR(cg.pod_uid, "0a0b0c0d-1111-2222-3333-444455556666");
	snprintf(text, sizeof(text), "0::/machine.slice/crio-conmon-%s.scope\n", id);
	labels__parse_cgroup(text, strlen(text), &cg);
	CHECK_STR(cg.container_id, "");

	/* cgroup v1, cgroupfs driver: /kubepods/<qos>/pod<uid>/<id> on every hierarchy */
	snprintf(text, sizeof(text),
		 "12:pids:/kubepods/besteffort/pod5e6f7a8b-1111-2222-3333-444455556666/%s\n"
		 "11:cpu,cpuacct:/kubepods/besteffort/pod5e6f7a8b-1111-2222-3333-444455556666/%s\n"
		 "1:name=systemd:/kubepods/besteffort/pod5e6f7a8b-1111-2222-3333-444455556666/%s\n",
		 id, id, id);
	labels__parse_cgroup(text, strlen(text), &cg);
	CHECK_STR(cg.container_id, id);
	CHECK_STR(cg.pod_uid, "5e6f7a8b-1111-2222-3333-444455556666");
	CHECK(strstr(cg.path, "/kubepods/besteffort/") == cg.path, "v1 path %s", cg.path);

	/* cgroup v1 docker */
	snprintf(text, sizeof(text), "4:memory:/docker/%s\n0::/\n", id);
	labels__parse_cgroup(text, strlen(text), &cg);
	CHECK_STR(cg.container_id, id);
	CHECK_STR(cg.path, "/"); /* the v2 line wins for the path */

	/* systemd service on the host: no container */
	snprintf(text, sizeof(text), "0::/system.slice/sshd.service\n");
	labels__parse_cgroup(text, strlen(text), &cg);
	CHECK_STR(cg.container_id, "");
	CHECK_STR(cg.path, "/system.slice/sshd.service");
	snprintf(text, sizeof(text), "0::/user.slice/user-1000.slice/session-3.scope\n");
	labels__parse_cgroup(text, strlen(text), &cg);
	CHECK_STR(cg.container_id, "");

	/* podman */
	snprintf(text, sizeof(text), "0::/machine.slice/libpod-%s.scope/container\n", id);
	labels__parse_cgroup(text, strlen(text), &cg);
	CHECK_STR(cg.container_id, id);

	/* corrupt input */
	labels__parse_cgroup("::::\n\n:x", 9, &cg);
	CHECK_STR(cg.container_id, "");
	labels__parse_cgroup("", 0, &cg);
	CHECK_STR(cg.path, "");
}

static void test_ml_env(void)
{
	static const char env[] = "PATH=/usr/bin\0RANK=3\0LOCAL_RANK=1\0WORLD_SIZE=16\0"
				  "CUDA_VISIBLE_DEVICES=0,1\0SLURM_JOB_ID=998877\0"
				  "RANKX=no\0MY_JOB=a\nb\0TORCHELASTIC_RUN_ID=none\0RANK=4";
	const char *names[] = {
		"RANK",		"LOCAL_RANK",	       "WORLD_SIZE", "CUDA_VISIBLE_DEVICES",
		"SLURM_JOB_ID", "TORCHELASTIC_RUN_ID", "MY_JOB",     "ABSENT"};
	struct label_pair out[16];
	char buf[1024];
	int n = labels__ml_from_environ(env, sizeof(env) - 1, names, 8, out, 16, buf, sizeof(buf));

	CHECK_INT(n, 7);
	CHECK_STR(out[0].name, "rank");
	CHECK_STR(out[0].value, "4"); /* the last definition wins; blob not NUL-terminated */
	CHECK_STR(out[1].name, "local_rank");
	CHECK_STR(out[1].value, "1");
	CHECK_STR(out[2].value, "16");
	CHECK_STR(out[3].name, "cuda_visible_devices");
	CHECK_STR(out[3].value, "0,1");
	CHECK_STR(out[4].name, "slurm_job_id");
	CHECK_STR(out[4].value, "998877");
	CHECK_STR(out[5].name, "torchelastic_run_id");
	CHECK_STR(out[6].name, "my_job");
	CHECK_STR(out[6].value, "a_b");
	CHECK_INT(labels__ml_from_environ(env, sizeof(env) - 1, names, 8, out, 2, buf, sizeof(buf)),
		  2);
	CHECK_INT(labels__ml_from_environ("", 0, names, 8, out, 16, buf, sizeof(buf)), 0);
	/* no room in buf: stops cleanly */
	CHECK_INT(labels__ml_from_environ(env, sizeof(env) - 1, names, 8, out, 16, buf, 8), 1);
}

static void test_ml_classify(void)
{
	unsigned int b = 0;

	b |= labels__ml_classify_path("/usr/bin/python3.11");
	CHECK(!labels__is_ml(b), "python alone is not ML");
	b |= labels__ml_classify_path("/usr/lib/x86_64-linux-gnu/libm.so.6");
	CHECK(!labels__is_ml(b), "libm is not ML");
	b |= labels__ml_classify_path(
		"/venv/lib/python3.11/site-packages/torch/lib/libtorch_cpu.so");
	CHECK(labels__is_ml(b), "python + torch");
	CHECK(labels__is_ml(labels__ml_classify_path("/usr/lib/libpython3.10.so.1.0") |
			    labels__ml_classify_path("/usr/local/cuda/lib64/libcudart.so.12")),
	      "libpython + cudart");
	CHECK(labels__is_ml(labels__ml_classify_path("/opt/conda/bin/python") |
			    labels__ml_classify_path("/x/jaxlib/xla_extension.so")),
	      "python + jax");
	CHECK(labels__is_ml(labels__ml_classify_path("/usr/bin/python3") |
			    labels__ml_classify_path("/x/tensorflow/libtensorflow_framework.so.2")),
	      "python + tf");
	CHECK(!labels__is_ml(labels__ml_classify_path("/usr/lib/libcuda.so.1")),
	      "native CUDA program without Python");
}

static const char pods_json[] =
	"{\"kind\":\"PodList\",\"apiVersion\":\"v1\",\"metadata\":{\"resourceVersion\":\"1\"},"
	"\"items\":[{\"metadata\":{\"name\":\"trainer-0\",\"namespace\":\"ml\","
	"\"uid\":\"1a2b3c4d-0000-1111-2222-333344445555\",\"labels\":{\"app\":\"t\"}},"
	"\"spec\":{\"nodeName\":\"gpu-1\",\"containers\":[{\"name\":\"trainer\"}]},"
	"\"status\":{\"phase\":\"Running\",\"initContainerStatuses\":[{\"name\":\"init\","
	"\"containerID\":\"containerd://"
	"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
	"aaaa\"}],\"containerStatuses\":[{\"name\":\"trainer\",\"ready\":true,\"restartCount\":0,"
	"\"containerID\":\"containerd://3f6b9a1c2d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f60718293a4b5"
	"c6d7e8\"},{\"name\":\"sidecar\",\"containerID\":\"cri-o://BBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBB"
	"BBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBB\",\"state\":{\"running\":{\"startedAt\":\"2024-01-01T00:"
	"00:00Z\"}}},{\"name\":\"waiting\",\"state\":{\"waiting\":{}}}]}},"
	"{\"metadata\":{\"name\":\"n\\u00e9t\\\"q\\\"\",\"namespace\":\"kube-system\",\"uid\":"
	"\"u2\"},\"status\":{\"containerStatuses\":[{\"name\":\"c\",\"containerID\":"
	"\"docker://cccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccc\"}],"
	"\"x\":[1,-2.5e3,true,false,null,[],{}]}},{\"metadata\":{}},5]}";

static void test_pods(void)
{
	struct k8s_pods *p = k8s_pods__parse(pods_json, sizeof(pods_json) - 1);
	const struct k8s_container *c;

	CHECK(p != NULL, "parse failed: %s", strerror(errno));
	if (!p)
		return;
	CHECK_INT(k8s_pods__count(p), 4);
	c = k8s_pods__find(p, "3f6b9a1c2d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f60718293a4b5c6d7e8");
	CHECK(c != NULL, "trainer not found");
	if (c) {
		CHECK_STR(c->pod, "trainer-0");
		CHECK_STR(c->ns, "ml");
		CHECK_STR(c->name, "trainer");
		CHECK_STR(c->uid, "1a2b3c4d-0000-1111-2222-333344445555");
	}
	c = k8s_pods__find(p, "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb");
	CHECK(c && !strcmp(c->name, "sidecar"), "cri-o id (uppercase) not found");
	c = k8s_pods__find(p, "cccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccc");
	CHECK(c && !strcmp(c->pod, "n\xc3\xa9t\"q\""), "escaped pod name");
	c = k8s_pods__find(p, "aaaaaaaaaaaa"); /* short id prefix */
	CHECK(c && !strcmp(c->name, "init"), "init container by prefix");
	CHECK(k8s_pods__find(p,
			     "dddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddd") ==
		      NULL,
	      "unknown id found");
	c = k8s_pods__find_pod(p, "1a2b3c4d_0000_1111_2222_333344445555");
	CHECK(c && !strcmp(c->pod, "trainer-0"), "pod by uid");
	k8s_pods__free(p);

	/* corrupt documents: every prefix of a valid one, and some classics */
	for (size_t i = 0; i < sizeof(pods_json) - 1; i += 7) {
		p = k8s_pods__parse(pods_json, i);
		CHECK(p == NULL, "truncated document of %zu bytes accepted", i);
		k8s_pods__free(p);
	}
	{
		static const char *bad[] = {"",
					    "{",
					    "[]",
					    "{\"items\":{}}",
					    "{\"items\":[}",
					    "{\"items\":[\"\\uZZZZ\"]}",
					    "{\"items\":[]} x",
					    "{\"items\":[\"a\x01\"]}"};
		for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
			p = k8s_pods__parse(bad[i], strlen(bad[i]));
			CHECK(p == NULL, "bad document %zu accepted", i);
			k8s_pods__free(p);
		}
	}
	{
		/* nesting deeper than the bound */
		char deep[400];
		memset(deep, '[', 200);
		memset(deep + 200, ']', 200);
		p = k8s_pods__parse(deep, sizeof(deep));
		CHECK(p == NULL && errno == E2BIG, "deep nesting accepted");
		p = k8s_pods__parse("{\"items\":[]}", 12);
		CHECK(p && k8s_pods__count(p) == 0, "empty list");
		k8s_pods__free(p);
	}
}

/* A fake /proc tree for the labeler. */
static char root[] = "/tmp/test_labels.XXXXXX";

static void put_file(int pid, const char *name, const char *data, size_t len)
{
	char path[512];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%d", root, pid);
	mkdir(path, 0755);
	snprintf(path, sizeof(path), "%s/%d/%s", root, pid, name);
	f = fopen(path, "w");
	if (!f)
		return;
	fwrite(data, 1, len, f);
	fclose(f);
}

static void fake_proc(int pid, const char *comm, unsigned long long start, const char *cmd,
		      size_t cmdlen, const char *env, size_t envlen, const char *cgroup)
{
	char stat[512];

	snprintf(stat, sizeof(stat),
		 "%d (%s) S 1 1 1 0 -1 4194560 100 0 0 0 10 5 0 0 20 0 1 0 %llu 1000 100\n", pid,
		 comm, start);
	put_file(pid, "stat", stat, strlen(stat));
	put_file(pid, "cmdline", cmd, cmdlen);
	put_file(pid, "environ", env, envlen);
	put_file(pid, "cgroup", cgroup, strlen(cgroup));
	put_file(pid, "maps", "", 0);
}

static const char *label(const struct series_labels *sl, const char *name)
{
	for (int i = 0; i < sl->n; i++)
		if (!strcmp(sl->pairs[i].name, name))
			return sl->pairs[i].value;
	return NULL;
}

static void test_labeler(void)
{
	struct agent_config cfg;
	struct labeler *l;
	const struct series_labels *sl;
	struct labeler_stats st;
	char err[512];
	char *argv[] = {"agent",
			"--hostname",
			"host-1",
			"--label",
			"team=ml",
			"--label",
			"hostname=override",
			"--ml-env",
			"MY_JOB",
			"--label-cache-size",
			"16",
			"--k8s",
			"off",
			"--service-rule",
			"process:serve\\.py=inference",
			NULL};

	if (!mkdtemp(root)) {
		CHECK(0, "mkdtemp");
		return;
	}
	CHECK_INT(agent_config__load(&cfg, 15, argv, (char *[]){NULL}, err, sizeof(err)), 0);
	fake_proc(100, "python3", 5000, CMD("python3\0train.py\0"),
		  CMD("RANK=2\0WORLD_SIZE=8\0MY_JOB=j1\0"), "0::/system.slice/job.service\n");
	fake_proc(101, "python3", 5001, CMD("python3\0serve.py\0"), CMD(""),
		  "0::/system.slice/docker-3f6b9a1c2d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f60718293"
		  "a4b5c6d7e8.scope\n");
	l = labeler__new(&cfg, root);
	CHECK(l != NULL, "labeler__new: %s", strerror(errno));
	if (!l)
		goto cleanup;
	sl = labeler__lookup(l, 100, 0, "python3", NULL, 1);
	CHECK(sl->keep, "filtered");
	CHECK_STR(sl->service, "train");
	CHECK_STR(sl->pairs[0].name, "service_name");
	CHECK_STR(label(sl, "hostname"), "override");
	CHECK_STR(label(sl, "rank"), "2");
	CHECK_STR(label(sl, "world_size"), "8");
	CHECK_STR(label(sl, "my_job"), "j1");
	CHECK_STR(label(sl, "team"), "ml");
	CHECK(label(sl, "container_id") == NULL, "no container");
	CHECK(label(sl, "pid") == NULL, "pid must not be a series label");
	CHECK_STR(sl->key, "service_name=train\x1fhostname=override\x1frank=2\x1fworld_size=8\x1f"
			   "my_job=j1\x1fteam=ml\x1f");

	sl = labeler__lookup(l, 101, 0, "python3", NULL, 1);
	CHECK_STR(sl->service, "inference");
	CHECK_STR(label(sl, "container_id"),
		  "3f6b9a1c2d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f60718293a4b5c6d7e8");

	/* cached: a changed cmdline is not seen within the window ... */
	fake_proc(100, "python3", 5000, CMD("python3\0other.py\0"), CMD(""), "0::/\n");
	sl = labeler__lookup(l, 100, 0, "python3", NULL, 1);
	CHECK_STR(sl->service, "train");
	/* ... nor in the next one while the process is the same (start time, comm) ... */
	sl = labeler__lookup(l, 100, 0, "python3", NULL, 2);
	CHECK_STR(sl->service, "train");
	/* ... but pid reuse (new start time) is */
	fake_proc(100, "python3", 9000, CMD("python3\0other.py\0"), CMD(""), "0::/\n");
	sl = labeler__lookup(l, 100, 0, "python3", NULL, 3);
	CHECK_STR(sl->service, "other");
	/* a late sample of the process that held pid 100 before (started at tick 5000) is not
	 * labeled as the new one's (tick 9000); one of the new process is */
	{
		uint64_t tick_ns = 1000000000ull / (uint64_t)sysconf(_SC_CLK_TCK);

		sl = labeler__lookup(l, 100, 5000 * tick_ns, "python3", NULL, 3);
		CHECK_STR(sl->service, "short-lived");
		sl = labeler__lookup(l, 100, 9000 * tick_ns + 1, "python3", NULL, 3);
		CHECK_STR(sl->service, "other");
		labeler__stats(l, &st);
		CHECK_INT(st.pid_reused, 1);
	}
	/* an exited process keeps its labels; one never seen alive is "short-lived" */
	sl = labeler__lookup(l, 4242, 0, "worker", NULL, 3);
	CHECK(sl->keep, "unknown pid filtered");
	CHECK_STR(sl->service, "short-lived");

	/* LRU bound */
	for (int pid = 2000; pid < 2040; pid++)
		labeler__lookup(l, pid, 0, "x", NULL, 3);
	labeler__stats(l, &st);
	CHECK_INT(st.cache_entries, 16);
	CHECK(st.cache_evictions >= 24, "evictions %llu", (unsigned long long)st.cache_evictions);
	CHECK_INT(st.invalidations, 1);

	/* reconfigure: filters apply, the cache is dropped */
	agent_config__free(&cfg);
	{
		char *argv2[] = {"agent", "--process-regex", "serve", "--k8s", "off", NULL};
		CHECK_INT(agent_config__load(&cfg, 5, argv2, (char *[]){NULL}, err, sizeof(err)),
			  0);
	}
	CHECK_INT(labeler__reconfigure(l, &cfg), 0);
	sl = labeler__lookup(l, 100, 0, "python3", NULL, 4);
	CHECK(!sl->keep, "process-regex did not filter other.py");
	sl = labeler__lookup(l, 101, 0, "python3", NULL, 4);
	CHECK(sl->keep, "process-regex filtered serve.py");
	CHECK_STR(sl->service, "serve");
	CHECK(label(sl, "team") == NULL, "old static label kept");

	agent_config__free(&cfg);
	{
		char *argv3[] = {"agent", "--cgroup", "3f6b9a1c", "--ml-only",
				 "--k8s", "off",      NULL};
		CHECK_INT(agent_config__load(&cfg, 6, argv3, (char *[]){NULL}, err, sizeof(err)),
			  0);
	}
	CHECK_INT(labeler__reconfigure(l, &cfg), 0);
	/* container matches but no ML libraries in maps */
	sl = labeler__lookup(l, 101, 0, "python3", NULL, 5);
	CHECK(!sl->keep, "ml-only kept a non-ML process");
	put_file(101, "maps",
		 CMD("7f00-7f10 r-xp 0 08:01 1 /usr/bin/python3.11\n"
		     "7f20-7f30 r-xp 0 08:01 2 /v/site-packages/torch/lib/libtorch_cuda.so\n"));
	CHECK_INT(labeler__reconfigure(l, &cfg), 0);
	sl = labeler__lookup(l, 101, 0, "python3", NULL, 5);
	CHECK(sl->keep, "ml-only dropped a torch process");
	sl = labeler__lookup(l, 100, 0, "python3", NULL, 5);
	CHECK(!sl->keep, "cgroup filter kept a host process");
	labeler__free(l);
cleanup:
	agent_config__free(&cfg);
	{
		char cmd[600];
		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
		if (system(cmd))
			fprintf(stderr, "cannot remove %s\n", root);
	}
}

static void put_uptime(double secs)
{
	char path[512], text[64];
	FILE *f;

	snprintf(path, sizeof(path), "%s/uptime", root);
	snprintf(text, sizeof(text), "%.2f 1.00\n", secs);
	f = fopen(path, "w");
	if (f) {
		fputs(text, f);
		fclose(f);
	}
}

/* A process with a parent and stat flags; start is in clock ticks after boot. */
static void fake_task(int pid, int ppid, unsigned int flags, const char *comm,
		      unsigned long long start, const char *cmd, size_t cmdlen, const char *cgroup)
{
	char stat[512];

	snprintf(stat, sizeof(stat),
		 "%d (%s) S %d %d %d 0 -1 %u 100 0 0 0 10 5 0 0 20 0 1 0 %llu 1000 100\n", pid,
		 comm, ppid, pid, pid, flags, start);
	put_file(pid, "stat", stat, strlen(stat));
	put_file(pid, "cmdline", cmd, cmdlen);
	put_file(pid, "environ", "", 0);
	put_file(pid, "cgroup", cgroup, strlen(cgroup));
	put_file(pid, "maps", "", 0);
}

/*
 * Kernel threads, shell pipelines and short-lived commands add no series of their own:
 * "kernel", the nearest older ancestor's (or script's) service, "short-lived" when gone.
 */
static void test_service_grouping(void)
{
	static const char cron_cg[] = "0::/system.slice/cron.service\n";
	struct agent_config cfg;
	struct labeler *l;
	const char *s;
	char err[512], cmd[64];
	char *argv[] = {"agent", "--k8s", "off", "--hostname", "h", NULL};
	long tck = sysconf(_SC_CLK_TCK);
	unsigned long long old = 10ull * (unsigned long long)tck,
			   young = 999ull * (unsigned long long)tck;
	int distinct = 0;
	const char *first = NULL;

	if (!mkdtemp(strcpy(root, "/tmp/test_labels.XXXXXX"))) {
		CHECK(0, "mkdtemp");
		return;
	}
	CHECK_INT(agent_config__load(&cfg, 5, argv, (char *[]){NULL}, err, sizeof(err)), 0);
	CHECK_INT(cfg.service_min_age_s, 10);
	put_uptime(1000.0); /* "now": young processes started 1 s ago */
	fake_task(2, 0, 0x208040, "kthreadd", 1, "", 0, "0::/\n");
	fake_task(300, 2, 0x4208060, "kworker/1:1-ev", 5, "", 0, "0::/\n");
	fake_task(301, 2, 0x4208040, "ksoftirqd/0", 5, "", 0, "0::/\n");
	fake_task(400, 1, 0x400100, "cron", old, CMD("/usr/sbin/cron\0-f\0"), cron_cg);
	fake_task(410, 400, 0x400000, "bash", young, CMD("bash\0/opt/run_job.sh\0"), cron_cg);
	fake_task(411, 410, 0x400000, "grep", young, CMD("grep\0-c\0007\0"), cron_cg);
	fake_task(412, 410, 0x400040, "bash", young,
		  CMD("bash\0-o\0pipefail\0-c\0seq 9 | grep 3\0"), cron_cg);
	fake_task(413, 412, 0x400000, "sleep", young, CMD("sleep\0003\0"), cron_cg);
	/* cron runs a pipeline through sh -c: its commands are "cron" */
	fake_task(421, 400, 0x400040, "sh", young, CMD("/bin/sh\0-c\0curl -sf http://x/ | gzip\0"),
		  cron_cg);
	fake_task(420, 421, 0x400000, "curl", young, CMD("curl\0-sf\0http://x/\0"), cron_cg);
	/* a program that a non-shell started keeps its name from the start */
	fake_task(470, 400, 0x400000, "python3", old, CMD("python3\0harness.py\0"), cron_cg);
	fake_task(471, 470, 0x400000, "agent_workload", young, CMD("./agent_workload\0"), cron_cg);
	/* what a user types in an interactive (login) shell is named after itself */
	fake_task(480, 1, 0x400100, "bash", old, CMD("-bash\0"), "0::/user.slice\n");
	fake_task(481, 480, 0x400000, "trainer", young, CMD("./trainer\0--steps\0001\0"),
		  "0::/user.slice\n");
	fake_task(430, 1, 0x400000, "sleep", young, CMD("sleep\0001\0"), "0::/\n");
	fake_task(440, 1, 0x400000, "bash", old, CMD("bash\0/dev/fd/3\0"), "0::/\n");
	/* a container's first process: its parent (the shim) is in another cgroup */
	fake_task(450, 460, 0x400000, "cat", young, CMD("cat\0"),
		  "0::/system.slice/docker-ab.scope\n");
	fake_task(460, 1, 0x400000, "containerd-shim", old, CMD("containerd-shim\0"),
		  "0::/system.slice/containerd.service\n");
	l = labeler__new(&cfg, root);
	CHECK(l != NULL, "labeler__new: %s", strerror(errno));
	if (!l)
		goto cleanup;
	CHECK_STR(labeler__lookup(l, 300, 0, "kworker/1:1-ev", NULL, 1)->service, "kernel");
	CHECK_STR(labeler__lookup(l, 301, 0, "ksoftirqd/0", NULL, 1)->service, "kernel");
	CHECK_STR(labeler__lookup(l, 0, 0, "swapper/0", NULL, 1)->service, "kernel");
	CHECK_STR(labeler__lookup(l, 410, 0, "bash", NULL, 1)->service, "run_job");
	CHECK_STR(labeler__lookup(l, 411, 0, "grep", NULL, 1)->service, "run_job");
	CHECK_STR(labeler__lookup(l, 412, 0, "bash", NULL, 1)->service, "run_job");
	CHECK_STR(labeler__lookup(l, 413, 0, "sleep", NULL, 1)->service, "run_job");
	CHECK_STR(labeler__lookup(l, 420, 0, "curl", NULL, 1)->service, "cron");
	CHECK_STR(labeler__lookup(l, 421, 0, "sh", NULL, 1)->service, "cron");
	CHECK_STR(labeler__lookup(l, 471, 0, "agent_workload", NULL, 1)->service, "agent_workload");
	CHECK_STR(labeler__lookup(l, 481, 0, "trainer", NULL, 1)->service, "trainer");
	CHECK_STR(labeler__lookup(l, 480, 0, "bash", NULL, 1)->service, "bash");
	CHECK_STR(labeler__lookup(l, 430, 0, "sleep", NULL, 1)->service, "sleep");
	CHECK_STR(labeler__lookup(l, 440, 0, "bash", NULL, 1)->service, "bash");
	CHECK_STR(labeler__lookup(l, 450, 0, "cat", NULL, 1)->service, "cat");
	CHECK_STR(labeler__lookup(l, 4343, 0, "grep", NULL, 1)->service, "short-lived");
	/* a hundred different short-lived commands of one script: one series */
	for (int pid = 1000; pid < 1100; pid++) {
		const struct series_labels *sl;

		snprintf(cmd, sizeof(cmd), "tool%d", pid);
		fake_task(pid, 410, 0x400000, cmd, young, cmd, strlen(cmd) + 1, cron_cg);
		sl = labeler__lookup(l, pid, 0, cmd, NULL, 1);
		if (!first || strcmp(first, sl->key)) {
			distinct++;
			first = sl->key;
		}
		CHECK_STR(sl->service, "run_job");
	}
	CHECK_INT(distinct, 1);
	/* once older than --service-min-age, a command is its own service (next window) */
	put_uptime(1000.0 + 11.0);
	CHECK_STR(labeler__lookup(l, 411, 0, "grep", NULL, 1)->service, "run_job");
	s = labeler__lookup(l, 411, 0, "grep", NULL, 2)->service;
	CHECK_STR(s, "grep");
	CHECK_STR(labeler__lookup(l, 413, 0, "sleep", NULL, 2)->service, "sleep");
	CHECK_STR(labeler__lookup(l, 300, 0, "kworker/1:1-ev", NULL, 2)->service, "kernel");
	/* --service-min-age 0: every process is named after itself at once */
	agent_config__free(&cfg);
	{
		char *argv2[] = {"agent", "--k8s", "off", "--service-min-age", "0", NULL};

		CHECK_INT(agent_config__load(&cfg, 5, argv2, (char *[]){NULL}, err, sizeof(err)),
			  0);
	}
	put_uptime(1000.0);
	CHECK_INT(labeler__reconfigure(l, &cfg), 0);
	CHECK_STR(labeler__lookup(l, 420, 0, "curl", NULL, 3)->service, "curl");
	labeler__free(l);
cleanup:
	agent_config__free(&cfg);
	{
		char rm[600];

		snprintf(rm, sizeof(rm), "rm -rf '%s'", root);
		if (system(rm))
			fprintf(stderr, "cannot remove %s\n", root);
	}
}

int main(void)
{
	test_sanitize();
	test_service_names();
	test_service_table();
	test_cgroups();
	test_ml_env();
	test_ml_classify();
	test_pods();
	test_labeler();
	test_service_grouping();
	return check_done("labels");
}
