/* SPDX-License-Identifier: MIT */
/* Reader threads: drain perf rings into blocks and an SPSC queue. */
#ifndef SP_ENGINE_READER_H
#define SP_ENGINE_READER_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "cacheline.h"
#include "clock.h"
#include "drain.h"
#include "mem.h"
#include "ring.h"
#include "spsc.h"

/*
 * A reader owns a group of rings. Each cycle it reads the clock, drains
 * every ring, queues, merged in (time, key) order, what it read up to
 * that clock reading (the rest waits for the next cycle), then publishes
 * the reading as its watermark: every record of its rings older than
 * that is queued. A drain that stopped early (full holds, blocks or
 * queue: under overload a ring can hold more than one drain can take)
 * publishes instead the time of the first record it could not take less
 * SP__STOP_MARGIN_NS, as a ring is written in time order but for a
 * little; the sequencer then writes what is older, and the holds and
 * blocks it frees let the next drain go on. A sample's stack and
 * callchain stay where the kernel wrote them: the reader copies only the
 * parsed fields (struct sp__qsample, a few hundred bytes) into its
 * blocks, with a reference into the ring, and records the sample's ring
 * position as a hold; the ring goes back to the kernel, at the next
 * drain, up to its oldest hold not yet released (a sample is released
 * once it is written).
 * Records that carry state, samples that wrap at the ring's end, and,
 * when the sequencer is slow to poll, every sample of a ring whose holds
 * take half of it (holding more would have the kernel drop records) are
 * copied whole, for a while (SP__COPY_NS); the sequencer then also
 * copies out what it holds by reference (its merge queue), which
 * releases those holds, and the reader's blocks absorb the backlog. A
 * sequencer that polls but is behind (in a step, or its last one ended
 * less than SP__SLOW_STEP_NS ago) has no time for copies: they cost it
 * more than the kernel's drops they delay (2-8x fewer samples per
 * second, measured at a sustained overload), so its rings stay held, as
 * inline mode's do. Memory is bounded: a fixed number of blocks, holds
 * per ring and queue entries. When one of them is full the drain stops,
 * records stay in the kernel ring (which counts what it drops) and the
 * reader sleeps until the sequencer frees space.
 *
 * A block is reused once every record copied into it has been consumed:
 * @pushed counts records written (reader), @consumed those released
 * (sequencer), @sealed is the value of @pushed when the reader moved on
 * (UINT64_MAX while it still fills the block). Counts only grow, so
 * neither side ever resets the other's counter. Each record in a block
 * is preceded by a pointer to its hold (NULL: nothing held).
 */
#define SP__RBLOCK_BYTES (1u << 20)
#define SP__RBLOCKS 24
#define SP__RBLOCKS_WARM 2 /* pre-faulted; the rest when first needed */
#define SP__RQUEUE 8192u   /* merge items, a power of two */
#define SP__RHOLDS 1024u   /* held samples per ring, a power of two */
/* Idle rings still move the watermark this often (ms). */
#define SP__READER_TICK_MS 50
/*
 * How much older than its predecessor in the ring a record can be (ns):
 * a task writing a record (MMAP2, COMM, FORK, EXIT) takes its time, then
 * its space, and a sample interrupting it in between goes first. Far
 * more than that window; far less than the 10 ms or more that a ring's
 * holds span at the kernel's maximum rate (1,024 samples at 100 kHz).
 */
#define SP__STOP_MARGIN_NS 1000000ull
/*
 * A ring found half held while the sequencer is slow to poll is copied,
 * not held, until this long after the last drain that found it so (ns):
 * a held sample keeps the kernel from its space until it is written, so
 * while the sequencer is away only copies let the ring be given back
 * (and the reader's blocks absorb the backlog), and it would be pinned
 * again as soon as it is released.
 */
#define SP__COPY_NS 1000000000ull
/*
 * A sequencer whose last step ended this long ago is slow to poll (ns).
 * A busy one on a loaded machine goes 64-256 ms between two steps at
 * times (preempted, sweeping processes, reading a new module's CFI):
 * measured with both CPUs taken by workloads at the maximum rate.
 */
#define SP__SLOW_STEP_NS 500000000ull

struct sp__reader;

struct sp__rblock {
	unsigned char *data; /* touched at init: no page fault in the run */
	size_t used;
	uint64_t pushed;
	_Atomic uint64_t sealed;
	struct sp__reader *reader;
	char pad0[SP__CACHE_LINE];
	_Atomic uint64_t consumed; /* per record, by whoever writes it */
	char pad1[SP__CACHE_LINE];
};

