/* SPDX-License-Identifier: Apache-2.0 */
/*
 * CUDA and NCCL support in three stages, like Python's: detect (per ELF file: does it
 * export the CUDA runtime, driver or NCCL entry points; which offsets), attach (uprobes per
 * library file, shared by every process that maps it, detached when none does), and name
 * (launch handles to kernel names: host stubs symbolized, driver handles from
 * cuModuleGetFunction / cuLibraryGetKernel, CUDA 13 runtime handles from __cudaGetKernel).
 */
#ifndef MLPROF_CUDA_H
#define MLPROF_CUDA_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include <mlprof/cuda.h>

struct cuda;
struct proc;
struct proc_cache;
struct sampler;

/* Which families of probes are attached (record and agent options). */
struct cuda_config {
	bool launches; /* kernel and graph launches */
	bool sync;     /* synchronize calls (CPU waiting for the GPU) */
	bool memcpy;   /* host<->device copies */
	bool memory;   /* device allocations and frees */
	bool nccl;     /* NCCL collectives */
};

struct cuda_stats {
	uint64_t libs_attached;	  /* library files with probes now */
	uint64_t libs_detached;	  /* ... detached since (no process maps them any more) */
	uint64_t attach_failed;	  /* probe attachments that failed (logged once per file) */
	uint64_t procs;		  /* processes seen using CUDA/NCCL */
	uint64_t names;		  /* handle names learned */
	uint64_t names_dropped;	  /* ... not kept: table full */
	uint64_t unnamed_kernels; /* launches shown as [cuda kernel 0x...] */
};

/* Creates the CUDA support (probes go through sampler s). NULL with errno on failure. */
struct cuda *cuda__new(const struct cuda_config *cfg, struct proc_cache *pc, struct sampler *s);
void cuda__free(struct cuda *c);

/* Looks at process p's libraries (again when its maps changed) and attaches probes. */
void cuda__check(struct cuda *c, struct proc *p);

/* A handle's name from the BPF side (see struct mlprof_cuda_name). */
void cuda__on_name(struct cuda *c, const struct mlprof_cuda_name *e);

/*
 * Names the function a launch started (aux values of an MLPROF_SK_CUDA_LAUNCH sample):
 * writes the demangled kernel name into buf and returns buf. fn_name is the symbol that
 * covers fn when it is an address in the process (a host stub), or NULL; lookup(ctx, addr)
 * symbolizes another address of the process (a CUDA 13 handle's host function).
 */
const char *cuda__kernel_name(struct cuda *c, pid_t pid, uint64_t fn, uint32_t api,
			      const char *fn_name, const char *(*lookup)(void *ctx, uint64_t addr),
			      void *ctx, char *buf, size_t len);

/*
 * Learns a handle's name from a launch's stack (its caller was the kernel's host stub):
 * for handles made before the probes were attached. sym: the stub's symbol.
 */
void cuda__learn_name(struct cuda *c, pid_t pid, uint64_t handle, const char *sym);

/* The process exited: its names go, and its libraries lose a user. */
void cuda__forget(struct cuda *c, pid_t pid);
/* Detaches probes of library files no process maps any more. */
void cuda__gc(struct cuda *c);
void cuda__stats(const struct cuda *c, struct cuda_stats *out);

/*
 * Parses "all", "none" or a comma list of launches,sync,memcpy,memory,nccl into out.
 * Returns 0 or -EINVAL.
 */
int cuda__parse_families(const char *arg, struct cuda_config *out);
/* True when any family is on. */
bool cuda__any(const struct cuda_config *c);

/* "vector_add(float*, int)" from a host stub or kernel symbol (strips __device_stub__). */
void cuda__display_name(const char *sym, char *buf, size_t len);

#endif
