/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* Record layouts shared by the BPF programs and user space: ring-buffer events and map keys. */
#ifndef MLPROF_SAMPLE_H
#define MLPROF_SAMPLE_H

/* BPF objects get the __u* types from vmlinux.h (no asm/ headers on the -target bpf path). */
#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

/*
 * Field-order rules (both sides compile this file):
 *  - only fixed-width __u8/__u32/__u64 fields;
 *  - every __u64 sits at an 8-byte aligned offset, no implicit padding (pad explicitly);
 *  - new fields go at the end of the fixed part, before any flexible array;
 *  - user space checks the sizes with _Static_assert (see src/sampler.c).
 */

#define MLPROF_COMM_LEN 16
/* Kernel stack frames captured per sample (bpf_get_stack, deepest first). */
#define MLPROF_MAX_KSTACK 64
/* Upper bound of the user stack copy; the run-time size is a rodata knob <= this. */
#define MLPROF_MAX_USTACK (128U * 1024)
/*
 * Default user stack copy: deep enough for PyTorch + CPython stacks, imports nested in a
 * training loop included (32 KiB cut 5-10% of them on a GPU host; perf uses 8 KiB). Only
 * as much as the stack holds is copied: shallow stacks cost no more.
 */
#define MLPROF_DEFAULT_USTACK (64U * 1024)

/* Every ring-buffer record starts with this type tag. */
enum mlprof_event_type {
	MLPROF_EV_SAMPLE = 1,	    /* struct mlprof_sample: a stack sample */
	MLPROF_EV_EXEC = 2,	    /* struct mlprof_proc_event: process called execve */
	MLPROF_EV_EXIT = 3,	    /* struct mlprof_proc_event: last thread of a process exited */
	MLPROF_EV_FORK = 4,	    /* struct mlprof_proc_event: new process (ppid = parent tgid) */
	MLPROF_EV_SAMPLE_END = 5,   /* struct mlprof_sample_end: value for an earlier sample */
	MLPROF_EV_CUDA_NAME = 6,    /* struct mlprof_cuda_name: a kernel handle's name */
	MLPROF_EV_CUDA_FREE = 7,    /* struct mlprof_free: device memory freed */
	MLPROF_EV_MAP_EXEC = 8,	    /* struct mlprof_proc_event: a file was mapped executable */
	MLPROF_EV_MEM_RELEASE = 9,  /* struct mlprof_mem_release: memory given back */
	MLPROF_EV_HEAP_FREE = 10,   /* struct mlprof_free: a sampled heap block freed */
	MLPROF_EV_TORCH_SCOPE = 11, /* struct mlprof_torch_scope (mlprof/torch.h) */
	MLPROF_EV_TENSOR_FREE = 12, /* struct mlprof_free: a sampled PyTorch CUDA tensor freed */
};

/*
 * What produced a sample; each kind becomes its own pprof sample type.
 * Event-driven sources (uprobes on CUDA launches, allocations) reuse struct mlprof_sample
 * with their own kind and put their payload in value/aux.
 */
