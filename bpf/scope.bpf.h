/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Training-step scope events (struct mlprof_torch_scope, mlprof/torch.h), sent by the
 * PyTorch scope probes (torch.bpf.c) and, for synchronize calls, by the CUDA probes
 * (cuda.bpf.c). Include after record.bpf.h.
 */
#ifndef MLPROF_SCOPE_BPF_H
#define MLPROF_SCOPE_BPF_H

#include <mlprof/torch.h>

/* The current thread's CPU time: its scheduler runtime (updated at ticks and switches). */
static __always_inline __u64 scope_oncpu_ns(void)
{
	return BPF_CORE_READ(bpf_get_current_task_btf(), se.sum_exec_runtime);
}

/* Sends a scope event; name: NULL or MLPROF_TORCH_NAME_MAX bytes. */
static __always_inline void scope_send(__u32 tgid, __u32 tid, __u32 flags, __u64 time_ns,
				       __u64 oncpu, __u64 handle, const __u8 *name)
{
	struct mlprof_torch_scope *e = bpf_ringbuf_reserve(&rb, sizeof(*e), 0);

	if (!e) {
		stat_inc(MLPROF_STAT_TORCH_LOST);
		return;
	}
	e->type = MLPROF_EV_TORCH_SCOPE;
	e->pid = tgid;
	e->tid = tid;
	e->flags = flags;
	e->time_ns = time_ns;
	e->oncpu_ns = oncpu;
	e->handle = handle;
	if (name)
		__builtin_memcpy(e->name, name, MLPROF_TORCH_NAME_MAX);
	else
		e->name[0] = 0;
	bpf_ringbuf_submit(e, wakeup_bytes ? BPF_RB_NO_WAKEUP : 0);
}

#endif /* MLPROF_SCOPE_BPF_H */
