// SPDX-License-Identifier: Apache-2.0
/*
 * Driver-API workload for it.record_cuda, the way Triton launches its kernels: dlopen
 * "libcuda.so.1" (the test points LD_LIBRARY_PATH at the test double built from
 * fake_libcuda.c), resolve the entry points with dlsym, cuModuleLoadData +
 * cuModuleGetFunction by kernel name, then cuLaunchKernel / cuLaunchKernelEx with the
 * handle. Also device allocations and frees, and synchronize calls timed by the program.
 *
 * Usage:
 *   drv_triton run [ITERATIONS]   loads libcuda.so.1, waits 300 ms (mlprof attaches its
 *       probes when it sees the library mapped), then gets kernel handles, launches,
 *       allocates, synchronizes; prints JSON lines
 *   drv_triton rt N LIB           N cudaLaunchKernel through the runtime test double LIB
 *       (fake_rt_over_drv.c: each makes one cuLaunchKernel), then N/2 direct cuLaunchKernel,
 *       then N/4 cudaMalloc + cudaFree pairs through LIB (each calls the driver's)
 *   drv_triton attach             gets the handle of triton_kernel_early, prints a JSON
 *       line with it, waits for "go" on stdin (mlprof attaches meanwhile; "spin" makes it
 *       use the CPU for 300 ms first), then launches
 *       it EARLY_LAUNCHES times, gets triton_kernel_late and launches it LATE_LAUNCHES
 *       times; prints a JSON line
 * Call chains are fixed noinline functions that do something after each call (no tail
 * calls), so that the test can expect them whole.
 */
#include <dlfcn.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define NOINLINE __attribute__((noinline))

typedef int CUresult;
typedef uint64_t CUdeviceptr;
typedef void *CUfunction;
typedef void *CUkernel;
typedef void *CUmodule;
typedef void *CUlibrary;

/* CUlaunchConfig: gridDimX/Y/Z, blockDimX/Y/Z, sharedMemBytes, hStream, attrs, numAttrs */
typedef struct {
	unsigned int grid[3], block[3], smem;
	void *stream;
	void *attrs;
	unsigned int nattrs;
} launch_config;

static struct {
	CUresult (*init)(unsigned int);
	CUresult (*module_load_data)(CUmodule *, const void *);
	CUresult (*module_get_function)(CUfunction *, CUmodule, const char *);
	CUresult (*library_load_data)(CUlibrary *, const void *, void *, void **, unsigned int,
				      void *, void **, unsigned int);
	CUresult (*library_get_kernel)(CUkernel *, CUlibrary, const char *);
	CUresult (*kernel_get_function)(CUfunction *, CUkernel);
	CUresult (*launch)(CUfunction, unsigned int, unsigned int, unsigned int, unsigned int,
			   unsigned int, unsigned int, unsigned int, void *, void **, void **);
	CUresult (*launch_ex)(const launch_config *, CUfunction, void **, void **);
	CUresult (*mem_alloc)(CUdeviceptr *, size_t);
	CUresult (*mem_free)(CUdeviceptr);
	CUresult (*stream_sync)(void *);
	CUresult (*ctx_sync)(void);
	void (*set_sync_ns)(long);
} cu;

static volatile unsigned long g_done; /* work after each call: no tail calls */
static int g_err;
static CUmodule g_mod;

#define KIB 1024ul
#define MIB (1024ul * 1024ul)

static void load_driver(void)
{
	void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);

	if (!h) {
		fprintf(stderr, "drv_triton: %s\n", dlerror());
		exit(2);
	}
#define SYM(field, name)                                                                           \
	do {                                                                                       \
		*(void **)&cu.field = dlsym(h, name);                                              \
		if (!cu.field) {                                                                   \
			fprintf(stderr, "drv_triton: no %s in libcuda.so.1\n", name);              \
			exit(2);                                                                   \
		}                                                                                  \
	} while (0)
	SYM(init, "cuInit");
	SYM(module_load_data, "cuModuleLoadData");
	SYM(module_get_function, "cuModuleGetFunction");
	SYM(library_load_data, "cuLibraryLoadData");
	SYM(library_get_kernel, "cuLibraryGetKernel");
	SYM(kernel_get_function, "cuKernelGetFunction");
	SYM(launch, "cuLaunchKernel");
	SYM(launch_ex, "cuLaunchKernelEx");
	SYM(mem_alloc, "cuMemAlloc_v2");
	SYM(mem_free, "cuMemFree_v2");
	SYM(stream_sync, "cuStreamSynchronize");
	SYM(ctx_sync, "cuCtxSynchronize");
	SYM(set_sync_ns, "fake_cuda_set_sync_ns");
