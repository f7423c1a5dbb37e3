/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * CPython frame walker, run at sample time in the sampled thread's context: finds the
 * thread's own PyThreadState (TSS slot or the interpreter's thread list), walks its frame
 * chain and appends (code object, instruction, validator, activation-end flag) per frame
 * to the sample record after the user stack copy. User space names the frames later.
 */
#ifndef MLPROF_PYTHON_BPF_H
#define MLPROF_PYTHON_BPF_H

#include <mlprof/python.h>

#include "capture.bpf.h"

/*
 * Python processes to walk: tgid -> walker configuration. Written by user space when it
 * recognizes an interpreter in a process, copied from parent to child at fork (forked
 * workers share the parent's layout), deleted at exec and exit.
 */
struct {
	/*
	 * LRU: a tenant forking thousands of idle Python processes cannot lock others out;
	 * walked processes stay recent, and user space pushes back an evicted one's entry
	 * when its samples come without a walk (python__lost_config).
	 */
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, __u32);
	__type(value, struct mlprof_py_proc);
} py_procs SEC(".maps");

/*
 * Code objects already sent (pid, address) -> validator. A frame whose code object is not
 * here marks the sample MLPROF_SF_PY_NEW, which wakes user space at once: it reads code
 * objects from process memory, and short-lived ones (exec'ed or generated code) must be
 * read before they are freed. LRU: forgetting one costs an early wakeup, nothing else.
 */
struct py_code_key {
	__u32 pid;
	__u32 pad;
	__u64 code;
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 65536);
	__type(key, struct py_code_key);
	__type(value, __u32);
} py_known SEC(".maps");

/* Per-CPU buffer for one frame object's bytes (fields are picked at per-version offsets). */
struct py_buf {
	__u8 b[128];
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct py_buf);
} py_buf SEC(".maps");

_Static_assert(MLPROF_PY_FRAME_READ <= 120, "frame read fits the buffer");
_Static_assert(MLPROF_PY_VAL_READ <= 128 && MLPROF_PY_VAL_READ >= MLPROF_PY_VAL_WORDS * 8,
	       "validator read fits the buffer");

/* Loads a field at a per-version offset from the frame buffer (0 when out of range). */
static __always_inline __u64 pb_u64(const struct py_buf *pb, __u32 off)
{
	if (off > MLPROF_PY_FRAME_READ - 8)
		return 0;
	return *(const __u64 *)&pb->b[off];
}

static __always_inline __u32 pb_u32(const struct py_buf *pb, __u32 off)
{
	if (off > MLPROF_PY_FRAME_READ - 4)
		return 0;
	return *(const __u32 *)&pb->b[off];
}

static __always_inline __u8 pb_u8(const struct py_buf *pb, __u32 off)
{
	if (off > MLPROF_PY_FRAME_READ - 1)
		return 0;
	return pb->b[off];
}

static __always_inline int read_uptr(__u64 *dst, __u64 addr)
{
	*dst = 0;
	if (!addr)
		return -1;
	return bpf_probe_read_user(dst, sizeof(*dst), (const void *)addr);
}

/* Walk state handed to the bpf_loop callbacks. */
struct py_walk {
	struct mlprof_sample *rec;
	const struct mlprof_py_proc *cfg;
	struct py_buf *pb;
	__u64 frame;  /* next frame to read */
	__u64 tstate; /* LIST: candidate thread state */
	__u64 want;   /* LIST: thread id to find */
	__u32 off;    /* byte offset of the frame array from rec->ustack */
	__u32 n;      /* frames written */
	__u32 status; /* enum mlprof_py_status */
	__u32 pad;
};

/* Marks the last frame written as the end of its eval-loop activation. */
static __always_inline void py_mark_end(struct py_walk *w)
{
	struct mlprof_py_frame *f;
	__u32 pos, n = w->n;

	if (n == 0 || n > MLPROF_MAX_PYFRAMES)
		return;
	pos = w->off;
	if (pos > MLPROF_MAX_USTACK)
		return;
	pos += (n - 1) * sizeof(struct mlprof_py_frame);
	f = (void *)&w->rec->ustack[pos];
	f->code |= MLPROF_PYF_ACT_END;
}

