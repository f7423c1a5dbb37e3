// SPDX-License-Identifier: Apache-2.0
/* User-stack unwinding with libunwind's remote API over captured registers + stack bytes. */
#define LOG_MODULE "unwind"
#include "util/log.h"

#include "unwind/unwind.h"

#include <errno.h>
#include <libunwind.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "mlprof/sample.h"
#include "symbolize/elf.h"
#include "symbolize/proc.h"
#include "unwind/unwind_cfi.h"
#include "unwind/unwind_fp.h"
#include "unwind/unwind_table.h"

/* Exported by libunwind-x86_64 but not declared in its public headers (perf does the same). */
extern int _Ux86_64_dwarf_search_unwind_table(unw_addr_space_t as, unw_word_t ip,
					      unw_dyn_info_t *di, unw_proc_info_t *pi,
					      int need_unwind_info, void *arg);

/* Per-process libunwind address spaces kept (each holds libunwind's register-state cache). */
#define MAX_SPACES 64
/* Objects (ELF images) remembered per address space for memory reads outside the stack. */
#define MAX_OBJS 128
/* Parsed unwind tables kept across processes (each holds a reference on its ELF file). */
#define MAX_TABLES 512
/*
 * Room kept free when an unwind starts: caches are trimmed only then (make_room), so one
 * unwind can add this many tables (objects) before lookups start missing.
 */
#define TABLE_HEADROOM 64
#define OBJ_HEADROOM   32
/*
 * A frame with neither CFI nor frame pointer (hand-written assembly: MKL's kernels) has its
 * return address searched for this far above its stack pointer: the whole copy, since
 * OpenBLAS's GEMM kernels (numpy's) take ~29 KiB of stack and align it to 4 KiB (2 KiB
 * found the caller of 23% of numpy matmul samples).
 */
#define SCAN_MAX_BYTES (128u << 10)
/* Reads this far above the stack copy are taken for stack reads (copy too short). */
#define STACK_SLACK (8ull << 20)
/*
 * Code this far past an ELF entry point (e_entry) with no FDE is taken for the process's
 * first frame: ld.so's _start (RTLD_START) has no CFI and calls _dl_start, then jumps to
 * the program, all within its first 0x3d bytes.
 */
#define ENTRY_SPAN 64
/* Mappings end on a page boundary past their segment's end (4 KiB pages on x86-64). */
#define PAGE_SLACK 4096ull
/* Fake, non-canonical addresses where synthesized tables are exposed to libunwind. */
#define FAKE_TABLE_BASE	 0xfff0000000000000ull
#define FAKE_TABLE_SHIFT 36
/* Offsets in an object's fake range of its translated .debug_frame index and image. */
#define FAKE_DBG_TABLE (1ull << 34)
#define FAKE_DBG_IMAGE (1ull << 35)
/*
 * Unwind rules kept by (table, pc), direct-mapped: a frame seen before is stepped without
 * libunwind (whose register-state cache takes a lock and two sigprocmask calls a step).
 */
#define RULE_SLOTS 65536
/*
 * Simple rules again by (maps generation, pc), direct-mapped: a frame seen before is stepped
 * with one lookup, without finding its mapping and object first (a generation is unique and
 * its mappings never change, so neither does the rule of one of its pcs).
 */
#define STEP_SLOTS 32768
/*
 * Where the last scan from a pc found its return address (SCAN_HINT_SLOTS by (gen, pc)):
 * tried first, so that the samples of a kernel that spins, or one sampled again and again,
 * do not each scan up to the whole copy.
 */
#define SCAN_HINT_SLOTS 4096
/*
 * The frames each of ECHO_SLOTS threads (by tid) was last stepped through: the next sample of
 * a thread mostly repeats them (the same callers at the same stack addresses), so their
 * step-cache slots and the stack words they read are prefetched together at its start, not
 * missed one after another as each step learns where the next one is.
 */
#define ECHO_SLOTS  64
#define ECHO_FRAMES 64
/* Bound on the translated .debug_frame images and indexes held by all tables together. */
#define MAX_DEBUG_FRAME_TOTAL (256ull << 20)

/* One ELF image placed in a process: runtime = vaddr + bias. */
struct uw_obj {
	uint64_t lo, hi; /* runtime extent */
	uint64_t bias;
	struct unwind_table *t;
};

/* Per-process libunwind state. */
struct uw_space {
	pid_t pid;
	const struct proc *p;
	uint64_t gen;
	unw_addr_space_t as;
	struct uw_obj objs[MAX_OBJS];
	size_t nobjs, last_obj;
	uint64_t last_use;
};

/* One cached rule: the table's address keys it (all tables go at once, with the cache). */
struct rule_slot {
	const struct unwind_table *t;
	uint64_t vaddr;
	struct cfi_rule r;
};

/* A CFI_RULE rule cached by (gen, pc); gen 0: empty. */
struct step_slot {
	uint64_t gen, pc;
	struct cfi_rule r;
};

/* A scan's result by (gen, pc); gen 0: empty. off: the return address's slot above sp. */
struct scan_hint {
	uint64_t gen, pc;
	uint64_t off; /* of the return address from the stack pointer */
	uint64_t ra;  /* the return address that was there, checked whole */
};

/* The frames a thread's last unwind stepped through: the pc each was stepped at, its cfa. */
struct echo {
	uint64_t gen;
	uint32_t tid, n;
	uint64_t pc[ECHO_FRAMES], cfa[ECHO_FRAMES];
};

