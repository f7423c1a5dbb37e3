// SPDX-License-Identifier: Apache-2.0
/*
 * Unit tests for the CPython support that needs no BPF: per-version layouts (the 3.13 table
 * against a real interpreter's _Py_DebugOffsets, hostile debug-offset blocks), str decoding,
 * and placing Python frames on native eval-loop frames.
 */
#include <errno.h>
#include <glob.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "runtimes/python/python_code.h"
#include "runtimes/python/python_layout.h"
#include "runtimes/python/python_stack.h"
#include "symbolize/elf.h"
#include "symbolize/elf_lookup.h"

/* ---- layouts ---- */

static void test_builtin_layouts(void)
{
	struct py_layout l;

	for (int m = PY_MINOR_MIN; m <= 13; m++) {
		CHECK_INT(py_layout__builtin(m, &l), 0);
		CHECK_INT(l.minor, m);
		CHECK(l.co_read <= 512 && l.co_read > l.co_linetable, "co_read %u", l.co_read);
		CHECK(l.bpf.fr_prev + 8 <= MLPROF_PY_FRAME_READ, "fr_prev in read window");
		CHECK(l.bpf.fr_instr + 8 <= MLPROF_PY_FRAME_READ, "fr_instr in read window");
	}
	CHECK_INT(py_layout__builtin(9, &l), -ENOTSUP);
	CHECK_INT(py_layout__builtin(14, &l), -ENOTSUP);
	/* values checked with offsetof() against the pyenv headers */
	py_layout__builtin(10, &l);
	CHECK_INT(l.tss_off, 584);
	CHECK_INT(l.bpf.style, MLPROF_PY_STYLE_FRAMEOBJ);
	CHECK_INT(l.bpf.fr_instr, 96);
	CHECK_INT(l.bpf.tid_is_pthread, 1);
	py_layout__builtin(11, &l);
	CHECK_INT(l.bpf.fr_bound, 68);
	CHECK_INT(l.co_code_adaptive, 184);
	py_layout__builtin(12, &l);
	CHECK_INT(l.tss_off, 1544);
	CHECK_INT(l.co_code_adaptive, 192);
	py_layout__builtin(13, &l);
	CHECK_INT(l.tss_off, 2160);
	CHECK_INT(l.bpf.ts_frame, 72);
	CHECK_INT(l.co_code_adaptive, 200);
}

