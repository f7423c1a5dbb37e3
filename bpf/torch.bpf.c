// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * PyTorch record_function scopes, from uprobes on libtorch_cpu. Opened at the entry of
 * torch::autograd::profiler::record_function_enter(const std::string &name, ...,
 * at::RecordFunction &rec) where .symtab names it (PyPI wheels), else at the entry and return
 * of record_function_enter_new (exported; its return gives the handle); closed in
 * record_function_exit_new where its code is the known three instructions, else in
 * at::RecordFunction::end() (which every RecordFunction of the process runs: ~14 hits a
 * training step instead of 3). Entry probes only on the first path. Waits for collectives
 * (c10d::Work::wait, DDP's c10d::Reducer::finalize_backward) are sent as intervals. PyTorch opens
 * these scopes whether or not a profiler runs (the optimizer's step, the DataLoader's next), so
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

/*
 * Bumped by user space before it attaches the probes again after a time detached (the
 * steps' duty cycle, runtimes/torch/steps_duty.h): scopes opened and collective waits begun
 * under an earlier attach never see their end, and are forgotten.
 */
__u64 scope_gen = 0;

/* A thread's wait for collectives in progress (outermost call only). */
struct comm_call {
	__u64 start_ns, oncpu_ns;
	__u64 gen; /* the scope_gen it began in */
	__u32 depth;
};

struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct comm_call);
} torch_comm SEC(".maps");

static const __u8 comm_scope_name[MLPROF_TORCH_NAME_MAX] = MLPROF_COMM_SCOPE;

/* libstdc++'s std::string (C++11 ABI): data pointer, then length. */
struct cxx_string {
	__u64 data, len;
};

/* Forgets r's open handles when they are from an earlier attach. */
static __always_inline void slots_fresh(struct scope_run *r)
{
	__u64 gen = scope_gen;

	if (r->gen == gen)
		return;
	for (int i = 0; i < SCOPE_OPEN_MAX; i++)
		r->open[i] = 0;
	r->gen = gen;
}

/* Remembers the open scope handle in r (the innermost is replaced when too deep). */
static __always_inline void open_slot(struct scope_run *r, __u64 handle)
{
	int slot = -1;

	slots_fresh(r);

	for (int i = 0; i < SCOPE_OPEN_MAX; i++)
		if (!r->open[i] && slot < 0)
			slot = i;
	if (slot < 0)
		slot = SCOPE_OPEN_MAX - 1;
	r->open[slot & (SCOPE_OPEN_MAX - 1)] = handle;
}

/*
 * Opens scope handle on thread tid, entered at time_ns with CPU time oncpu, named by name
 * (a map value: copied by a helper, which keeps the program's stack small).
 */
static __always_inline void open_scope(__u32 tgid, __u32 tid, __u64 handle, __u64 time_ns,
				       __u64 oncpu, const __u8 *name)
{
	struct scope_run *r = scope_run_get();
	struct mlprof_torch_scope *e = r ? scope_reserve(true) : NULL;

	if (!e)
		return;
	if (bpf_probe_read_kernel(e->name, MLPROF_TORCH_NAME_MAX, name)) {
		bpf_ringbuf_discard(e, BPF_RB_NO_WAKEUP);
		return;
	}
	open_slot(r, handle);
	scope_commit(e, tgid, tid, 0, time_ns, oncpu, handle);
}

/* Reads the std::string at str into name (NUL-terminated, cut); false when unreadable or empty. */
static __always_inline bool read_name(__u8 name[MLPROF_TORCH_NAME_MAX], const void *str)
{
	struct cxx_string s;
	__u64 n;

	if (bpf_probe_read_user(&s, sizeof(s), str))
		return false;
	n = s.len < MLPROF_TORCH_NAME_MAX - 1 ? s.len : MLPROF_TORCH_NAME_MAX - 1;
	if (!n || bpf_probe_read_user(name, n & (MLPROF_TORCH_NAME_MAX - 1), (const void *)s.data))
		return false;
	name[n & (MLPROF_TORCH_NAME_MAX - 1)] = 0;
	return true;
}

/*
 * A scope's end: self (a RecordFunction) lies in an open scope's object, whichever of its
 * addresses the enter gave (the PythonRecordFunction, or the RecordFunction 16 bytes in).
 */
