// SPDX-License-Identifier: Apache-2.0
/* Test tool: writes a known profile (or a larger synthetic ML-like demo) with output__write_file.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "profile/output.h"

/*
 * Usage: mkprof [--demo] FILE...
 * Each FILE is written in the format its extension names. Without --demo, the expected
 * stacks are printed on stdout as "count<TAB>root;...;leaf" (plain function names, unnamed
 * frames as "?"), one line per profile__add call, for tests/tools/check_pprof.py.
 */

static const struct frame_mapping exe = {0x555555554000, 0x555555600000, 0x1000, "/usr/bin/trainer",
					 "0123456789abcdef"};
static const struct frame_mapping torch = {0x7f1000000000, 0x7f1004000000, 0,
					   "/opt/venv/lib/python3.11/site-packages/torch/lib/"
					   "libtorch_cpu.so",
					   "feedfacecafe"};

#define N(fn, a)                                                                                   \
	{                                                                                          \
		.kind = FRAME_NATIVE, .addr = (a), .function = (fn), .map = &exe                   \
	}
#define T(fn, a)                                                                                   \
	{                                                                                          \
		.kind = FRAME_NATIVE, .addr = (a), .function = (fn), .map = &torch                 \
	}
#define K(fn, a)                                                                                   \
	{                                                                                          \
		.kind = FRAME_KERNEL, .addr = (a), .function = (fn)                                \
	}
#define PY(fn, src, l)                                                                             \
	{                                                                                          \
		.kind = FRAME_PYTHON, .function = (fn), .file = (src), .line = (l)                 \
	}
#define CU(fn)                                                                                     \
	{                                                                                          \
		.kind = FRAME_CUDA_KERNEL, .function = (fn)                                        \
	}
#define TR(fn)                                                                                     \
	{                                                                                          \
		.kind = FRAME_TRUNCATED, .function = (fn)                                          \
	}
#define PROC(fn)                                                                                   \
	{                                                                                          \
		.kind = FRAME_PROCESS, .function = (fn)                                            \
	}

static int add(struct profile *p, bool print, const struct frame *f, int n, int64_t count,
	       const struct profile_label *l, int nl)
{
	int64_t v[2] = {count, count * 10000000};

	if (print) {
		printf("%lld\t", (long long)count);
		for (int i = n - 1; i >= 0; i--)
			printf("%s%s", f[i].function ? f[i].function : "?", i ? ";" : "\n");
	}
	return profile__add(p, f, n, v, l, nl);
}

static int known(struct profile *p)
{
	const struct frame s1[] = {
		K("copy_user_enhanced_fast_string", 0xffffffff81a01000),
		K("__x64_sys_read", 0xffffffff81302000),
		N("std::vector<std::pair<int, float>>::_M_realloc_insert(\"x\\y\")",
		  0x555555556000),
		N("main", 0x555555555100),
	};
	const struct frame s2[] = {
		N("Foo<int>::run() const", 0x555555557000),
		N("main", 0x555555555100),
	};
	const struct frame s3[] = {
		CU("ampere_sgemm_128x64_tn"),
		T("at::native::addmm_out_cuda_impl(at::Tensor&, at::Tensor const&)",
		  0x7f1000123000),
		PY("forward", "/opt/app/model.py", 42),
		PY("train_step", "/opt/app/train.py", 7),
		TR("[truncated: stack copy limit]"),
	};
	struct profile_label l1[2] = {{.key = "thread_name", .str = "dataloader"},
				      {.key = "bytes", .num = 4096, .num_unit = "bytes"}};
	struct profile_label l2[1] = {{.key = "thread_name", .str = "main"}};
	int err = 0;

	err = err ?: add(p, true, s1, 4, 5, l1, 2);
	err = err ?: add(p, true, s2, 2, 3, l2, 1);
	err = err ?: add(p, true, s1, 4, 2, l2, 1); /* same stack, other label */
	err = err ?: add(p, true, s3, 5, 7, NULL, 0);
	err = err ?: add(p, true, s2, 1, 1, NULL, 0); /* leaf-less: just "Foo<int>::run() const" */
	return err;
}