struct unwinder {
	struct proc_cache *pc;
	struct rule_slot *rules; /* RULE_SLOTS */
	struct step_slot *steps; /* STEP_SLOTS */
	struct scan_hint *hints; /* SCAN_HINT_SLOTS */
	struct echo *echoes;	 /* ECHO_SLOTS */
	struct uw_space spaces[MAX_SPACES];
	size_t nspaces;
	struct unwind_table *tables[MAX_TABLES];
	size_t ntables;
	uint64_t tick;
	uint64_t dbg_bytes; /* held in translated .debug_frame images and indexes */
	struct unwind_fp *fp;
	struct unwind_stats stats;
};

/* State of one unwinder__unwind call, handed to the accessors as their arg. */
struct uw_call {
	struct unwinder *u;
	struct uw_space *sp;
	struct proc *p;
	const struct mlprof_sample *s;
	const __u64 *regs; /* registers of the first frame: the sample's, or where FP left off */
	uint64_t stack_lo, stack_len;
	bool stack_cut; /* a read hit the stack above the copy */
	bool no_info;	/* find_proc_info found nothing during this step */
	bool at_entry;	/* ... and the pc was at an ELF entry point: the outermost frame */
	uint64_t no_info_ip;
	uint64_t scan_pc;  /* the pc of the frame a scan looks for the return address of */
	struct echo *echo; /* the thread's frames, rewritten as this unwind steps */
};

/* ---- unwind tables (shared by every process that maps the file) ---- */

static void unwinder_flush_spaces(struct unwinder *u)
{
	for (size_t i = 0; i < u->nspaces; i++) {
		u->spaces[i].nobjs = 0;
		u->spaces[i].last_obj = 0;
		unw_flush_cache(u->spaces[i].as, 0, 0);
	}
}

/*
 * Finds or builds ef's table. Never frees one: objects of the unwind in progress point at
 * tables (make_room trims between unwinds). NULL when the cache is full or on ENOMEM.
 */
static struct unwind_table *table_get(struct unwinder *u, struct elf_file *ef)
{
	struct unwind_table *t;

	for (size_t i = 0; i < u->ntables; i++) {
		if (u->tables[i]->ef == ef)
			return u->tables[i];
	}
	if (u->ntables == MAX_TABLES)
		return NULL;
	t = unwind_table__new(ef);
	if (!t)
		return NULL;
	u->tables[u->ntables++] = t;
	return t;
}

/*
 * Trims the caches before an unwind starts, the only time nothing points into them:
 * find_proc_info and the memory accessors keep object and table pointers across
 * libunwind's nested reads, which may look up further objects. Tables go all at once
 * (objects in every space point at them, rarely needed); a space's objects go when it
 * has less than OBJ_HEADROOM free.
 */
static void make_room(struct unwinder *u, struct uw_space *sp)
{
	if (u->ntables + TABLE_HEADROOM > MAX_TABLES) {
		unwinder_flush_spaces(u);
		memset(u->rules, 0, RULE_SLOTS * sizeof(*u->rules));
		for (size_t i = 0; i < u->ntables; i++)
			unwind_table__free(u->tables[i]);
		u->ntables = 0;
		u->dbg_bytes = 0;
	}
	if (sp && sp->nobjs + OBJ_HEADROOM > MAX_OBJS) {
		unw_flush_cache(sp->as, 0, 0);
		sp->nobjs = 0;
		sp->last_obj = 0;
	}
}

/* Translates t's .debug_frame on first need, within MAX_DEBUG_FRAME_TOTAL. True when ready. */
static bool table_debug_frame(struct unwinder *u, struct unwind_table *t)
{
	uint64_t bytes;
	int err;

	if (t->dbg_state)
		return t->dbg_state > 0;
	err = unwind_table__load_debug_frame(t, MAX_DEBUG_FRAME_TOTAL - u->dbg_bytes, &bytes);
	if (err == -E2BIG)
		u->stats.debug_frame_skipped++;
	if (err)
		return false;
	u->dbg_bytes += bytes;
	u->stats.debug_frame_tables++;
	return true;
}

/* ---- address spaces ---- */

static struct uw_obj *obj_find(struct uw_space *sp, uint64_t addr)
{
	struct uw_obj *o = &sp->objs[sp->last_obj];

	if (sp->last_obj < sp->nobjs && addr >= o->lo && addr < o->hi)
		return o;
	for (size_t i = 0; i < sp->nobjs; i++) {
		o = &sp->objs[i];
		if (addr >= o->lo && addr < o->hi) {
			sp->last_obj = i;
			return o;
		}
	}
	return NULL;
}

/* Registers (or finds) the object behind map m; NULL when it has no usable ELF. */
static struct uw_obj *obj_for_map(struct uw_call *call, const struct proc_map *m)
{
	struct uw_space *sp = call->sp;
	struct elf_file *ef;
	struct unwind_table *t;
	struct uw_obj *o;
	uint64_t vaddr, bias;

	o = obj_find(sp, m->start);
	if (o)
		return o;
	ef = proc_cache__map_elf(call->u->pc, call->p, m);
	if (!ef)
		return NULL;
	if (proc_map__to_vaddr(m, ef, m->start, &vaddr))
		return NULL;
	t = table_get(call->u, ef);
	if (!t || t->lo >= t->hi)
		return NULL;
	bias = m->start - vaddr;
	if (sp->nobjs == MAX_OBJS)
		return NULL; /* never reset mid-unwind: callers hold pointers into objs */
	o = &sp->objs[sp->nobjs];
	o->lo = t->lo + bias;
	o->hi = t->hi + bias;
	o->bias = bias;
	o->t = t;
	/*
	 * The mapping must lie within the PT_LOAD extent, which the kernel maps in whole
	 * pages: the [vdso] (a 0x1522-byte segment in a two-page mapping) and every
	 * segment's last page extend past p_vaddr + p_memsz.
	 */
	if (o->lo > m->start || ((o->hi + PAGE_SLACK - 1) & ~(PAGE_SLACK - 1)) < m->end)
		return NULL;
	sp->last_obj = sp->nobjs++;
	return o;
}

