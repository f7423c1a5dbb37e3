// SPDX-License-Identifier: Apache-2.0
/* CPython struct layouts per version: built-in tables (3.10-3.13) and _Py_DebugOffsets (3.13+). */
#include "runtimes/python/python_layout.h"

#include <errno.h>
#include <stdbool.h>
#include <string.h>

/*
 * Built-in layouts of x86-64 release builds, from offsetof() against the headers of
 * CPython 3.10.13, 3.11.7, 3.12.1 and 3.13.0 (stable within a minor version).
 */
struct builtin {
	int minor;
	uint16_t tss_off, style, ts_frame, cframe_frame, ts_tid, tid_is_pthread;
	uint16_t fr_code, fr_prev, fr_instr, fr_bound;
	uint16_t co_filename, co_name, co_firstlineno, co_linetable, co_code_adaptive;
	uint16_t str_ascii_data, str_compact_data;
};

static const struct builtin builtins[] = {
	{10, 584, MLPROF_PY_STYLE_FRAMEOBJ, 24, MLPROF_PY_OFF_NONE, 176, 1, 32, 24, 96,
	 MLPROF_PY_OFF_NONE, 104, 112, 40, 120, 0, 48, 72},
	{11, 592, MLPROF_PY_STYLE_ENTRY, 56, 8, 160, 0, 32, 48, 56, 68, 112, 128, 72, 136, 184, 48,
	 72},
	{12, 1544, MLPROF_PY_STYLE_SHIM, 56, 0, 144, 0, 0, 8, 56, 70, 112, 128, 68, 136, 192, 40,
	 56},
	{13, 2160, MLPROF_PY_STYLE_SHIM, 72, MLPROF_PY_OFF_NONE, 160, 0, 0, 8, 56, 70, 112, 128, 68,
	 136, 200, 40, 56},
};

/*
 * The validator covers co_firstlineno up to the last of the name and file name pointers
 * (fields fixed at creation; 3.12+ co_version lies in between).
 */
static void set_validator(struct py_layout *l)
{
	uint16_t end = l->co_filename > l->co_name ? l->co_filename : l->co_name;

	l->bpf.co_val = l->co_firstlineno;
	l->bpf.co_val_words = (uint16_t)((end + 8 - l->co_firstlineno + 7) / 8);
	if (l->bpf.co_val_words > MLPROF_PY_VAL_WORDS)
		l->bpf.co_val_words = MLPROF_PY_VAL_WORDS;
}

/* Sets co_read to cover every code-object field read by user space. */
static void set_co_read(struct py_layout *l)
{
	uint16_t m = l->co_filename;

	if (l->co_name > m)
		m = l->co_name;
	if (l->co_firstlineno > m)
		m = l->co_firstlineno;
	if (l->co_linetable > m)
		m = l->co_linetable;
	if ((uint16_t)(l->bpf.co_val + l->bpf.co_val_words * 8) > m + 8)
		m = (uint16_t)(l->bpf.co_val + l->bpf.co_val_words * 8 - 8);
	l->co_read = m + 8;
}

static void common_defaults(struct py_layout *l)
{
	l->ob_type = 8;
	l->str_length = 16;
	l->str_state = 32;
	l->bytes_size = 16;
	l->bytes_data = 32;
	l->bpf.tsd_off = 0x310;
	l->bpf.rt_interps = MLPROF_PY_OFF_NONE;
	l->bpf.is_threads = MLPROF_PY_OFF_NONE;
	l->bpf.ts_next = MLPROF_PY_OFF_NONE;
}