/* A deterministic PyTorch-training-like profile for looking at the flame graph. */
static int demo(struct profile *p)
{
	static const char *const mods[] = {"Linear",  "Conv2d", "LayerNorm", "MultiheadAttention",
					   "Dropout", "GELU"};
	static const char *const ops[] = {
		"at::native::addmm_out_cuda_impl(at::Tensor&, at::Tensor const&)",
		"at::native::cudnn_convolution(at::Tensor const&, c10::ArrayRef<long>)",
		"at::native::layer_norm_cuda(at::Tensor const&, c10::ArrayRef<long>)",
		"at::native::_scaled_dot_product_attention<float>(at::Tensor const&)",
		"at::native::dropout(at::Tensor const&, double, bool)",
		"at::native::gelu_out<float>(at::Tensor const&, at::Tensor&)",
	};
	static const char *const kern[] = {
		"ampere_sgemm_128x64_tn",
		"cudnn::conv2d_grouped_direct_kernel<float, 3>",
		"void at::native::vectorized_layer_norm_kernel<float, float>",
		"fmha_cutlassF_f32_aligned_64x64_rf_sm80",
		"void at::native::fused_dropout_kernel<float>",
		"void at::native::vectorized_elementwise_kernel<4, GeluCUDAKernelImpl>",
	};
	static const struct frame launch[] = {
		T("cudaLaunchKernel", 0x7f1000300000),
		T("c10::cuda::CUDAStream::launch(void const*)", 0x7f1000300100),
	};
	static const struct frame futex[] = {
		K("schedule", 0xffffffff81000100),
		K("futex_wait", 0xffffffff81000200),
		K("__x64_sys_futex", 0xffffffff81000300),
		K("do_syscall_64", 0xffffffff81000400),
		K("entry_SYSCALL_64_after_hwframe", 0xffffffff81000500),
		T("pthread_cond_wait@@GLIBC_2.3.2", 0x7f1000400000),
	};
	unsigned int seed = 12345;
	int err = 0;

	for (int i = 0; i < 6000 && !err; i++) {
		struct frame f[32];
		int n = 0, m;
		const char *proc = "python3";

		seed = seed * 1103515245 + 12345;
		m = (int)((seed >> 16) % 6);
		switch ((seed >> 8) % 10) {
		case 0: /* data loader workers */
			proc = "pt_data_worker";
			if ((seed >> 20) % 2)
				for (size_t k = 0; k < 6; k++)
					f[n++] = futex[k];
			else
				f[n++] = (struct frame)T("PIL::ImagingResample", 0x7f1000500000);
			f[n++] = (struct frame)PY("__getitem__", "/opt/app/data.py", 31);
			f[n++] = (struct frame)PY("fetch",
						  "/opt/venv/lib/python3.11/site-packages/torch/"
						  "utils/data/_utils/fetch.py",
						  51);
			f[n++] = (struct frame)PY("_worker_loop",
						  "/opt/venv/lib/python3.11/site-packages/torch/"
						  "utils/data/_utils/worker.py",
						  308);
			break;
		case 1:
		case 2: /* backward */
			f[n++] = (struct frame)CU(kern[m]);
			f[n++] = launch[0];
			f[n++] = (struct frame)T(ops[m], 0x7f1000100000 + (uint64_t)m * 64);
			f[n++] = (struct frame)T("torch::autograd::Engine::evaluate_function(...)",
						 0x7f1000600000);
			f[n++] = (struct frame)T("torch::autograd::Engine::thread_main(...)",
						 0x7f1000600100);
			f[n++] = (struct frame)PY(
				"backward",
				"/opt/venv/lib/python3.11/site-packages/torch/_tensor.py", 522);
			f[n++] = (struct frame)PY("train_step", "/opt/app/train.py", 61);
			break;
		case 3: /* optimizer */
			f[n++] = (struct frame)T("at::native::_fused_adam_kernel_cuda_(...)",
						 0x7f1000700000);
			f[n++] = (struct frame)PY(
				"_fused_adam",
				"/opt/venv/lib/python3.11/site-packages/torch/optim/adam.py", 745);
			f[n++] = (struct frame)PY(
				"step",
				"/opt/venv/lib/python3.11/site-packages/torch/optim/adam.py", 166);
			f[n++] = (struct frame)PY("train_step", "/opt/app/train.py", 63);
			break;
		default: /* forward */
			if ((seed >> 24) % 3 == 0)
				f[n++] = (struct frame)CU(kern[m]);
			if ((seed >> 24) % 3 != 2)
				f[n++] = launch[(seed >> 26) % 2];
			else
				f[n++] = (struct frame)T(NULL,
							 0x7f1000800000 + ((seed >> 26) % 4) * 16);
			f[n++] = (struct frame)T(ops[m], 0x7f1000100000 + (uint64_t)m * 64);
			f[n++] = (struct frame)T("c10::Dispatcher::call<at::Tensor>(...)",
						 0x7f1000900000);
			f[n++] = (struct frame)PY(
				"forward",
				"/opt/venv/lib/python3.11/site-packages/torch/nn/modules/linear.py",
				114);
			f[n++] = (struct frame)PY(
				mods[m],
				"/opt/venv/lib/python3.11/site-packages/torch/nn/modules/module.py",
				1527);
			f[n++] = (struct frame)PY(
				"_call_impl",
				"/opt/venv/lib/python3.11/site-packages/torch/nn/modules/module.py",
				1518);
			f[n++] = (struct frame)PY("forward", "/opt/app/model.py", 40 + m % 3);
			f[n++] = (struct frame)PY(
				"_call_impl",
				"/opt/venv/lib/python3.11/site-packages/torch/nn/modules/module.py",
				1518);
			f[n++] = (struct frame)PY("train_step", "/opt/app/train.py", 58);
		}
		if (strcmp(proc, "python3") == 0)
			f[n++] = (struct frame)PY("train", "/opt/app/train.py", 88);
		f[n++] = (struct frame)PY("<module>", "/opt/app/train.py", 120);
		if ((seed >> 5) % 17 == 0)
			f[n++] = (struct frame)TR("[truncated: stack copy limit]");
		else
			f[n++] = (struct frame)N("_start", 0x555555555000);
		f[n++] = (struct frame)PROC(proc);
		err = add(p, false, f, n, 1 + (seed >> 24) % 3, NULL, 0);
	}
	return err;
}