/* Reads _PyRuntime's first bytes from a real libpython3.13 and parses its debug offsets. */
static void test_debug_offsets_real(void)
{
	glob_t g;
	int tested = 0;

	if (glob("/root/.pyenv/versions/3.13.*/lib/libpython3.13.so.1.0", 0, NULL, &g) != 0) {
		printf("test_python: no libpython3.13 here: real _Py_DebugOffsets not checked\n");
		return;
	}
	for (size_t i = 0; i < g.gl_pathc; i++) {
		struct elf_file *ef = elf_file__open(g.gl_pathv[i]);
		uint8_t buf[PY_DEBUG_OFFSETS_READ];
		struct py_layout dbg, bi;
		uint64_t rt;

		CHECK(ef != NULL, "open %s", g.gl_pathv[i]);
		if (!ef)
			continue;
		CHECK_INT(elf_file__find_symbol(ef, "_PyRuntime", &rt, NULL), 0);
		CHECK_INT(elf_file__read_vaddr(ef, rt, buf, sizeof(buf)), 0);
		CHECK_INT(py_layout__from_debug_offsets(buf, sizeof(buf), 13, &dbg), 0);
		py_layout__builtin(13, &bi);
		CHECK_INT(dbg.bpf.ts_frame, bi.bpf.ts_frame);
		CHECK_INT(dbg.bpf.ts_tid, bi.bpf.ts_tid);
		CHECK_INT(dbg.bpf.fr_code, bi.bpf.fr_code);
		CHECK_INT(dbg.bpf.fr_prev, bi.bpf.fr_prev);
		CHECK_INT(dbg.bpf.fr_instr, bi.bpf.fr_instr);
		CHECK_INT(dbg.bpf.fr_bound, bi.bpf.fr_bound);
		CHECK_INT(dbg.co_filename, bi.co_filename);
		CHECK_INT(dbg.co_name, bi.co_name);
		CHECK_INT(dbg.co_linetable, bi.co_linetable);
		CHECK_INT(dbg.co_firstlineno, bi.co_firstlineno);
		CHECK_INT(dbg.co_code_adaptive, bi.co_code_adaptive);
		CHECK_INT(dbg.str_ascii_data, bi.str_ascii_data);
		CHECK_INT(dbg.bpf.tstate_how, MLPROF_PY_TSTATE_LIST);
		CHECK(dbg.bpf.rt_interps != MLPROF_PY_OFF_NONE && dbg.bpf.is_threads != 0,
		      "thread list offsets");
		/* the same block claims another version: refused */
		CHECK_INT(py_layout__from_debug_offsets(buf, sizeof(buf), 14, &dbg), -EINVAL);
		/*
		 * hostile blocks: 8-byte fields declared at offsets whose 8 bytes end past the
		 * 64-byte header copies (bytes object size, word 65 in the 3.13 layout; str
		 * length, word 69) were read up to 7 bytes past them
		 */
		{
			static const unsigned int words[] = {65, 69};
			uint8_t bad[sizeof(buf)];
			uint64_t at = 63;

			for (size_t k = 0; k < sizeof(words) / sizeof(words[0]); k++) {
				memcpy(bad, buf, sizeof(bad));
				memcpy(bad + words[k] * 8, &at, 8);
				CHECK_INT(py_layout__from_debug_offsets(bad, sizeof(bad), 13, &dbg),
					  -EINVAL);
			}
		}
		/* bad cookie, offsets past the frame, short buffer */
		buf[0] ^= 1;
		CHECK_INT(py_layout__from_debug_offsets(buf, sizeof(buf), 13, &dbg), -ENOENT);
		buf[0] ^= 1;
		{
			uint64_t big = 4096;

			/* interpreter_frame.previous (word 29 in the 3.13 layout) */
			memcpy(buf + 29 * 8, &big, 8);
			CHECK_INT(py_layout__from_debug_offsets(buf, sizeof(buf), 13, &dbg),
				  -EINVAL);
		}
		CHECK_INT(py_layout__from_debug_offsets(buf, 100, 13, &dbg), -EINVAL);
		elf_file__put(ef);
		tested++;
	}
	globfree(&g);
	printf("test_python: _Py_DebugOffsets checked against %d real libpython3.13\n", tested);
}

static void test_debug_offsets_random(void)
{
	uint8_t buf[PY_DEBUG_OFFSETS_READ];
	struct py_layout l;
	unsigned int seed = 12345;
	int accepted = 0;

	for (int i = 0; i < 20000; i++) {
		for (size_t j = 0; j < sizeof(buf); j++)
			buf[j] = (uint8_t)(rand_r(&seed) >> (j % 3 ? 0 : 4));
		memcpy(buf, "xdebugpy", 8);
		if (py_layout__from_debug_offsets(buf, sizeof(buf), 13 + i % 2, &l) == 0)
			accepted++;
	}
	CHECK_INT(accepted, 0);
}

/* ---- str decoding ---- */

struct fake_mem {
	uint64_t base;
	uint8_t bytes[256];
};

static int fake_read(void *ctx, uint64_t addr, void *buf, size_t len)
{
	struct fake_mem *m = ctx;

	if (addr < m->base || addr - m->base + len > sizeof(m->bytes))
		return -EFAULT;
	memcpy(buf, m->bytes + (addr - m->base), len);
	return 0;
}

static void put_str(struct fake_mem *m, const struct py_layout *l, int kind, bool ascii,
		    const void *data, int64_t n)
{
	uint32_t state = (uint32_t)kind << 2 | 1u << 5 | (ascii ? 1u << 6 : 0);

	memset(m->bytes, 0, sizeof(m->bytes));
	memcpy(m->bytes + l->str_length, &n, 8);
	memcpy(m->bytes + l->str_state, &state, 4);
	memcpy(m->bytes + (ascii ? l->str_ascii_data : l->str_compact_data), data,
	       (size_t)n * (size_t)kind);
}