static struct uw_space *space_get(struct unwinder *u, struct proc *p)
{
	struct uw_space *sp = NULL;

	for (size_t i = 0; i < u->nspaces; i++) {
		if (u->spaces[i].pid == p->pid) {
			sp = &u->spaces[i];
			break;
		}
	}
	if (!sp && u->nspaces < MAX_SPACES) {
		unw_addr_space_t as;

		sp = &u->spaces[u->nspaces];
		as = sp->as;
		memset(sp, 0, sizeof(*sp));
		sp->as = as;
		u->nspaces++;
	} else if (!sp) {
		sp = &u->spaces[0];
		for (size_t i = 1; i < u->nspaces; i++)
			if (u->spaces[i].last_use < sp->last_use)
				sp = &u->spaces[i];
		sp->p = NULL; /* force a flush below */
	}
	if (!sp->as)
		return NULL;
	sp->last_use = ++u->tick;
	if (sp->pid != p->pid || sp->p != p || sp->gen != p->gen) {
		/* different process instance or changed maps: drop cached unwind state */
		unw_flush_cache(sp->as, 0, 0);
		sp->nobjs = 0;
		sp->last_obj = 0;
		sp->pid = p->pid;
		sp->p = p;
		sp->gen = p->gen;
	}
	return sp;
}

/* ---- libunwind accessors ---- */

static int find_proc_info(unw_addr_space_t as, unw_word_t ip, unw_proc_info_t *pi,
			  int need_unwind_info, void *arg)
{
	struct uw_call *call = arg;
	const struct proc_map *m;
	struct uw_obj *o;
	unw_dyn_info_t di;
	uint64_t fake;
	int ret;

	m = proc_cache__find_map(call->u->pc, call->p, ip);
	o = m ? obj_for_map(call, m) : NULL;
	ret = -UNW_ENOINFO;
	if (!o)
		goto no_info;
	fake = FAKE_TABLE_BASE + ((uint64_t)(o - call->sp->objs) << FAKE_TABLE_SHIFT);
	if (o->t->ok) {
		memset(&di, 0, sizeof(di));
		di.format = UNW_INFO_FORMAT_REMOTE_TABLE;
		di.start_ip = m->start;
		di.end_ip = m->end;
		di.u.rti.segbase = o->t->segbase + o->bias;
		if (o->t->synth)
			di.u.rti.table_data = fake;
		else
			di.u.rti.table_data = o->t->table + o->bias;
		di.u.rti.table_len = o->t->count * 8 / sizeof(unw_word_t);
		ret = _Ux86_64_dwarf_search_unwind_table(as, ip, &di, pi, need_unwind_info, arg);
		if (ret != -UNW_ENOINFO)
			return ret;
	}
	if (table_debug_frame(call->u, o->t)) {
		/*
		 * Index entries are relative to the object's lowest vaddr (start_ip), FDE
		 * offsets to the image (segbase); FDE addresses are link-time values that
		 * libunwind moves by load_offset.
		 */
		memset(&di, 0, sizeof(di));
		di.format = UNW_INFO_FORMAT_IP_OFFSET;
		di.start_ip = o->lo;
		di.end_ip = m->end > o->hi ? m->end : o->hi;
		di.load_offset = o->bias;
		di.u.rti.segbase = fake + FAKE_DBG_IMAGE;
		di.u.rti.table_data = fake + FAKE_DBG_TABLE;
		di.u.rti.table_len = o->t->dbg_count * 8 / sizeof(unw_word_t);
		ret = _Ux86_64_dwarf_search_unwind_table(as, ip, &di, pi, need_unwind_info, arg);
		if (ret != -UNW_ENOINFO)
			return ret;
	}
no_info:
	call->no_info = true;
	call->no_info_ip = ip;
	/* libunwind asks for ip - 1 in callers' frames: still inside _start */
	if (o && o->t->entry && ip - o->bias >= o->t->entry &&
	    ip - o->bias - o->t->entry < ENTRY_SPAN)
		call->at_entry = true;
	return ret;
}

static void put_unwind_info(unw_addr_space_t as, unw_proc_info_t *pi, void *arg)
{
	/*
	 * Nothing to do: for DWARF tables libunwind releases pi->unwind_info itself (from its
	 * own pool) before calling this, and perf's implementation is a no-op as well.
	 */
}

static int get_dyn_info_list_addr(unw_addr_space_t as, unw_word_t *dil_addr, void *arg)
{
	return -UNW_ENOINFO;
}

static int access_mem(unw_addr_space_t as, unw_word_t addr, unw_word_t *valp, int write, void *arg)
{
	struct uw_call *call = arg;
	const struct proc_map *m;
	struct uw_obj *o;

	if (write)
		return -UNW_EINVAL;
	if (addr >= call->stack_lo && addr - call->stack_lo <= call->stack_len &&
	    call->stack_len - (addr - call->stack_lo) >= sizeof(*valp)) {
		memcpy(valp, call->s->ustack + (addr - call->stack_lo), sizeof(*valp));
		return 0;
	}
	if (addr >= FAKE_TABLE_BASE) {
		uint64_t idx = (addr - FAKE_TABLE_BASE) >> FAKE_TABLE_SHIFT;
		uint64_t off = (addr - FAKE_TABLE_BASE) & ((1ull << FAKE_TABLE_SHIFT) - 1);

		const struct unwind_table *t = idx < call->sp->nobjs ? call->sp->objs[idx].t : NULL;
		const uint8_t *data = NULL;
		uint64_t size = 0;

		if (t && off >= FAKE_DBG_IMAGE) {
			data = t->dbg_image;
			size = t->dbg_image_len;
			off -= FAKE_DBG_IMAGE;
		} else if (t && off >= FAKE_DBG_TABLE) {
			data = (const uint8_t *)t->dbg_tab;
			size = t->dbg_count * 8;
			off -= FAKE_DBG_TABLE;
		} else if (t) {
			data = (const uint8_t *)t->synth;
			size = t->count * 8;
		}
		if (data && off < size) {
			uint8_t b[8] = {0};

			memcpy(b, data + off, size - off < 8 ? size - off : 8);
			memcpy(valp, b, 8);
			return 0;
		}
		return -UNW_EINVAL;
	}
	o = obj_find(call->sp, addr);
	if (!o && addr >= call->stack_lo && addr - call->stack_lo < call->stack_len + STACK_SLACK) {
		/*
		 * Above the copy and in no object seen so far: take it for the stack (an
		 * object's tables are always registered by find_proc_info before they are
		 * read), without a maps lookup that could trigger a re-read.
		 */
		call->stack_cut = true;
		return -UNW_EINVAL;
	}
	if (!o) {
		m = proc_cache__find_map(call->u->pc, call->p, addr);
		if (m)
			o = obj_for_map(call, m);
	}
	if (o && unwind_table__read(o->t, addr - o->bias, valp))
		return 0;
	return -UNW_EINVAL;
}

