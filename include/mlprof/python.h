/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* Layouts shared by the BPF CPython frame walker and user space: per-process config, frames. */
#ifndef MLPROF_SHARED_PYTHON_H
#define MLPROF_SHARED_PYTHON_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

/* Field-order rules: as in mlprof/sample.h (fixed-width fields, explicit padding). */

/* Python frames read per sample; a deeper stack ends in MLPROF_PY_TRUNCATED. */
#define MLPROF_MAX_PYFRAMES 192
/* Bytes of a frame object read at once (covers every field the walker needs). */
#define MLPROF_PY_FRAME_READ 112
/* Threads looked at when the thread state is found by walking the interpreter's list. */
#define MLPROF_PY_MAX_THREADS 128

/* How frames chain and where one eval-loop activation ends (struct mlprof_py_proc.style). */
enum mlprof_py_style {
	/* 3.10: PyFrameObject chain; every frame is one _PyEval_EvalFrameDefault call */
	MLPROF_PY_STYLE_FRAMEOBJ = 1,
	/* 3.11: _PyInterpreterFrame chain; a frame with is_entry set ends an activation */
	MLPROF_PY_STYLE_ENTRY = 2,
	/* 3.12+: _PyInterpreterFrame chain; a shim frame (owner >= 3) ends an activation */
	MLPROF_PY_STYLE_SHIM = 3,
};

/* How the walker finds the sampled thread's own PyThreadState. */
enum mlprof_py_tstate_how {
	/* glibc pthread TSD slot of the runtime's autoTSSkey (3.10-3.13), read via fsbase */
	MLPROF_PY_TSTATE_TSS = 1,
	/* walk interpreters_head -> threads_head -> next matching native_thread_id (3.14) */
	MLPROF_PY_TSTATE_LIST = 2,
};

#define MLPROF_PY_OFF_NONE 0xffff

/*
 * Per-process walker configuration, BPF map py_procs (tgid -> this). Written by user space
 * when it recognizes an interpreter in a process; copied to children at fork. All offsets
 * are in bytes; MLPROF_PY_OFF_NONE marks a step that does not exist in that version.
 */
struct mlprof_py_proc {
	__u64 tss_addr;	    /* TSS: runtime address of the Py_tss_t {int initialized; int key} */
	__u64 runtime_addr; /* LIST: runtime address of _PyRuntime */
	__u32 version;	    /* PY_VERSION_HEX >> 16, e.g. 0x030b for 3.11 */
	__u16 style;	    /* enum mlprof_py_style */
	__u16 tstate_how;   /* enum mlprof_py_tstate_how */
	__u16 tsd_off;	    /* glibc: offset of pthread specific_1stblock from fsbase */
	__u16 ts_frame;	    /* tstate -> frame (3.10) / cframe (3.11, 3.12) / current_frame */
	__u16 cframe_frame; /* cframe -> current_frame, or OFF_NONE when ts_frame is the frame */
	__u16 ts_tid;	    /* tstate -> native_thread_id (3.11+) or thread_id (pthread_t, 3.10) */
	__u16 fr_code;	    /* frame -> code object (f_code / f_executable) */
	__u16 fr_prev;	    /* frame -> previous frame (f_back / previous) */
	__u16 fr_instr;	    /* frame -> f_lasti (int, 3.10) / prev_instr / instr_ptr pointer */
	__u16 fr_bound;	    /* frame -> is_entry (ENTRY) or owner (SHIM) byte */
	__u16 co_val;	    /* code -> first of co_val_words u64 hashed into the validator */
	__u16 rt_interps;   /* LIST: _PyRuntime -> interpreters.head */
	__u16 is_threads;   /* LIST: interpreter -> threads.head */
	__u16 ts_next;	    /* LIST: tstate -> next */
	__u16 tid_is_pthread; /* ts_tid holds pthread_self() (compare with fsbase), not a tid */
	__u16 co_val_words;   /* u64 words at co_val hashed (<= MLPROF_PY_VAL_WORDS) */
	__u16 pad[2];
};

/* mlprof_py_frame.code high byte (user-space addresses stay below 2^47). */
#define MLPROF_PYF_ACT_END   (1ULL << 56) /* last frame of its eval-loop activation */
#define MLPROF_PYF_CODE_MASK ((1ULL << 56) - 1)

/* Bytes read at code + co_val for the validator, and the most words hashed. */
#define MLPROF_PY_VAL_READ  96
#define MLPROF_PY_VAL_WORDS 12

/*
 * The validator of a code object: a hash of words that never change after creation and
 * differ between code objects (first line, name, file name and qualified name pointers,
 * co_version where it exists). Computed the same way by BPF and user space.
 */
static __inline __u32 mlprof_py_validator(const __u64 *words, __u32 n)
{
	__u64 h = 0xcbf29ce484222325ULL;

	for (__u32 i = 0; i < MLPROF_PY_VAL_WORDS; i++) {
		if (i >= n)
			break;
		h = (h ^ words[i]) * 0x100000001b3ULL;
	}
	return (__u32)(h ^ (h >> 32));
}

/*
 * One Python frame as read at sample time, leaf first. instr: 3.10 f_lasti (code units,
 * -1 before the first instruction); 3.11+ the instruction pointer minus the code object's
 * address (bytes; user space subtracts co_code_adaptive). validator: mlprof_py_validator()
 * of the code object, so that a code object freed and replaced at the same address is not
 * taken for the old one.
 */
struct mlprof_py_frame {
	__u64 code; /* code object address | MLPROF_PYF_* flags */
	__u32 instr;
	__u32 validator;
};

/* mlprof_sample.py_status: what the walker found (one value per sample). */
enum mlprof_py_status {
	MLPROF_PY_NONE = 0,	    /* not a Python process (no walker config) */
	MLPROF_PY_OK = 1,	    /* frames read to the bottom of the thread's chain */
	MLPROF_PY_NO_TSTATE = 2,    /* this thread has no thread state (not a Python thread) */
	MLPROF_PY_TRUNCATED = 3,    /* more than MLPROF_MAX_PYFRAMES frames: outermost missing */
	MLPROF_PY_READ_ERR = 4,	    /* a read faulted (non-resident page): frames read so far */
	MLPROF_PY_TID_MISMATCH = 5, /* the TSS slot held another thread's state: ignored */
	MLPROF_PY_NO_FRAME = 6,	    /* thread state without a current frame (idle in C) */
	MLPROF_PY__COUNT,
};

#endif /* MLPROF_SHARED_PYTHON_H */