#undef SYM
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void sleep_ms(int ms)
{
	struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};

	nanosleep(&ts, NULL);
}

/* A "compiled" Triton kernel: cuModuleGetFunction by name. */
NOINLINE CUfunction get_kernel(const char *name)
{
	CUfunction f = NULL;

	g_err |= cu.module_get_function(&f, g_mod, name);
	g_done++;
	return f;
}

/* --- launches --- */

NOINLINE void launch_a(CUfunction f)
{
	void *params[] = {NULL};

	g_err |= cu.launch(f, 64, 1, 1, 128, 1, 1, 0, NULL, params, NULL);
	g_done++;
}

NOINLINE void launch_b(CUfunction f)
{
	launch_config cfg = {{8, 1, 1}, {256, 1, 1}, 1024, NULL, NULL, 0};
	void *params[] = {NULL};

	g_err |= cu.launch_ex(&cfg, f, params, NULL);
	g_done++;
}

/* A library kernel (CUkernel) passed where a CUfunction goes, as CUDA 12+ allows. */
NOINLINE void launch_c(CUkernel k)
{
	g_err |= cu.launch((CUfunction)k, 1, 1, 1, 32, 1, 1, 0, NULL, NULL, NULL);
	g_done++;
}

/* A library kernel through cuKernelGetFunction's CUfunction. */
NOINLINE void launch_d(CUfunction f)
{
	g_err |= cu.launch(f, 2, 1, 1, 64, 1, 1, 0, NULL, NULL, NULL);
	g_done++;
}

NOINLINE void triton_forward(CUfunction fa, CUkernel kc)
{
	for (int i = 0; i < 12; i++)
		launch_a(fa);
	for (int i = 0; i < 2; i++)
		launch_c(kc);
	g_done++;
}

NOINLINE void triton_backward(CUfunction fb, CUfunction fd)
{
	for (int i = 0; i < 4; i++)
		launch_b(fb);
	launch_d(fd);
	g_done++;
}

/* --- device memory: site A allocates 3 x 1 MiB and frees 1, site B 2 x 4 MiB and frees
 * both (its first allocation reuses the address A freed), site C asks too much --- */

NOINLINE void alloc_site_a(CUdeviceptr *p)
{
	for (int i = 0; i < 3; i++)
		g_err |= cu.mem_alloc(&p[i], 1 * MIB);
	g_done++;
}

NOINLINE void alloc_site_b(CUdeviceptr *p)
{
	for (int i = 0; i < 2; i++)
		g_err |= cu.mem_alloc(&p[i], 4 * MIB);
	g_done++;
}

NOINLINE int alloc_site_c(CUdeviceptr *p)
{
	int e = cu.mem_alloc(p, 64 * MIB + 1); /* fails: out of memory */

	g_done++;
	return e;
}

NOINLINE void free_site(CUdeviceptr p)
{
	g_err |= cu.mem_free(p);
	g_done++;
}

/* --- synchronize: the program's own measurement of the time blocked --- */

NOINLINE uint64_t wait_stream(int n)
{
	uint64_t total = 0;

	for (int i = 0; i < n; i++) {
		uint64_t t0 = now_ns();

		g_err |= cu.stream_sync(NULL);
		total += now_ns() - t0;
	}
	g_done++;
	return total;
}

NOINLINE uint64_t wait_ctx(int n)
{
	uint64_t total = 0;

	for (int i = 0; i < n; i++) {
		uint64_t t0 = now_ns();

		g_err |= cu.ctx_sync();
		total += now_ns() - t0;
	}
	g_done++;
	return total;
}

