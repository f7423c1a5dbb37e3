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
#include "unwind/unwind_space.h"
#include "unwind/unwind_state.h"
#include "unwind/unwind_table.h"

/*
 * A frame with neither CFI nor frame pointer (hand-written assembly: MKL's kernels) has its
 * return address searched for this far above its stack pointer: the whole copy, since
 * OpenBLAS's GEMM kernels (numpy's) take ~29 KiB of stack and align it to 4 KiB (2 KiB
 * found the caller of 23% of numpy matmul samples).
 */
#define SCAN_MAX_BYTES (128u << 10)
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
/* Threads whose last frames are kept (struct echo), by tid. */
#define ECHO_SLOTS 64

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
		u->spaces[i].as = unw_create_addr_space(&unwind_space__accessors, 0);
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
	ok = unwind_space__accessors.find_proc_info(call->sp->as, ip, &pi, 0, call) == 0;
	call->no_info = false;
	call->at_entry = false;
	return ok;
}

static bool has_cfi(struct uw_call *call, uint64_t ip)
{
	const struct proc_map *m = proc_cache__find_map_cached(call->p, ip);

	return obj_has_cfi(call, m ? unwind_space__obj_for_map(call, m) : NULL, ip);
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
	if (!m || !m->exec || !(o = unwind_space__obj_for_map(call, m)) || addr - o->bias < 8 ||
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
	struct uw_obj *o = m ? unwind_space__obj_for_map(call, m) : NULL;
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
		struct uw_obj *o = m ? unwind_space__obj_for_map(call, m) : NULL;
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
		o = m ? unwind_space__obj_for_map(call, m) : NULL;
		if (!o || !o->t->ok)
			return false;
		rule = rule_get(u, o->t, pc - o->bias);
		if (rule->kind == CFI_RULE)
			*ss = (struct step_slot){call->p->gen, pc, *rule};
		if (rule->kind == CFI_END) {
			*end = UNWIND_END_COMPLETE;
			return true;
		}
		if (rule->kind == CFI_NONE && !unwind_space__debug_frame(u, o->t)) {
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
	call.sp = unwind_space__get(u, p);
	unwind_space__make_room(u, call.sp);
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
