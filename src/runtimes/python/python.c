// SPDX-License-Identifier: Apache-2.0
/* CPython support: detect interpreters per ELF, attach per process, name and merge frames. */
#define LOG_MODULE "python"
#include "util/log.h"

#include "runtimes/python/python.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtimes/python/python_stack.h"
#include "symbolize/elf.h"
#include "symbolize/elf_lookup.h"
#include "symbolize/proc.h"
#include "symbolize/proc_files.h"
#include "util/fsutil.h"

#define PROC_BUCKETS 1024
/* Processes tracked at once (each costs a few dozen bytes). */
#define MAX_PROCS 16384
/* Interpreter and libc files remembered (detection results). */
#define MAX_ELF_RESULTS 256
/* glibc x86-64: struct pthread.specific_1stblock from the thread pointer (2.34-2.39). */
#define DEFAULT_TSD_OFF 0x310

enum py_elf_kind { PE_NONE = 0, PE_PYTHON, PE_UNSUPPORTED, PE_LIBC };

/* What one ELF file is, decided once per file. */
struct py_elf {
	char key[320]; /* elf_file__memo_key */
	enum py_elf_kind kind;
	int minor;
	struct py_layout layout;
	uint64_t runtime_vaddr;	  /* _PyRuntime */
	uint64_t code_type_vaddr; /* PyCode_Type, 0 when not exported */
	uint16_t tsd_off;	  /* PE_LIBC: pthread TSD offset from fsbase */
};

/* A process known to run a supported interpreter (or known not to). */
struct py_proc {
	pid_t pid;
	uint64_t gen;		   /* maps generation last looked at */
	bool python;		   /* runs a supported interpreter */
	bool pushed;		   /* BPF has its configuration */
	struct mlprof_py_proc cfg; /* ... this one */
	uint64_t repushed_ns;	   /* when it was last pushed again (python__lost_config) */
	uint64_t seen;		   /* py->tick when last checked or walked (table eviction) */
	struct py_layout layout;
	uint64_t code_type;   /* runtime address of PyCode_Type */
	struct py_proc *next; /* hash chain */
};

struct python {
	struct python_config cfg;
	struct proc_cache *pc;
	struct pycode_cache *codes;
	struct py_proc *buckets[PROC_BUCKETS];
	size_t nprocs;
	uint64_t tick;
	size_t evict_at; /* bucket where the next table-full eviction scan starts */
	struct py_elf *elfs[MAX_ELF_RESULTS];
	size_t nelfs, elf_next;
	struct python_stats stats;
	/* per-sample scratch */
	struct frame pyf[MLPROF_MAX_PYFRAMES];
	bool act_end[MLPROF_MAX_PYFRAMES];
};

/* See python.h. */
struct python *python__new(const struct python_config *cfg, struct proc_cache *pc)
{
	struct python *py = calloc(1, sizeof(*py));

	if (!py)
		return NULL;
	py->cfg = *cfg;
	py->pc = pc;
	py->codes = pycode_cache__new(cfg->code_cache_bytes);
	if (!py->codes) {
		free(py);
		return NULL;
	}
	return py;
}

/* See python.h. */
void python__free(struct python *py)
{
	if (!py)
		return;
	for (size_t i = 0; i < PROC_BUCKETS; i++) {
		struct py_proc *e = py->buckets[i], *next;

		for (; e; e = next) {
			next = e->next;
			free(e);
		}
	}
	for (size_t i = 0; i < py->nelfs; i++)
		free(py->elfs[i]);
	pycode_cache__free(py->codes);
	free(py);
}

static struct py_proc **proc_slot(struct python *py, pid_t pid)
{
	struct py_proc **pp = &py->buckets[(uint32_t)pid % PROC_BUCKETS];

	while (*pp && (*pp)->pid != pid)
		pp = &(*pp)->next;
	return pp;
}

/*
 * Table full (a tenant forking thousands of processes): frees the entry least recently
 * checked or walked among those of 64 buckets (scanned round-robin), a process known not to
 * run Python first. True when one was freed.
 */
static bool evict_one(struct python *py)
{
	struct py_proc **victim = NULL;

	for (size_t k = 0; k < 64; k++) {
		size_t b = (py->evict_at + k) % PROC_BUCKETS;

		for (struct py_proc **pp = &py->buckets[b]; *pp; pp = &(*pp)->next) {
			if (!victim || (!(*pp)->python && (*victim)->python) ||
			    ((*pp)->python == (*victim)->python && (*pp)->seen < (*victim)->seen))
				victim = pp;
		}
	}
	py->evict_at = (py->evict_at + 64) % PROC_BUCKETS;
	if (!victim)
		return false;
	{
		struct py_proc *e = *victim;

		*victim = e->next;
		pycode_cache__forget(py->codes, e->pid);
		free(e);
		py->nprocs--;
		py->stats.procs_evicted++;
	}
	return true;
}