int main(int argc, char **argv)
{
	struct profile_config cfg = {
		.n_sample_types = 2,
		.sample_types = {{"samples", "count"}, {"cpu", "nanoseconds"}},
		.period_type = {"cpu", "nanoseconds"},
		.period = 10000000,
		.time_nanos = 1700000000000000000LL,
	};
	bool is_demo = argc > 1 && !strcmp(argv[1], "--demo");
	struct profile *p;
	int err, first = is_demo ? 2 : 1;

	if (argc <= first) {
		fprintf(stderr, "usage: mkprof [--demo] FILE...\n");
		return 2;
	}
	p = profile__new(&cfg);
	if (!p) {
		perror("mkprof: profile__new");
		return 1;
	}
	err = is_demo ? demo(p) : known(p);
	profile__set_duration(p, 10000000000LL);
	for (int i = first; !err && i < argc; i++) {
		enum output_format fmt;

		if (output__format_from_path(argv[i], &fmt)) {
			fprintf(stderr, "mkprof: unknown format: %s\n", argv[i]);
			err = -EINVAL;
			break;
		}
		err = output__write_file(
			p, fmt, is_demo ? "trainer.py on gpu-node-7 <demo>" : "known", argv[i]);
	}
	profile__free(p);
	if (err)
		fprintf(stderr, "mkprof: %s\n", strerror(-err));
	return err ? 1 : 0;
}