/** struct sp__rhold is one sample left in its ring until it is written. */
struct sp__rhold {
	uint64_t pos;	       /* its position in the ring */
	_Atomic uint32_t done; /* set by the sequencer once written */
};

struct sp__reader_ring {
	struct sp__ring ring; /* a copy: the mapping itself never moves */
	size_t index;	      /* position in the recorder's ring list */
	uint64_t sample_type;
	/* FIFO of holds, [hold_head, hold_tail) in ring order (reader) */
	struct sp__rhold *holds;
	uint64_t hold_head;
	uint64_t hold_tail;
	uint64_t copy_until; /* samples are copied until then (SP__COPY_NS) */
	_Atomic uint64_t scanned; /* ring.read_pos, for the sequencer */
};

struct sp__reader {
	const struct sp__mem *mem;
	pthread_t thread;
	bool started;
	int epfd;
	int wakefd;    /* stop, drain requests, freed space */
	int notify_fd; /* the sequencer's eventfd */
	struct sp__reader_ring *rings;
	size_t rings_cap;
	_Atomic size_t nrings;
	struct sp__spsc queue;
	struct sp__merge_item *queue_buf;
	struct sp__rblock blocks[SP__RBLOCKS];
	struct sp__rblock *cur;
	struct sp__reader_ring *cur_ring; /* the ring being drained */
	uint64_t stop_time; /* of the record that stopped the last drain */
	void *scratch;
	/*
	 * What this cycle's drain read, one run per ring, merged into the
	 * queue up to the cycle's watermark; newer records wait here for
	 * the next cycle, so the sequencer gets one sorted run per reader.
	 */
	struct sp__merge kept;
	bool dirty; /* queued since the last notification */
	/* Where watermarks come from (the replay harness swaps it). */
	_Atomic(const struct sp__clock *) clock;
	/* The sequencer's last step's end (sp__threaded); NULL: never steps. */
	const _Atomic uint64_t *stepped;
	char pad0[SP__CACHE_LINE];
	/* Written by the sequencer. */
	_Atomic uint64_t drain_req; /* queue everything read: flush, finish */
	_Atomic uint64_t cover_req; /* a watermark over new rings: adds */
	_Atomic bool stop;
	char pad1[SP__CACHE_LINE];
	/* Written by the reader once per drain cycle. */
	_Atomic uint64_t watermark;
	_Atomic uint64_t covered;   /* cover_req seen by the last watermark */
	_Atomic uint64_t drain_ack; /* request whose drain was complete */
	_Atomic bool starved;
	_Atomic uint64_t unusable;
	_Atomic uint64_t stalls; /* drains stopped: full queue, blocks, holds */
	_Atomic size_t nkept;	 /* records in @kept after the last cycle */
	/* A ring is half held: copy out, and wake me once written. */
	_Atomic bool pinned;
	/* eventfd writes and epoll waits for this reader (benchmarks) */
	_Atomic uint64_t wake_calls;
	char pad2[SP__CACHE_LINE];
};

/*
 * Allocates @r for at most @rings_cap rings, reading watermarks from
 * @clock. Returns 0 or -errno.
 */
int sp__reader_init(struct sp__reader *r, const struct sp__mem *mem,
		    size_t rings_cap, int notify_fd,
		    const struct sp__clock *clock);
int sp__reader_start(struct sp__reader *r);
/* Stops and joins the thread; queued items stay poppable. */
void sp__reader_stop(struct sp__reader *r);
void sp__reader_fini(struct sp__reader *r);

/*
 * Hands @ring (at @index of the recorder's list) to the reader; call from
 * the sequencer. Returns the cover request whose watermark (@covered)
 * will include it, or -ENOSPC.
 */
long long sp__reader_add_ring(struct sp__reader *r, const struct sp__ring *ring,
			      size_t index, uint64_t sample_type);

/* Asks for a full drain; returns the request number to wait for. */
uint64_t sp__reader_request(struct sp__reader *r);

/*
 * The record at @ref in @owner (a block) is consumed (the sequencer, or
 * a worker writing): a sample left in the ring is released with it.
 */
void sp__rblock_consume(void *owner, const void *ref);

/*
 * Whether records of @r's rings are not queued yet: in a ring, unread, or
 * read and kept back (newer than the watermark @r last published).
 */
bool sp__reader_has_unread(struct sp__reader *r);
/* After writing: wakes @r if it asked to release held ring space. */
void sp__reader_poke(struct sp__reader *r);

/* Whether a sequencer that last stepped at @stepped is slow at @now. */
static inline bool sp__seq_slow(uint64_t stepped, uint64_t now)
{
	return now > stepped && now - stepped >= SP__SLOW_STEP_NS;
}

#endif /* SP_ENGINE_READER_H */