enum mlprof_sample_kind {
	MLPROF_SK_CPU = 0,	    /* cpu-clock perf event; value = 1 sample */
	MLPROF_SK_OFFCPU = 1,	    /* a thread switched out: stack at that moment; value = 0, the
				     * blocked time comes later in struct mlprof_sample_end (aux[0] =
				     * sequence, aux[1] = MLPROF_OFFCPU_*) */
	MLPROF_SK_CUDA_LAUNCH = 2,  /* a kernel launch; value = weight (launches), aux[0] = the
				     * function, aux[1] = enum mlprof_cuda_api */
	MLPROF_SK_CUDA_SYNC = 3,    /* CPU blocked in a synchronize call; value via its end (ns) */
	MLPROF_SK_CUDA_MEMCPY = 4,  /* host<->device copy; value = bytes x weight, aux[1] = kind */
	MLPROF_SK_CUDA_ALLOC = 5,   /* device allocation; value via its end (bytes, aux = ptr) */
	MLPROF_SK_CUDA_GRAPH = 6,   /* a CUDA graph launch; value = weight (launches) */
	MLPROF_SK_NCCL = 7,	    /* an NCCL call; value = weight, aux[0] = bytes x weight,
				     * aux[1] = collective | op << 8 | dtype << 16 */
	MLPROF_SK_MEMORY = 8,	    /* anonymous memory brought in; value = sampling weight
				     * (bytes), aux[0] = page address */
	MLPROF_SK_HEAP = 9,	    /* a sampled heap allocation (malloc & co); value via its end
				     * (bytes, aux = pointer), aux[1] = the requested size */
	MLPROF_SK_STEPS = 10,	    /* never sent by BPF: user space derives it from the CPU and
				     * off-CPU samples of PyTorch training threads (value = ns) */
	MLPROF_SK_CUDA_TENSOR = 11, /* a sampled allocation of PyTorch's CUDA caching allocator
				     * (a tensor's memory); value = aux[1] = bytes, aux[0] = ptr */
	MLPROF_SK_BACKWARD = 12,    /* never a profile: the stack of a thread that entered
				     * PyTorch's autograd Engine::execute (aux[0] = seq; its end
				     * comes as a sample end), under which the engine's worker
				     * threads' samples are shown until then */
	MLPROF_SK__COUNT,
};

/* mlprof_sample.aux[1] of MLPROF_SK_OFFCPU samples: why the thread left the CPU. */
#define MLPROF_OFFCPU_BLOCKED	1 /* it went to sleep (I/O, lock, queue, sleep, GPU wait) */
#define MLPROF_OFFCPU_PREEMPTED 2 /* it was runnable and lost the CPU to another task */

/* User register slots, in this order in mlprof_sample.regs (x86-64). */
enum mlprof_reg {
	MLPROF_REG_IP,
	MLPROF_REG_SP,
	MLPROF_REG_BP,
	MLPROF_REG_BX,
	MLPROF_REG_R12,
	MLPROF_REG_R13,
	MLPROF_REG_R14,
	MLPROF_REG_R15,
	MLPROF_REG_AX,
	MLPROF_REG_CX,
	MLPROF_REG_DX,
	MLPROF_REG_SI,
	MLPROF_REG_DI,
	MLPROF_REG_R8,
	MLPROF_REG_R9,
	MLPROF_REG_R10,
	MLPROF_REG_R11,
	MLPROF_NREGS,
};

/* mlprof_sample.flags */
#define MLPROF_SF_USER_REGS  0x1  /* regs[] hold the thread's user registers */
#define MLPROF_SF_IN_KERNEL  0x2  /* the sample interrupted kernel code */
#define MLPROF_SF_USTACK_CUT 0x4  /* stack copy stopped at the size limit, not the stack's end */
#define MLPROF_SF_USTACK_ERR 0x8  /* the user stack could not be read */
#define MLPROF_SF_KSTACK_ERR 0x10 /* bpf_get_stack failed for the kernel stack */
#define MLPROF_SF_KTHREAD    0x20 /* kernel thread: no user part at all */
#define MLPROF_SF_PY_NEW     0x40 /* a Python code object not seen before: read it soon */
#define MLPROF_SF_HAS_END    0x80 /* an MLPROF_EV_SAMPLE_END with aux[0] as seq follows */

/*
 * One stack sample. Variable size: the fixed part is followed by ustack_len bytes
 * copied from the user stack starting at regs[MLPROF_REG_SP], then the Python frames.
 */
