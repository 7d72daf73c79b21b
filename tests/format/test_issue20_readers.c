/* SPDX-License-Identifier: MIT */
/* Issue 20 items 4, 9, 10: cut zstd frames, files cut while read, decompression bombs. */

/*
 * Item 4: a zstd spool cut inside its last frame is a cut-off tail for
 * Snapshot and Replay (recovered, like the plain format), with what zstd
 * could decode of the cut frame kept; cut at a frame boundary it is
 * complete.
 * Item 9: a file cut short while a Snapshot reads it (the allocator hook
 * truncates it at the first allocation, after the file was opened and,
 * in the old code, mapped) ends in a reported cut, not in SIGBUS: the
 * open runs in a child so a signal is a failure, not a crash of the test.
 * A Replay whose file shrinks while it iterates returns SP_ESHRANK.
 * Item 10: a spool claiming a module path far longer than
 * SP_SPOOL_PATH_MAX costs the readers a bounded amount of memory: corrupt
 * when the bytes are there, a cut-off tail when they are not, for plain
 * and zstd input, Snapshot, Replay and Tail alike. The writer refuses to
 * write what the readers refuse.
 */
#define _GNU_SOURCE
#include <signal.h>
#include <sys/wait.h>
#include <zstd.h>

#include "peak_alloc.h"
#include "reader_common.h"

/* ---- a peak-tracking allocator ---- */

struct peak {
	struct peak_count count;
	const char *truncate_path; /* item 9: cut this file at first alloc */
	off_t truncate_to;
};

static void *peak_alloc(void *ctx, size_t size, size_t align)
{
	struct peak *p = ctx;

	if (p->truncate_path) {
		CHECK(truncate(p->truncate_path, p->truncate_to) == 0);
		p->truncate_path = NULL;
	}
	return peak_count_alloc(&p->count, size, align);
}

static void peak_free(void *ctx, void *ptr, size_t size)
{
	struct peak *p = ctx;

	peak_count_free(&p->count, ptr, size);
}

static struct sp_reader_opts peak_opts(struct peak *p,
				       struct sp_allocator *hook)
{
	struct sp_reader_opts o = { .size = sizeof(o) };

	memset(p, 0, sizeof(*p));
	hook->alloc = peak_alloc;
	hook->free = peak_free;
	hook->ctx = p;
	o.allocator = hook;
	return o;
}

/* ---- item 4: zstd cut inside the last frame ---- */

static void write_samples(struct sp_writer *w, uint64_t *ts, size_t n)
{
	struct sp_frame fr[2] = {
		{ 0x401000, 0x401000, SP_NO_MODULE, SP_FRAME_USER },
		{ 0x402000, 0x402000, SP_NO_MODULE, SP_FRAME_USER }
	};
	size_t i;

	for (i = 0; i < n; i++) {
		fr[0].abs_ip = fr[0].file_relative_ip =
			0x401000 + (i % 97) * 16;
		CHECK_OK(sp_writer_sample(w, (*ts)++, 7, 7 + (int32_t)(i % 3),
					  fr, 2));
	}
}

/* Start of the last zstd frame of @buf (frames are back to back). */
static size_t last_frame(const uint8_t *buf, size_t len, size_t *frames)
{
	size_t at = 0, last = 0, n;

	*frames = 0;
	while (at < len) {
		n = ZSTD_findFrameCompressedSize(buf + at, len - at);
		CHECK(!ZSTD_isError(n));
		last = at;
		at += n;
		(*frames)++;
	}
	return last;
}

struct opened {
	uint64_t samples;
	bool recovered;
};

static struct opened open_both(const char *path)
{
	struct sp_snapshot *snap;
	struct sp_replay *r;
	struct opened o;

	CHECK_OK(sp_snapshot_open(path, NULL, &snap));
	CHECK_OK(sp_replay_open(path, NULL, &r));
	o.samples = sp_snapshot_sample_count(snap);
	o.recovered = sp_snapshot_is_recovered(snap);
	CHECK_EQ(sp_replay_sample_count(r), o.samples);
	CHECK_EQ(sp_replay_is_recovered(r), o.recovered);
	sp_snapshot_close(snap);
	sp_replay_close(r);
	return o;
}