static const int8_t reg_map[UNW_X86_64_RIP + 1] = {
	[UNW_X86_64_RAX] = MLPROF_REG_AX,  [UNW_X86_64_RDX] = MLPROF_REG_DX,
	[UNW_X86_64_RCX] = MLPROF_REG_CX,  [UNW_X86_64_RBX] = MLPROF_REG_BX,
	[UNW_X86_64_RSI] = MLPROF_REG_SI,  [UNW_X86_64_RDI] = MLPROF_REG_DI,
	[UNW_X86_64_RBP] = MLPROF_REG_BP,  [UNW_X86_64_RSP] = MLPROF_REG_SP,
	[UNW_X86_64_R8] = MLPROF_REG_R8,   [UNW_X86_64_R9] = MLPROF_REG_R9,
	[UNW_X86_64_R10] = MLPROF_REG_R10, [UNW_X86_64_R11] = MLPROF_REG_R11,
	[UNW_X86_64_R12] = MLPROF_REG_R12, [UNW_X86_64_R13] = MLPROF_REG_R13,
	[UNW_X86_64_R14] = MLPROF_REG_R14, [UNW_X86_64_R15] = MLPROF_REG_R15,
	[UNW_X86_64_RIP] = MLPROF_REG_IP,
};

static int access_reg(unw_addr_space_t as, unw_regnum_t regnum, unw_word_t *valp, int write,
		      void *arg)
{
	struct uw_call *call = arg;

	if (write || regnum < 0 || regnum > UNW_X86_64_RIP)
		return -UNW_EBADREG;
	*valp = call->regs[reg_map[regnum]];
	return 0;
}

static int access_fpreg(unw_addr_space_t as, unw_regnum_t num, unw_fpreg_t *val, int write,
			void *arg)
{
	return -UNW_EINVAL;
}

static int resume(unw_addr_space_t as, unw_cursor_t *cu, void *arg)
{
	return -UNW_EINVAL;
}

static int get_proc_name(unw_addr_space_t as, unw_word_t addr, char *bufp, size_t buf_len,
			 unw_word_t *offp, void *arg)
{
	return -UNW_ENOINFO;
}

static unw_accessors_t accessors = {
	.find_proc_info = find_proc_info,
	.put_unwind_info = put_unwind_info,
	.get_dyn_info_list_addr = get_dyn_info_list_addr,
	.access_mem = access_mem,
	.access_reg = access_reg,
	.access_fpreg = access_fpreg,
	.resume = resume,
	.get_proc_name = get_proc_name,
};

/* ---- public API ---- */

struct unwinder *unwinder__new(struct proc_cache *pc)
{
	struct unwinder *u;

	u = calloc(1, sizeof(*u));
	if (!u)
		return NULL;
	u->pc = pc;
	u->fp = unwind_fp__new();
	u->rules = calloc(RULE_SLOTS, sizeof(*u->rules));
	u->steps = calloc(STEP_SLOTS, sizeof(*u->steps));
	u->hints = calloc(SCAN_HINT_SLOTS, sizeof(*u->hints));
	u->echoes = calloc(ECHO_SLOTS, sizeof(*u->echoes));
	if (!u->fp || !u->rules || !u->steps || !u->hints || !u->echoes) {
		unwind_fp__free(u->fp);
		free(u->rules);
		free(u->steps);
		free(u->hints);
		free(u->echoes);
		free(u);
		errno = ENOMEM;
		return NULL;
	}
	for (size_t i = 0; i < MAX_SPACES; i++) {
		u->spaces[i].as = unw_create_addr_space(&accessors, 0);
		if (!u->spaces[i].as) {
			pr_warn("cannot create a libunwind address space");
			unwinder__free(u);
			errno = ENOMEM;
			return NULL;
		}
		/*
		 * One address space per process, so GLOBAL (per address space) caching is
		 * correct; PER_THREAD would share one TLS cache between processes in
		 * libunwind builds that have it (and is GLOBAL in those that do not).
		 */
		unw_set_caching_policy(u->spaces[i].as, UNW_CACHE_GLOBAL);
	}
	return u;
}

void unwinder__free(struct unwinder *u)
{
	if (!u)
		return;
	for (size_t i = 0; i < MAX_SPACES; i++)
		if (u->spaces[i].as)
			unw_destroy_addr_space(u->spaces[i].as);
	for (size_t i = 0; i < u->ntables; i++)
		unwind_table__free(u->tables[i]);
	unwind_fp__free(u->fp);
	free(u->rules);
	free(u->steps);
	free(u->hints);
	free(u->echoes);
	free(u);
}

