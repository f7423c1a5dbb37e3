/* SPDX-License-Identifier: Apache-2.0 */
/* CPython struct layouts per version: built-in tables (3.10-3.13) and _Py_DebugOffsets (3.13+). */
#ifndef MLPROF_PYTHON_LAYOUT_H
#define MLPROF_PYTHON_LAYOUT_H

#include <stddef.h>
#include <stdint.h>

#include <mlprof/python.h>

/* Oldest and newest CPython 3 minor versions mlprof reads frames of. */
#define PY_MINOR_MIN 10
#define PY_MINOR_MAX 14

/* Everything mlprof needs to know about one interpreter version's memory layout. */
struct py_layout {
	int minor;		   /* 3.<minor> */
	struct mlprof_py_proc bpf; /* walker offsets (addresses are filled per process) */
	uint64_t tss_off;	   /* offset of Py_tss_t autoTSSkey in _PyRuntime; 0 = none */
	/* objects read by user space (bytes) */
	uint16_t ob_type;	   /* PyObject -> ob_type */
	uint16_t co_filename;	   /* code -> co_filename (str) */
	uint16_t co_name;	   /* code -> co_qualname (3.11+) or co_name (3.10) */
	uint16_t co_firstlineno;   /* code -> co_firstlineno (int) */
	uint16_t co_linetable;	   /* code -> co_linetable (bytes) */
	uint16_t co_code_adaptive; /* code -> first instruction (3.11+); 0 for 3.10 */
	uint16_t co_read;	   /* bytes of a code object to read to cover all of the above */
	uint16_t str_state;	   /* PyASCIIObject -> state bit field */
	uint16_t str_length;	   /* PyASCIIObject -> length (code points) */
	uint16_t str_ascii_data;   /* data of a compact ASCII string (sizeof PyASCIIObject) */
	uint16_t str_compact_data; /* data of a compact non-ASCII string */
	uint16_t bytes_size;	   /* PyBytesObject -> ob_size */
	uint16_t bytes_data;	   /* PyBytesObject -> ob_sval */
};

/*
 * Fills out with the built-in layout of CPython 3.<minor> (10..13, x86-64 release builds,
 * checked against the headers with offsetof()). Returns 0 or -ENOTSUP.
 */
int py_layout__builtin(int minor, struct py_layout *out);

/*
 * Parses the _Py_DebugOffsets block that starts _PyRuntime in 3.13+ (buf: its first len
 * bytes, read from the ELF file) for CPython 3.<minor> (13 or 14). Every offset is checked
 * for plausibility: a block that does not look right (cookie, version, free-threaded build,
 * sizes) is refused. Returns 0, -ENOENT (no cookie), -ENOTSUP (a layout mlprof does not
 * know) or -EINVAL (implausible values).
 */
int py_layout__from_debug_offsets(const uint8_t *buf, size_t len, int minor, struct py_layout *out);

/* Bytes of _PyRuntime to read for py_layout__from_debug_offsets(). */
#define PY_DEBUG_OFFSETS_READ 1024

#endif
