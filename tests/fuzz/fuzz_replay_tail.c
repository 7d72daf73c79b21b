/* SPDX-License-Identifier: MIT */
/* Fuzz target: Replay and a growing-file Tail against Snapshot on the same bytes. */
#define _GNU_SOURCE
#include <stdio.h>
#include <sys/mman.h>
#include <unistd.h>

#include <stackpulse/replay.h>
#include <stackpulse/snapshot.h>
#include <stackpulse/tail.h>

#include "fuzz_spool.h"

/*
 * The input is written to a memfd (opened by path through /proc/self/fd).
 *
 * Replay on the whole file must agree with Snapshot on the same bytes:
 * both open or both fail with the same code, and on success they hold the
 * same definitions, recovery flag and samples, also after a rewind.
 *
 * Tail: the file is grown in three pieces (the first one holds the whole
 * header of a plain spool) and polled after each until a poll makes no
 * progress. By §9.2 every prefix decodes to a prefix of the whole decode,
 * so when Snapshot opens the whole file, Tail must deliver exactly its
 * samples and never fail. When Snapshot rejects a plain spool as corrupt,
 * Tail must deliver a prefix of the samples before the corrupt record and
 * report SP_ECORRUPT once the whole file is there. zstd inputs that
 * Snapshot rejects are only run for crashes and leaks (a torn last frame
 * is "more to come" for a Tail but an error for a Snapshot).
 */

struct samples {
	struct sp_sample *v;
	size_t n, cap;
};

static void samples_push(struct samples *s, const struct sp_sample *smp)
{
	if (s->n == s->cap) {
		s->cap = s->cap ? 2 * s->cap : 64;
		s->v = realloc(s->v, s->cap * sizeof(*s->v));
		FUZZ_CHECK(s->v != NULL);
	}
	s->v[s->n++] = *smp;
}

struct truth {
	int err; /* Snapshot's result on the whole input */
	struct samples smp;
	uint32_t counts[4];
	bool recovered;
};

static void snapshot_truth(const uint8_t *data, size_t size, struct truth *t)
{
	struct sp_snapshot *snap;
	struct sp_sample smp;
	size_t i;

	memset(t, 0, sizeof(*t));
	t->err = sp_snapshot_open_buffer(data, size, NULL, &snap);
	if (t->err)
		return;
	for (i = 0; i < sp_snapshot_sample_count(snap); i++) {
		FUZZ_CHECK(sp_snapshot_sample(snap, i, &smp) == 0);
		samples_push(&t->smp, &smp);
	}
	fuzz_counts(sp_snapshot_spool(snap), t->counts);
	t->recovered = sp_snapshot_is_recovered(snap);
	sp_snapshot_close(snap);
}

static void replay_pass(struct sp_replay *r, const struct truth *t)
{
	struct sp_sample smp;
	size_t i = 0;
	int n;

	while ((n = sp_replay_next(r, &smp)) == 1) {
		FUZZ_CHECK(i < t->smp.n);
		FUZZ_CHECK(memcmp(&smp, &t->smp.v[i++], sizeof(smp)) == 0);
	}
	FUZZ_CHECK(n == 0 && i == t->smp.n);
	FUZZ_CHECK(sp_replay_next(r, &smp) == 0);
}

static void check_replay(const char *path, const struct truth *t)
{
	struct sp_replay *r = NULL;
	struct fuzz_alloc a;
	struct sp_reader_opts o = { .size = sizeof(o), .allocator = &a.hook };
	uint32_t c[4];
	int err;

	fuzz_alloc_init(&a, 0);
	err = sp_replay_open(path, &o, &r);
	FUZZ_CHECK(err == t->err);
	if (!err) {
		FUZZ_CHECK(sp_replay_sample_count(r) == t->smp.n);
		FUZZ_CHECK(sp_replay_is_recovered(r) == t->recovered);
		fuzz_counts(sp_replay_spool(r), c);
		FUZZ_CHECK(memcmp(c, t->counts, sizeof(c)) == 0);
		replay_pass(r, t);
		FUZZ_CHECK(sp_replay_rewind(r) == 0);
		replay_pass(r, t);
		sp_replay_close(r);
	}
	FUZZ_CHECK(a.outstanding == 0);
}

struct tailer {
	struct sp_tail *tail;
	struct samples smp;
	int last_err;
	int open_err;
	int opened_at; /* piece index at which sp_tail_open succeeded */
};

static void check_batch(const struct sp_tail *tail)
{
	const struct sp_spool *s = sp_tail_spool(tail);
	const struct sp_python_record *py;
	const uint32_t *mods;
	const int32_t *pids;
	size_t i, n;

	n = sp_tail_retired_modules(tail, &mods);
	for (i = 0; i < n; i++)
		FUZZ_CHECK(mods[i] < sp_spool_module_count(s));
	n = sp_tail_retired_pids(tail, &pids);
	for (i = 0; i < n; i++)
		FUZZ_CHECK(pids[i] >= 1);
	n = sp_tail_python_records(tail, &py);
	for (i = 0; i < n; i++)
		FUZZ_CHECK(py[i].pid >= 1);
	(void)sp_tail_pids(tail, &pids);
}

