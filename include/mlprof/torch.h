/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * PyTorch scopes shared by bpf/torch.bpf.c and user space: the record_function scopes
 * PyTorch opens whether or not a profiler runs (Optimizer.step#AdamW.step,
 * enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__, ProfilerStep#N, a user's
 * own), entered and exited, with the thread's CPU time at each.
 */
#ifndef MLPROF_SHARED_TORCH_H
#define MLPROF_SHARED_TORCH_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

/* Probe cookies. */
enum mlprof_torch_probe {
	MLPROF_TP_ENTER = 1,	 /* torch::autograd::profiler::record_function_enter_new */
	MLPROF_TP_END = 2,	 /* at::RecordFunction::end() (rdi: the RecordFunction), or inside
				  * record_function_exit_new where rdi is the same */
	MLPROF_TP_ENTER_REC = 3, /* torch::autograd::profiler::record_function_enter(name,
				  * args, RecordFunction &rec), local (.symtab) */
	MLPROF_TP_COMM = 4,	 /* a wait for collectives, entry and return: c10d::Work::wait,
				  * c10d::Reducer::finalize_backward (DDP) */
};

/* The interval name of a wait for collectives (MLPROF_TP_COMM; steps.c classifies names by
 * their first letter: keep the c). */
#define MLPROF_COMM_SCOPE "c10d.wait"

#define MLPROF_TORCH_NAME_MAX 64
#define MLPROF_SCOPE_EXIT     1 /* mlprof_torch_scope.flags: an exit (else an enter) */
/* mlprof_torch_scope.flags: a whole interval that ended at time_ns, handle = its length in
 * ns, oncpu_ns = the thread's CPU time during it (a CUDA synchronize call: name
 * "cuda.synchronize") */
#define MLPROF_SCOPE_INTERVAL 2
/* mlprof_torch_scope.flags: the start of a wait that is sent as an INTERVAL when it ends
 * (same name): the thread's samples until then are in the wait's phase */
#define MLPROF_SCOPE_WAIT 4

/* MLPROF_EV_TORCH_SCOPE: a scope entered or exited on a thread. */
struct mlprof_torch_scope {
	__u32 type; /* MLPROF_EV_TORCH_SCOPE */
	__u32 pid;
	__u32 tid;
	__u32 flags;
	__u64 time_ns;	/* CLOCK_MONOTONIC */
	__u64 oncpu_ns; /* the thread's CPU time (scope_oncpu_ns, bpf/scope.bpf.h) */
	__u64 handle;	/* the scope's PythonRecordFunction or its RecordFunction (pairs enter
			 * and exit) */
	__u8 name[MLPROF_TORCH_NAME_MAX]; /* enter only, NUL-terminated, cut */
};

/* Bytes of an exit event: it ends before name (the ring holds less, one cache line) */
#define MLPROF_TORCH_SCOPE_UNNAMED_SIZE __builtin_offsetof(struct mlprof_torch_scope, name)

#endif