static void setup(void)
{
	static const char image[] = "fake cubin";
	CUresult e;

	load_driver();
	e = cu.init(0);
	e |= cu.module_load_data(&g_mod, image);
	if (e) {
		fprintf(stderr, "drv_triton: driver setup failed: %d\n", e);
		exit(2);
	}
}

NOINLINE int run_kernels(int iters, CUfunction *fa, CUfunction *fb, CUkernel *kc, CUfunction *fd)
{
	static const char code[] = "fake library";
	CUlibrary lib = NULL;
	CUkernel kd = NULL;

	*fa = get_kernel("triton_kernel_a");
	*fb = get_kernel("triton_kernel_b");
	g_err |= cu.library_load_data(&lib, code, NULL, NULL, 0, NULL, NULL, 0);
	g_err |= cu.library_get_kernel(kc, lib, "triton_kernel_c");
	g_err |= cu.library_get_kernel(&kd, lib, "triton_kernel_d");
	g_err |= cu.kernel_get_function(fd, kd);
	/* a lookup that fails (CUDA_ERROR_NOT_FOUND): nothing may be learned from it */
	{
		CUfunction missing = NULL;

		if (cu.module_get_function(&missing, g_mod, "missing_kernel") != 500 || missing)
			g_err |= 1;
	}
	for (int i = 0; i < iters; i++) {
		triton_forward(*fa, *kc);
		triton_backward(*fb, *fd);
		sleep_ms(1);
	}
	g_done++;
	return 0;
}

NOINLINE void run_memory(int *c_err)
{
	CUdeviceptr a[3] = {0}, b[2] = {0}, c = 0;

	alloc_site_a(a);
	free_site(a[1]);
	alloc_site_b(b);
	free_site(b[0]);
	free_site(b[1]);
	*c_err = alloc_site_c(&c);
	printf("{\"mem\": {\"a\": [\"0x%" PRIx64 "\", \"0x%" PRIx64 "\", \"0x%" PRIx64
	       "\"], \"b\": [\"0x%" PRIx64 "\", \"0x%" PRIx64 "\"]}}\n",
	       a[0], a[1], a[2], b[0], b[1]);
	g_done++;
}

NOINLINE void run_sync(uint64_t *stream_ns, uint64_t *ctx_ns)
{
	cu.set_sync_ns(20 * 1000 * 1000);
	*stream_ns = wait_stream(10);
	cu.set_sync_ns(7 * 1000 * 1000);
	*ctx_ns = wait_ctx(5);
	g_done++;
}

static int mode_run(int iters)
{
	CUfunction fa, fb, fd;
	CUkernel kc;
	uint64_t stream_ns, ctx_ns;
	int c_err;

	setup();
	sleep_ms(300); /* libcuda.so.1 is mapped: mlprof attaches meanwhile */
	run_kernels(iters, &fa, &fb, &kc, &fd);
	run_memory(&c_err);
	run_sync(&stream_ns, &ctx_ns);
	printf("{\"pid\": %d, \"a\": %d, \"b\": %d, \"c\": %d, \"d\": %d, \"handles\": "
	       "{\"a\": \"%p\", \"b\": \"%p\", \"c\": \"%p\", \"d\": \"%p\"}, "
	       "\"stream_sync_calls\": 10, \"stream_sync_ns\": %" PRIu64 ", "
	       "\"ctx_sync_calls\": 5, \"ctx_sync_ns\": %" PRIu64 ", \"alloc_c_err\": %d, "
	       "\"err\": %d}\n",
	       (int)getpid(), 12 * iters, 4 * iters, 2 * iters, iters, fa, fb, kc, fd, stream_ns,
	       ctx_ns, c_err, g_err);
	return g_err ? 1 : 0;
}

/* --- a runtime on the driver (fake_rt_over_drv.c): each cudaLaunchKernel makes one
 * cuLaunchKernel on this thread, counted once; then direct driver launches --- */

typedef struct {
	unsigned int x, y, z;
} dim3;

static int (*rt_launch)(const void *, dim3, dim3, void **, size_t, void *);

/* the host stub the runtime kernel is registered under */
NOINLINE void rt_stub_kernel(void)
{
	g_done++;
}