static void test_decode_str(void)
{
	struct fake_mem m = {.base = 0x10000};
	struct py_layout l;
	char out[64];
	const uint16_t ucs2[] = {0x65e5, 0x672c, 'x'};
	const uint32_t ucs4[] = {0x1f600, 'a'};
	const uint8_t latin1[] = {'c', 0xe9};

	for (int minor = 10; minor <= 13; minor++) {
		py_layout__builtin(minor, &l);
		put_str(&m, &l, 1, true, "Block.leaf_b", 12);
		CHECK_INT(pycode__decode_str(&l, m.base, fake_read, &m, out, sizeof(out)), 12);
		CHECK_STR(out, "Block.leaf_b");
		put_str(&m, &l, 1, false, latin1, 2);
		CHECK_INT(pycode__decode_str(&l, m.base, fake_read, &m, out, sizeof(out)), 3);
		CHECK_STR(out, "c\xc3\xa9");
		put_str(&m, &l, 2, false, ucs2, 3);
		pycode__decode_str(&l, m.base, fake_read, &m, out, sizeof(out));
		CHECK_STR(out, "\xe6\x97\xa5\xe6\x9c\xac"
			       "x");
		put_str(&m, &l, 4, false, ucs4, 2);
		pycode__decode_str(&l, m.base, fake_read, &m, out, sizeof(out));
		CHECK_STR(out, "\xf0\x9f\x98\x80"
			       "a");
		/* a long string is cut to the buffer, on a character boundary */
		put_str(&m, &l, 1, true, "abcdefghijklmnopqrstuvwxyz", 26);
		CHECK_INT(pycode__decode_str(&l, m.base, fake_read, &m, out, 10), 9);
		CHECK_STR(out, "abcdefghi");
		/* not a compact str / bad kind / negative length / unreadable */
		put_str(&m, &l, 3, false, "abc", 1);
		CHECK_INT(pycode__decode_str(&l, m.base, fake_read, &m, out, sizeof(out)), -EINVAL);
		put_str(&m, &l, 1, true, "abc", 3);
		m.bytes[l.str_state] &= (uint8_t) ~(1u << 5);
		CHECK_INT(pycode__decode_str(&l, m.base, fake_read, &m, out, sizeof(out)), -EINVAL);
		put_str(&m, &l, 1, true, "abc", 3);
		memset(m.bytes + l.str_length, 0xff, 8);
		CHECK_INT(pycode__decode_str(&l, m.base, fake_read, &m, out, sizeof(out)), -EINVAL);
		put_str(&m, &l, 1, true, "abc", 3);
		CHECK_INT(pycode__decode_str(&l, 0x99999, fake_read, &m, out, sizeof(out)),
			  -EINVAL);
		/* a length past readable memory fails instead of reading beyond */
		put_str(&m, &l, 1, true, "abc", 3);
		{
			int64_t n = 1000;

			memcpy(m.bytes + l.str_length, &n, 8);
		}
		CHECK_INT(pycode__decode_str(&l, m.base, fake_read, &m, out, sizeof(out)), -EINVAL);
	}
}

/* ---- merging ---- */

static struct frame nat(const char *name)
{
	return (struct frame){.kind = FRAME_NATIVE, .addr = 1, .function = name};
}

static struct frame pyf(const char *name)
{
	return (struct frame){.kind = FRAME_PYTHON, .function = name, .line = 1};
}

static void names_of(const struct frame *f, int n, char *buf, size_t len)
{
	buf[0] = '\0';
	for (int i = 0; i < n; i++) {
		strncat(buf, f[i].function ? f[i].function : "?", len - strlen(buf) - 1);
		if (i + 1 < n)
			strncat(buf, ";", len - strlen(buf) - 1);
	}
}