static void test_zstd_cut(void)
{
	const char *path = tmp_path("cut.spool");
	struct sp_sink *mem;
	struct sp_writer *w = mem_writer(1, 1 << 20, &mem);
	const void *data;
	const uint8_t *buf;
	size_t len, last, frames;
	uint64_t ts = 1000;
	struct opened whole, prefix, cut;

	/* A big frame of several zstd blocks, then a small last frame. */
	write_samples(w, &ts, 150000);
	CHECK_OK(sp_writer_flush(w));
	write_samples(w, &ts, 40);
	CHECK_OK(sp_writer_finish(w));
	CHECK_OK(sp_sink_memory_data(mem, &data, &len));
	buf = data;
	last = last_frame(buf, len, &frames);
	CHECK(frames >= 3); /* header, the big frame, the last one */

	write_file(path, buf, len);
	whole = open_both(path);
	CHECK_EQ(whole.samples, 150040);
	CHECK(!whole.recovered);

	/* Cut at the last frame boundary: complete, 40 samples fewer. */
	write_file(path, buf, last);
	prefix = open_both(path);
	CHECK_EQ(prefix.samples, 150000);
	CHECK(!prefix.recovered);

	/* Cut inside the small last frame: its records are lost, and said so. */
	write_file(path, buf, last + (len - last) / 2);
	cut = open_both(path);
	CHECK_EQ(cut.samples, 150000);
	CHECK(cut.recovered);
	write_file(path, buf, last + 1);
	CHECK(open_both(path).recovered);

	/*
	 * Cut in the last block of the big frame (its 128 KiB blocks are
	 * a large first one, then short ones that copy from it): the
	 * complete blocks before the cut are still decoded.
	 */
	write_file(path, buf, last - 3);
	cut = open_both(path);
	CHECK(cut.recovered);
	CHECK(cut.samples > 50000 && cut.samples < 150000);
	sp_writer_free(w);
}

/* ---- item 9: a file cut while it is read ---- */

static int snapshot_while_cut(const char *path, off_t cut_to)
{
	struct sp_allocator hook;
	struct peak p;
	struct sp_reader_opts o = peak_opts(&p, &hook);
	struct sp_snapshot *snap;
	int err;

	p.truncate_path = path;
	p.truncate_to = cut_to;
	err = sp_snapshot_open(path, &o, &snap);
	if (err)
		return 2;
	err = sp_snapshot_is_recovered(snap) ? 0 : 3;
	sp_snapshot_close(snap);
	return err;
}

static void test_cut_while_read(void)
{
	const char *path = tmp_path("shrink.spool");
	struct sp_sink *mem;
	struct sp_writer *w = mem_writer(0, 0, &mem);
	struct sp_replay *r;
	struct sp_sample s;
	uint64_t ts = 1000;
	size_t len;
	pid_t child;
	int status, err;

	write_samples(w, &ts, 200000);
	len = finish_to_file(w, mem, path);
	child = fork();
	CHECK(child >= 0);
	if (child == 0)
		_exit(snapshot_while_cut(path,
					 (off_t)(len / 2) & ~(off_t)4095));
	CHECK(waitpid(child, &status, 0) == child);
	if (WIFSIGNALED(status)) {
		fprintf(stderr, "Snapshot killed by signal %d (%s)\n",
			WTERMSIG(status), strsignal(WTERMSIG(status)));
		exit(T_EXIT_FAIL);
	}
	CHECK_EQ_INT(WEXITSTATUS(status), 0);

	/* Replay: validated at open, then the file shrinks under it. */
	w = mem_writer(0, 0, &mem);
	write_samples(w, &ts, 200000);
	finish_to_file(w, mem, path);
	CHECK_OK(sp_replay_open(path, NULL, &r));
	CHECK_EQ_INT(sp_replay_next(r, &s), 1);
	truncate_file(path, 4096);
	while ((err = sp_replay_next(r, &s)) == 1)
		;
	CHECK_EQ_INT(err, SP_ESHRANK);
	sp_replay_close(r);
}

/* ---- item 10: decompression bombs and oversized paths ---- */

/* Header and a module record whose path claims @claim bytes. */
static size_t module_head(uint8_t *out, uint64_t claim)
{
	static const uint8_t
		head[] = { 'S',	 'P',  'U',  'L',  'S',
			   'E',	 '3',  0,    0,	   0, /* start, interval */
			   1,	 0,    0x0e,	      /* module 0, pid 7 */
			   0x80, 0x20, 0x80, 0x40,    /* 0x1000-0x2000 */
			   0,	 0,    0,    0,	   0, /* off ino maj min gen */
			   0 /* user */ };
	size_t n = sizeof(head);

	memcpy(out, head, n);
	do {
		out[n++] =
			(uint8_t)((claim & 0x7f) | (claim > 0x7f ? 0x80 : 0));
		claim >>= 7;
	} while (claim);
	return n;
}

/* zstd of the header, the claim and @have bytes of 'a' (one frame). */
static void *zstd_bomb(uint64_t claim, uint64_t have, size_t *len)
{
	ZSTD_CCtx *c = ZSTD_createCCtx();
	size_t cap = 1 << 20, n, done = 0;
	uint8_t *out = malloc(cap), *in = malloc(1 << 20);
	ZSTD_outBuffer ob = { out, cap, 0 };
	ZSTD_inBuffer ib;

	CHECK(c && out && in);
	n = module_head(in, claim);
	ib = (ZSTD_inBuffer){ in, n, 0 };
	CHECK(!ZSTD_isError(
		ZSTD_compressStream2(c, &ob, &ib, ZSTD_e_continue)));
	memset(in, 'a', 1 << 20);
	while (done < have) {
		n = have - done > (1 << 20) ? (1 << 20) : (size_t)(have - done);
		ib = (ZSTD_inBuffer){ in, n, 0 };
		while (ib.pos < ib.size)
			CHECK(!ZSTD_isError(ZSTD_compressStream2(
				c, &ob, &ib, ZSTD_e_continue)));
		done += n;
	}
	ib = (ZSTD_inBuffer){ in, 0, 0 };
	while (ZSTD_compressStream2(c, &ob, &ib, ZSTD_e_end) != 0)
		CHECK(ob.pos < ob.size);
	ZSTD_freeCCtx(c);
	free(in);
	*len = ob.pos;
	return out;
}

