/* SPDX-License-Identifier: Apache-2.0 */
/* The symbolized frame: what unwinding + symbolization hand to the profile aggregator. */
#ifndef MLPROF_FRAME_H
#define MLPROF_FRAME_H

#include <stdint.h>

enum frame_kind {
	FRAME_NATIVE = 0,  /* user-space machine code */
	FRAME_KERNEL,	   /* kernel text ([k] in flame graphs) */
	FRAME_PYTHON,	   /* interpreted Python frame (function/file/line, no address) */
	FRAME_CUDA_KERNEL, /* a GPU kernel launched from the frames below it */
	FRAME_TRUNCATED,   /* explicit marker: the stack was cut short here (reason in function) */
	FRAME_PROCESS,	   /* synthetic root: process name (used by -a flame graphs) */
};

/*
 * Identifies the mapped object a native frame belongs to; copied into pprof mappings.
 * Strings are owned by whoever produced the frame and must outlive profile__add()
 * (the profile interns its own copies).
 */
struct frame_mapping {
	uint64_t start;	      /* mapping start in the process address space */
	uint64_t limit;	      /* mapping end (exclusive) */
	uint64_t file_offset; /* file offset that start maps */
	const char *file;     /* path as seen in /proc/PID/maps (NULL for anonymous/kernel) */
	const char *build_id; /* lowercase hex GNU build id, NULL when unknown */
};

/*
 * One frame, leaf first in an array. For native frames addr is the absolute address
 * in the process (return addresses already adjusted by -1 for callers so they point
 * into the call instruction). function/file may be NULL when unknown: the frame then
 * still carries mapping + address so a backend can symbolize it later.
 */
struct frame {
	enum frame_kind kind;
	uint32_t line;			 /* source line, 0 when unknown */
	uint32_t start_line;		 /* first line of the function (python), 0 when unknown */
	uint64_t addr;			 /* absolute address (native/kernel), 0 otherwise */
	const char *function;		 /* demangled function name, or NULL */
	const char *file;		 /* source file, or NULL */
	const struct frame_mapping *map; /* NULL for kernel/python/synthetic frames */
	/*
	 * The producer's identity for what the frame says, 0 when it gives none: frames of one
	 * kind with equal non-zero ident, addr and line have equal function, file, start_line
	 * and map (the same struct, its contents unchanged). An ident is never given to other
	 * contents (frame__new_ident), so the profile can remember a frame's location by it
	 * instead of hashing and comparing its strings.
	 */
	uint64_t ident;
};

/* A new frame ident, unique in this process (thread-safe, never 0). */
uint64_t frame__new_ident(void);

#endif