static __always_inline void close_scope(__u32 tgid, __u32 tid, __u64 self, __u64 now)
{
	struct scope_run *r = bpf_task_storage_get(&scope_runs, bpf_get_current_task_btf(), 0, 0);

	if (!r)
		return;
	slots_fresh(r);
	for (int i = SCOPE_OPEN_MAX - 1; i >= 0; i--) {
		__u64 h = r->open[i];

		if (h && (self >= h ? self - h : h - self) < 64) {
			struct mlprof_torch_scope *e = scope_reserve(false);

			r->open[i] = 0;
			if (e)
				scope_commit(e, tgid, tid, MLPROF_SCOPE_EXIT, now,
					     scope_oncpu_at(r, now), h);
			break;
		}
	}
}

SEC("uprobe")
int torch_entry(struct pt_regs *ctx)
{
	__u64 id = bpf_get_current_pid_tgid(), now = bpf_ktime_get_ns();
	__u32 tgid = id >> 32, tid = (__u32)id;
	__u64 cookie = bpf_get_attach_cookie(ctx);

	if (!pid_wanted(tgid))
		return 0;
	if (cookie == MLPROF_TP_ENTER_REC) {
		/* record_function_enter(name, args, rec): the scope opens here, keyed by rec;
		 * the name is read straight into the event */
		struct scope_run *r = scope_run_get();
		struct mlprof_torch_scope *e = r ? scope_reserve(true) : NULL;

		if (!e)
			return 0;
		if (!read_name(e->name, (const void *)PT_REGS_PARM1(ctx))) {
			bpf_ringbuf_discard(e, BPF_RB_NO_WAKEUP);
			return 0;
		}
		open_slot(r, PT_REGS_PARM3(ctx));
		scope_commit(e, tgid, tid, 0, now, scope_oncpu_at(r, now), PT_REGS_PARM3(ctx));
		return 0;
	}
	if (cookie == MLPROF_TP_COMM) {
		struct comm_call *c = bpf_task_storage_get(&torch_comm, bpf_get_current_task_btf(),
							   0, BPF_LOCAL_STORAGE_GET_F_CREATE);

		if (c && c->gen != scope_gen) {
			c->gen = scope_gen;
			c->depth = 0;
		}
		if (c && !c->depth++) {
			c->start_ns = now;
			c->oncpu_ns = scope_oncpu_ns(now);
			scope_send_wait(tgid, tid, now, comm_scope_name);
		}
		return 0;
	}
	if (cookie == MLPROF_TP_ENTER) {
		/* rdi: where the returned intrusive_ptr goes (returned in memory), rsi: the name */
		struct enter_call call = {.time_ns = now, .oncpu_ns = scope_oncpu_ns(now)};

		if (read_name(call.name, (const void *)PT_REGS_PARM2(ctx)))
			bpf_map_update_elem(&torch_enter, &tid, &call, BPF_ANY);
		return 0;
	}
	/* at::RecordFunction::end(this), or record_function_exit_new where rdi is the same */
	close_scope(tgid, tid, PT_REGS_PARM1(ctx), now);
	return 0;
}

/* The end of a wait for collectives: one interval event for the outermost call. */
static __always_inline void comm_return(__u32 tgid, __u32 tid)
{
	struct comm_call *c = bpf_task_storage_get(&torch_comm, bpf_get_current_task_btf(), 0, 0);

	if (!c || c->gen != scope_gen || !c->depth || --c->depth)
		return;
	scope_send_interval(tgid, tid, bpf_ktime_get_ns(), c->start_ns, c->oncpu_ns,
			    comm_scope_name);
}

/* Returns: of record_function_enter_new (rax points at the returned handle), of a wait. */
SEC("uretprobe")
int torch_return(struct pt_regs *ctx)
{
	__u32 tid = (__u32)bpf_get_current_pid_tgid(), tgid = bpf_get_current_pid_tgid() >> 32;
	struct enter_call *call;
	__u64 handle = 0;

	if (bpf_get_attach_cookie(ctx) == MLPROF_TP_COMM) {
		if (pid_wanted(tgid))
			comm_return(tgid, tid);
		return 0;
	}
	call = bpf_map_lookup_elem(&torch_enter, &tid);

	if (!call)
		return 0;
	if (!bpf_probe_read_user(&handle, sizeof(handle), (const void *)PT_REGS_RC(ctx)) && handle)
		open_scope(tgid, tid, handle, call->time_ns, call->oncpu_ns, call->name);
	bpf_map_delete_elem(&torch_enter, &tid);
	return 0;
}
