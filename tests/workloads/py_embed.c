// SPDX-License-Identifier: Apache-2.0
/*
 * Workload for mlprof's integration tests: a C program that embeds CPython (linked against
 * the system's libpython3.X.so) and runs a module string whose method chain burns CPU.
 *
 *   py_embed simple SECONDS    main -> host_main -> run_python -> PyRun_SimpleString ->
 *                              <module> -> Embedded.outer -> Embedded.middle -> Embedded.hot
 *   py_embed callback SECONDS  as simple, but Embedded.outer calls Embedded.middle through
 *                              host.call, a C function of this program (host_call): Python
 *                              frames on both sides of a native one.
 *   py_embed reuse SECONDS     compiles and runs two generated functions in turn (alpha in
 *                              gen_alpha.py, beta in gen_beta.py); each code object is freed
 *                              before the next is made, so both live at one address. Prints
 *                              the CPU time each took.
 *
 * The Python code first prints one JSON line: where Embedded's methods start and the lines
 * of Embedded.hot's body, so a test can check the lines a profile reports.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static volatile long host_calls;

/* host.call(fn, *args): calls fn(*args) from C. The counter update after the call keeps
 * this a real frame (no tail call into libpython). */
static PyObject *host_call(PyObject *self, PyObject *args)
{
	PyObject *fn, *rest, *res;
	Py_ssize_t n = PyTuple_Size(args);

	(void)self;
	if (n < 1) {
		PyErr_SetString(PyExc_TypeError, "host.call(fn, *args)");
		return NULL;
	}
	fn = PyTuple_GetItem(args, 0);
	rest = PyTuple_GetSlice(args, 1, n);
	if (!rest)
		return NULL;
	res = PyObject_CallObject(fn, rest);
	Py_DECREF(rest);
	host_calls++;
	return res;
}

static PyMethodDef host_methods[] = {
	{"call", host_call, METH_VARARGS, "call fn(*args) from C"},
	{NULL, NULL, 0, NULL},
};

static struct PyModuleDef host_module = {
	PyModuleDef_HEAD_INIT,
	.m_name = "host",
	.m_doc = "functions of the embedding program",
	.m_size = -1,
	.m_methods = host_methods,
};

static PyObject *PyInit_host(void)
{
	return PyModule_Create(&host_module);
}

/* Line numbers matter to the tests only through the JSON line this code prints. */
static const char PY_SRC[] =
	"import json, sys, time\n"
	"import host\n"
	"\n"
	"class Embedded:\n"
	"    def __init__(self, via_host):\n"
	"        self.via_host = via_host\n"
	"\n"
	"    def hot(self, n):\n"
	"        s = 0\n"
	"        for i in range(n):\n"
	"            s = (s + i * i) & 0xffffff\n"
	"        return s\n"
	"\n"
	"    def middle(self, n):\n"
	"        r = self.hot(n)\n"
	"        return r + 1\n"
	"\n"
	"    def outer(self, secs):\n"
	"        end = time.monotonic() + secs\n"
	"        total = 0\n"
	"        while time.monotonic() < end:\n"
	"            if self.via_host:\n"
	"                total += host.call(self.middle, 20000)\n"
	"            else:\n"
	"                total += self.middle(20000)\n"
	"        return total\n"
	"\n"
	"code = Embedded.hot.__code__\n"
	"body = sorted({l for _, _, l in code.co_lines() if l and l > code.co_firstlineno})\n"
	"first = {'Embedded.' + f.__name__: f.__code__.co_firstlineno\n"
	"         for f in (Embedded.hot, Embedded.middle, Embedded.outer)}\n"
	"print(json.dumps({'mode': MODE, 'file': code.co_filename, 'first': first,\n"
	"                  'hot_body': body}), flush=True)\n"
	"\n"
	"# Two generated functions alike in first line and locals, compiled in turn: each\n"
	"# code object is freed before the next is made, so they share one address.\n"
	"GEN = {'alpha': 'def alpha(n):\\n    s = 0\\n    for i in range(n):\\n'\n"
	"                '        s = (s + i * i) & 0xffffff\\n    return s\\n',\n"
	"       'beta': 'def beta(n):\\n    s = 0\\n    for i in range(n):\\n'\n"
	"               '        s = (s ^ i * 3) & 0xffffff\\n    return s\\n'}\n"
	"\n"
	"def reuse(secs):\n"
	"    cpu = {'alpha': 0.0, 'beta': 0.0}\n"
	"    end = time.monotonic() + secs\n"
	"    k = 0\n"
	"    while time.monotonic() < end:\n"
	"        name = ('alpha', 'beta')[k % 2]\n"
	"        ns = {}\n"
	"        exec(compile(GEN[name], 'gen_%s.py' % name, 'exec'), ns)\n"
	"        fn = ns.pop(name)\n"
	"        ns.clear()\n"
	"        t0 = time.thread_time()\n"
	"        fn(100000)\n"
	"        cpu[name] += time.thread_time() - t0\n"
	"        del fn\n"
	"        k += 1\n"
	"    print(json.dumps({'mode': MODE, 'cpu': cpu, 'rounds': k}), flush=True)\n"
	"\n"
	"if MODE == 'reuse':\n"
	"    reuse(SECS)\n"
	"else:\n"
	"    Embedded(MODE == 'callback').outer(SECS)\n";

/* Runs PY_SRC with MODE and SECS set; returns PyRun_SimpleString's result (0 or -1). */
__attribute__((noinline)) static int run_python(const char *mode, double secs)
{
	char prologue[128];
	char *src;
	size_t len;
	int rc;

	snprintf(prologue, sizeof(prologue), "MODE = '%s'\nSECS = %.3f\n", mode, secs);
	len = strlen(prologue) + sizeof(PY_SRC);
	src = malloc(len);
	if (!src)
		return -1;
	snprintf(src, len, "%s%s", prologue, PY_SRC);
	rc = PyRun_SimpleString(src);
	free(src);
	return rc;
}

__attribute__((noinline)) static int host_main(const char *mode, double secs)
{
	int rc;

	if (PyImport_AppendInittab("host", PyInit_host) < 0)
		return 1;
	Py_Initialize();
	rc = run_python(mode, secs);
	if (Py_FinalizeEx() < 0)
		rc = -1;
	return rc ? 1 : 0;
}

static const char *const MODES[] = {"simple", "callback", "reuse"};

int main(int argc, char **argv)
{
	double secs = argc > 2 ? atof(argv[2]) : 2.0;
	size_t i = 0;
	int rc;

	while (argc > 1 && i < sizeof(MODES) / sizeof(MODES[0]) && strcmp(argv[1], MODES[i]))
		i++;
	if (argc < 2 || i == sizeof(MODES) / sizeof(MODES[0])) {
		fprintf(stderr, "usage: %s simple|callback|reuse SECONDS\n", argv[0]);
		return 2;
	}
	rc = host_main(argv[1], secs);
	/* after the call, so main stays a frame (no tail call into host_main) */
	fflush(stdout);
	return rc;
}
