// SPDX-License-Identifier: Apache-2.0
/* CUDA and NCCL support: detect libraries per ELF, attach uprobes per file, name kernels. */
#define LOG_MODULE "cuda"
#include "util/log.h"

#include "runtimes/cuda/cuda.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "capture/sampler.h"
#include "capture/uprobe_link.h"
#include "symbolize/elf.h"
#include "symbolize/elf_lookup.h"
#include "symbolize/proc.h"
#include "symbolize/proc_files.h"
#include "symbolize/symcache.h"
#include "symbolize/usdt.h"

/* Library files with probes at once, and files classified (memo). */
#define MAX_LIBS      64
#define MAX_RESULTS   512
#define MAX_PROBES    48
#define MAX_PROC_LIBS 8
#define PROC_BUCKETS  1024
#define MAX_PROCS     16384
#define NAME_BUCKETS  4096
#define MAX_NAMES     65536

/* torch::autograd::Engine::execute(roots, inputs, keep_graph, create_graph,
 * accumulate_grad, outputs) (libtorch_cpu, exported; torch 1.x and 2.x) */
#define TORCH_ENGINE_EXECUTE                                                                       \
	"_ZN5torch8autograd6Engine7executeERKSt6vectorINS0_4EdgeESaIS3_EERKS2_IN2at6TensorESaIS9_" \
	"EEbbbS7_"

enum family { F_LAUNCH, F_SYNC, F_MEMCPY, F_MEMORY, F_NCCL, F_NAMES };

/* The entry points probed, found by exported (or .symtab) name, never by file name. */
static const struct {
	const char *sym;
	enum mlprof_cuda_probe probe;
	enum family fam;
} probe_table[] = {
	/* runtime (libcudart.so.N, renamed copies in wheels, or linked statically) */
	{"cudaLaunchKernel", MLPROF_CP_LAUNCH_RT, F_LAUNCH},
	{"cudaLaunchKernel_ptsz", MLPROF_CP_LAUNCH_RT, F_LAUNCH},
	{"cudaLaunchCooperativeKernel", MLPROF_CP_LAUNCH_RT, F_LAUNCH},
	{"cudaLaunchCooperativeKernel_ptsz", MLPROF_CP_LAUNCH_RT, F_LAUNCH},
	{"cudaLaunchKernelExC", MLPROF_CP_LAUNCH_RT_EX, F_LAUNCH},
	{"cudaLaunchKernelExC_ptsz", MLPROF_CP_LAUNCH_RT_EX, F_LAUNCH},
	{"cudaGraphLaunch", MLPROF_CP_GRAPH, F_LAUNCH},
	{"cudaGraphLaunch_ptsz", MLPROF_CP_GRAPH, F_LAUNCH},
	{"cudaMemcpy", MLPROF_CP_MEMCPY, F_MEMCPY},
	{"cudaMemcpy_ptds", MLPROF_CP_MEMCPY, F_MEMCPY},
	{"cudaMemcpyAsync", MLPROF_CP_MEMCPY, F_MEMCPY},
	{"cudaMemcpyAsync_ptsz", MLPROF_CP_MEMCPY, F_MEMCPY},
	{"cudaStreamSynchronize", MLPROF_CP_SYNC_RT, F_SYNC},
	{"cudaStreamSynchronize_ptsz", MLPROF_CP_SYNC_RT, F_SYNC},
	{"cudaEventSynchronize", MLPROF_CP_SYNC_RT, F_SYNC},
	{"cudaDeviceSynchronize", MLPROF_CP_SYNC_RT, F_SYNC},
	{"cudaMalloc", MLPROF_CP_ALLOC_RT, F_MEMORY},
	{"cudaMallocAsync", MLPROF_CP_ALLOC_RT, F_MEMORY},
	{"cudaMallocAsync_ptsz", MLPROF_CP_ALLOC_RT, F_MEMORY},
	{"cudaFree", MLPROF_CP_FREE_RT, F_MEMORY},
	{"cudaFreeAsync", MLPROF_CP_FREE_RT, F_MEMORY},
	{"cudaFreeAsync_ptsz", MLPROF_CP_FREE_RT, F_MEMORY},
	{"__cudaGetKernel", MLPROF_CP_GETKERNEL, F_NAMES},
	/* driver (libcuda.so.1): Triton and libraries with their own static cudart */
	{"cuLaunchKernel", MLPROF_CP_LAUNCH_DRV, F_LAUNCH},
	{"cuLaunchKernel_ptsz", MLPROF_CP_LAUNCH_DRV, F_LAUNCH},
	{"cuLaunchCooperativeKernel", MLPROF_CP_LAUNCH_DRV, F_LAUNCH},
	{"cuLaunchCooperativeKernel_ptsz", MLPROF_CP_LAUNCH_DRV, F_LAUNCH},
	{"cuLaunchKernelEx", MLPROF_CP_LAUNCH_DRV_EX, F_LAUNCH},
	{"cuLaunchKernelEx_ptsz", MLPROF_CP_LAUNCH_DRV_EX, F_LAUNCH},
	{"cuGraphLaunch", MLPROF_CP_GRAPH_DRV, F_LAUNCH},
	{"cuGraphLaunch_ptsz", MLPROF_CP_GRAPH_DRV, F_LAUNCH},
	{"cuStreamSynchronize", MLPROF_CP_SYNC_DRV, F_SYNC},
	{"cuStreamSynchronize_ptsz", MLPROF_CP_SYNC_DRV, F_SYNC},
	{"cuCtxSynchronize", MLPROF_CP_SYNC_DRV, F_SYNC},
	{"cuEventSynchronize", MLPROF_CP_SYNC_DRV, F_SYNC},
	{"cuMemAlloc_v2", MLPROF_CP_ALLOC_DRV, F_MEMORY},
	{"cuMemFree_v2", MLPROF_CP_FREE_DRV, F_MEMORY},
	{"cuModuleGetFunction", MLPROF_CP_GETFUNC, F_NAMES},
	{"cuLibraryGetKernel", MLPROF_CP_GETFUNC, F_NAMES},
	{"cuKernelGetFunction", MLPROF_CP_GETKERNEL, F_NAMES},
	/* NCCL (ncclX is a weak alias of pncclX at the same address: attached once) */
	{"ncclAllReduce", MLPROF_CP_NCCL_ALLREDUCE, F_NCCL},
	{"ncclReduceScatter", MLPROF_CP_NCCL_REDUCESCATTER, F_NCCL},
	{"ncclAllGather", MLPROF_CP_NCCL_ALLGATHER, F_NCCL},
	{"ncclAlltoAll", MLPROF_CP_NCCL_ALLTOALL, F_NCCL},
	{"ncclBroadcast", MLPROF_CP_NCCL_BROADCAST, F_NCCL},
	{"ncclReduce", MLPROF_CP_NCCL_REDUCE, F_NCCL},
	{"ncclSend", MLPROF_CP_NCCL_SEND, F_NCCL},
	{"ncclRecv", MLPROF_CP_NCCL_RECV, F_NCCL},
	/* PyTorch (libtorch_cpu): a backward pass, whose kernels its worker threads launch */
	{TORCH_ENGINE_EXECUTE, MLPROF_CP_BACKWARD, F_LAUNCH},
};

