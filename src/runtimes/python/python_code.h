/* SPDX-License-Identifier: Apache-2.0 */
/* CPython code objects read from process memory: names, files, line tables; bounded cache. */
#ifndef MLPROF_PYTHON_CODE_H
#define MLPROF_PYTHON_CODE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct py_layout;
struct pycode_cache;

/* Why a code object could not be named (pycode_stats.failed index). */
enum pycode_fail {
	PYCODE_FAIL_READ = 0, /* process memory unreadable (process gone, page unmapped) */
	PYCODE_FAIL_TYPE,     /* the address no longer holds a code object */
	PYCODE_FAIL_STALE,    /* a different code object now lives at that address */
	PYCODE_FAIL_STRING,   /* name or file name not a readable str */
	PYCODE_FAIL_NOMEM,    /* out of memory */
	PYCODE_FAIL__COUNT,
};

/* Metric label values by enum pycode_fail ("unreadable_stale", ...). */
extern const char *const pycode_fail_names[PYCODE_FAIL__COUNT];

struct pycode_stats {
	uint64_t entries, bytes, evictions, reads, hits;
	uint64_t lt_reads;	 /* line tables read from processes */
	uint64_t lt_too_large;	 /* ... not read: larger than 1 MiB (first lines shown) */
	uint64_t lt_over_budget; /* lines shown as first lines: the sample's read budget spent */
	uint64_t failed[PYCODE_FAIL__COUNT];
};

/* What a frame needs from its code object; strings owned by the cache (see lookup). */
struct pycode_frame {
	const char *name; /* co_qualname (3.11+) / co_name (3.10), UTF-8 */
	const char *file; /* co_filename, UTF-8 */
	uint64_t ident; /* the entry's frame ident (profile/frame.h): same name, file, first_line */
	int first_line; /* co_firstlineno */
	int line;	/* line of the instruction, first_line when unknown */
	int fail;	/* enum pycode_fail, when the lookup failed */
};

/* Creates a cache holding at most max_bytes of decoded code objects. NULL with errno. */
/* Code cache bound when none is given. */
#define PYCODE_DEFAULT_MAX_BYTES (8u << 20)

struct pycode_cache *pycode_cache__new(size_t max_bytes);
void pycode_cache__free(struct pycode_cache *pc);

/*
 * Starts a new sample: entries looked up from now until the next call are never evicted
 * before it, so the strings of every frame of one stack stay valid together.
 */
void pycode_cache__begin_sample(struct pycode_cache *pc);

/*
 * Names the frame of code object `code` (validated by `validator`, see mlprof/python.h)
 * executing instruction `instr` in process pid (process image `image`, struct proc: an exec
 * changes it, mmaps and dlopens do not), with
 * layout l and code_type the runtime address of PyCode_Type in that process. Reads process
 * memory once per code object (process_vm_readv) and caches the decoded result. Returns 0
 * and fills out (strings valid until the next pycode_cache__begin_sample), or -enum
 * pycode_fail - 1 style negative codes: -EFAULT (read), -EINVAL (not a code object /
 * unreadable strings), -ESTALE (validator mismatch).
 */
int pycode_cache__lookup(struct pycode_cache *pc, pid_t pid, uint64_t image,
			 const struct py_layout *l, uint64_t code_type, uint64_t code,
			 uint32_t validator, uint32_t instr, struct pycode_frame *out);

/* Drops every entry of pid (process exited or exec'ed). */
void pycode_cache__forget(struct pycode_cache *pc, pid_t pid);
void pycode_cache__stats(const struct pycode_cache *pc, struct pycode_stats *out);

/*
 * Decodes one str object read from memory: hdr holds at least l->str_compact_data bytes of
 * the object; data is read through read_cb. Exposed for tests. Writes NUL-terminated UTF-8
 * into buf (cap bytes; longer strings are cut at a character boundary). Returns the length
 * or -EINVAL for something that is not a compact, ready str.
 */
typedef int (*pycode_read_cb)(void *ctx, uint64_t addr, void *buf, size_t len);
int pycode__decode_str(const struct py_layout *l, uint64_t addr, pycode_read_cb read_cb, void *ctx,
		       char *buf, size_t cap);

#endif
