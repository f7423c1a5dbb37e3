// SPDX-License-Identifier: Apache-2.0
/*
 * Address spaces: each sampled process's ELF objects as libunwind sees them, the unwind
 * tables they share across processes, and the accessors through which libunwind reads
 * them (the copied stack, the tables, the files' memory).
 */
#include "unwind/unwind_space.h"

#include <errno.h>
#include <libunwind.h>
#include <string.h>

#include "mlprof/sample.h"
#include "symbolize/elf.h"
#include "symbolize/proc.h"
#include "symbolize/proc_files.h"
#include "unwind/unwind_table.h"

/* Exported by libunwind-x86_64 but not declared in its public headers (perf does the same). */
extern int _Ux86_64_dwarf_search_unwind_table(unw_addr_space_t as, unw_word_t ip,
					      unw_dyn_info_t *di, unw_proc_info_t *pi,
					      int need_unwind_info, void *arg);

/*
 * Room kept free when an unwind starts: caches are trimmed only then (make_room), so one
 * unwind can add this many tables (objects) before lookups start missing.
 */
#define TABLE_HEADROOM 64
#define OBJ_HEADROOM   32
/* Mappings end on a page boundary past their segment's end (4 KiB pages on x86-64). */
#define PAGE_SLACK 4096ull
/* Fake, non-canonical addresses where synthesized tables are exposed to libunwind. */
#define FAKE_TABLE_BASE	 0xfff0000000000000ull
#define FAKE_TABLE_SHIFT 36
/* Offsets in an object's fake range of its translated .debug_frame index and image. */
#define FAKE_DBG_TABLE (1ull << 34)
#define FAKE_DBG_IMAGE (1ull << 35)
/* Bound on the translated .debug_frame images and indexes held by all tables together. */
#define MAX_DEBUG_FRAME_TOTAL (256ull << 20)

/* ---- unwind tables (shared by every process that maps the file) ---- */

static void flush_spaces(struct unwinder *u)
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

/* See unwind_space.h. */
void unwind_space__make_room(struct unwinder *u, struct uw_space *sp)
{
	if (u->ntables + TABLE_HEADROOM > MAX_TABLES) {
		flush_spaces(u);
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

/* See unwind_space.h. */
bool unwind_space__debug_frame(struct unwinder *u, struct unwind_table *t)
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

/* The object of sp holding runtime address addr, or NULL (the last one found is tried first). */
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

/* See unwind_space.h. */
struct uw_obj *unwind_space__obj_for_map(struct uw_call *call, const struct proc_map *m)
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

/* See unwind_space.h. */
struct uw_space *unwind_space__get(struct unwinder *u, struct proc *p)
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
	o = m ? unwind_space__obj_for_map(call, m) : NULL;
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
	if (unwind_space__debug_frame(call->u, o->t)) {
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
			o = unwind_space__obj_for_map(call, m);
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

unw_accessors_t unwind_space__accessors = {
	.find_proc_info = find_proc_info,
	.put_unwind_info = put_unwind_info,
	.get_dyn_info_list_addr = get_dyn_info_list_addr,
	.access_mem = access_mem,
	.access_reg = access_reg,
	.access_fpreg = access_fpreg,
	.resume = resume,
	.get_proc_name = get_proc_name,
};
