/* SPDX-License-Identifier: MIT */
/* The walk memo: a thread's previous walk, whose outer frames a new one reuses. */
#ifndef SP_UNWIND_WALK_MEMO_H
#define SP_UNWIND_WALK_MEMO_H

#include <stdbool.h>
#include <stdint.h>

#include <stackpulse/spool.h>
#include <stackpulse/unwind.h>

#include "mem.h"
#include "unwind_internal.h"

/*
 * A profile samples the same threads again and again, and between two
 * samples of a thread its outer frames (main, the event loop, the
 * interpreter's outer calls) rarely change: only the frames near the
 * leaf do. A walk memo keeps, per thread (LRU by tid), the last walk:
 * for every frame the cursor's state when the walk reached it and how it
 * stepped, and the frames it produced.
 *
 *   struct memo_rec (per tid)          buf: 2 * MEMO_CAP entries
 *   +-- base, n       frames [base, base + n) of buf, walk order
 *   +-- ret, err      how the walk ended (after frame n - 1)
 *   +-- st[]          struct sp__memo_step: state at the frame, its step
 *   +-- out[]         struct sp_frame: what the walk stored
 *
 * A new walk of the same thread, the same module map (@gen) and the same
 * unwinder reuses the previous walk's frames from j on when it reaches
 * the state that walk had at frame j (pc, stack pointer, frame pointer,
 * valid registers; only when the suffix never needs the other callee-
 * saved registers, whose saves are pending) and every step of frames j
 * and after reads the same values in the new copy (walk_memo.c replays
 * the reads of each simple step, and re-runs the few others on the new
 * copy). The result is then exactly the full walk's: the same frames,
 * the same end, the same counters (stored per frame).
 *
 * Records are right-aligned by the walk's end, which is what two walks
 * share: a hit keeps the old suffix where it is and writes only the new
 * prefix in front of it.
 */

#define SP__MEMO_TIDS 4	  /* threads per memo */
#define SP__MEMO_CAP 512u /* frames per record; deeper walks are not kept */

/* Step kinds. */
#define SP__MEMO_SIMPLE 0 /* the inline simple step with @row: @slot, @val */
#define SP__MEMO_SLOW 1	  /* step_slow with @row, @table, @reason */
#define SP__MEMO_PURE 2	  /* the outermost frame's row: ends, reads nothing */

struct sp__memo_step {
	uint64_t pc; /* the cursor's lookup pc */
	uint64_t sp, fp;
	uint64_t valid; /* without the pending-save registers */
	const struct sp__cfi_rules *row;
	const struct sp__cfi_table *table;
	uint64_t slot[2], val[2]; /* a simple step's reads (sp__memo_keep) */
	/* The lowest and highest slot of this step and the later ones but
	 * the record's last (a step that is not simple has its slots at 0),
	 * so a replay checks the bounds of a whole suffix at once. */
	uint64_t lo, hi;
	/* base/frame_hash.h state after the walk's frames from this one to
	 * the outermost, and its marker when the walk did not end there. */
	uint64_t hsuf;
	uint32_t fb_after; /* fallbacks counted at this frame and after */
	uint8_t back;
	uint8_t kind;
	uint8_t fb;	/* fallback counted at this frame + 1; 0: none */
	uint8_t reason; /* step_slow's reason */
	uint8_t usable; /* the walk from here on may be reused */
	uint8_t pad[7];
};

struct sp__memo_rec {
	int32_t tid;
	bool valid;
	bool ready; /* the per-frame sums are made (else at the next find) */
	uint64_t gen;
	uint64_t lru;
	uint64_t unwinder; /* its generation: addresses are reused */
	uint32_t base, n;  /* frames [base, base + n) */
	int ret;	   /* 0 (depth limit), SP__STEP_END, -1 */
	int err;	   /* the error counted at the end when ret is -1 */
	struct sp__memo_step *st; /* 2 * SP__MEMO_CAP + 1 */
	struct sp_frame *out;	  /* 2 * SP__MEMO_CAP */
};

struct sp__walk_memo {
	struct sp__mem mem;
	uint64_t clock;
	struct sp__memo_rec rec[SP__MEMO_TIDS];
	struct sp__memo_rec scratch; /* the walk being recorded */
	/* The last walk's hash state after its frames [1, tail_n) (marker
	 * included), when it was kept (sp__walk_memo_tail). */
	bool tail_ok;
	uint32_t tail_n;
	uint64_t tail;
	/* Counters for benchmarks and tests. */
	uint64_t hits, misses, frames_reused;
};

/* The scratch record's frame i (a walk records from SP__MEMO_CAP on). */
static inline struct sp__memo_step *sp__memo_at(struct sp__walk_memo *m,
						size_t i)
{
	return &m->scratch.st[SP__MEMO_CAP + i];
}

/*
 * sp__memo_find: the valid record of @tid for @gen and @unwinder (its
 * generation), or
 * NULL; sp__memo_keep: makes the scratch record (@n frames from
 * SP__MEMO_CAP, the walk's frames @out, its end) @tid's, evicting the
 * least recently used; @prev, when the walk reused its frames from @j on
 * (the new walk's frame @k), is merged instead (walk_memo.c).
 */
struct sp__memo_rec *sp__memo_find(struct sp__walk_memo *m, int32_t tid,
				   uint64_t gen, uint64_t unwinder);
void sp__memo_keep(struct sp__walk_memo *m, int32_t tid, uint64_t gen,
		   uint64_t unwinder, const struct sp_frame *out, size_t n,
		   int ret, int err, struct sp__memo_rec *prev, size_t j,
		   size_t k);
/* Forgets @tid's record (a walk that could not be recorded). */
void sp__memo_drop(struct sp__walk_memo *m, int32_t tid);

/*
 * The replay of previous frame @j's suffix on a new copy @stack, for a
 * walk at frame @k with depth limit @limit: whether it holds; then
 * *@used frames from j are the new walk's, it ends with *@ret (and *@err
 * when -1). The step of a slow frame is re-run by @slow (unwinder.c).
 */
struct sp__memo_slow_out {
	uint64_t next[3]; /* pc, sp, fp of the caller */
	uint64_t valid;
	int ret;
	int err; /* the error counted when ret is -1 */
	int fb;	 /* the fallback counted + 1, 0: none */
};

typedef void (*sp__memo_slow_fn)(const struct sp__stack *stack,
				 const struct sp__memo_step *s,
				 struct sp__memo_slow_out *out);

bool sp__memo_replay(const struct sp__memo_rec *prev, size_t j, size_t k,
		     size_t limit, const struct sp__stack *stack,
		     sp__memo_slow_fn slow, size_t *used, int *ret, int *err);

#endif /* SP_UNWIND_WALK_MEMO_H */