/* See python_layout.h. */
int py_layout__builtin(int minor, struct py_layout *out)
{
	for (size_t i = 0; i < sizeof(builtins) / sizeof(builtins[0]); i++) {
		const struct builtin *b = &builtins[i];

		if (b->minor != minor)
			continue;
		memset(out, 0, sizeof(*out));
		common_defaults(out);
		out->minor = minor;
		out->tss_off = b->tss_off;
		out->bpf.version = 0x0300 | (uint32_t)minor;
		out->bpf.style = b->style;
		out->bpf.tstate_how = MLPROF_PY_TSTATE_TSS;
		out->bpf.ts_frame = b->ts_frame;
		out->bpf.cframe_frame = b->cframe_frame;
		out->bpf.ts_tid = b->ts_tid;
		out->bpf.tid_is_pthread = b->tid_is_pthread;
		out->bpf.fr_code = b->fr_code;
		out->bpf.fr_prev = b->fr_prev;
		out->bpf.fr_instr = b->fr_instr;
		out->bpf.fr_bound = b->fr_bound;
		out->co_filename = b->co_filename;
		out->co_name = b->co_name;
		out->co_firstlineno = b->co_firstlineno;
		out->co_linetable = b->co_linetable;
		out->co_code_adaptive = b->co_code_adaptive;
		out->str_ascii_data = b->str_ascii_data;
		out->str_compact_data = b->str_compact_data;
		set_validator(out);
		set_co_read(out);
		return 0;
	}
	return -ENOTSUP;
}

/*
 * Word indexes (u64 slots after the 8-byte cookie counted as slot 0) of the fields mlprof
 * uses in each known _Py_DebugOffsets layout.
 */
struct dbg_layout {
	int minor;
	unsigned int words; /* size of the block in u64 words (at least up to unicode) */
	unsigned int version, free_threaded, interps_head, threads_head, ts_next, ts_frame,
		ts_native_tid, fr_size, fr_prev, fr_exec, fr_instr, fr_owner, co_size, co_filename,
		co_qualname, co_linetable, co_firstlineno, co_adaptive, ob_type, bytes_size,
		bytes_sval, str_state, str_length, str_ascii_size;
};

static const struct dbg_layout dbg_layouts[] = {
	/* 3.13: Include/internal/pycore_runtime.h */
	{13, 73, 1,  2,	 5,  9,	 21, 23, 25, 28, 29, 30, 31,
	 33, 34, 35, 37, 38, 39, 43, 45, 65, 66, 68, 69, 70},
	/* 3.14: Include/internal/pycore_debug_offsets.h (threads_main, set_object, tlbc added) */
	{14, 81, 1,  2,	 5,  9,	 24, 26, 28, 31, 32, 33, 34,
	 36, 39, 40, 42, 43, 44, 48, 51, 75, 76, 78, 79, 80},
};

static bool small_off(uint64_t v, uint64_t max)
{
	return v < max && v < MLPROF_PY_OFF_NONE;
}

