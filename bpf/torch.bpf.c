// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * PyTorch record_function scopes, from uprobes on libtorch_cpu: the entry of
 * torch::autograd::profiler::record_function_enter_new(const std::string &name, ...) (its
 * return gives the scope's handle) and at::RecordFunction::end(). PyTorch opens these
 * scopes whether or not a profiler runs (the optimizer's step, the DataLoader's next), so
 * training steps and their phases are found without touching the job. Attached per
 * library file by user space; events go to the shared ring buffer.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>

char LICENSE[] SEC("license") = "Dual BSD/GPL";

#include "record.bpf.h"
#include "scope.bpf.h"

/* A scope being entered: its name, read at entry (the string lives until the return). */
struct enter_call {
	__u64 time_ns, oncpu_ns;
	__u8 name[MLPROF_TORCH_NAME_MAX];
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 4096);
	__type(key, __u32);
	__type(value, struct enter_call);
} torch_enter SEC(".maps");

/* Open scopes per thread: their handles (an end() of anything else is ignored). */
#define OPEN_MAX 8
struct open_scopes {
	__u64 handle[OPEN_MAX];
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 4096);
	__type(key, __u32);
	__type(value, struct open_scopes);
} torch_open SEC(".maps");

/* libstdc++'s std::string (C++11 ABI): data pointer, then length. */
struct cxx_string {
	__u64 data, len;
};

SEC("uprobe")
int torch_entry(struct pt_regs *ctx)
{
	__u64 id = bpf_get_current_pid_tgid(), now = bpf_ktime_get_ns();
	__u32 tgid = id >> 32, tid = (__u32)id;

	if (!pid_wanted(tgid))
		return 0;
	if (bpf_get_attach_cookie(ctx) == MLPROF_TP_ENTER) {
		/* rdi: where the returned intrusive_ptr goes (returned in memory), rsi: the name */
		struct enter_call call = {.time_ns = now, .oncpu_ns = scope_oncpu_ns()};
		struct cxx_string str;
		__u64 n;

		if (bpf_probe_read_user(&str, sizeof(str), (const void *)PT_REGS_PARM2(ctx)))
			return 0;
		n = str.len < MLPROF_TORCH_NAME_MAX - 1 ? str.len : MLPROF_TORCH_NAME_MAX - 1;
		if (bpf_probe_read_user(call.name, n & (MLPROF_TORCH_NAME_MAX - 1),
					(const void *)str.data))
			return 0;
		bpf_map_update_elem(&torch_enter, &tid, &call, BPF_ANY);
		return 0;
	}
	/* at::RecordFunction::end(this): this is inside an open scope's handle */
	{
		struct open_scopes *os = bpf_map_lookup_elem(&torch_open, &tid);
		__u64 self = PT_REGS_PARM1(ctx);

		if (!os)
			return 0;
		for (int i = OPEN_MAX - 1; i >= 0; i--) {
			__u64 h = os->handle[i];

			if (h && self >= h && self - h < 64) {
				os->handle[i] = 0;
				scope_send(tgid, tid, MLPROF_SCOPE_EXIT, now, scope_oncpu_ns(), h,
					   NULL);
				break;
			}
		}
	}
	return 0;
}

/* The return of record_function_enter_new: rax points at the returned handle. */
SEC("uretprobe")
int torch_return(struct pt_regs *ctx)
{
	__u32 tid = (__u32)bpf_get_current_pid_tgid(), tgid = bpf_get_current_pid_tgid() >> 32;
	struct enter_call *call = bpf_map_lookup_elem(&torch_enter, &tid);
	struct open_scopes fresh = {}, *os;
	__u64 handle = 0;
	int slot = -1;

	if (!call)
		return 0;
	if (bpf_probe_read_user(&handle, sizeof(handle), (const void *)PT_REGS_RC(ctx)) || !handle)
		goto out;
	os = bpf_map_lookup_elem(&torch_open, &tid);
	if (!os) {
		bpf_map_update_elem(&torch_open, &tid, &fresh, BPF_NOEXIST);
		os = bpf_map_lookup_elem(&torch_open, &tid);
		if (!os)
			goto out;
	}
	for (int i = 0; i < OPEN_MAX; i++)
		if (!os->handle[i] && slot < 0)
			slot = i;
	if (slot < 0)
		slot = OPEN_MAX - 1; /* too deep: the innermost is replaced */
	os->handle[slot & (OPEN_MAX - 1)] = handle;
	scope_send(tgid, tid, 0, call->time_ns, call->oncpu_ns, handle, call->name);
out:
	bpf_map_delete_elem(&torch_enter, &tid);
	return 0;
}