/* Opens @path with every reader; checks the outcome and the memory peak. */
static void open_bounded(const char *path, int want, bool cut)
{
	struct sp_allocator hook;
	struct peak p;
	struct sp_reader_opts o = peak_opts(&p, &hook);
	struct sp_snapshot *snap;
	struct sp_replay *r;
	struct sp_tail *t;
	size_t limit = 2 * SP_SPOOL_PATH_MAX + (12u << 20);
	int err;

	err = sp_snapshot_open(path, &o, &snap);
	CHECK_EQ_INT(err, want);
	if (!err) {
		CHECK_EQ(sp_snapshot_is_recovered(snap), cut);
		CHECK_EQ(sp_spool_module_count(sp_snapshot_spool(snap)), 0);
		sp_snapshot_close(snap);
	}
	fprintf(stderr, "%s: snapshot peak %zu KiB\n", path,
		p.count.peak >> 10);
	CHECK(p.count.peak < limit);

	o = peak_opts(&p, &hook);
	err = sp_replay_open(path, &o, &r);
	CHECK_EQ_INT(err, want);
	if (!err) {
		CHECK_EQ(sp_replay_is_recovered(r), cut);
		sp_replay_close(r);
	}
	CHECK(p.count.peak < limit);

	/* A Tail waits at a cut-off record, and fails at a corrupt one. */
	o = peak_opts(&p, &hook);
	err = sp_tail_open(path, &o, &t);
	if (!err) {
		err = sp_tail_poll(t);
		if (err >= 0)
			err = sp_tail_poll(t);
		sp_tail_close(t);
	}
	CHECK_EQ_INT(err < 0 ? err : 0, want);
	CHECK(p.count.peak < limit);
}

static void test_bombs(void)
{
	const char *path = tmp_path("bomb.spool");
	uint64_t claim = 64ull << 20;
	uint8_t head[64];
	size_t n, len;
	void *z;

	/* zstd: the claim is there (corrupt), or cut short (recovered). */
	z = zstd_bomb(claim, claim + 100, &len);
	CHECK(len < (1 << 20));
	write_file(path, z, len);
	free(z);
	open_bounded(path, SP_ECORRUPT, false);
	z = zstd_bomb(claim, claim / 2, &len);
	write_file(path, z, len);
	free(z);
	open_bounded(path, 0, true);

	/* Plain: a path one byte over the bound, complete: corrupt. */
	n = module_head(head, SP_SPOOL_PATH_MAX + 1);
	write_file(path, head, n);
	{
		char *fill = malloc(SP_SPOOL_PATH_MAX + 1);

		CHECK_PTR(fill);
		memset(fill, 'a', SP_SPOOL_PATH_MAX + 1);
		append_file(path, fill, SP_SPOOL_PATH_MAX + 1);
		free(fill);
	}
	open_bounded(path, SP_ECORRUPT, false);
	/* ... and cut short of its claim: a cut-off tail (SPULSE3 L1). */
	truncate_file(path, (off_t)n + 1000);
	open_bounded(path, 0, true);
}

/* The writer never writes a path the readers refuse; the bound reads back. */
static void test_writer_bound(void)
{
	const char *path = tmp_path("bound.spool");
	struct sp_module m = { .start = 0x1000, .end = 0x2000, .pid = 7 };
	struct sp_sink *mem;
	struct sp_writer *w = mem_writer(1, 0, &mem);
	struct sp_snapshot *snap;
	struct sp_module got;
	char *p = malloc(SP_SPOOL_PATH_MAX + 1);

	CHECK_PTR(p);
	memset(p, 'b', SP_SPOOL_PATH_MAX + 1);
	m.path = p;
	m.path_len = SP_SPOOL_PATH_MAX + 1;
	CHECK_EQ_INT(sp_writer_module(w, &m, NULL), -ENAMETOOLONG);
	m.path_len = SP_SPOOL_PATH_MAX;
	CHECK_OK(sp_writer_module(w, &m, NULL));
	finish_to_file(w, mem, path);
	CHECK_OK(sp_snapshot_open(path, NULL, &snap));
	CHECK_OK(sp_spool_module(sp_snapshot_spool(snap), 0, &got));
	CHECK_EQ(got.path_len, SP_SPOOL_PATH_MAX);
	CHECK(!sp_snapshot_is_recovered(snap));
	sp_snapshot_close(snap);
	free(p);
}

int main(void)
{
	test_zstd_cut();
	test_cut_while_read();
	test_bombs();
	test_writer_bound();
	return T_EXIT_PASS;
}