#define N_PROBE_SYMS (sizeof(probe_table) / sizeof(probe_table[0]))

/*
 * USDT probes, found by provider and name in .note.stapsdt: PyTorch's CUDA caching
 * allocator (libc10_cuda, torch 2.1+) hands tensors their memory at pytorch:malloc(ptr,
 * device, size, stream) and takes it back at pytorch:free(ptr). Which arguments the
 * probe reads (indexes; -1: none).
 */
static const struct {
	const char *provider, *name;
	enum mlprof_cuda_probe probe;
	enum family fam;
	int arg1, arg2;
} usdt_table[] = {
	{"pytorch", "malloc", MLPROF_CP_TORCH_MALLOC, F_MEMORY, 0, 2},
	{"pytorch", "free", MLPROF_CP_TORCH_FREE, F_MEMORY, 0, -1},
};

#define MAX_USDT_SITES 8 /* sites of one USDT probe in a file */

/* What one ELF file offers, decided once per file. */
struct lib_result {
	char key[320]; /* elf_file__memo_key: a 64-byte build id (128 hex) and the identity */
	int nprobes;
	struct {
		enum mlprof_cuda_probe probe;
		enum family fam;
		uint64_t off;
		uint32_t arg1, arg2;  /* USDT probes: MLPROF_USDT_ARG of what they read */
		uint64_t ref_ctr_off; /* USDT probes: the semaphore */
	} probes[MAX_PROBES];
};

/* A library file with probes attached (all processes mapping it share them). */
struct lib {
	bool used;
	uint64_t dev, ino;
	char path[256];
	int nprobes;		   /* probes attached */
	struct uprobe_link *links; /* ... through these */
};