static enum unwind_end finish(struct unwinder *u, enum unwind_end end, int n)
{
	u->stats.unwinds++;
	u->stats.ends[end]++;
	u->stats.frames += (uint64_t)n;
	return end;
}

/* A return address the frame-pointer walk found must point into executable code. */
static bool fp_code_ok(void *arg, uint64_t addr)
{
	struct uw_call *call = arg;

	return proc_cache__find_map(call->u->pc, call->p, addr - 1) != NULL;
}

static const struct cfi_rule *rule_get(struct unwinder *u, const struct unwind_table *t,
				       uint64_t vaddr);

/*
 * Whether CFI covers ip (libunwind's lookup without its side effects), o: ip's object (from
 * the cached maps) or NULL. The rule cache answers for .eh_frame (a kernel without CFI,
 * sampled at a new pc each time, costs one table search, not libunwind's); libunwind's
 * search only where .debug_frame may still cover it.
 */
static bool obj_has_cfi(struct uw_call *call, const struct uw_obj *o, uint64_t ip)
{
	unw_proc_info_t pi;
	bool ok;

	if (o && o->t->ok) {
		if (rule_get(call->u, o->t, ip - o->bias)->kind != CFI_NONE)
			return true;
		if (o->t->dbg_state < 0)
			return false; /* and no .debug_frame to look in */
	}
	ok = find_proc_info(call->sp->as, ip, &pi, 0, call) == 0;
	call->no_info = false;
	call->at_entry = false;
	return ok;
}

static bool has_cfi(struct uw_call *call, uint64_t ip)
{
	const struct proc_map *m = proc_cache__find_map_cached(call->p, ip);

	return obj_has_cfi(call, m ? obj_for_map(call, m) : NULL, ip);
}

/*
 * A stack word that can be a return address: it points just after a call instruction (a
 * direct call's target is code too) in a mapped file. Sets *out to its object.
 */
static bool ra_after_call(struct uw_call *call, uint64_t addr, struct uw_obj **out,
			  uint64_t *target)
{
	const struct proc_map *m;
	struct uw_obj *o;
	uint8_t code[8];
	int32_t rel;
	bool direct;

	/* most words (data, doubles, heap pointers) lie outside every mapping of code */
	if (!call->p->n_maps || addr <= call->p->maps[0].start ||
	    addr > call->p->maps[call->p->n_maps - 1].end)
		return false;
	m = proc_cache__find_map_cached(call->p, addr - 1);
	if (!m || !m->exec || !(o = obj_for_map(call, m)) || addr - o->bias < 8 ||
	    elf_file__read_vaddr(o->t->ef, addr - o->bias - 8, code, sizeof(code)) ||
	    !unwind_fp__after_call(code, &direct, &rel))
		return false;
	if (direct && !proc_cache__find_map_cached(call->p, addr + (uint64_t)(int64_t)rel))
		return false;
	*out = o;
	*target = direct ? addr + (uint64_t)(int64_t)rel : 0;
	return true;
}

/*
 * Whether a direct call to target can have entered the code at pc, which no CFI covers: the
 * callee starts at or below pc in code without CFI too, or is a PLT stub (jmp *GOT). A
 * recursion's stale return addresses (calls to a function with CFI) fail it.
 */
static bool call_reaches(struct uw_call *call, uint64_t target, uint64_t pc)
{
	const struct proc_map *m = proc_cache__find_map_cached(call->p, target);
	struct uw_obj *o = m ? obj_for_map(call, m) : NULL;
	uint8_t c[8];

	if (!o || elf_file__read_vaddr(o->t->ef, target - o->bias, c, sizeof(c)))
		return true; /* cannot tell */
	/* jmp *x(%rip), possibly after endbr64 and a bnd prefix */
	if ((c[0] == 0xff && c[1] == 0x25) || (c[0] == 0xf2 && c[1] == 0xff && c[2] == 0x25) ||
	    (c[0] == 0xf3 && c[1] == 0x0f && c[2] == 0x1e && c[3] == 0xfa &&
	     ((c[4] == 0xf2 && c[5] == 0xff && c[6] == 0x25) || (c[4] == 0xff && c[5] == 0x25))))
		return true;
	return target <= pc && !obj_has_cfi(call, o, target);
}

/* Frames a scan's candidate return address is followed through (scan_ra_check). */
#define SCAN_CHAIN_FRAMES 64

/*
 * A stack word at slot that can be the return address of a frame without CFI: after a call
 * (a direct one to code that can have led to the scanned pc), in code whose CFI covers it,
 * and whose callers' return addresses, as far as CFI and the stack copy tell, are return
 * addresses too. Stale return addresses left in a kernel's scratch buffer (OpenBLAS's GEMM
 * takes 29 KiB of stack; ld.so's from the start-up, a recursion's) pass the first tests and
 * fail the last within a few frames. proven: a direct call only (its target checked).
 */
static bool scan_ra_check(struct uw_call *call, uint64_t addr, uint64_t slot, bool proven)
{
	const struct fp_stack stack = {call->stack_lo, call->s->ustack, call->stack_len};
	uint64_t ip = addr, sp = slot + 8, target, cfa, next, bp = 0;
	bool bp_known = false; /* rbp as a frame of the chain saved it */
	struct uw_obj *o;

	if (!ra_after_call(call, addr, &o, &target) || (proven && !target) ||
	    !obj_has_cfi(call, o, addr - 1) ||
	    (target && !call_reaches(call, target, call->scan_pc)))
		return false;
	for (int i = 0; i < SCAN_CHAIN_FRAMES; i++) {
		const struct cfi_rule *rule =
			o->t->ok ? rule_get(call->u, o->t, ip - 1 - o->bias) : NULL;

		if (!rule || rule->kind != CFI_RULE || (rule->cfa_rbp && !bp_known))
			return true; /* the end of the stack, or not to be told without registers */
		cfa = (rule->cfa_rbp ? bp : sp) + (uint64_t)(int64_t)rule->cfa_off;
		if (cfa <= sp)
			return false;
		if (!fp_stack__word(&stack, cfa - 8, &next) || !next)
			return true; /* beyond the copy, or the outermost frame */
		if (rule->rbp_saved)
			bp_known =
				fp_stack__word(&stack, cfa + (uint64_t)(int64_t)rule->rbp_off, &bp);
		if (!ra_after_call(call, next, &o, &target))
			return false;
		ip = next;
		sp = cfa;
	}
	return true;
}