/* See python.h. */
bool python__lost_config(struct python *py, pid_t pid, uint64_t now_ns, struct mlprof_py_proc *out)
{
	struct py_proc *e = *proc_slot(py, pid);

	if (!e || !e->pushed || now_ns - e->repushed_ns < 1000000000ull)
		return false;
	e->repushed_ns = now_ns;
	*out = e->cfg;
	py->stats.configs_repushed++;
	return true;
}

/* See python.h. */
void python__forget(struct python *py, pid_t pid)
{
	struct py_proc **pp = proc_slot(py, pid), *e = *pp;

	if (e) {
		*pp = e->next;
		free(e);
		py->nprocs--;
	}
	pycode_cache__forget(py->codes, pid);
}

/* Minor version from a file name such as python3.11, libpython3.10.so.1.0; -1 if none. */
static int minor_from_name(const char *path)
{
	const char *s = strstr(fsutil__base_name(path), "python3.");
	char *end;
	long v;

	if (!s)
		return -1;
	v = strtol(s + 8, &end, 10);
	if (end == s + 8 || v < 0 || v > 99)
		return -1;
	return (int)v;
}

/*
 * glibc's pthread_getspecific starts with "add $N, %rax; shl $4, %rax" (N = offset of
 * specific_1stblock / 16): read the offset from the code so other glibc builds work.
 */
static uint16_t tsd_off_from_libc(struct elf_file *ef)
{
	uint8_t code[48];
	uint64_t v;

	if ((elf_file__find_symbol(ef, "pthread_getspecific", &v, NULL) &&
	     elf_file__find_symbol(ef, "__pthread_getspecific", &v, NULL)) ||
	    elf_file__read_vaddr(ef, v, code, sizeof(code)))
		return DEFAULT_TSD_OFF;
	for (size_t i = 0; i + 8 <= sizeof(code); i++) {
		if (code[i] == 0x48 && code[i + 1] == 0x83 && code[i + 2] == 0xc0 &&
		    code[i + 4] == 0x48 && code[i + 5] == 0xc1 && code[i + 6] == 0xe0 &&
		    code[i + 7] == 0x04)
			return (uint16_t)(code[i + 3] * 16);
	}
	return DEFAULT_TSD_OFF;
}

/* Same offsets in two layouts (the 3.13 table against the interpreter's own debug offsets). */
static bool layouts_agree(const struct py_layout *a, const struct py_layout *b)
{
	return a->bpf.ts_frame == b->bpf.ts_frame && a->bpf.ts_tid == b->bpf.ts_tid &&
	       a->bpf.fr_code == b->bpf.fr_code && a->bpf.fr_prev == b->bpf.fr_prev &&
	       a->bpf.fr_instr == b->bpf.fr_instr && a->bpf.fr_bound == b->bpf.fr_bound &&
	       a->co_filename == b->co_filename && a->co_name == b->co_name &&
	       a->co_firstlineno == b->co_firstlineno && a->co_linetable == b->co_linetable &&
	       a->co_code_adaptive == b->co_code_adaptive && a->str_ascii_data == b->str_ascii_data;
}

/* Decides which layout an interpreter file uses. Returns 0, or -errno with *why set. */
static int detect_layout(struct python *py, struct elf_file *ef, struct py_elf *r, const char **why)
{
	uint8_t dbg[PY_DEBUG_OFFSETS_READ];
	struct py_layout from_dbg;
	bool have_dbg = false;
	int err;

	if (r->minor >= 13 && !elf_file__read_vaddr(ef, r->runtime_vaddr, dbg, sizeof(dbg))) {
		err = py_layout__from_debug_offsets(dbg, sizeof(dbg), r->minor, &from_dbg);
		if (err == -ENOTSUP && r->minor <= 14) {
			*why = "free-threaded build";
			return err;
		}
		have_dbg = err == 0;
	}
	if (r->minor >= 13 && !have_dbg && r->minor != 13) {
		*why = "no usable _Py_DebugOffsets";
		return -ENOTSUP;
	}
	if (r->minor <= 13) {
		err = py_layout__builtin(r->minor, &r->layout);
		if (err) {
			*why = "no built-in layout";
			return err;
		}
		if (have_dbg && !layouts_agree(&r->layout, &from_dbg)) {
			*why = "_Py_DebugOffsets disagree with the built-in 3.13 layout";
			return -ENOTSUP;
		}
		/* 3.13 has both: the TSS slot is cheaper, the thread list is kept for tests */
		if (have_dbg && py->cfg.force_thread_list)
			r->layout = from_dbg;
		return 0;
	}
	r->layout = from_dbg;
	return 0;
}

