/* SPDX-License-Identifier: MIT */
/* The walk memo (walk_memo.h): records per thread, their replay and merge. */
#include <errno.h>
#include <string.h>

#include "for_engine/unwind_jit.h"
#include "frame_hash.h"
#include "walk_memo.h"

#define ST_LEN (2 * SP__MEMO_CAP + 1)
#define OUT_LEN (2 * SP__MEMO_CAP)

static void rec_free(struct sp__walk_memo *m, struct sp__memo_rec *r)
{
	sp__mem_free(&m->mem, r->st, ST_LEN * sizeof(*r->st));
	sp__mem_free(&m->mem, r->out, OUT_LEN * sizeof(*r->out));
}

static int rec_init(struct sp__walk_memo *m, struct sp__memo_rec *r)
{
	r->st = sp__mem_calloc(&m->mem, ST_LEN, sizeof(*r->st));
	r->out = sp__mem_calloc(&m->mem, OUT_LEN, sizeof(*r->out));
	return r->st && r->out ? 0 : -ENOMEM;
}

int sp__walk_memo_new(const struct sp__mem *mem, struct sp__walk_memo **out)
{
	struct sp__walk_memo *m;
	unsigned i;
	int err = 0;

	if (!mem || !out)
		return -EINVAL;
	m = sp__mem_calloc(mem, 1, sizeof(*m));
	if (!m)
		return -ENOMEM;
	m->mem = *mem;
	for (i = 0; i < SP__MEMO_TIDS && !err; i++)
		err = rec_init(m, &m->rec[i]);
	if (!err)
		err = rec_init(m, &m->scratch);
	if (err) {
		sp__walk_memo_free(m);
		return err;
	}
	*out = m;
	return 0;
}

void sp__walk_memo_free(struct sp__walk_memo *m)
{
	struct sp__mem mem;
	unsigned i;

	if (!m)
		return;
	mem = m->mem;
	for (i = 0; i < SP__MEMO_TIDS; i++)
		rec_free(m, &m->rec[i]);
	rec_free(m, &m->scratch);
	sp__mem_free(&mem, m, sizeof(*m));
}

void sp__walk_memo_counters(const struct sp__walk_memo *m, uint64_t *hits,
			    uint64_t *misses, uint64_t *frames_reused)
{
	*hits = m ? m->hits : 0;
	*misses = m ? m->misses : 0;
	*frames_reused = m ? m->frames_reused : 0;
}

void sp__memo_drop(struct sp__walk_memo *m, int32_t tid)
{
	unsigned i;

	for (i = 0; i < SP__MEMO_TIDS; i++)
		if (m->rec[i].tid == tid)
			m->rec[i].valid = false;
}

/* @tid's slot, else the least recently used one. */
static struct sp__memo_rec *slot_of(struct sp__walk_memo *m, int32_t tid)
{
	struct sp__memo_rec *best = &m->rec[0];
	unsigned i;

	for (i = 0; i < SP__MEMO_TIDS; i++) {
		struct sp__memo_rec *r = &m->rec[i];

		if (r->valid && r->tid == tid)
			return r;
		if (!r->valid)
			best = best->valid ? r : best;
		else if (best->valid && r->lru < best->lru)
			best = r;
	}
	return best;
}

/*
 * The per-frame sums of frames [from, to) of @st, whose entry @to holds
 * the sums of what follows (or is the end when @to is the last + 1 and
 * @tail is false): fallbacks from a frame on, and whether the walk from
 * there on may be reused (every frame replayable); the slots each
 * simple step read, from the state of the frame after it, and their
 * bounds over the frame and the later ones but the last.
 */
static void sums(struct sp__memo_step *st, size_t from, size_t to, bool tail)
{
	uint32_t fb = tail ? st[to].fb_after : 0;
	uint8_t ok = tail ? st[to].usable : 1;
	uint64_t lo = tail ? st[to].lo : UINT64_MAX, hi = tail ? st[to].hi : 0;
	size_t i;

	for (i = to; i-- > from;) {
		struct sp__memo_step *s = &st[i], *nx = &st[i + 1];

		fb += s->fb != 0;
		ok &= s->usable;
		s->fb_after = fb;
		s->usable = ok;
		/* Other steps: slots at 0, outside every copy (replay). */
		memset(s->slot, 0, sizeof(s->slot));
		memset(s->val, 0, sizeof(s->val));
		if (s->kind == SP__MEMO_SIMPLE)
			sp__arch_simple_slots(s->row, nx->sp, nx->pc + nx->back,
					      nx->fp, s->slot, s->val);
		if (tail || i + 1 < to) {
			uint64_t a = s->slot[0], b = s->slot[1];

			lo = a < lo ? a : lo;
			lo = b < lo ? b : lo;
			hi = a > hi ? a : hi;
			hi = b > hi ? b : hi;
		}
		s->lo = lo;
		s->hi = hi;
	}
}