struct mlprof_sample {
	__u32 type; /* MLPROF_EV_SAMPLE */
	__u32 kind; /* enum mlprof_sample_kind */
	__u32 pid;  /* tgid */
	__u32 tid;
	__u64 time_ns; /* bpf_ktime_get_ns() (CLOCK_MONOTONIC) */
	__u64 value;   /* weight of this sample in the kind's unit (1 for cpu samples) */
	__u64 aux[2];  /* kind-specific payload (0 for cpu samples) */
	__u32 cpu;
	__u32 flags;		    /* MLPROF_SF_* */
	__u32 kstack_len;	    /* number of valid entries in kstack[] */
	__u32 ustack_len;	    /* bytes of ustack[] that follow */
	__u8 comm[MLPROF_COMM_LEN]; /* thread name */
	__u64 regs[MLPROF_NREGS];
	__u64 kstack[MLPROF_MAX_KSTACK];
	__u32 py_nframes; /* struct mlprof_py_frame entries after the user stack bytes */
	__u32 py_status;  /* enum mlprof_py_status */
	__u64 start_ns;	  /* the process's start (its leader's start_boottime, ns since boot):
			   * tells a sample of an exited process from the one now holding the pid */
	/*
	 * ustack_len bytes of user stack from regs[SP] upward, then (at the next multiple of 8)
	 * py_nframes struct mlprof_py_frame, leaf first (see mlprof/python.h).
	 */
	__u8 ustack[];
};

/* Offset of the Python frames from ustack[] (the stack copy rounded up to 8 bytes). */
#define MLPROF_PY_FRAMES_OFF(ustack_len) (((ustack_len) + 7U) & ~7U)

/* mlprof_proc_event.pad of an MLPROF_EV_MAP_EXEC: the process was stopped (SIGSTOP) and
 * waits for user space to attach probes and continue it. */
#define MLPROF_PROC_HELD 1

/* Process lifecycle event. */
struct mlprof_proc_event {
	__u32 type; /* MLPROF_EV_EXEC / _EXIT / _FORK / _MAP_EXEC */
	__u32 pid;  /* tgid of the process concerned */
	__u32 ppid; /* parent tgid (fork) */
	__u32 pad;  /* MLPROF_EV_MAP_EXEC: MLPROF_PROC_HELD or 0 */
	__u64 time_ns;
	__u8 comm[MLPROF_COMM_LEN];
};

/*
 * The end of an interval whose start was captured as a sample (value 0) of the same tid
 * with aux[0] == seq: an off-CPU interval, a CUDA synchronize call, an allocation whose
 * pointer is known at return. value: the sample's weight (blocked ns x sampling weight,
 * bytes), 0 to drop the sample; aux: kind-specific (the allocated pointer).
 */
struct mlprof_sample_end {
	__u32 type; /* MLPROF_EV_SAMPLE_END */
	__u32 pid;
	__u32 tid;
	__u32 pad;
	__u64 seq;
	__u64 value;
	__u64 aux;
};

/* A tracked allocation given back (cudaFree, cuMemFree_v2; free, realloc of a sampled block). */
struct mlprof_free {
	__u32 type; /* MLPROF_EV_CUDA_FREE / MLPROF_EV_HEAP_FREE */
	__u32 pid;
	__u64 ptr;
	__u64 time_ns;
};

/* Anonymous memory given back to the kernel (munmap, madvise, brk shrinking). */
struct mlprof_mem_release {
	__u32 type; /* MLPROF_EV_MEM_RELEASE */
	__u32 pid;
	__u64 start;
	__u64 len;
};