static void test_eval_names(void)
{
	CHECK(python_stack__is_eval("_PyEval_EvalFrameDefault"), "eval");
	CHECK(python_stack__is_eval("_PyEval_EvalFrameDefault.cold"), "eval cold");
	CHECK(!python_stack__is_eval("_PyEval_EvalFrameDefaultX"), "not eval");
	CHECK(!python_stack__is_eval("_PyEval_EvalFrame"), "not eval");
	CHECK(!python_stack__is_eval(NULL), "null");
}

static void test_merge(void)
{
	struct frame out[32];
	struct python_merge_stats st;
	char buf[512];
	int n;

	/* leaf native -> ctypes -> eval(act 0: 2 frames) -> call -> eval(act 1: 1 frame) -> main */
	struct frame native[] = {nat("spin"),
				 nat("ffi_call"),
				 nat("_PyEval_EvalFrameDefault"),
				 nat("PyObject_Call"),
				 nat("_PyEval_EvalFrameDefault"),
				 nat("main"),
				 nat("_start")};
	struct frame py[] = {pyf("W.step"), pyf("W.run"), pyf("<module>")};
	bool end[] = {false, true, true};

	n = python_stack__merge(native, 7, py, end, 3, false, out, 32, &st);
	names_of(out, n, buf, sizeof(buf));
	CHECK_STR(buf, "spin;ffi_call;W.step;W.run;PyObject_Call;<module>;main;_start");
	CHECK_INT(st.activations, 2);
	CHECK_INT(st.leftover, 0);
	CHECK_INT(st.bare_evals, 0);

	/* native stack cut short: leftover Python frames go before the truncation marker */
	struct frame cut[] = {nat("spin"),
			      nat("_PyEval_EvalFrameDefault"),
			      nat("PyObject_Call"),
			      {.kind = FRAME_TRUNCATED, .function = "[truncated: x]"}};
	n = python_stack__merge(cut, 4, py, end, 3, false, out, 32, &st);
	names_of(out, n, buf, sizeof(buf));
	CHECK_STR(buf, "spin;W.step;W.run;PyObject_Call;<module>;[truncated: x]");
	CHECK_INT(st.leftover, 1);

	/*
	 * complete stack, more eval frames than activations: the innermost activation has no
	 * frame linked yet (just started); frames are matched from the root
	 */
	bool end1[] = {true};
	n = python_stack__merge(native, 7, py, end1, 1, false, out, 32, &st);
	names_of(out, n, buf, sizeof(buf));
	CHECK_STR(buf, "spin;ffi_call;_PyEval_EvalFrameDefault;PyObject_Call;W.step;main;_start");
	CHECK_INT(st.bare_evals, 1);

	/* truncated native stack: matched from the leaf, extra eval frames stay native */
	struct frame cut2[] = {nat("spin"),
			       nat("_PyEval_EvalFrameDefault"),
			       nat("PyObject_Call"),
			       nat("_PyEval_EvalFrameDefault"),
			       {.kind = FRAME_TRUNCATED, .function = "[truncated: x]"}};
	n = python_stack__merge(cut2, 5, py, end1, 1, false, out, 32, &st);
	names_of(out, n, buf, sizeof(buf));
	CHECK_STR(buf, "spin;W.step;PyObject_Call;_PyEval_EvalFrameDefault;[truncated: x]");
	CHECK_INT(st.bare_evals, 1);

	/* Python chain cut at its depth limit: the stack ends in the explicit marker */
	n = python_stack__merge(native, 7, py, end1, 1, true, out, 32, &st);
	names_of(out, n, buf, sizeof(buf));
	CHECK_STR(buf,
		  "spin;ffi_call;W.step;PyObject_Call;[truncated: python stack deeper than the "
		  "frame limit]");

	/* no Python frames: native copied as is */
	n = python_stack__merge(native, 7, py, end, 0, false, out, 32, &st);
	CHECK_INT(n, 7);

	/* the output bound holds */
	n = python_stack__merge(native, 7, py, end, 3, false, out, 3, &st);
	CHECK_INT(n, 3);
}

int main(void)
{
	test_builtin_layouts();
	test_debug_offsets_real();
	test_debug_offsets_random();
	test_decode_str();
	test_eval_names();
	test_merge();
	return check_done("test_python");
}
