// SPDX-License-Identifier: Apache-2.0
/* `mlprof record`'s command line: usage, parsing, and the checks made before recording. */
#include "cli/record_opts.h"

#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/cli.h"
#include "runtimes/torch/steps_duty.h"

#define LOG_MODULE "record"
#include "util/log.h"
#include "util/parse.h"

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: mlprof record [options] (-p PID[,PID...] | -a | -- COMMAND [ARGS...])\n"
		"\n"
		"Samples CPU stacks (user + kernel) of the targets with eBPF, unwinds them "
		"without\n"
		"frame pointers, symbolizes them and writes a pprof profile and a flame graph.\n"
		"Stops when the duration ends, the command (or every PID) exits, or on Ctrl-C.\n"
		"\n"
		"Targets (exactly one):\n"
		"  -p, --pid PID[,PID...]   profile these running processes (all their threads)\n"
		"  -a, --all                profile every process on the host\n"
		"  -- COMMAND [ARGS...]     launch COMMAND and profile it and every process it "
		"forks;\n"
		"                           mlprof exits with the command's exit status (127:\n"
		"                           not found, 126: cannot run; nothing is written)\n"
		"\n"
		"Options:\n"
		"  -F, --freq HZ            sampling frequency per CPU (default 99, 1..10000)\n"
		"  -d, --duration SECONDS   stop after this long (default: until exit / Ctrl-C;\n"
		"                           required with -a or -p unless you press Ctrl-C)\n"
		"  -o, --output FILE        write the profile to FILE; repeat for several files. "
		"The\n"
		"                           format comes from --format or the extension: "
		".pb.gz/.pprof\n"
		"                           (pprof), .html (flame graph page), .svg (flame graph\n"
		"                           image), .folded/.txt (folded stacks).\n"
		"                           Default: mlprof.pb.gz and mlprof.html\n"
		"  -f, --format FMT         pprof|html|svg|folded, for -o files without a known "
		"extension\n"
		"      --stack-size BYTES   user stack bytes copied per sample (default %u, max "
		"%u)\n"
		"      --no-kernel          leave kernel frames out of the stacks\n"
		"      --off-cpu            also profile off-CPU time: where threads block (I/O,\n"
		"                           locks, queues, sleeps, GPU waits) or wait for a CPU,\n"
		"                           weighted by the time off the CPU; written to\n"
		"                           NAME.offcpu.EXT next to each output\n"
		"      --off-cpu-min-us US  shortest off-CPU interval counted (default 10)\n"
		"      --cuda LIST          CUDA/NCCL profiles, from uprobes on the CUDA runtime,\n"
		"                           driver and NCCL libraries the targets map (no\n"
		"                           injection): comma list of launches (kernel and graph\n"
		"                           launches by call site, the kernel as leaf), sync (CPU\n"
		"                           blocked in synchronize calls), memcpy (host<->device\n"
		"                           bytes), memory (GPU memory allocated and in use by\n"
		"                           site: cudaMalloc segments, and PyTorch tensors from\n"
		"                           its caching allocator's USDT probes, sampled by\n"
		"                           bytes), nccl (collectives: calls, bytes); 'all'\n"
		"                           (default) or 'none'. Each is written to\n"
		"                           NAME.KIND.EXT when the targets used it\n"
		"      --no-memory          no memory-growth profile (by default anonymous memory\n"
		"                           brought in by page faults is sampled by bytes and\n"
		"                           attributed to the stack that touched it first, with\n"
		"                           what is still in use at the end: NAME.memory.EXT).\n"
		"                           It says who brought pages in, not who holds them\n"
		"                           (allocators reuse memory): for that, --heap\n"
		"      --heap               heap profile by allocation site: uprobes on the\n"
		"                           allocator the targets use (glibc malloc & co, or\n"
		"                           jemalloc/tcmalloc/mimalloc), sampled by bytes;\n"
		"                           allocated and still-in-use bytes and objects by the\n"
		"                           stack (native and Python) that allocated them, i.e.\n"
		"                           who holds the memory (NAME.heap.EXT). Costs each\n"
		"                           allocator call a uprobe (~1 us; posix_memalign and\n"
		"                           memalign ~14 us on a VM): see README\n"
		"      --cuda-tensor-sample KIB\n"
		"                           mean KiB of PyTorch tensor allocations per sampled "
		"one\n"
		"                           (default 1024): each sampled one costs the profiled\n"
		"                           thread a stack capture; raise it for loops that\n"
		"                           allocate GBs a second\n"
		"      --heap-sample KIB    mean KiB allocated per sampled allocation (default\n"
		"                           512)\n"
		"      --no-steps           no PyTorch training-step breakdown (by default the\n"
		"                           record_function scopes PyTorch 2.x opens, optimizer\n"
		"                           step and DataLoader next, are probed in libtorch_cpu:\n"
		"                           the summary gives steps, step time and the share of\n"
		"                           gpu_wait, data_wait, comm, optimizer, cpu_compute and\n"
		"                           other per process; NAME.steps.pb.gz their wall time\n"
		"                           by stack and ml_phase)\n"
		"      --steps-max-scopes N record_function scope events a second per process\n"
		"                           (an enter or an exit; a step sends six) above which\n"
		"                           the step probes are attached in random 0.5 s slots\n"
		"                           only (default 1500: steps of 4 ms): each event costs\n"
		"                           the training thread ~2 us, so a loop of 1 ms steps\n"
		"                           would lose 1.5-2%%; steps are then timed in those\n"
		"                           slots (0: always attached)\n"
		"      --memory-sample KIB  mean KiB of faulted-in memory per captured stack\n"
		"                           (default 512)\n"
		"      --memory-rate N      memory-growth stack captures per CPU per second\n"
		"                           (default 1000); above it the sampled faults are\n"
		"                           sampled again and weighted (bytes stay unbiased)\n"
		"      --memory-max-faults N\n"
		"                           page faults per busy CPU per second above which the\n"
		"                           page-fault programs run in random 20 ms slots only\n"
		"                           (at least a quarter of them), their captures\n"
		"                           weighted (default 100000; 0: always attached)\n"
		"      --cuda-rate N        CUDA/NCCL stack captures per CPU per second (default\n"
		"                           500); above it calls are sampled and weighted (counts\n"
		"                           stay exact); allocations are always captured\n"
		"      --no-cuda-hold       do not stop a process for the moment it maps a CUDA\n"
		"                           runtime, driver or NCCL library (by default it waits,\n"
		"                           a few ms, until the library's probes are attached, so\n"
		"                           that its first calls are seen too)\n"
		"      --off-cpu-rate N     off-CPU stack captures per CPU per second (default\n"
		"                           500); above it switch-outs are sampled and weighted\n"
		"      --no-python          native frames only for Python processes (by default\n"
		"                           CPython 3.10-3.14 frames are read at sample time and\n"
		"                           shown in place of the interpreter's eval loop)\n"
		"      --source-lines       file:line for native frames from every file's DWARF,\n"
		"                           large debug files included (default: only files with\n"
		"                           at most 1 MiB of DWARF, which open without stalling)\n"
		"      --no-source-lines    no file:line for native frames\n"
		"      --title TEXT         flame graph title\n"
		"  -q, --quiet              no summary on stderr\n"
		"      --log-level LEVEL    error|warn|info|debug (default warn)\n"
		"  -h, --help               this help\n"
		"\n"
		"Examples:\n"
		"  mlprof record -- python3 train.py\n"
		"  mlprof record -p 1234 -d 30 -o train.pb.gz -o train.html\n"
		"  mlprof record -a -F 49 -d 10 -o host.svg\n",
		(unsigned int)MLPROF_DEFAULT_USTACK, (unsigned int)MLPROF_MAX_USTACK);
}

