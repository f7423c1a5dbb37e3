/* SPDX-License-Identifier: Apache-2.0 */
/*
 * CPython support in three stages: detect (per ELF file: is this an interpreter, which
 * version and layout), attach (per process: the addresses the BPF walker needs), and
 * symbolize (per sample: code objects to names and lines, merged into the native stack).
 */
#ifndef MLPROF_PYTHON_H
#define MLPROF_PYTHON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <mlprof/python.h>
#include <mlprof/sample.h>

#include "profile/frame.h"
#include "runtimes/python/python_code.h"
#include "runtimes/python/python_layout.h"

struct proc;
struct proc_cache;
struct python;

struct python_config {
	size_t code_cache_bytes; /* bound on decoded code objects (default 8 MiB) */
	bool force_thread_list;	 /* find thread states through the interpreter's thread list
				  * wherever the layout allows it (3.13+), not the TSS slot */
};

/* Python-stack health, reported by record's summary and the agent's metrics. */
struct python_stats {
	uint64_t procs[PY_MINOR_MAX + 1]; /* processes recognized, by 3.<minor> */
	uint64_t procs_unsupported;	  /* processes whose interpreter is not supported */
	uint64_t procs_table_full;	  /* processes not tracked: table full */
	uint64_t procs_evicted;		  /* ... tracked after evicting the least recent */
	uint64_t configs_repushed;	  /* walker configs pushed again (BPF LRU evicted) */
	uint64_t samples;		  /* samples that carried Python frames */
	uint64_t frames;		  /* Python frames named */
	uint64_t frames_failed;		  /* Python frames whose code object was unreadable */
	uint64_t frames_failed_by[PYCODE_FAIL__COUNT]; /* ... by why (enum pycode_fail) */
	uint64_t merged_exact;	  /* samples whose activations matched the eval frames */
	uint64_t merged_mismatch; /* ... that did not (frames appended or evals kept) */
	struct pycode_stats code;
};

/* Creates the Python support over the process cache pc. NULL with errno on failure. */
struct python *python__new(const struct python_config *cfg, struct proc_cache *pc);
void python__free(struct python *py);

/*
 * Looks at process p (again only when its maps changed). Returns 1 and fills *out when p
 * runs a supported interpreter whose walker configuration BPF should get now, 0 when there
 * is nothing new to tell BPF, or -errno. Unsupported interpreters are logged once per file.
 */
int python__check(struct python *py, struct proc *p, struct mlprof_py_proc *out);

/*
 * A sample of pid came without a Python walk although pid runs Python: BPF's LRU table
 * evicted its configuration (a tenant forked thousands of processes). Returns true and
 * fills out (to push again) at most once a second per process; false otherwise.
 */
bool python__lost_config(struct python *py, pid_t pid, uint64_t now_ns, struct mlprof_py_proc *out);

/* The process exited or exec'ed: drop its state and cached code objects. */
void python__forget(struct python *py, pid_t pid);

/*
 * Builds the user part of a sample of process p: names its Python frames pf[0..np) (as the
 * walker sent them; status: enum mlprof_py_status) and merges them into native[0..n)
 * (symbolized user frames, leaf first). Writes at most max frames to out and returns the
 * count; without Python frames it copies native. Strings stay valid until the next call.
 */
int python__frames(struct python *py, struct proc *p, const struct mlprof_py_frame *pf, uint32_t np,
		   uint32_t status, const struct frame *native, int n, struct frame *out, int max);

/*
 * Reads and caches the code objects of the Python frames pf[0..np) of process p now (no
 * stats counted), so that the sample can be named later, after the process has exited:
 * for samples that wait for a native symbol index.
 */
void python__warm(struct python *py, struct proc *p, const struct mlprof_py_frame *pf, uint32_t np);

void python__stats(const struct python *py, struct python_stats *out);

#endif