static bool scan_ra_ok(void *arg, uint64_t addr, uint64_t slot)
{
	return scan_ra_check(arg, addr, slot, false);
}

/* The same, for a direct call only: its target is known to have led to the scanned pc. */
static bool scan_ra_proven(void *arg, uint64_t addr, uint64_t slot)
{
	return scan_ra_check(arg, addr, slot, true);
}

/*
 * Finds the return address of the frame at r on the stack and moves r to its caller: where
 * the last scan from this pc found it, else the first that a direct call to this code left
 * (proven), else the first that looks like one.
 */
static bool scan(struct uw_call *call, const struct fp_stack *stack, struct fp_regs *r)
{
	uint64_t gen = call->p->gen, pc = r->ip, sp = r->sp, w;
	uint64_t h = (pc ^ (gen * 0x9e3779b97f4a7c15ull)) * 0xff51afd7ed558ccdull;
	struct scan_hint *hint = &call->u->hints[(h >> 40) % SCAN_HINT_SLOTS];

	call->scan_pc = pc;
	/*
	 * The same return address at the same place as last time from this pc (a kernel
	 * called from the same site again): it passed the whole check then; checking its
	 * callers again would walk the frames that the unwind walks next anyway.
	 */
	if (hint->gen == gen && hint->pc == pc && fp_stack__word(stack, sp + hint->off, &w) &&
	    w > 4096 && (w == hint->ra || scan_ra_ok(call, w, sp + hint->off))) {
		r->ip = w;
		r->sp = sp + hint->off + 8;
		hint->ra = w;
		call->u->stats.scan_hinted++;
		return true;
	}
	if (!unwind_fp__scan(stack, SCAN_MAX_BYTES, scan_ra_proven, call, r) &&
	    !unwind_fp__scan(stack, SCAN_MAX_BYTES, scan_ra_ok, call, r))
		return false;
	*hint = (struct scan_hint){gen, pc, r->sp - 8 - sp, r->ip};
	return true;
}

/*
 * Continues an unwind by frame pointer from the frame at r, whose pc no CFI covers:
 * appends callers to pcs until one's pc has CFI again (returns true: resume libunwind at
 * r) or the walk ends (false, *end set).
 */
static bool fp_fallback(struct uw_call *call, struct fp_regs *r, bool interrupted, uint64_t *pcs,
			int *n, int max, enum unwind_end *end)
{
	struct unwind_stats *st = &call->u->stats;
	const struct fp_stack stack = {call->stack_lo, call->s->ustack, call->stack_len};

	for (;;) {
		const struct proc_map *m = proc_cache__find_map(call->u->pc, call->p, r->ip);
		struct uw_obj *o = m ? obj_for_map(call, m) : NULL;
		struct fp_code code = {o ? o->t->ef : NULL, o ? o->bias : 0};

		switch (unwind_fp__step(call->u->fp, &stack, &code, interrupted, fp_code_ok, call,
					r)) {
		case UNWIND_FP_STEP_GO:
			st->fp_go_frames++;
			break;
		case UNWIND_FP_STEP_BP:
			break;
		case UNWIND_FP_STEP_END:
			*end = UNWIND_END_COMPLETE;
			return false;
		case UNWIND_FP_STEP_OUTSIDE:
			/*
			 * rbp above the copy: a frame pointer of a stack deeper than the copy,
			 * or (further than any stack) a register a kernel used for data
			 */
			if (r->bp - r->sp < STACK_SLACK) {
				st->fp_failed[UNWIND_FP_FAIL_OUTSIDE_STACK]++;
				*end = (call->s->flags & MLPROF_SF_USTACK_CUT)
					       ? UNWIND_END_STACK_CUT
					       : UNWIND_END_NO_INFO;
				return false;
			}
			/* fall through */
		default:
			/*
			 * No frame pointer either: look for the return address on the stack,
			 * first one that a direct call to this code left (proven), else the
			 * first that looks like one.
			 */
			if (scan(call, &stack, r)) {
				st->scan_frames++;
				pcs[(*n)++] = r->ip;
				if (*n >= max) {
					*end = UNWIND_END_MAX_DEPTH;
					return false;
				}
				return true; /* scan_ra_ok checked its CFI */
			}
			st->fp_failed[UNWIND_FP_FAIL_BAD_POINTER]++;
			*end = UNWIND_END_NO_INFO;
			return false;
		}
		st->fp_frames++;
		pcs[(*n)++] = r->ip;
		if (*n >= max) {
			*end = UNWIND_END_MAX_DEPTH;
			return false;
		}
		interrupted = false;
		if (has_cfi(call, r->ip - 1))
			return true;
	}
}

/* The step-cache slot of pc in maps generation gen. */
static struct step_slot *step_slot_of(struct unwinder *u, uint64_t gen, uint64_t pc)
{
	uint64_t h = (pc ^ (gen * 0x9e3779b97f4a7c15ull)) * 0xff51afd7ed558ccdull;

	return &u->steps[(h >> 40) % STEP_SLOTS];
}