/* One clear line, then exit status 2 for usage errors. */
#define usage_error(...) return cli__usage_error("record", __VA_ARGS__)

static int parse_uint(const char *s, unsigned long min, unsigned long max, unsigned long *out)
{
	const char *end;
	uint64_t v;

	/* digits only (util/parse, as the agent's options): no sign, no leading space */
	if (!s || parse__u64(s, &v, &end) || *end || v < min || v > max)
		return -EINVAL;
	*out = (unsigned long)v;
	return 0;
}

/* A stack-capture rate option (10..max per CPU per second) into *out, else a usage error. */
#define parse_rate(opt, arg, max, out)                                                             \
	do {                                                                                       \
		if (parse_uint(arg, 10, max, out))                                                 \
			usage_error("invalid %s '%s' (10..%lu per CPU per second)", opt, arg,      \
				    (unsigned long)(max));                                         \
	} while (0)

static int parse_pids(struct record_opts *o, const char *arg)
{
	char buf[4096];
	char *save = NULL, *tok;

	if (strlen(arg) >= sizeof(buf))
		return -EINVAL;
	strcpy(buf, arg);
	for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		unsigned long v;

		if (parse_uint(tok, 1, INT_MAX, &v) || o->n_pids >= MAX_PIDS)
			return -EINVAL;
		o->pids[o->n_pids++] = (pid_t)v;
	}
	return o->n_pids ? 0 : -EINVAL;
}