/* The hash state below a walk's frames: its marker, unless it ended. */
static uint64_t hash_base(int ret)
{
	return ret == SP__STEP_END ? SP__FRAME_HASH_SEED :
				     sp__frame_hash_mix(SP__FRAME_HASH_SEED, 0);
}

/* The hash states of frames [0, @to) of @st, from @h: frames [@to, n). */
static void hash_steps(struct sp__memo_step *st, const struct sp_frame *out,
		       size_t to, uint64_t h)
{
	size_t i;

	for (i = to; i-- > 0;) {
		h = sp__frame_hash_mix(h, out[i].abs_ip);
		st[i].hsuf = h;
	}
}

/*
 * The record of @tid; a walk kept whole gets its sums here, when the
 * thread comes back, so that walks nothing reuses cost only their copy.
 */
struct sp__memo_rec *sp__memo_find(struct sp__walk_memo *m, int32_t tid,
				   uint64_t gen, uint64_t unwinder)
{
	unsigned i;

	for (i = 0; i < SP__MEMO_TIDS; i++) {
		struct sp__memo_rec *r = &m->rec[i];

		if (!r->valid || r->tid != tid || r->gen != gen ||
		    r->unwinder != unwinder || !r->n)
			continue;
		if (!r->ready)
			sums(r->st + r->base, 0, r->n, false);
		r->ready = true;
		return r;
	}
	return NULL;
}

static void swap_bufs(struct sp__memo_rec *a, struct sp__memo_rec *b)
{
	struct sp__memo_step *st = a->st;
	struct sp_frame *out = a->out;

	a->st = b->st;
	a->out = b->out;
	b->st = st;
	b->out = out;
}

void sp__memo_keep(struct sp__walk_memo *m, int32_t tid, uint64_t gen,
		   uint64_t unwinder, const struct sp_frame *out, size_t n,
		   int ret, int err, struct sp__memo_rec *prev, size_t j,
		   size_t k)
{
	struct sp__memo_rec *r = prev ? prev : slot_of(m, tid);
	struct sp__memo_step *st;
	size_t used = n - k, cut;

	if (n == 0 || n > SP__MEMO_CAP) {
		if (prev)
			prev->valid = false;
		return;
	}
	if (prev && prev->base + j >= k) {
		/* In place: the new prefix goes in front of the old suffix. */
		cut = j + used < prev->n; /* the depth limit ended it */
		st = prev->st + prev->base + j - k;
		memcpy(st, m->scratch.st + SP__MEMO_CAP, k * sizeof(*st));
		memcpy(prev->out + prev->base + j - k, out, k * sizeof(*out));
		prev->base += (uint32_t)(j - k);
		if (cut)
			sums(st, k, n, false);
		sums(st, 0, k, true);
		/* Uncut, the kept suffix's states hold: same frames, same end. */
		if (cut)
			hash_steps(st, out, n, hash_base(ret));
		else
			hash_steps(st, out, k, st[k].hsuf);
	} else {
		if (prev) {
			/* No room in front: the suffix joins the prefix. */
			memcpy(m->scratch.st + SP__MEMO_CAP + k,
			       prev->st + prev->base + j,
			       (used + 1) * sizeof(*st));
		}
		memcpy(m->scratch.out + SP__MEMO_CAP, out, n * sizeof(*out));
		swap_bufs(r, &m->scratch);
		r->base = SP__MEMO_CAP;
		r->ready = false; /* sums(): at the next sp__memo_find */
		if (prev) {
			sums(r->st + SP__MEMO_CAP, 0, n, false);
			r->ready = true;
		}
		hash_steps(r->st + SP__MEMO_CAP, out, n, hash_base(ret));
	}
	r->n = (uint32_t)n;
	r->ret = ret;
	r->err = err;
	r->tid = tid;
	r->gen = gen;
	r->unwinder = unwinder;
	r->lru = ++m->clock;
	r->valid = true;
	m->tail_ok = true;
	m->tail_n = (uint32_t)n + (ret != SP__STEP_END);
	m->tail = n > 1 ? r->st[r->base + 1].hsuf : hash_base(ret);
}

bool sp__walk_memo_tail(const struct sp__walk_memo *m, size_t n, uint64_t *h)
{
	if (!m || !m->tail_ok || m->tail_n != n)
		return false;
	*h = m->tail;
	return true;
}