struct cproc {
	pid_t pid;
	uint64_t gen;
	int nlibs;
	int libs[MAX_PROC_LIBS];
	struct cproc *next;
};

struct cname {
	pid_t pid;
	uint64_t handle;
	uint64_t host_fun;
	struct cname *next;
	char name[]; /* "" when host_fun names it */
};

struct cuda {
	struct cuda_config cfg;
	struct proc_cache *pc;
	struct sampler *s;
	struct lib libs[MAX_LIBS];
	struct lib_result *results[MAX_RESULTS];
	int nresults, result_next;
	struct cproc *procs[PROC_BUCKETS];
	size_t nprocs;
	struct cname *names[NAME_BUCKETS];
	size_t nnames;
	struct cuda_stats stats;
};

/* See cuda.h. */
struct cuda *cuda__new(const struct cuda_config *cfg, struct proc_cache *pc, struct sampler *s)
{
	struct cuda *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	c->cfg = *cfg;
	c->pc = pc;
	c->s = s;
	return c;
}

static void lib_detach(struct cuda *c, struct lib *l)
{
	uprobe_link__release(l->links);
	memset(l, 0, sizeof(*l));
	c->stats.libs_attached--;
	c->stats.libs_detached++;
}

static void names_clear_pid(struct cuda *c, pid_t pid)
{
	for (size_t b = 0; b < NAME_BUCKETS; b++) {
		struct cname **pp = &c->names[b];

		while (*pp) {
			struct cname *e = *pp;

			if (pid < 0 || e->pid == pid) {
				*pp = e->next;
				free(e);
				c->nnames--;
			} else {
				pp = &e->next;
			}
		}
	}
}

/* See cuda.h. */
void cuda__free(struct cuda *c)
{
	if (!c)
		return;
	for (int i = 0; i < MAX_LIBS; i++)
		if (c->libs[i].used)
			lib_detach(c, &c->libs[i]);
	for (int i = 0; i < c->nresults; i++)
		free(c->results[i]);
	for (size_t b = 0; b < PROC_BUCKETS; b++) {
		struct cproc *e = c->procs[b], *next;

		for (; e; e = next) {
			next = e->next;
			free(e);
		}
	}
	names_clear_pid(c, -1);
	free(c);
}

static bool family_on(const struct cuda *c, enum family f)
{
	switch (f) {
	case F_LAUNCH:
		return c->cfg.launches;
	case F_SYNC:
		return c->cfg.sync;
	case F_MEMCPY:
		return c->cfg.memcpy;
	case F_MEMORY:
		return c->cfg.memory;
	case F_NCCL:
		return c->cfg.nccl;
	case F_NAMES:
		return c->cfg.launches;
	}
	return false;
}

/*
 * True when the file defines one of the main entry points (a cheap pre-check before the
 * whole probe table is looked up): through .gnu.hash, whatever the file's size, and a scan
 * of .symtab only where it is small (see elf_file__find_symbol).
 */
static bool mentions_cuda(struct elf_file *ef)
{
	static const char *const needles[] = {"cudaLaunchKernel", "cuLaunchKernel", "ncclAllReduce",
					      "cudaMalloc", "cuMemAlloc_v2",
					      /* PyTorch's autograd engine (see probe_table) */
					      TORCH_ENGINE_EXECUTE};

	for (size_t i = 0; i < sizeof(needles) / sizeof(needles[0]); i++) {
		uint64_t v;

		if (!elf_file__find_symbol(ef, needles[i], &v, NULL))
			return true;
	}
	return false;
}

/* The USDT probes of usdt_table that ef has (sites whose arguments it can read). */
static void add_usdt(struct lib_result *r, struct elf_file *ef, const char *path)
{
	struct usdt_probe sites[MAX_USDT_SITES];
	int before = r->nprobes;

	for (size_t i = 0; i < sizeof(usdt_table) / sizeof(usdt_table[0]); i++) {
		int n = usdt__find(ef, usdt_table[i].provider, usdt_table[i].name, sites,
				   MAX_USDT_SITES);

		for (int k = 0; k < n && r->nprobes < MAX_PROBES; k++) {
			uint32_t a1 = usdt_table[i].arg1 < sites[k].nargs
					      ? sites[k].args[usdt_table[i].arg1]
					      : 0,
				 a2 = usdt_table[i].arg2 >= 0 && usdt_table[i].arg2 < sites[k].nargs
					      ? sites[k].args[usdt_table[i].arg2]
					      : 0;

			if (!a1 || (usdt_table[i].arg2 >= 0 && !a2)) {
				pr_info("%s: USDT %s:%s at 0x%llx: arguments not readable, not "
					"probed",
					path, usdt_table[i].provider, usdt_table[i].name,
					(unsigned long long)sites[k].off);
				continue;
			}
			r->probes[r->nprobes++] = (typeof(r->probes[0])){
				.probe = usdt_table[i].probe,
				.fam = usdt_table[i].fam,
				.off = sites[k].off,
				.arg1 = a1,
				.arg2 = a2,
				.ref_ctr_off = sites[k].ref_ctr_off,
			};
		}
	}
	if (r->nprobes > before)
		pr_info("%s: %d PyTorch caching-allocator probes (USDT)", path,
			r->nprobes - before);
}

