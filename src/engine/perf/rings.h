/* SPDX-License-Identifier: MIT */
/* The per-CPU rings of a recorder: one per CPU, every event wired in. */
#ifndef SP_ENGINE_RINGS_H
#define SP_ENGINE_RINGS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <stackpulse/log.h>

#include "mem.h"
#include "perf_event.h"
#include "ring.h"
#include "vec.h"

/*
 * The first event opened on a CPU maps that CPU's ring; every later event
 * on the CPU is redirected into it with PERF_EVENT_IOC_SET_OUTPUT (same
 * CPU and clock, feasibility §2). A ring keeps a duplicate of the event
 * it was mapped from for its whole life, so later events can SET_OUTPUT
 * into it even after the first task exits. Rings are only ever appended:
 * a ring's index is stable and names it in merge keys.
 */

/* Per-CPU ring budgets (stackpulse 0.10.2). */
#define SP__RING_CPU_MAX (256ull << 20)
#define SP__RING_TOTAL_MAX (1ull << 30)

/** struct sp__rings is every ring of one recorder and their budget. */
struct sp__rings {
	const struct sp__mem *mem;
	const struct sp_logger *logger;
	int *cpus; /* online CPU ids, one slot each */
	int ncpus;
	struct sp__vec rings;  /* struct sp__ring */
	int *cpu_ring;	       /* index into @rings per cpu slot, -1 = none */
	uint64_t ring_samples; /* samples per ring; 0: sized from the rate */
	uint64_t bytes_total;
	uint64_t min_bytes; /* smallest and largest ring mapped (0: none) */
	uint64_t max_bytes;
	/* The layout of every record in the rings: fixed by the first open. */
	uint64_t sample_type;
	bool sample_type_fixed;
};

/* Reads the online CPUs; no ring yet. Returns 0, -ENODEV, -ENOMEM, -errno. */
int sp__rings_init(struct sp__rings *r, const struct sp__mem *mem,
		   const struct sp_logger *logger);
/* Unmaps every ring and closes the events they hold. */
void sp__rings_fini(struct sp__rings *r);

static inline size_t sp__rings_count(const struct sp__rings *r)
{
	return r->rings.len;
}

static inline struct sp__ring *sp__rings_at(const struct sp__rings *r, size_t i)
{
	return sp__vec_at(&r->rings, i);
}

/*
 * Fixes the records' layout from @cfg after its first successful open
 * (the fallback ladder may have dropped kernel callchains).
 */
void sp__rings_fix_type(struct sp__rings *r, const struct sp__perf_cfg *cfg);

/*
 * Maps a new ring for cpu slot @slot from event @fd (the ring keeps a
 * duplicate of @fd) within the budget, halving the size on EPERM/ENOMEM
 * (locked-memory limits) down to one record. Sets cfg->wakeup_bytes for
 * the events opened after it. Returns 0, -ENOMEM (the budget cannot hold
 * one record) or -errno.
 */
int sp__rings_map(struct sp__rings *r, struct sp__perf_cfg *cfg, int fd,
		  int slot);

/*
 * Routes event @fd into the ring of cpu slot @slot: SET_OUTPUT into the
 * ring that exists, else (or when that is refused) a new ring.
 */
int sp__rings_wire(struct sp__rings *r, struct sp__perf_cfg *cfg, int fd,
		   int slot);

/*
 * Appends a ring mapped by someone else (the replay harness's in-memory
 * rings); it is unmapped, and its owner_fd closed if >= 0, by fini.
 */
int sp__rings_add(struct sp__rings *r, const struct sp__ring *ring);

/* Issues @req (PERF_EVENT_IOC_ENABLE, ...) on every ring's own event. */
void sp__rings_ioctl(const struct sp__rings *r, unsigned long req);

/* Whether some ring holds records not read yet. */
bool sp__rings_have_unread(const struct sp__rings *r);

#endif /* SP_ENGINE_RINGS_H */