/* Whether record collects a kind with these options. */
/* See record_opts.h. */
bool record_opts__kind_enabled(const struct record_opts *o, enum mlprof_sample_kind k)
{
	switch (k) {
	case MLPROF_SK_CPU:
		return true;
	case MLPROF_SK_OFFCPU:
		return o->offcpu;
	case MLPROF_SK_CUDA_LAUNCH:
	case MLPROF_SK_CUDA_GRAPH:
		return o->cuda.launches;
	case MLPROF_SK_CUDA_SYNC:
		return o->cuda.sync;
	case MLPROF_SK_CUDA_MEMCPY:
		return o->cuda.memcpy;
	case MLPROF_SK_CUDA_ALLOC:
	case MLPROF_SK_CUDA_TENSOR:
		return o->cuda.memory;
	case MLPROF_SK_NCCL:
		return o->cuda.nccl;
	case MLPROF_SK_MEMORY:
		return o->memory;
	case MLPROF_SK_HEAP:
		return o->heap;
	case MLPROF_SK_STEPS:
		return !o->no_steps;
	default:
		return false;
	}
}

/* See record_opts.h. */
int record_opts__parse(int argc, char **argv, struct record_opts *o)
{
	enum {
		OPT_STACK = 256,
		OPT_NO_KERNEL,
		OPT_NO_PYTHON,
		OPT_NO_SOURCE_LINES,
		OPT_SOURCE_LINES,
		OPT_OFFCPU,
		OPT_OFFCPU_MIN,
		OPT_OFFCPU_RATE,
		OPT_CUDA,
		OPT_CUDA_RATE,
		OPT_NO_MEMORY,
		OPT_NO_CUDA_HOLD,
		OPT_MEMORY_SAMPLE,
		OPT_MEMORY_RATE,
		OPT_MEMORY_MAX_FAULTS,
		OPT_HEAP,
		OPT_HEAP_SAMPLE,
		OPT_CUDA_TENSOR_SAMPLE,
		OPT_NO_STEPS,
		OPT_STEPS_MAX_SCOPES,
		OPT_TITLE,
		OPT_LOG
	};
	static const struct option longopts[] = {
		{"pid", required_argument, NULL, 'p'},
		{"all", no_argument, NULL, 'a'},
		{"freq", required_argument, NULL, 'F'},
		{"duration", required_argument, NULL, 'd'},
		{"output", required_argument, NULL, 'o'},
		{"format", required_argument, NULL, 'f'},
		{"stack-size", required_argument, NULL, OPT_STACK},
		{"no-kernel", no_argument, NULL, OPT_NO_KERNEL},
		{"no-python", no_argument, NULL, OPT_NO_PYTHON},
		{"no-source-lines", no_argument, NULL, OPT_NO_SOURCE_LINES},
		{"source-lines", no_argument, NULL, OPT_SOURCE_LINES},
		{"off-cpu", no_argument, NULL, OPT_OFFCPU},
		{"off-cpu-min-us", required_argument, NULL, OPT_OFFCPU_MIN},
		{"off-cpu-rate", required_argument, NULL, OPT_OFFCPU_RATE},
		{"cuda", required_argument, NULL, OPT_CUDA},
		{"cuda-rate", required_argument, NULL, OPT_CUDA_RATE},
		{"no-memory", no_argument, NULL, OPT_NO_MEMORY},
		{"no-cuda-hold", no_argument, NULL, OPT_NO_CUDA_HOLD},
		{"memory-sample", required_argument, NULL, OPT_MEMORY_SAMPLE},
		{"memory-rate", required_argument, NULL, OPT_MEMORY_RATE},
		{"memory-max-faults", required_argument, NULL, OPT_MEMORY_MAX_FAULTS},
		{"heap", no_argument, NULL, OPT_HEAP},
		{"heap-sample", required_argument, NULL, OPT_HEAP_SAMPLE},
		{"cuda-tensor-sample", required_argument, NULL, OPT_CUDA_TENSOR_SAMPLE},
		{"no-steps", no_argument, NULL, OPT_NO_STEPS},
		{"steps-max-scopes", required_argument, NULL, OPT_STEPS_MAX_SCOPES},
		{"title", required_argument, NULL, OPT_TITLE},
		{"quiet", no_argument, NULL, 'q'},
		{"log-level", required_argument, NULL, OPT_LOG},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	enum log_level level = LOG_WARN;
	unsigned long v;
	char *end;
	int c;

	o->freq_hz = 99;
	o->ustack_bytes = MLPROF_DEFAULT_USTACK;
	o->kernel_frames = true;
	o->python = true;
	o->source_lines = PIPELINE_LINES_SMALL;
	o->offcpu_min_us = 10;
	o->offcpu_rate = 500;
	o->cuda = (struct cuda_config){true, true, true, true, true};
	o->cuda_rate = 500;
	o->memory_rate = 1000;
	o->memory_max_faults = 100000;
	o->steps_max_scopes = STEPS_MAX_SCOPES_DEFAULT;
	o->memory = true;
	o->memory_sample_kib = 512;
	o->heap_sample_kib = 512;
	o->cuda_tensor_sample_kib = MLPROF_TENSOR_SAMPLE_BYTES / 1024;
	opterr = 0;
	optind = 1;
	while ((c = getopt_long(argc, argv, "+p:aF:d:o:f:qh", longopts, NULL)) != -1) {
		switch (c) {
		case 'p':
			if (parse_pids(o, optarg))
				usage_error("invalid PID list '%s'", optarg);
			break;
		case 'a':
			o->all = true;
			break;
		case 'F':
			if (parse_uint(optarg, 1, 10000, &v))
				usage_error("invalid frequency '%s' (1..10000 Hz)", optarg);
			o->freq_hz = (unsigned int)v;
			break;
		case 'd':
			errno = 0;
			o->duration_s = strtod(optarg, &end);
			if (errno || *end || !(o->duration_s > 0) || o->duration_s > 86400 * 7)
				usage_error("invalid duration '%s' (seconds > 0)", optarg);
			break;
		case 'o':
			if (o->n_outputs >= MAX_OUTPUTS)
				usage_error("too many -o outputs (max %d)", MAX_OUTPUTS);
			o->outputs[o->n_outputs++].path = optarg;
			break;
		case 'f':
			if (output__parse_format(optarg, &o->format))
				usage_error("unknown format '%s' (pprof|html|svg|folded)", optarg);
			o->format_set = true;
			break;
		case OPT_STACK:
			if (parse_uint(optarg, 512, MLPROF_MAX_USTACK, &v))
				usage_error("invalid --stack-size '%s' (512..%u bytes)", optarg,
					    (unsigned int)MLPROF_MAX_USTACK);
			o->ustack_bytes = (uint32_t)v;
			break;
		case OPT_NO_KERNEL:
			o->kernel_frames = false;
			break;
		case OPT_NO_PYTHON:
			o->python = false;
			break;
		case OPT_NO_SOURCE_LINES:
			o->source_lines = PIPELINE_LINES_OFF;
			break;
		case OPT_SOURCE_LINES:
			o->source_lines = PIPELINE_LINES_ALL;
			break;
		case OPT_OFFCPU:
			o->offcpu = true;
			break;
		case OPT_OFFCPU_MIN:
			if (parse_uint(optarg, 0, 60000000, &o->offcpu_min_us))
				usage_error("invalid --off-cpu-min-us '%s' (0..60000000)", optarg);
			break;
		case OPT_CUDA:
			if (cuda__parse_families(optarg, &o->cuda))
				usage_error("invalid --cuda '%s' (all, none, or a comma list of "
					    "launches,sync,memcpy,memory,nccl)",
					    optarg);
			break;
		case OPT_NO_MEMORY:
			o->memory = false;
			break;
		case OPT_NO_CUDA_HOLD:
			o->cuda_no_hold = true;
			break;
		case OPT_MEMORY_SAMPLE:
			if (parse_uint(optarg, 4, 1048576, &o->memory_sample_kib))
				usage_error("invalid --memory-sample '%s' (4..1048576 KiB)",
					    optarg);
			break;
		case OPT_MEMORY_RATE:
			parse_rate("--memory-rate", optarg, 1000000, &o->memory_rate);
			break;
		case OPT_HEAP:
			o->heap = true;
			break;
		case OPT_NO_STEPS:
			o->no_steps = true;
			break;
		case OPT_STEPS_MAX_SCOPES:
			if (parse_uint(optarg, 0, 100000000, &o->steps_max_scopes))
				usage_error("invalid --steps-max-scopes '%s' (0..100000000)",
					    optarg);
			break;
		case OPT_HEAP_SAMPLE:
			if (parse_uint(optarg, 1, 1048576, &o->heap_sample_kib))
				usage_error("invalid --heap-sample '%s' (1..1048576 KiB)", optarg);
			break;
		case OPT_CUDA_TENSOR_SAMPLE:
			if (parse_uint(optarg, 1, 4194304, &o->cuda_tensor_sample_kib))
				usage_error("invalid --cuda-tensor-sample '%s' (1..4194304 KiB)",
					    optarg);
			break;
		case OPT_MEMORY_MAX_FAULTS:
			if (parse_uint(optarg, 0, 100000000, &o->memory_max_faults))
				usage_error("invalid --memory-max-faults '%s' (0..100000000)",
					    optarg);
			break;
		case OPT_CUDA_RATE:
			parse_rate("--cuda-rate", optarg, 10000000, &o->cuda_rate);
			break;
		case OPT_OFFCPU_RATE:
			parse_rate("--off-cpu-rate", optarg, 100000, &o->offcpu_rate);
			break;
		case OPT_TITLE:
			o->title = optarg;
			break;
		case 'q':
			o->quiet = true;
			break;
		case OPT_LOG:
			if (log__parse_level(optarg, &level))
				usage_error("invalid log level '%s'", optarg);
			break;
		case 'h':
			usage(stdout);
			return 1;
		case '?':
		default:
			return cli__bad_option("record", optopt, argv[optind - 1],
					       "invalid option");
		}
	}
	log__setup(level, false);
	if (optind < argc)
		o->cmd = &argv[optind];
	if ((o->n_pids > 0) + o->all + (o->cmd != NULL) != 1)
		usage_error("give exactly one target: -p PID, -a, or -- COMMAND");
	return 0;
}

/* Resolves output formats and checks that every output can be written before profiling. */
static int prepare_outputs(struct record_opts *o)
{
	if (o->n_outputs == 0) {
		o->outputs[0].path = "mlprof.pb.gz";
		o->outputs[1].path = "mlprof.html";
		o->n_outputs = 2;
	}
	for (int i = 0; i < o->n_outputs; i++) {
		struct record_output *out = &o->outputs[i];
		int err;

		if (output__format_from_path(out->path, &out->fmt) != 0) {
			if (!o->format_set)
				usage_error("cannot tell the format of '%s' from its name: use "
					    "--format or an extension (.pb.gz .html .svg .folded)",
					    out->path);
			out->fmt = o->format;
		} else if (o->format_set) {
			out->fmt = o->format;
		}
		if (strlen(out->path) >= PATH_MAX - 16)
			usage_error("output path too long");
		/* found out now, not after a long recording */
		err = output__check_writable(out->path);
		if (err == -EISDIR) {
			fprintf(stderr, "mlprof: record: output '%s' is a directory\n", out->path);
			return err;
		}
		if (err) {
			fprintf(stderr, "mlprof: record: cannot write output '%s': %s\n", out->path,
				strerror(-err));
			return err;
		}
	}
	return 0;
}

/*
 * Finds COMMAND as execvp() would (a path, or a search of $PATH), so that a command that
 * cannot run fails before anything is recorded or written. 0 or -errno (ENOENT, EACCES).
 */
static int check_command(const char *cmd)
{
	const char *path = getenv("PATH"), *p;
	char full[PATH_MAX];
	struct stat st;
	int err = -ENOENT;

	if (!*cmd)
		return -ENOENT;
	if (strchr(cmd, '/')) {
		if (stat(cmd, &st) != 0)
			return -errno;
		if (S_ISDIR(st.st_mode))
			return -EISDIR;
		return access(cmd, X_OK) == 0 ? 0 : -errno;
	}
	if (!path)
		path = "/usr/local/bin:/usr/bin:/bin";
	for (p = path;; p++) {
		const char *end = strchrnul(p, ':');
		int n = end == p ? snprintf(full, sizeof(full), "%s", cmd)
				 : snprintf(full, sizeof(full), "%.*s/%s", (int)(end - p), p, cmd);

		if (n > 0 && (size_t)n < sizeof(full) && stat(full, &st) == 0 &&
		    !S_ISDIR(st.st_mode)) {
			if (access(full, X_OK) == 0)
				return 0;
			err = -EACCES; /* execvp reports EACCES when only such files exist */
		}
		if (!*end)
			break;
		p = end;
	}
	return err;
}

static int check_targets(const struct record_opts *o)
{
	for (int i = 0; i < o->n_pids; i++) {
		if (kill(o->pids[i], 0) != 0 && errno == ESRCH) {
			fprintf(stderr, "mlprof: record: no such process: %d\n", o->pids[i]);
			return -ESRCH;
		}
	}
	return 0;
}

/* See record_opts.h. */
int record_opts__check(struct record_opts *o)
{
	int err;

	if (prepare_outputs(o) || check_targets(o))
		return 2;
	if (!o->cmd)
		return 0;
	err = check_command(o->cmd[0]);
	if (!err)
		return 0;
	/* the shell's convention: 127 not found, 126 found but cannot run */
	fprintf(stderr, "mlprof: record: cannot run '%s': %s\n", o->cmd[0], strerror(-err));
	return err == -ENOENT ? 127 : 126;
}