/* See python_layout.h. */
int py_layout__from_debug_offsets(const uint8_t *buf, size_t len, int minor, struct py_layout *out)
{
	const struct dbg_layout *d = NULL;
	uint64_t w[96];
	uint64_t ver;

	if (len < 16 || memcmp(buf, "xdebugpy", 8) != 0)
		return -ENOENT;
	for (size_t i = 0; i < sizeof(dbg_layouts) / sizeof(dbg_layouts[0]); i++)
		if (dbg_layouts[i].minor == minor)
			d = &dbg_layouts[i];
	if (!d)
		return -ENOTSUP;
	if (len < d->words * 8)
		return -EINVAL;
	memcpy(w, buf, d->words * 8);
	ver = w[d->version];
	/* PY_VERSION_HEX: 0x030D00F0 for 3.13.0 final */
	if (((ver >> 24) & 0xff) != 3 || (int)((ver >> 16) & 0xff) != minor)
		return -EINVAL;
	if (w[d->free_threaded])
		return -ENOTSUP; /* free-threaded builds keep other frame and object layouts */

	/* every offset we hand to BPF must be inside its object and inside the read window */
	if (!small_off(w[d->fr_prev] + 8, w[d->fr_size] + 1) ||
	    !small_off(w[d->fr_exec] + 8, w[d->fr_size] + 1) ||
	    !small_off(w[d->fr_instr] + 8, w[d->fr_size] + 1) ||
	    !small_off(w[d->fr_owner], w[d->fr_size]) || w[d->fr_size] > 256 ||
	    !small_off(w[d->fr_prev] + 8, MLPROF_PY_FRAME_READ + 1) ||
	    !small_off(w[d->fr_exec] + 8, MLPROF_PY_FRAME_READ + 1) ||
	    !small_off(w[d->fr_instr] + 8, MLPROF_PY_FRAME_READ + 1) ||
	    !small_off(w[d->fr_owner] + 1, MLPROF_PY_FRAME_READ + 1) ||
	    !small_off(w[d->ts_frame], 4096) || !small_off(w[d->ts_native_tid], 4096) ||
	    !small_off(w[d->ts_next], 4096) || !small_off(w[d->threads_head], 65536) ||
	    !small_off(w[d->interps_head], 65536) || w[d->co_size] > 1024 ||
	    !small_off(w[d->co_filename] + 8, w[d->co_size] + 1) ||
	    !small_off(w[d->co_qualname] + 8, w[d->co_size] + 1) ||
	    !small_off(w[d->co_linetable] + 8, w[d->co_size] + 1) ||
	    !small_off(w[d->co_firstlineno] + 8, w[d->co_size] + 1) ||
	    !small_off(w[d->co_adaptive], w[d->co_size] + 1) || w[d->ob_type] != 8 ||
	    /* 8-byte fields read inside 64-byte header copies (python_code.c) */
	    w[d->bytes_size] + 8 > w[d->bytes_sval] || w[d->bytes_sval] + 8 > 64 ||
	    w[d->str_state] + 4 > 64 || w[d->str_length] + 8 > 64 ||
	    (w[d->str_ascii_size] != 40 && w[d->str_ascii_size] != 48))
		return -EINVAL;

	memset(out, 0, sizeof(*out));
	common_defaults(out);
	out->minor = minor;
	out->bpf.version = 0x0300 | (uint32_t)minor;
	out->bpf.style = MLPROF_PY_STYLE_SHIM;
	out->bpf.tstate_how = MLPROF_PY_TSTATE_LIST;
	out->bpf.ts_frame = (uint16_t)w[d->ts_frame];
	out->bpf.cframe_frame = MLPROF_PY_OFF_NONE;
	out->bpf.ts_tid = (uint16_t)w[d->ts_native_tid];
	out->bpf.fr_code = (uint16_t)w[d->fr_exec];
	out->bpf.fr_prev = (uint16_t)w[d->fr_prev];
	out->bpf.fr_instr = (uint16_t)w[d->fr_instr];
	out->bpf.fr_bound = (uint16_t)w[d->fr_owner];
	out->bpf.rt_interps = (uint16_t)w[d->interps_head];
	out->bpf.is_threads = (uint16_t)w[d->threads_head];
	out->bpf.ts_next = (uint16_t)w[d->ts_next];
	out->co_filename = (uint16_t)w[d->co_filename];
	out->co_name = (uint16_t)w[d->co_qualname];
	out->co_firstlineno = (uint16_t)w[d->co_firstlineno];
	out->co_linetable = (uint16_t)w[d->co_linetable];
	out->co_code_adaptive = (uint16_t)w[d->co_adaptive];
	out->bytes_size = (uint16_t)w[d->bytes_size];
	out->bytes_data = (uint16_t)w[d->bytes_sval];
	out->str_state = (uint16_t)w[d->str_state];
	out->str_length = (uint16_t)w[d->str_length];
	out->str_ascii_data = (uint16_t)w[d->str_ascii_size];
	/* PyCompactUnicodeObject adds utf8_length and utf8 to PyASCIIObject */
	out->str_compact_data = out->str_ascii_data + 16;
	set_validator(out);
	set_co_read(out);
	return 0;
}