NOINLINE void launch_rt(void)
{
	dim3 g = {4, 1, 1}, b = {64, 1, 1};

	g_err |= rt_launch((const void *)rt_stub_kernel, g, b, NULL, 0, NULL);
	g_done++;
}

NOINLINE void run_rt(int n, CUfunction fa)
{
	for (int i = 0; i < n; i++) {
		launch_rt();
		if (i % 10 == 9)
			sleep_ms(1);
	}
	sleep_ms(2);
	/* direct driver launches right after runtime ones on the same thread */
	for (int i = 0; i < n / 2; i++)
		launch_a(fa);
	g_done++;
}

/* n cudaMalloc + cudaFree pairs through the runtime test double (which calls the driver's). */
NOINLINE void rt_memory(void *rt, int n)
{
	int (*rt_malloc)(void **, size_t), (*rt_free)(void *);
	void *p;

	if (!(*(void **)&rt_malloc = dlsym(rt, "cudaMalloc")) ||
	    !(*(void **)&rt_free = dlsym(rt, "cudaFree"))) {
		g_err |= 1;
		return;
	}
	for (int i = 0; i < n; i++) {
		g_err |= rt_malloc(&p, 4096);
		g_err |= rt_free(p);
	}
}

static int mode_rt(int n, const char *rt_path)
{
	void *h;
	int (*reg)(const void *, CUfunction);
	CUfunction fa;

	setup();
	h = dlopen(rt_path, RTLD_NOW | RTLD_LOCAL);
	if (!h || !(*(void **)&rt_launch = dlsym(h, "cudaLaunchKernel")) ||
	    !(*(void **)&reg = dlsym(h, "fake_rt_register"))) {
		fprintf(stderr, "drv_triton: %s: %s\n", rt_path, dlerror());
		return 2;
	}
	sleep_ms(1000); /* both libraries mapped: mlprof attaches meanwhile */
	fa = get_kernel("triton_kernel_a");
	g_err |= reg((const void *)rt_stub_kernel, fa);
	run_rt(n, fa);
	rt_memory(h, n / 4);
	printf("{\"rt\": %d, \"direct\": %d, \"rt_allocs\": %d, \"err\": %d}\n", n, n / 2, n / 4,
	       g_err);
	return g_err ? 1 : 0;
}

#define EARLY_LAUNCHES 50
#define LATE_LAUNCHES  70

NOINLINE void launch_early(CUfunction f)
{
	for (int i = 0; i < EARLY_LAUNCHES; i++)
		launch_a(f);
	g_done++;
}

NOINLINE void launch_late(CUfunction f)
{
	for (int i = 0; i < LATE_LAUNCHES; i++)
		launch_a(f);
	g_done++;
}

static int mode_attach(void)
{
	CUfunction early, late;
	char line[64];

	setup();
	early = get_kernel("triton_kernel_early");
	printf("{\"pid\": %d, \"early\": \"%p\"}\n", (int)getpid(), early);
	fflush(stdout);
	/* "spin": use the CPU for 300 ms (a process mlprof samples); "go": launch */
	for (;;) {
		if (!fgets(line, sizeof(line), stdin))
			return 2;
		if (!strncmp(line, "go", 2))
			break;
		if (!strncmp(line, "spin", 4)) {
			uint64_t end = now_ns() + 300 * 1000 * 1000ull;

			while (now_ns() < end)
				g_done++;
		}
	}
	launch_early(early);
	late = get_kernel("triton_kernel_late");
	launch_late(late);
	printf("{\"early_launches\": %d, \"late\": \"%p\", \"late_launches\": %d, \"err\": %d}\n",
	       EARLY_LAUNCHES, late, LATE_LAUNCHES, g_err);
	return g_err ? 1 : 0;
}

int main(int argc, char **argv)
{
	if (argc >= 2 && !strcmp(argv[1], "run"))
		return mode_run(argc > 2 ? atoi(argv[2]) : 100);
	if (argc >= 2 && !strcmp(argv[1], "attach"))
		return mode_attach();
	if (argc == 4 && !strcmp(argv[1], "rt"))
		return mode_rt(atoi(argv[2]), argv[3]);
	fprintf(stderr, "usage: drv_triton run [ITERATIONS] | attach | rt N LIBFAKERT\n");
	return 2;
}