/* The rule of link-time address vaddr of t's file, evaluated once and cached. */
static const struct cfi_rule *rule_get(struct unwinder *u, const struct unwind_table *t,
				       uint64_t vaddr)
{
	uint64_t h = (vaddr ^ ((uintptr_t)t >> 4)) * 0x9e3779b97f4a7c15ull;
	struct rule_slot *rs = &u->rules[(h >> 40) % RULE_SLOTS];

	if (rs->t != t || rs->vaddr != vaddr) {
		rs->t = t;
		rs->vaddr = vaddr;
		unwind_cfi__rule(t, vaddr, &rs->r);
		u->stats.rules_evaluated++;
	}
	return &rs->r;
}

/*
 * Steps from the frame at r (already in pcs; interrupted: the sampled frame, whose pc is
 * not a return address) with cached CFI rules for as long as every frame has a simple one.
 * Returns true when the unwind ended (*end set), false when the frame now at r needs
 * libunwind (no FDE, a complex rule, a read outside the stack copy).
 */
static bool fast_unwind(struct uw_call *call, struct fp_regs *r, bool interrupted, uint64_t *pcs,
			int *n, int max, enum unwind_end *end)
{
	const struct fp_stack stack = {call->stack_lo, call->s->ustack, call->stack_len};
	struct unwinder *u = call->u;

	for (;;) {
		uint64_t pc = interrupted ? r->ip : r->ip - 1, cfa, ra, bp = r->bp;
		struct step_slot *ss = step_slot_of(u, call->p->gen, pc);
		const struct proc_map *m;
		const struct cfi_rule *rule;
		struct uw_obj *o;

		if (ss->gen == call->p->gen && ss->pc == pc)
			goto step;
		m = proc_cache__find_map(u->pc, call->p, pc);
		o = m ? obj_for_map(call, m) : NULL;
		if (!o || !o->t->ok)
			return false;
		rule = rule_get(u, o->t, pc - o->bias);
		if (rule->kind == CFI_RULE)
			*ss = (struct step_slot){call->p->gen, pc, *rule};
		if (rule->kind == CFI_END) {
			*end = UNWIND_END_COMPLETE;
			return true;
		}
		if (rule->kind == CFI_NONE && !table_debug_frame(u, o->t)) {
			/*
			 * No CFI covers pc (MKL's kernels, hand-written assembly): what libunwind's
			 * failed lookup leads to, without its cursor set-up: _start ends the
			 * stack, else frame pointers or a scan find the caller.
			 */
			if (o->t->entry && pc - o->bias >= o->t->entry &&
			    pc - o->bias - o->t->entry < ENTRY_SPAN) {
				*end = UNWIND_END_COMPLETE;
				return true;
			}
			if (!fp_fallback(call, r, interrupted, pcs, n, max, end))
				return true;
			interrupted = false;
			continue;
		}
		if (rule->kind != CFI_RULE)
			return false;
	step:
		rule = &ss->r;
		cfa = (rule->cfa_rbp ? r->bp : r->sp) + (uint64_t)(int64_t)rule->cfa_off;
		if (cfa <= r->sp || !fp_stack__word(&stack, cfa - 8, &ra) ||
		    (rule->rbp_saved &&
		     !fp_stack__word(&stack, cfa + (uint64_t)(int64_t)rule->rbp_off, &bp)))
			return false;
		u->stats.fast_frames++;
		if (call->echo->n < ECHO_FRAMES) {
			call->echo->pc[call->echo->n] = pc;
			call->echo->cfa[call->echo->n++] = cfa;
		}
		if (!ra) {
			*end = UNWIND_END_COMPLETE;
			return true;
		}
		r->ip = ra;
		r->sp = cfa;
		r->bp = bp;
		pcs[(*n)++] = ra;
		if (*n >= max) {
			*end = UNWIND_END_MAX_DEPTH;
			return true;
		}
		interrupted = false;
	}
}

/*
 * The thread's echo slot, its last unwind's step slots and stack words prefetched where
 * this sample's copy holds them; the slot is then rewritten by this unwind.
 */
static struct echo *echo_begin(struct unwinder *u, const struct proc *p,
			       const struct mlprof_sample *s)
{
	struct echo *e = &u->echoes[(s->tid * 0x9e3779b9u >> 16) % ECHO_SLOTS];
	uint64_t lo = s->regs[MLPROF_REG_SP], len = s->ustack_len;

	if (e->tid == s->tid && e->gen == p->gen) {
		for (uint32_t i = 0; i < e->n; i++) {
			__builtin_prefetch(step_slot_of(u, p->gen, e->pc[i]));
			if (e->cfa[i] - 8 >= lo && e->cfa[i] - lo <= len)
				__builtin_prefetch(s->ustack + (e->cfa[i] - 8 - lo));
		}
	}
	e->tid = s->tid;
	e->gen = p->gen;
	e->n = 0;
	return e;
}

/* Points libunwind's cursor at the frame r (already in pcs) with the sample's other registers. */
static int resume_at(struct uw_call *call, unw_cursor_t *cursor, __u64 *regs,
		     const struct fp_regs *r)
{
	memcpy(regs, call->s->regs, MLPROF_NREGS * sizeof(*regs));
	regs[MLPROF_REG_IP] = r->ip;
	regs[MLPROF_REG_SP] = r->sp;
	regs[MLPROF_REG_BP] = r->bp;
	call->regs = regs;
	return unw_init_remote(cursor, call->sp->as, call);
}