/* Counters kept by BPF in a per-CPU array indexed by this enum (exported as metrics). */
enum mlprof_bpf_stat {
	MLPROF_STAT_SAMPLES,	     /* sample events submitted */
	MLPROF_STAT_FILTERED,	     /* perf hits discarded by the pid filter */
	MLPROF_STAT_RB_FULL,	     /* ring buffer had no room: sample dropped */
	MLPROF_STAT_USTACK_ERR,	     /* user stack unreadable (non-resident page, bad sp) */
	MLPROF_STAT_USTACK_CUT,	     /* user stack copy truncated at the size limit */
	MLPROF_STAT_KSTACK_ERR,	     /* bpf_get_stack failed */
	MLPROF_STAT_NO_REGS,	     /* no user registers (kernel thread or exiting task) */
	MLPROF_STAT_VMA_MISS,	     /* bpf_find_vma could not bound the stack: fallback used */
	MLPROF_STAT_PROC_EVENTS,     /* exec/exit/fork events submitted */
	MLPROF_STAT_PROC_RB_FULL,    /* exec/exit/fork events lost to a full ring buffer */
	MLPROF_STAT_PY_SAMPLES,	     /* samples of Python processes that carry Python frames */
	MLPROF_STAT_PY_NO_TSTATE,    /* ... of threads without a Python thread state */
	MLPROF_STAT_PY_NO_FRAME,     /* ... of threads with a thread state but no current frame */
	MLPROF_STAT_PY_READ_ERR,     /* frame walks stopped by a faulting read */
	MLPROF_STAT_PY_TRUNCATED,    /* frame walks cut at MLPROF_MAX_PYFRAMES */
	MLPROF_STAT_PY_TID_MISMATCH, /* TSS slot held another thread's state */
	MLPROF_STAT_OFFCPU_SWITCHES, /* switch-outs of profiled threads seen */
	MLPROF_STAT_OFFCPU_CAPTURED, /* ... whose stack was captured (sampled) */
	MLPROF_STAT_OFFCPU_CAPPED,   /* ... not captured: per-CPU rate cap reached */
	MLPROF_STAT_OFFCPU_SHORT,    /* captured intervals shorter than the minimum */
	MLPROF_STAT_OFFCPU_END_LOST, /* interval ends lost to a full ring buffer */
	MLPROF_STAT_CUDA_EVENTS,     /* CUDA/NCCL API calls seen by the uprobes */
	MLPROF_STAT_CUDA_CAPTURED,   /* ... whose stack was captured (sampled, weighted) */
	MLPROF_STAT_CUDA_CAPPED,     /* ... not captured: per-CPU rate cap reached */
	MLPROF_STAT_CUDA_LOST,	     /* name/free/end events lost to a full ring buffer */
	MLPROF_STAT_MEM_SAMPLES,     /* memory-growth stacks captured */
	MLPROF_STAT_MEM_LOST,	     /* memory release events lost to a full ring buffer */
	MLPROF_STAT_CUDA_RT_NESTED,  /* driver launches made by a runtime launch (not counted) */
	MLPROF_STAT_VMA_LOOKUPS,     /* bpf_find_vma calls by captures (stack, fault address) */
	MLPROF_STAT_MEM_CAPPED,	     /* memory stacks not captured: per-CPU rate cap reached */
	MLPROF_STAT_CUDA_HOLDS,	     /* processes stopped at a CUDA/NCCL library mmap (held) */
	MLPROF_STAT_HEAP_SAMPLED,    /* heap allocations sampled (stack captured) */
	MLPROF_STAT_HEAP_LIVE_FULL,  /* ... not tracked until their free: the live table was full */
	MLPROF_STAT_HEAP_LOST,	     /* heap end/free events lost to a full ring buffer */
	MLPROF_STAT_TORCH_LOST,	     /* PyTorch scope events lost to a full ring buffer */
	MLPROF_STAT_TENSOR_LIVE_FULL, /* sampled tensors not tracked to their free: table full */
	MLPROF_STAT_FAULTS_SEEN,      /* page faults the memory-growth programs saw (attached) */
	MLPROF_STAT__COUNT,
};

/* Pid filter modes (rodata). */
enum mlprof_filter_mode {
	MLPROF_FILTER_ALL = 0,	/* every process on the host */
	MLPROF_FILTER_PIDS = 1, /* only tgids present in the pids map (plus their children when
				 * follow_children is set) */
};

#endif /* MLPROF_SAMPLE_H */