static struct py_elf *elf_result(struct python *py, const char *key)
{
	for (size_t i = 0; i < py->nelfs; i++)
		if (strcmp(py->elfs[i]->key, key) == 0)
			return py->elfs[i];
	return NULL;
}

static struct py_elf *elf_remember(struct python *py, struct py_elf *r)
{
	struct py_elf *c = malloc(sizeof(*c));

	if (!c)
		return NULL;
	*c = *r;
	if (py->nelfs < MAX_ELF_RESULTS) {
		py->elfs[py->nelfs++] = c;
	} else {
		free(py->elfs[py->elf_next]);
		py->elfs[py->elf_next] = c;
		py->elf_next = (py->elf_next + 1) % MAX_ELF_RESULTS;
	}
	return c;
}

/* Looks at one mapped ELF file once: interpreter (and which), libc, or neither. */
static const struct py_elf *classify(struct python *py, struct elf_file *ef, const char *path,
				     bool libc)
{
	const char *why = NULL;
	struct py_elf r, *known;
	uint64_t ver;

	memset(&r, 0, sizeof(r));
	elf_file__memo_key(ef, path, r.key, sizeof(r.key));
	known = elf_result(py, r.key);
	if (known)
		return known;

	if (libc) {
		r.kind = PE_LIBC;
		r.tsd_off = tsd_off_from_libc(ef);
		return elf_remember(py, &r);
	}
	if (elf_file__find_symbol(ef, "_PyRuntime", &r.runtime_vaddr, NULL)) {
		r.kind = PE_NONE;
		return elf_remember(py, &r);
	}
	/* Py_Version (3.11+) is PY_VERSION_HEX; 3.10 only says it in its file name */
	if (!elf_file__find_symbol(ef, "Py_Version", &ver, NULL) &&
	    !elf_file__read_vaddr(ef, ver, &ver, sizeof(ver)) && (ver >> 24) == 3)
		r.minor = (int)((ver >> 16) & 0xff);
	else
		r.minor = minor_from_name(path);
	elf_file__find_symbol(ef, "PyCode_Type", &r.code_type_vaddr, NULL);
	if (r.minor < PY_MINOR_MIN || r.minor > PY_MINOR_MAX) {
		why = NULL;
	} else if (detect_layout(py, ef, &r, &why) == 0) {
		r.kind = PE_PYTHON;
		pr_info("recognized CPython 3.%d in %s (%s)", r.minor, path,
			r.layout.bpf.tstate_how == MLPROF_PY_TSTATE_TSS ? "thread state via TSS"
									: "thread state via list");
		return elf_remember(py, &r);
	}
	r.kind = PE_UNSUPPORTED;
	if (r.minor >= 0 && why)
		pr_warn("%s: CPython 3.%d not supported here (%s): its processes keep native "
			"frames "
			"only",
			path, r.minor, why);
	else if (r.minor >= 0)
		pr_warn("%s: CPython 3.%d is not supported (3.%d-3.%d are): its processes keep "
			"native frames only",
			path, r.minor, PY_MINOR_MIN, PY_MINOR_MAX);
	else
		pr_warn("%s: Python interpreter of unknown version: its processes keep native "
			"frames only",
			path);
	return elf_remember(py, &r);
}

static bool is_libc(const char *path)
{
	const char *b = fsutil__base_name(path);

	return strncmp(b, "libc.so", 7) == 0 || strncmp(b, "libc-2.", 7) == 0;
}

/* Load bias of the ELF behind map m (runtime = vaddr + bias). */
static int map_bias(const struct proc_map *m, struct elf_file *ef, uint64_t *bias)
{
	uint64_t v;

	if (proc_map__to_vaddr(m, ef, m->start, &v))
		return -ENOENT;
	*bias = m->start - v;
	return 0;
}