static long py_walk_step(__u32 i, void *data)
{
	struct py_walk *w = data;
	const struct mlprof_py_proc *cfg = w->cfg;
	struct mlprof_py_frame *f;
	__u64 code, prev, v = 0, flags = 0;
	__u32 instr, pos, n = w->n;

	if (!w->frame) {
		w->status = MLPROF_PY_OK;
		return 1;
	}
	if (n >= MLPROF_MAX_PYFRAMES) {
		w->status = MLPROF_PY_TRUNCATED;
		return 1;
	}
	if (bpf_probe_read_user(w->pb->b, MLPROF_PY_FRAME_READ, (const void *)w->frame)) {
		w->status = MLPROF_PY_READ_ERR;
		return 1;
	}
	/* 3.14 tags f_executable in its low bits; objects are 16-byte aligned anyway */
	code = pb_u64(w->pb, cfg->fr_code) & ~7ULL;
	prev = pb_u64(w->pb, cfg->fr_prev);
	if (prev == w->frame)
		prev = 0; /* a self-loop would spin to the limit */

	switch (cfg->style) {
	case MLPROF_PY_STYLE_FRAMEOBJ:
		instr = pb_u32(w->pb, cfg->fr_instr);
		flags = MLPROF_PYF_ACT_END;
		break;
	case MLPROF_PY_STYLE_ENTRY:
		instr = (__u32)(pb_u64(w->pb, cfg->fr_instr) - code);
		if (pb_u8(w->pb, cfg->fr_bound))
			flags = MLPROF_PYF_ACT_END;
		break;
	default:
		if (pb_u8(w->pb, cfg->fr_bound) >= 3) {
			/* shim frame of the C stack: ends the activation above it, not shown */
			py_mark_end(w);
			w->frame = prev;
			return 0;
		}
		instr = (__u32)(pb_u64(w->pb, cfg->fr_instr) - code);
		break;
	}
	if (!code || code >= (1ULL << 47)) {
		w->status = MLPROF_PY_READ_ERR;
		return 1;
	}
	/* the frame's fields are taken: the buffer now holds the code object's words */
	if (bpf_probe_read_user(w->pb->b, MLPROF_PY_VAL_READ, (const void *)(code + cfg->co_val)))
		v = 0;
	else
		v = mlprof_py_validator((const __u64 *)w->pb->b, cfg->co_val_words);

	pos = w->off;
	if (pos > MLPROF_MAX_USTACK)
		return 1;
	pos += n * sizeof(struct mlprof_py_frame);
	f = (void *)&w->rec->ustack[pos];
	f->code = code | flags;
	f->instr = instr;
	f->validator = (__u32)v;
	{
		struct py_code_key key = {.pid = w->rec->pid, .code = code};
		__u32 *known = bpf_map_lookup_elem(&py_known, &key);
		__u32 val = (__u32)v;

		if (!known || *known != val) {
			w->rec->flags |= MLPROF_SF_PY_NEW;
			bpf_map_update_elem(&py_known, &key, &val, BPF_ANY);
		}
	}
	w->n = n + 1;
	w->frame = prev;
	return 0;
}

/* LIST: checks one thread state of the interpreter's list against the wanted thread. */
static long py_find_thread(__u32 i, void *data)
{
	struct py_walk *w = data;
	__u64 tid = 0;

	if (!w->tstate)
		return 1;
	if (read_uptr(&tid, w->tstate + w->cfg->ts_tid)) {
		w->tstate = 0;
		return 1;
	}
	if (tid == w->want)
		return 1;
	if (read_uptr(&w->tstate, w->tstate + w->cfg->ts_next))
		w->tstate = 0;
	return 0;
}

/*
 * Returns the sampled thread's PyThreadState, or 0 with w->status saying why.
 * TSS: the runtime's autoTSSkey slot in glibc's pthread TSD array at fsbase (set for
 * every thread that ever held the GIL, and still set while it has released it).
 */
static __always_inline __u64 py_thread_state(struct py_walk *w, struct task_struct *task, __u32 tid)
{
	const struct mlprof_py_proc *cfg = w->cfg;
	__u64 fsbase = BPF_CORE_READ(task, thread.fsbase);
	__u64 tstate = 0, slot, block, got = 0;
	struct {
		__s32 initialized;
		__u32 key;
	} tss;

	w->want = cfg->tid_is_pthread ? fsbase : tid;
	if (cfg->tstate_how == MLPROF_PY_TSTATE_LIST) {
		__u64 interp = 0;

		if (read_uptr(&interp, cfg->runtime_addr + cfg->rt_interps) || !interp ||
		    read_uptr(&w->tstate, interp + cfg->is_threads)) {
			w->status = MLPROF_PY_READ_ERR;
			return 0;
		}
		bpf_loop(MLPROF_PY_MAX_THREADS, py_find_thread, w, 0);
		if (!w->tstate)
			w->status = MLPROF_PY_NO_TSTATE;
		return w->tstate;
	}

	if (!fsbase || bpf_probe_read_user(&tss, sizeof(tss), (const void *)cfg->tss_addr)) {
		w->status = MLPROF_PY_READ_ERR;
		return 0;
	}
	if (!tss.initialized) {
		w->status = MLPROF_PY_NO_TSTATE;
		return 0;
	}
	if (tss.key < 32) {
		slot = fsbase + cfg->tsd_off + tss.key * 16 + 8;
	} else if (tss.key < 1024) {
		/* second level: specific[key / 32] points at a block of 32 entries */
		if (read_uptr(&block, fsbase + cfg->tsd_off + 32 * 16 + (tss.key / 32) * 8) ||
		    !block) {
			w->status = MLPROF_PY_NO_TSTATE;
			return 0;
		}
		slot = block + (tss.key % 32) * 16 + 8;
	} else {
		w->status = MLPROF_PY_NO_TSTATE;
		return 0;
	}
	if (read_uptr(&tstate, slot)) {
		w->status = MLPROF_PY_READ_ERR;
		return 0;
	}
	if (!tstate) {
		w->status = MLPROF_PY_NO_TSTATE;
		return 0;
	}
	if (read_uptr(&got, tstate + cfg->ts_tid) || got != w->want) {
		w->status = MLPROF_PY_TID_MISMATCH;
		return 0;
	}
	return tstate;
}