/* Re-runs slow step @s on @stack: whether it ends with @want as before. */
static bool slow_holds(const struct sp__memo_step *s,
		       const struct sp__memo_step *nx, int want, int err,
		       const struct sp__stack *stack, sp__memo_slow_fn slow)
{
	struct sp__memo_slow_out o;

	if (s->valid & ~(uint64_t)(SP__PC_SP | SP__REG_BIT(SP__ARCH_FP)))
		return false;
	slow(stack, s, &o);
	if (o.ret != want || o.fb != s->fb || (want < 0 && o.err != err))
		return false;
	return want != 0 ||
	       (o.next[0] == nx->pc + nx->back && o.next[1] == nx->sp &&
		o.next[2] == nx->fp && o.valid == nx->valid);
}

/*
 * The word at @slot of the copy: at @base + slot, @base the copy's
 * address less its target address (integer arithmetic: only in-copy
 * addresses are made pointers, which the caller's bounds ensure).
 */
static uint64_t slot_word(uintptr_t base, uint64_t slot)
{
	uint64_t v;

	memcpy(&v, (const void *)(base + (uintptr_t)slot), 8);
	return v;
}

/* Nonzero when simple step @s, its slots in the copy, reads otherwise. */
static uint64_t step_diff(uintptr_t base, const struct sp__memo_step *s)
{
	return (slot_word(base, s->slot[0]) ^ s->val[0]) |
	       (slot_word(base, s->slot[1]) ^ s->val[1]);
}

/*
 * Whether simple steps [@s, @end), every slot of which is in the copy
 * (their bounds are; a step that is not simple has its slots at 0,
 * below every copy), read what they read before: no test per step, one
 * at the end (a replay that fails is rare).
 */
static bool replay_reads(const struct sp__memo_step *s,
			 const struct sp__memo_step *end, uintptr_t base)
{
	uint64_t diff = 0;

	for (; s + 1 < end; s += 2)
		diff |= step_diff(base, s) | step_diff(base, s + 1);
	if (s < end)
		diff |= step_diff(base, s);
	return diff == 0;
}

bool sp__memo_replay(const struct sp__memo_rec *prev, size_t j, size_t k,
		     size_t limit, const struct sp__stack *stack,
		     sp__memo_slow_fn slow, size_t *used, int *ret, int *err)
{
	const struct sp__memo_step *st = prev->st + prev->base, *s;
	uint64_t addr = stack->addr, lim = stack->len - 8;
	uintptr_t base = (uintptr_t)stack->data - (uintptr_t)addr;
	size_t e = prev->n - 1, last;

	/* A copy at address 0 would cover the 0 slots of the other steps. */
	if (k >= limit || stack->len < 8 || addr == 0)
		return false;
	if (k + (e - j) + 1 > limit) {
		*used = limit - k;
		*ret = 0;
	} else if (prev->ret != 0) {
		*used = e - j + 1;
		*ret = prev->ret;
	} else if (k + (e - j) + 1 == limit) {
		*used = e - j + 1;
		*ret = 0;
	} else {
		return false;
	}
	*err = prev->err;
	last = j + *used - 1;
	/*
	 * Every step before the last finds its caller as it did: a simple
	 * step reads the same two words (the bounds checks and the reads of
	 * sp__arch_step_simple, offsets modulo 2^64 from the copy's start,
	 * so one comparison rejects both sides); the slots of the others are
	 * 0, outside every copy, and they are re-run.
	 */
	for (s = st + j; s < st + last; s++) {
		uint64_t o0 = s->slot[0] - addr, o1 = s->slot[1] - addr;

		if (s->lo - addr <= lim && s->hi - addr <= lim)
			break; /* the rest in the copy: replay_reads */
		if (__builtin_expect((o0 > lim) | (o1 > lim), 0)) {
			if (s->kind != SP__MEMO_SLOW ||
			    !slow_holds(s, s + 1, 0, 0, stack, slow))
				return false;
			continue;
		}
		if (step_diff(base, s))
			return false;
	}
	if (s < st + last && !replay_reads(s, st + last, base))
		return false;
	/* The last one ends the walk as it did, or steps (the limit). */
	s = &st[last];
	if (s->kind == SP__MEMO_SIMPLE)
		return *ret == 0 && s->slot[0] - addr <= lim &&
		       s->slot[1] - addr <= lim && step_diff(base, s) == 0;
	if (s->kind == SP__MEMO_PURE)
		return *ret == SP__STEP_END;
	return slow_holds(s, s + 1, *ret, *err, stack, slow);
}