/* Polls until a poll makes no progress (or fails). */
static void drain(struct tailer *tl, size_t file_size)
{
	struct sp_sample smp;
	size_t iter, i;
	int n;

	for (iter = 0;; iter++) {
		/* Each productive poll consumes at least one record. */
		FUZZ_CHECK(iter <= file_size + 2);
		n = sp_tail_poll(tl->tail);
		if (n < 0) {
			tl->last_err = n;
			return;
		}
		FUZZ_CHECK((size_t)n == sp_tail_sample_count(tl->tail));
		FUZZ_CHECK(n <= SP_TAIL_BATCH_SAMPLES);
		for (i = 0; i < (size_t)n; i++) {
			FUZZ_CHECK(sp_tail_sample(tl->tail, i, &smp) == 0);
			samples_push(&tl->smp, &smp);
		}
		FUZZ_CHECK(sp_tail_sample(tl->tail, (size_t)n, &smp) ==
			   -EINVAL);
		check_batch(tl->tail);
		FUZZ_CHECK(sp_tail_consumed(tl->tail) <= file_size);
		if (n == 0 && !sp_tail_has_more(tl->tail))
			return;
	}
}

static void write_all(int fd, const uint8_t *p, size_t n)
{
	ssize_t w;

	while (n > 0) {
		w = write(fd, p, n);
		FUZZ_CHECK(w > 0);
		p += w;
		n -= (size_t)w;
	}
}

static void run_tail(int fd, const char *path, const uint8_t *data,
		     const size_t cuts[3], struct tailer *tl,
		     struct fuzz_alloc *a)
{
	struct sp_reader_opts o = { .size = sizeof(o), .allocator = &a->hook };
	size_t done = 0, i;

	FUZZ_CHECK(ftruncate(fd, 0) == 0 && lseek(fd, 0, SEEK_SET) == 0);
	for (i = 0; i < 3; i++) {
		write_all(fd, data + done, cuts[i] - done);
		done = cuts[i];
		if (!tl->tail) {
			tl->open_err = sp_tail_open(path, &o, &tl->tail);
			if (tl->open_err)
				continue;
			tl->opened_at = (int)i;
		}
		drain(tl, done);
	}
}

static void check_tail(const struct tailer *tl, const struct truth *t,
		       const struct fuzz_run *ref, bool zstd)
{
	uint32_t c[4];
	size_t i;

	if (t->err == 0) {
		FUZZ_CHECK(tl->tail != NULL && tl->last_err == 0);
		/* The first piece holds a valid header: opening cannot wait. */
		FUZZ_CHECK(zstd || tl->opened_at == 0);
		FUZZ_CHECK(tl->smp.n == t->smp.n);
		for (i = 0; i < t->smp.n; i++)
			FUZZ_CHECK(memcmp(&tl->smp.v[i], &t->smp.v[i],
					  sizeof(t->smp.v[i])) == 0);
		fuzz_counts(sp_tail_spool(tl->tail), c);
		FUZZ_CHECK(memcmp(c, t->counts, sizeof(c)) == 0);
		return;
	}
	if (zstd)
		return;
	FUZZ_CHECK(t->err == SP_ECORRUPT);
	FUZZ_CHECK(tl->tail ? tl->last_err == SP_ECORRUPT :
			      tl->open_err == SP_ECORRUPT);
	FUZZ_CHECK(tl->smp.n <= ref->nsamples);
	for (i = 0; i < tl->smp.n; i++)
		FUZZ_CHECK(memcmp(&tl->smp.v[i], &ref->samples[i],
				  sizeof(tl->smp.v[i])) == 0);
}

/* Piece ends: the first covers a plain spool's header (Tail needs it). */
static void choose_cuts(const uint8_t *data, size_t size,
			const struct fuzz_run *ref, bool zstd, size_t cuts[3])
{
	uint64_t h = fuzz_hash(data, size);
	size_t first = !zstd && ref->hdr > 0 ? (size_t)ref->hdr : 0;

	cuts[0] = first + (size_t)(h % (size - first + 1));
	cuts[1] = cuts[0] + (size_t)((h >> 24) % (size - cuts[0] + 1));
	cuts[2] = size;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	bool zstd = sp__is_zstd(data, size);
	struct tailer tl = { 0 };
	struct fuzz_alloc a;
	struct fuzz_run ref;
	struct truth t;
	size_t cuts[3];
	char path[64];
	int fd;

	fd = memfd_create("fuzz_spool", MFD_CLOEXEC);
	FUZZ_CHECK(fd >= 0);
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	snapshot_truth(data, size, &t);
	fuzz_run_decode(&ref, data, zstd ? 0 : size);

	write_all(fd, data, size);
	check_replay(path, &t);

	fuzz_alloc_init(&a, 0);
	choose_cuts(data, size, &ref, zstd, cuts);
	run_tail(fd, path, data, cuts, &tl, &a);
	check_tail(&tl, &t, &ref, zstd);
	sp_tail_close(tl.tail);
	FUZZ_CHECK(a.outstanding == 0);

	fuzz_run_fini(&ref);
	free(tl.smp.v);
	free(t.smp.v);
	close(fd);
	return 0;
}