/* See python.h. */
int python__check(struct python *py, struct proc *p, struct mlprof_py_proc *out)
{
	struct py_proc **pp = proc_slot(py, p->pid), *e = *pp;
	const struct py_elf *interp = NULL;
	uint64_t bias = 0, tsd_off = DEFAULT_TSD_OFF;
	bool first_file = true;

	if (e && e->gen == p->gen)
		return 0;
	if (!e) {
		if (py->nprocs >= MAX_PROCS && !evict_one(py)) {
			py->stats.procs_table_full++;
			return 0;
		}
		e = calloc(1, sizeof(*e));
		if (!e)
			return -ENOMEM;
		e->pid = p->pid;
		*pp = e;
		py->nprocs++;
	}
	e->gen = p->gen;
	e->seen = ++py->tick;

	for (size_t i = 0; i < p->n_maps; i++) {
		const struct proc_map *m = &p->maps[i];
		bool libc, candidate;
		const struct py_elf *r;
		struct elf_file *ef;

		if (m->path[0] != '/')
			continue;
		libc = is_libc(m->path);
		/* the main executable (an embedded interpreter) and files named for Python */
		candidate = first_file || strstr(fsutil__base_name(m->path), "python");
		first_file = false;
		if (!libc && (!candidate || interp))
			continue;
		ef = proc_cache__map_elf(py->pc, p, m);
		if (!ef)
			continue;
		r = classify(py, ef, m->path, libc);
		if (!r)
			return -ENOMEM;
		if (r->kind == PE_LIBC) {
			tsd_off = r->tsd_off;
		} else if (r->kind == PE_PYTHON && !interp) {
			if (map_bias(m, ef, &bias))
				continue;
			interp = r;
		} else if (r->kind == PE_UNSUPPORTED && !interp && !e->python) {
			py->stats.procs_unsupported++;
		}
	}
	/* a transient failure to open the file keeps what was found before (exec resets) */
	if (!interp)
		return 0;
	if (!e->python)
		py->stats.procs[interp->minor]++;
	e->python = true;
	e->layout = interp->layout;
	e->code_type = interp->code_type_vaddr ? interp->code_type_vaddr + bias : 0;
	*out = interp->layout.bpf;
	out->tsd_off = (uint16_t)tsd_off;
	out->runtime_addr = interp->runtime_vaddr + bias;
	out->tss_addr = interp->layout.tss_off ? out->runtime_addr + interp->layout.tss_off : 0;
	if (out->tstate_how == MLPROF_PY_TSTATE_TSS && !out->tss_addr)
		return 0;
	e->pushed = true;
	e->cfg = *out;
	pr_debug("pid %d: CPython 3.%d, _PyRuntime at 0x%llx", (int)p->pid, interp->minor,
		 (unsigned long long)out->runtime_addr);
	return 1;
}

/* See python.h. */
void python__warm(struct python *py, struct proc *p, const struct mlprof_py_frame *pf, uint32_t np)
{
	struct py_proc *e = p ? *proc_slot(py, p->pid) : NULL;

	if (!np || !pf || !e || !e->python || np > MLPROF_MAX_PYFRAMES)
		return;
	pycode_cache__begin_sample(py->codes);
	for (uint32_t i = 0; i < np; i++) {
		struct pycode_frame cf;

		pycode_cache__lookup(py->codes, p->pid, p->image, &e->layout, e->code_type,
				     pf[i].code & MLPROF_PYF_CODE_MASK, pf[i].validator,
				     pf[i].instr, &cf);
	}
}

/* See python.h. */
int python__frames(struct python *py, struct proc *p, const struct mlprof_py_frame *pf, uint32_t np,
		   uint32_t status, const struct frame *native, int n, struct frame *out, int max)
{
	struct python_merge_stats ms;
	struct py_proc *e;
	int k;

	e = p ? *proc_slot(py, p->pid) : NULL;
	if (!np || !pf || !e || !e->python || np > MLPROF_MAX_PYFRAMES) {
		k = n < max ? n : max;
		memcpy(out, native, (size_t)k * sizeof(*out));
		return k;
	}
	pycode_cache__begin_sample(py->codes);
	for (uint32_t i = 0; i < np; i++) {
		struct frame *f = &py->pyf[i];
		struct pycode_frame cf;
		uint64_t code = pf[i].code & MLPROF_PYF_CODE_MASK;

		memset(f, 0, sizeof(*f));
		f->kind = FRAME_PYTHON;
		py->act_end[i] = (pf[i].code & MLPROF_PYF_ACT_END) != 0;
		if (pycode_cache__lookup(py->codes, p->pid, p->image, &e->layout, e->code_type,
					 code, pf[i].validator, pf[i].instr, &cf) == 0) {
			f->function = cf.name;
			f->file = cf.file;
			f->ident = cf.ident;
			f->line = cf.line > 0 ? (uint32_t)cf.line : 0;
			f->start_line = cf.first_line > 0 ? (uint32_t)cf.first_line : 0;
			py->stats.frames++;
		} else {
			f->function = "[python: code object unreadable]";
			py->stats.frames_failed++;
			if ((unsigned int)cf.fail < PYCODE_FAIL__COUNT)
				py->stats.frames_failed_by[cf.fail]++;
		}
	}
	k = python_stack__merge(native, n, py->pyf, py->act_end, (int)np,
				status == MLPROF_PY_TRUNCATED, out, max, &ms);
	py->stats.samples++;
	if (ms.leftover || ms.bare_evals)
		py->stats.merged_mismatch++;
	else
		py->stats.merged_exact++;
	return k;
}

/* See python.h. */
void python__stats(const struct python *py, struct python_stats *out)
{
	*out = py->stats;
	pycode_cache__stats(py->codes, &out->code);
}
