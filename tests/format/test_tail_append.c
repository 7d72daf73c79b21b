/* SPDX-License-Identifier: MIT */
/* Tail against a file that another thread appends to in random pieces. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <time.h>

#include "format/reader_common.h"

/*
 * A recording is first written to memory (plain, or through the zstd sink
 * with one frame per chunk). The header is put in the file, the Tail is
 * opened, and a second thread copies the rest in pieces of random size
 * (often a few bytes, so records and zstd frames are split anywhere),
 * sleeping a little between writes. The main thread polls meanwhile;
 * when the copier is done it drains the Tail. Every sample must arrive
 * exactly once, in order, with its frames and resolution intact, and the
 * Tail must end having consumed the whole file.
 */

struct copier {
	const char *path;
	const uint8_t *data;
	size_t len;
	size_t from;
	size_t max_piece;
	uint64_t seed;
	atomic_int done;
};

static void nap(long ns)
{
	struct timespec ts = { 0, ns };

	nanosleep(&ts, NULL);
}

static void *copy_thread(void *arg)
{
	struct copier *c = arg;
	struct rng r = { c->seed };
	size_t at = c->from;

	while (at < c->len) {
		size_t piece = 1 + (size_t)rng_below(&r, c->max_piece);

		if (rng_below(&r, 4) == 0)
			piece = 1 + (size_t)rng_below(&r, 4);
		if (piece > c->len - at)
			piece = c->len - at;
		append_file(c->path, c->data + at, piece);
		at += piece;
		if (rng_below(&r, 8) == 0)
			nap((long)rng_below(&r, 200000));
	}
	atomic_store(&c->done, 1);
	return NULL;
}

static void run(int zstd, uint64_t seed, size_t samples, size_t max_piece)
{
	const char *path = tmp_path(zstd ? "append.zst" : "append.spool");
	struct copier c = { .path = path, .max_piece = max_piece };
	struct sp_sink *mem;
	struct sp_writer *w = mem_writer(zstd, 4096, &mem);
	struct recording *rec;
	const void *data;
	uint8_t *copy;
	struct sp_tail *t;
	pthread_t th;
	size_t next = 0, next_py = 0;
	int n, finished = 0;

	/* The writer flushed the header (one zstd frame) at creation. */
	CHECK_OK(sp_sink_memory_data(mem, &data, &c.from));
	rec = gen_recording(w, seed, samples);
	CHECK_OK(sp_writer_finish(w));
	CHECK_OK(sp_sink_memory_data(mem, &data, &c.len));
	copy = malloc(c.len);
	CHECK_PTR(copy);
	memcpy(copy, data, c.len);
	sp_writer_free(w);
	c.data = copy;
	c.seed = seed;

	write_file(path, copy, c.from);
	CHECK_OK(sp_tail_open(path, NULL, &t));
	CHECK_EQ(pthread_create(&th, NULL, copy_thread, &c), 0);
	for (;;) {
		int done = atomic_load(&c.done);

		n = sp_tail_poll(t);
		CHECK_OK(n);
		check_tail_batch(t, rec, &next, &next_py);
		if (n > 0 || sp_tail_has_more(t))
			continue;
		if (finished)
			break;
		/* One more full drain after the copier has finished. */
		finished = done;
		if (!done)
			nap(50000);
	}
	CHECK_EQ(pthread_join(th, NULL), 0);
	CHECK_EQ(next, rec->nsamples);
	CHECK_EQ(next_py, rec->npython);
	if (!zstd)
		CHECK_EQ(sp_tail_consumed(t), c.len);
	else
		CHECK(sp_tail_consumed(t) <= c.len);
	sp_tail_close(t);
	free(copy);
	rec_free(rec);
}

int main(void)
{
	run(0, 21, 30000, 8192);
	run(1, 22, 30000, 4096);
	run(0, 23, 3000, 16);
	run(1, 24, 3000, 16);
	return T_EXIT_PASS;
}