/* Which probes a file offers (memoized by build id, or path and size). */
static const struct lib_result *classify(struct cuda *c, struct elf_file *ef, const char *path)
{
	struct lib_result r, *m;

	memset(&r, 0, sizeof(r));
	elf_file__memo_key(ef, path, r.key, sizeof(r.key));
	for (int i = 0; i < c->nresults; i++)
		if (strcmp(c->results[i]->key, r.key) == 0)
			return c->results[i];

	if (mentions_cuda(ef)) {
		for (size_t i = 0; i < N_PROBE_SYMS && r.nprobes < MAX_PROBES; i++) {
			uint64_t v, off;
			bool dup = false;

			if (elf_file__find_function(ef, probe_table[i].sym, &v) || !v ||
			    elf_file__vaddr_to_offset(ef, v, &off))
				continue;
			/* aliases at one address are probed once */
			for (int k = 0; k < r.nprobes; k++)
				if (r.probes[k].off == off)
					dup = true;
			if (dup)
				continue;
			r.probes[r.nprobes].probe = probe_table[i].probe;
			r.probes[r.nprobes].fam = probe_table[i].fam;
			r.probes[r.nprobes].off = off;
			r.nprobes++;
		}
		if (r.nprobes)
			pr_info("%s: %d CUDA/NCCL entry points", path, r.nprobes);
	}
	add_usdt(&r, ef, path);
	m = malloc(sizeof(*m));
	if (!m)
		return NULL;
	*m = r;
	if (c->nresults < MAX_RESULTS) {
		c->results[c->nresults++] = m;
	} else {
		free(c->results[c->result_next]);
		c->results[c->result_next] = m;
		c->result_next = (c->result_next + 1) % MAX_RESULTS;
	}
	return m;
}

/* Attaches every wanted probe of r through path into l; all or nothing. 0 or -errno. */
static int attach_all(struct cuda *c, struct lib *l, const char *path, const struct lib_result *r)
{
	struct sampler_probe want[MAX_PROBES];
	int n = 0;

	for (int i = 0; i < r->nprobes; i++) {
		if (!family_on(c, r->probes[i].fam))
			continue;
		want[n++] = (struct sampler_probe){
			.probe = r->probes[i].probe,
			.off = r->probes[i].off,
			.arg1 = r->probes[i].arg1,
			.arg2 = r->probes[i].arg2,
			.ref_ctr_off = r->probes[i].ref_ctr_off,
		};
	}
	if (!n)
		return 0;
	l->links = sampler__attach_probes(c->s, path, want, n);
	if (!l->links)
		return errno ? -errno : -EINVAL;
	l->nprobes = n;
	return 0;
}

/*
 * Attaches the probes of one library file (once per dev+inode) through an fd of the file
 * that was classified (open_checked). A file is probed whole or not at all, so a failure
 * is retried for the next process that maps it. Returns its index or -1.
 */
static int lib_attach(struct cuda *c, const struct proc *p, const struct proc_map *m,
		      const struct elf_file *ef, const struct lib_result *r)
{
	uint64_t dev = (uint64_t)m->dev_major << 20 | m->dev_minor;
	char path[64];
	struct lib *l = NULL;
	int free_slot = -1, err, fd;

	for (int i = 0; i < MAX_LIBS; i++) {
		if (c->libs[i].used && c->libs[i].dev == dev && c->libs[i].ino == m->inode)
			return i;
		if (!c->libs[i].used && free_slot < 0)
			free_slot = i;
	}
	if (free_slot < 0) {
		c->stats.attach_failed++;
		return -1;
	}
	l = &c->libs[free_slot];
	fd = proc_cache__open_verified(c->pc, p, m, ef);
	if (fd >= 0) {
		snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
		err = attach_all(c, l, path, r);
		close(fd); /* the probes hold the inode now */
	} else {
		err = fd;
	}
	if (err || !l->nprobes) {
		c->stats.attach_failed++;
		pr_warn("cannot attach the CUDA/NCCL probes of %s: %s (retried for the next "
			"process that maps it)",
			m->path,
			err == -ESTALE ? "deleted, or not the file that was read"
			: err	       ? strerror(-err)
				       : "no probe wanted");
		return -1;
	}
	l->used = true;
	l->dev = dev;
	l->ino = m->inode;
	snprintf(l->path, sizeof(l->path), "%s", m->path);
	c->stats.libs_attached++;
	pr_info("probing %d CUDA/NCCL entry points in %s", l->nprobes, m->path);
	return free_slot;
}