/*
 * Appends the Python frames of the current thread to rec (after ustack_len bytes of stack)
 * when its process is a known Python process. Sets rec->py_nframes and rec->py_status and
 * returns the bytes appended.
 */
static __always_inline __u32 py_capture(struct mlprof_sample *rec, struct task_struct *task,
					__u32 tgid, __u32 tid, __u32 ustack_len)
{
	struct py_walk w = {};
	__u32 zero = 0;
	__u64 tstate, frame = 0;

	rec->py_nframes = 0;
	rec->py_status = MLPROF_PY_NONE;
	w.cfg = bpf_map_lookup_elem(&py_procs, &tgid);
	if (!w.cfg)
		return 0;
	w.pb = bpf_map_lookup_elem(&py_buf, &zero);
	if (!w.pb)
		return 0;
	w.rec = rec;
	w.off = MLPROF_PY_FRAMES_OFF(ustack_len);
	if (w.off > MLPROF_MAX_USTACK)
		return 0;

	tstate = py_thread_state(&w, task, tid);
	if (!tstate)
		goto out;
	if (read_uptr(&frame, tstate + w.cfg->ts_frame)) {
		w.status = MLPROF_PY_READ_ERR;
		goto out;
	}
	if (frame && w.cfg->cframe_frame != MLPROF_PY_OFF_NONE &&
	    read_uptr(&frame, frame + w.cfg->cframe_frame)) {
		w.status = MLPROF_PY_READ_ERR;
		goto out;
	}
	if (!frame) {
		w.status = MLPROF_PY_NO_FRAME;
		goto out;
	}
	w.frame = frame;
	w.status = MLPROF_PY_TRUNCATED;
	bpf_loop(MLPROF_MAX_PYFRAMES + 1, py_walk_step, &w, 0);
	/* the outermost frame ends the outermost activation */
	if (w.status == MLPROF_PY_OK)
		py_mark_end(&w);
out:
	switch (w.status) {
	case MLPROF_PY_NO_TSTATE:
		stat_inc(MLPROF_STAT_PY_NO_TSTATE);
		break;
	case MLPROF_PY_NO_FRAME:
		stat_inc(MLPROF_STAT_PY_NO_FRAME);
		break;
	case MLPROF_PY_READ_ERR:
		stat_inc(MLPROF_STAT_PY_READ_ERR);
		break;
	case MLPROF_PY_TRUNCATED:
		stat_inc(MLPROF_STAT_PY_TRUNCATED);
		break;
	case MLPROF_PY_TID_MISMATCH:
		stat_inc(MLPROF_STAT_PY_TID_MISMATCH);
		break;
	}
	if (w.n)
		stat_inc(MLPROF_STAT_PY_SAMPLES);
	rec->py_status = w.status;
	rec->py_nframes = w.n;
	return w.n ? w.off - ustack_len + w.n * sizeof(struct mlprof_py_frame) : 0;
}

/* Fork: a child runs the parent's interpreter image at the same addresses. */
static __always_inline void py_on_fork(__u32 ptgid, __u32 ctgid)
{
	struct mlprof_py_proc *cfg = bpf_map_lookup_elem(&py_procs, &ptgid);

	if (cfg)
		bpf_map_update_elem(&py_procs, &ctgid, cfg, BPF_ANY);
}

/* Exec or exit: the image is gone (user space re-recognizes an exec'ed interpreter). */
static __always_inline void py_forget(__u32 tgid)
{
	bpf_map_delete_elem(&py_procs, &tgid);
}

#endif /* MLPROF_PYTHON_BPF_H */
