/* SPDX-License-Identifier: MIT */
/* The per-CPU rings of a recorder: one per CPU, every event wired in. */

/*
 * A ring that cannot be mapped at the planned size is retried at half the
 * size down to one record (EPERM/ENOMEM: locked-memory limits), and the
 * effective sizes are kept for the summary. Without an explicit
 * ring_samples a ring is sized from the rate (perf_event.c: the ring
 * fills at rate x stack size).
 */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "logging.h"
#include "rings.h"

#define CPUS_MAX 4096

int sp__rings_init(struct sp__rings *r, const struct sp__mem *mem,
		   const struct sp_logger *logger)
{
	int cpus[CPUS_MAX], n, i;

	memset(r, 0, sizeof(*r));
	r->mem = mem;
	r->logger = logger;
	sp__vec_init(&r->rings, sizeof(struct sp__ring));
	n = sp__perf_online_cpus(cpus, CPUS_MAX);
	if (n <= 0)
		return n < 0 ? n : -ENODEV;
	r->cpus = sp__mem_calloc(mem, (size_t)n, sizeof(int));
	r->cpu_ring = sp__mem_calloc(mem, (size_t)n, sizeof(int));
	if (!r->cpus || !r->cpu_ring)
		return -ENOMEM;
	r->ncpus = n;
	for (i = 0; i < n; i++) {
		r->cpus[i] = cpus[i];
		r->cpu_ring[i] = -1;
	}
	return 0;
}

void sp__rings_fini(struct sp__rings *r)
{
	size_t i;

	for (i = 0; i < r->rings.len; i++) {
		struct sp__ring *ring = sp__vec_at(&r->rings, i);

		sp__ring_unmap(ring);
		if (ring->owner_fd >= 0)
			close(ring->owner_fd);
	}
	sp__vec_fini(&r->rings, r->mem);
	/* A failed init may leave either array unallocated. */
	if (r->cpus)
		sp__mem_free(r->mem, r->cpus, (size_t)r->ncpus * sizeof(int));
	if (r->cpu_ring)
		sp__mem_free(r->mem, r->cpu_ring,
			     (size_t)r->ncpus * sizeof(int));
	r->cpus = r->cpu_ring = NULL;
}

void sp__rings_fix_type(struct sp__rings *r, const struct sp__perf_cfg *cfg)
{
	if (r->sample_type_fixed)
		return;
	r->sample_type = sp__perf_sample_type(cfg);
	r->sample_type_fixed = true;
}

static size_t ring_cap(const struct sp__rings *r)
{
	uint64_t left = SP__RING_TOTAL_MAX - r->bytes_total;
	uint64_t cap = SP__RING_TOTAL_MAX / (uint64_t)r->ncpus;

	if (cap > SP__RING_CPU_MAX)
		cap = SP__RING_CPU_MAX;
	return (size_t)(cap < left ? cap : left);
}

static void note_ring(struct sp__rings *r, size_t bytes)
{
	r->bytes_total += bytes;
	if (!r->min_bytes || bytes < r->min_bytes)
		r->min_bytes = bytes;
	if (bytes > r->max_bytes)
		r->max_bytes = bytes;
}

static int ring_map_halving(struct sp__rings *r, const struct sp__perf_cfg *cfg,
			    struct sp__ring *ring, int fd, int slot,
			    size_t *bytes)
{
	size_t min = sp__perf_ring_bytes(cfg, 1, ring_cap(r));
	int err;

	for (;;) {
		err = sp__ring_map(ring, fd, r->cpus[slot], *bytes);
		if ((err != -EPERM && err != -ENOMEM) || *bytes / 2 < min)
			return err;
		*bytes /= 2;
	}
}

int sp__rings_map(struct sp__rings *r, struct sp__perf_cfg *cfg, int fd,
		  int slot)
{
	uint64_t samples = r->ring_samples ? r->ring_samples :
					     sp__perf_ring_default_samples(cfg);
	size_t bytes = sp__perf_ring_bytes(cfg, samples, ring_cap(r));
	struct sp__ring ring;
	int own, err;

	if (!bytes)
		return -ENOMEM; /* the budget cannot hold one record */
	memset(&ring, 0, sizeof(ring));
	cfg->wakeup_bytes = bytes / 8;
	own = fcntl(fd, F_DUPFD_CLOEXEC, 0);
	if (own < 0)
		return -errno;
	err = ring_map_halving(r, cfg, &ring, own, slot, &bytes);
	if (!err) {
		err = sp__vec_push(&r->rings, r->mem, &ring);
		if (err)
			sp__ring_unmap(&ring);
	}
	if (err) {
		close(own);
		return err;
	}
	note_ring(r, bytes);
	r->cpu_ring[slot] = (int)r->rings.len - 1;
	return 0;
}

int sp__rings_wire(struct sp__rings *r, struct sp__perf_cfg *cfg, int fd,
		   int slot)
{
	const struct sp__ring *ring;
	int err = -1;

	if (r->cpu_ring[slot] >= 0) {
		ring = sp__vec_at(&r->rings, (size_t)r->cpu_ring[slot]);
		err = ioctl(fd, PERF_EVENT_IOC_SET_OUTPUT, ring->owner_fd);
		if (err)
			sp__log(r->logger, SP_LOG_DEBUG,
				"SET_OUTPUT on cpu %d: %s; mapping a new ring",
				r->cpus[slot], strerror(errno));
	}
	return err ? sp__rings_map(r, cfg, fd, slot) : 0;
}

int sp__rings_add(struct sp__rings *r, const struct sp__ring *ring)
{
	return sp__vec_push(&r->rings, r->mem, ring);
}

void sp__rings_ioctl(const struct sp__rings *r, unsigned long req)
{
	size_t i;

	for (i = 0; i < r->rings.len; i++)
		ioctl(sp__rings_at(r, i)->owner_fd, req, 0);
}

bool sp__rings_have_unread(const struct sp__rings *r)
{
	size_t i;

	for (i = 0; i < r->rings.len; i++)
		if (sp__ring_has_unread(sp__rings_at(r, i)))
			return true;
	return false;
}