static struct cproc **proc_slot(struct cuda *c, pid_t pid)
{
	struct cproc **pp = &c->procs[(uint32_t)pid % PROC_BUCKETS];

	while (*pp && (*pp)->pid != pid)
		pp = &(*pp)->next;
	return pp;
}

/* See cuda.h. */
void cuda__check(struct cuda *c, struct proc *p)
{
	struct cproc **pp = proc_slot(c, p->pid), *e = *pp;

	if (e && e->gen == p->gen)
		return;
	if (!e) {
		if (c->nprocs >= MAX_PROCS)
			return;
		e = calloc(1, sizeof(*e));
		if (!e)
			return;
		e->pid = p->pid;
		*pp = e;
		c->nprocs++;
	}
	e->gen = p->gen;
	for (size_t i = 0; i < p->n_maps; i++) {
		const struct proc_map *m = &p->maps[i];
		const struct lib_result *r;
		struct elf_file *ef;
		int idx;
		bool have = false;

		if (m->path[0] != '/' || !m->inode || (i && !strcmp(m->path, p->maps[i - 1].path)))
			continue;
		ef = proc_cache__map_elf(c->pc, p, m);
		if (!ef)
			continue;
		r = classify(c, ef, m->path);
		if (!r || !r->nprobes)
			continue;
		idx = lib_attach(c, p, m, ef, r);
		if (idx < 0)
			continue;
		for (int k = 0; k < e->nlibs; k++)
			have |= e->libs[k] == idx;
		if (!have && e->nlibs < MAX_PROC_LIBS) {
			if (!e->nlibs)
				c->stats.procs++;
			e->libs[e->nlibs++] = idx;
		}
	}
}

static uint32_t name_hash(pid_t pid, uint64_t handle)
{
	uint64_t h = (uint64_t)pid * 0x9e3779b97f4a7c15ull ^ handle * 0xff51afd7ed558ccdull;

	return (uint32_t)(h ^ (h >> 31)) % NAME_BUCKETS;
}

/* See cuda.h. */
void cuda__on_name(struct cuda *c, const struct mlprof_cuda_name *e)
{
	size_t n = strnlen((const char *)e->name, MLPROF_CUDA_NAME_MAX);
	uint32_t h = name_hash((pid_t)e->pid, e->handle);
	struct cname *x;

	for (x = c->names[h]; x; x = x->next)
		if (x->pid == (pid_t)e->pid && x->handle == e->handle)
			break;
	if (x && strlen(x->name) >= n) {
		memcpy(x->name, e->name, n);
		x->name[n] = '\0';
		x->host_fun = e->host_fun;
		return;
	}
	if (c->nnames >= MAX_NAMES) {
		c->stats.names_dropped++;
		return;
	}
	x = malloc(sizeof(*x) + n + 1);
	if (!x)
		return;
	x->pid = (pid_t)e->pid;
	x->handle = e->handle;
	x->host_fun = e->host_fun;
	memcpy(x->name, e->name, n);
	x->name[n] = '\0';
	x->next = c->names[h];
	c->names[h] = x;
	c->nnames++;
	c->stats.names++;
}

/* See cuda.h. */
int cuda__parse_families(const char *arg, struct cuda_config *out)
{
	char buf[128], *tok, *save = NULL;

	memset(out, 0, sizeof(*out));
	if (!strcmp(arg, "none"))
		return 0;
	if (!strcmp(arg, "all")) {
		*out = (struct cuda_config){true, true, true, true, true};
		return 0;
	}
	if (snprintf(buf, sizeof(buf), "%s", arg) >= (int)sizeof(buf))
		return -EINVAL;
	for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		if (!strcmp(tok, "launches"))
			out->launches = true;
		else if (!strcmp(tok, "sync"))
			out->sync = true;
		else if (!strcmp(tok, "memcpy"))
			out->memcpy = true;
		else if (!strcmp(tok, "memory"))
			out->memory = true;
		else if (!strcmp(tok, "nccl"))
			out->nccl = true;
		else
			return -EINVAL;
	}
	return 0;
}