int unwinder__unwind(struct unwinder *u, struct proc *p, const struct mlprof_sample *s,
		     uint64_t *pcs, int max, enum unwind_end *end)
{
	struct uw_call call = {0};
	unw_word_t ip = 0, sp = 0, bp = 0, prev_ip = 0, prev_sp = 0;
	__u64 resume_regs[MLPROF_NREGS];
	struct fp_regs fr;
	unw_cursor_t cursor;
	int n = 0, ret;

	if (!(s->flags & MLPROF_SF_USER_REGS) || !s->regs[MLPROF_REG_IP]) {
		*end = finish(u, UNWIND_END_NO_REGS, 0);
		return 0;
	}
	if (max <= 0) {
		*end = finish(u, UNWIND_END_MAX_DEPTH, 0);
		return 0;
	}
	call.u = u;
	call.p = p;
	call.s = s;
	call.regs = s->regs;
	call.stack_lo = s->regs[MLPROF_REG_SP];
	call.stack_len = s->ustack_len;
	if (!p) {
		pcs[n++] = s->regs[MLPROF_REG_IP];
		*end = finish(u, UNWIND_END_NO_INFO, n);
		return n;
	}
	call.echo = echo_begin(u, p, s);
	call.sp = space_get(u, p);
	make_room(u, call.sp);
	if (!call.sp) {
		pcs[n++] = s->regs[MLPROF_REG_IP];
		*end = finish(u, UNWIND_END_BAD_FRAME, n);
		return n;
	}
	/* the fast path first: cached rules, libunwind only where a frame needs it */
	fr = (struct fp_regs){s->regs[MLPROF_REG_IP], s->regs[MLPROF_REG_SP],
			      s->regs[MLPROF_REG_BP]};
	pcs[n++] = fr.ip;
	if (fast_unwind(&call, &fr, true, pcs, &n, max, end)) {
		finish(u, *end, n);
		return n;
	}
	ret = n > 1 ? resume_at(&call, &cursor, resume_regs, &fr)
		    : unw_init_remote(&cursor, call.sp->as, &call);
	n--; /* the frame at the cursor is pushed again below */
	if (ret < 0) {
		pcs[n++] = fr.ip;
		*end = finish(u, UNWIND_END_BAD_FRAME, n);
		return n;
	}
	for (;;) {
		if (unw_get_reg(&cursor, UNW_REG_IP, &ip) < 0 ||
		    unw_get_reg(&cursor, UNW_REG_SP, &sp) < 0) {
			*end = UNWIND_END_BAD_FRAME;
			break;
		}
		if (n > 0 && ip == prev_ip && sp == prev_sp) {
			*end = UNWIND_END_BAD_FRAME;
			break;
		}
		if (n > 0 && ip == 0) {
			*end = UNWIND_END_COMPLETE;
			break;
		}
		pcs[n++] = ip;
		if (n >= max) {
			*end = UNWIND_END_MAX_DEPTH;
			break;
		}
		prev_ip = ip;
		prev_sp = sp;
		if (unw_get_reg(&cursor, UNW_X86_64_RBP, &bp) < 0)
			bp = 0;
		if (n > 1) {
			/* a caller libunwind reached: back to the fast path from it */
			int n0 = n;

			fr = (struct fp_regs){ip, sp, bp};
			if (fast_unwind(&call, &fr, false, pcs, &n, max, end))
				break;
			if (n != n0) {
				if (resume_at(&call, &cursor, resume_regs, &fr) < 0) {
					*end = UNWIND_END_BAD_FRAME;
					break;
				}
				n--;
				prev_ip = prev_sp = 0;
				continue;
			}
		}
		call.stack_cut = false;
		call.no_info = false;
		call.at_entry = false;
		ret = unw_step(&cursor);
		if (call.at_entry) {
			*end = UNWIND_END_COMPLETE;
			break;
		}
		/*
		 * Without unwind info libunwind guesses (frame-pointer chain, return address
		 * at [rsp]); in code built without frame pointers that yields garbage
		 * frames, so a guessed step ends the unwind instead.
		 */
		if (ret > 0 && !call.no_info)
			continue;
		if (call.no_info && !call.stack_cut) {
			/* no CFI here: frame pointers, back to CFI where it covers a pc again */
			fr = (struct fp_regs){ip, sp, bp};
			if (!fp_fallback(&call, &fr, n == 1, pcs, &n, max, end))
				break;
			if (resume_at(&call, &cursor, resume_regs, &fr) < 0) {
				*end = UNWIND_END_BAD_FRAME;
				break;
			}
			/* the resumed frame is already in pcs */
			n--;
			continue;
		}
		if (call.stack_cut)
			*end = (s->flags & MLPROF_SF_USTACK_CUT) ? UNWIND_END_STACK_CUT
								 : UNWIND_END_BAD_FRAME;
		else if (call.no_info)
			*end = UNWIND_END_NO_INFO;
		else if (ret == 0)
			*end = UNWIND_END_COMPLETE;
		else if (ret == -UNW_ENOINFO)
			*end = UNWIND_END_NO_INFO;
		else
			*end = UNWIND_END_BAD_FRAME;
		break;
	}
	finish(u, *end, n);
	return n;
}

const char *unwind_end__str(enum unwind_end end)
{
	switch (end) {
	case UNWIND_END_COMPLETE:
		return "complete";
	case UNWIND_END_STACK_CUT:
		return "stack_cut";
	case UNWIND_END_NO_INFO:
		return "no_info";
	case UNWIND_END_MAX_DEPTH:
		return "max_depth";
	case UNWIND_END_BAD_FRAME:
		return "bad_frame";
	case UNWIND_END_NO_REGS:
		return "no_regs";
	}
	return "unknown";
}

const char *unwind_fp_fail__str(enum unwind_fp_fail f)
{
	switch (f) {
	case UNWIND_FP_FAIL_BAD_POINTER:
		return "bad_pointer";
	case UNWIND_FP_FAIL_OUTSIDE_STACK:
		return "outside_stack";
	case UNWIND_FP_FAIL__COUNT:
		break;
	}
	return "unknown";
}

void unwinder__stats(const struct unwinder *u, struct unwind_stats *out)
{
	*out = u->stats;
}