/* See cuda.h. */
bool cuda__any(const struct cuda_config *c)
{
	return c->launches || c->sync || c->memcpy || c->memory || c->nccl;
}

/* See cuda.h. */
void cuda__learn_name(struct cuda *c, pid_t pid, uint64_t handle, const char *sym)
{
	struct mlprof_cuda_name e = {
		.type = MLPROF_EV_CUDA_NAME, .pid = (uint32_t)pid, .handle = handle};

	snprintf((char *)e.name, sizeof(e.name), "%s", sym);
	cuda__on_name(c, &e);
}

/* See cuda.h. */
void cuda__display_name(const char *sym, char *buf, size_t len)
{
	static const char stub[] = "__device_stub__";
	char mangled[512];
	const char *m = sym;
	size_t n;
	char *d;

	if (!strncmp(m, stub, sizeof(stub) - 1))
		m += sizeof(stub) - 1;
	/* "__device_stub__Z6kernelPf(float*)" (the stub demangled): the kernel's own name is
	 * the mangled part without its leading underscore */
	n = strcspn(m, "(");
	if (n + 2 > sizeof(mangled))
		n = sizeof(mangled) - 2;
	if (m[0] == 'Z' && m[1] >= '0' && m[1] <= '9')
		snprintf(mangled, sizeof(mangled), "_%.*s", (int)n, m);
	else
		snprintf(mangled, sizeof(mangled), "%s", m);
	d = demangle(mangled);
	snprintf(buf, len, "%s", d ? d : m);
	free(d);
}

/* See cuda.h. */
const char *cuda__kernel_name(struct cuda *c, pid_t pid, uint64_t fn, uint32_t api,
			      const char *fn_name, const char *(*lookup)(void *ctx, uint64_t addr),
			      void *ctx, char *buf, size_t len)
{
	struct cname *x;

	for (x = c->names[name_hash(pid, fn)]; x; x = x->next)
		if (x->pid == pid && x->handle == fn)
			break;
	if (x && x->name[0]) {
		cuda__display_name(x->name, buf, len);
		return buf;
	}
	/* cuKernelGetFunction: the function is another name of a kernel handle */
	if (x && x->host_fun && x->host_fun != fn) {
		struct cname *k;

		for (k = c->names[name_hash(pid, x->host_fun)]; k; k = k->next)
			if (k->pid == pid && k->handle == x->host_fun && k->name[0]) {
				cuda__display_name(k->name, buf, len);
				return buf;
			}
	}
	if (x && x->host_fun) {
		const char *s = lookup(ctx, x->host_fun);

		if (s) {
			cuda__display_name(s, buf, len);
			return buf;
		}
	}
	/* runtime <= 12: the launched function is the host stub, named by its symbol */
	if (api == MLPROF_CUDA_RT && fn_name) {
		cuda__display_name(fn_name, buf, len);
		return buf;
	}
	c->stats.unnamed_kernels++;
	snprintf(buf, len, "[cuda kernel 0x%llx]", (unsigned long long)fn);
	return buf;
}

/* See cuda.h. */
void cuda__forget(struct cuda *c, pid_t pid)
{
	struct cproc **pp = proc_slot(c, pid), *e = *pp;

	if (e) {
		*pp = e->next;
		free(e);
		c->nprocs--;
		/* its tensors and backward pass in the CUDA programs' tables */
		sampler__cuda_forget_pid(c->s, pid);
	}
	names_clear_pid(c, pid);
}

/* See cuda.h. */
void cuda__gc(struct cuda *c)
{
	bool used[MAX_LIBS] = {false};

	for (size_t b = 0; b < PROC_BUCKETS; b++)
		for (struct cproc *e = c->procs[b]; e; e = e->next)
			for (int k = 0; k < e->nlibs; k++)
				used[e->libs[k]] = true;
	for (int i = 0; i < MAX_LIBS; i++) {
		if (c->libs[i].used && !used[i]) {
			pr_info("no process maps %s any more: probes detached", c->libs[i].path);
			lib_detach(c, &c->libs[i]);
		}
	}
}

/* See cuda.h. */
void cuda__stats(const struct cuda *c, struct cuda_stats *out)
{
	*out = c->stats;
}
