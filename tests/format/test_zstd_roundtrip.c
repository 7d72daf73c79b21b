/* SPDX-License-Identifier: MIT */
/* zstd spools: the three readers agree with the plain file, cuts, garbage. */
#include <stdint.h>

#include "format/reader_common.h"

/*
 * The same seeded recordings as test_roundtrip.c go through the zstd sink
 * (one frame per chunk; small chunks make many frames). Snapshot, Replay
 * and Tail must give the expected samples, exactly as for the plain file
 * written from the same calls, and decode the same number of bytes. A
 * compressed file cut inside a frame opens with what the cut prefix
 * decompresses to: Replay and Snapshot agree on the samples and on
 * whether a record was cut, and a Tail on the cut file delivers the same
 * prefix and then the rest once the file is whole again. Garbage after
 * the zstd magic is a decompression error: SP_EZSTD from every reader.
 */

static size_t write_pair(uint64_t seed, size_t samples, size_t chunk,
			 struct recording **rec)
{
	struct sp_sink *mem;
	struct sp_writer *w = mem_writer(0, chunk, &mem);
	struct recording *other;
	size_t plain;

	*rec = gen_recording(w, seed, samples);
	plain = finish_to_file(w, mem, tmp_path("plain.spool"));
	w = mem_writer(1, chunk, &mem);
	other = gen_recording(w, seed, samples);
	finish_to_file(w, mem, tmp_path("z.spool"));
	CHECK_EQ(other->nsamples, (*rec)->nsamples);
	rec_free(other);
	return plain;
}

static void check_same_bytes(const char *zpath, size_t plain)
{
	struct sp_snapshot *s;

	CHECK_OK(sp_snapshot_open(zpath, NULL, &s));
	CHECK_EQ(sp_snapshot_byte_size(s), plain);
	sp_snapshot_close(s);
}

/* Readers on a prefix of the compressed file agree with each other. */
static void check_cut(const void *z, size_t zlen, size_t cut,
		      const struct recording *rec)
{
	const char *path = tmp_path("zcut.spool");
	struct sp_snapshot *s;
	struct sp_replay *r;
	struct sp_tail *t;
	struct sp_sample smp;
	size_t i, n, next = 0, next_py = 0;
	int polled;

	write_file(path, z, cut);
	CHECK_OK(sp_snapshot_open(path, NULL, &s));
	CHECK_OK(sp_replay_open(path, NULL, &r));
	n = sp_snapshot_sample_count(s);
	CHECK(n < rec->nsamples);
	CHECK_EQ(sp_replay_sample_count(r), n);
	CHECK_EQ(sp_replay_is_recovered(r), sp_snapshot_is_recovered(s));
	for (i = 0; i < n; i++) {
		CHECK_OK(sp_snapshot_sample(s, i, &smp));
		check_sample(sp_snapshot_spool(s), &smp, rec, i);
		CHECK_EQ_INT(sp_replay_next(r, &smp), 1);
		check_sample(sp_replay_spool(r), &smp, rec, i);
	}
	CHECK_EQ_INT(sp_replay_next(r, &smp), 0);
	sp_snapshot_close(s);
	sp_replay_close(r);

	/* A Tail sees the same prefix, then everything once it is whole. */
	CHECK_OK(sp_tail_open(path, NULL, &t));
	do {
		polled = sp_tail_poll(t);
		CHECK_OK(polled);
		check_tail_batch(t, rec, &next, &next_py);
	} while (polled > 0 || sp_tail_has_more(t));
	CHECK_EQ(next, n);
	append_file(path, (const char *)z + cut, zlen - cut);
	do {
		polled = sp_tail_poll(t);
		CHECK_OK(polled);
		check_tail_batch(t, rec, &next, &next_py);
	} while (polled > 0 || sp_tail_has_more(t));
	CHECK_EQ(next, rec->nsamples);
	CHECK_EQ(next_py, rec->npython);
	sp_tail_close(t);
}

static void *slurp(const char *path, size_t *len)
{
	struct stat st;
	void *p;
	int fd = open(path, O_RDONLY);

	CHECK(fd >= 0);
	CHECK_EQ(fstat(fd, &st), 0);
	*len = (size_t)st.st_size;
	p = malloc(*len);
	CHECK_PTR(p);
	CHECK_EQ(read(fd, p, *len), *len);
	close(fd);
	return p;
}

static void test_garbage(void)
{
	const char *path = tmp_path("garbage.spool");
	uint8_t buf[64];
	struct sp_snapshot *s;
	struct sp_replay *r;
	struct sp_tail *t;

	memset(buf, 0xaa, sizeof(buf));
	buf[0] = 0x28, buf[1] = 0xb5, buf[2] = 0x2f, buf[3] = 0xfd;
	write_file(path, buf, sizeof(buf));
	CHECK_EQ_INT(sp_replay_open(path, NULL, &r), SP_EZSTD);
	CHECK_EQ_INT(sp_tail_open(path, NULL, &t), SP_EZSTD);
	CHECK_EQ_INT(sp_snapshot_open(path, NULL, &s), SP_EZSTD);
}

int main(void)
{
	static const size_t seeds[][3] = {
		{ 11, 20000, 4096 },
		{ 12, 3000, 0 },
		{ 13, 30000, 100000 },
	};
	struct recording *rec;
	const char *zpath = tmp_path("z.spool");
	size_t i, zlen, plain;
	void *z;

	for (i = 0; i < 3; i++) {
		plain = write_pair(seeds[i][0], seeds[i][1], seeds[i][2], &rec);
		verify_snapshot(zpath, rec);
		verify_replay(zpath, rec);
		verify_tail(zpath, rec);
		check_same_bytes(zpath, plain);
		z = slurp(zpath, &zlen);
		check_cut(z, zlen, zlen / 3, rec);
		check_cut(z, zlen, zlen / 2 + 1, rec);
		check_cut(z, zlen, zlen - 3, rec);
		free(z);
		rec_free(rec);
	}
	test_garbage();
	return T_EXIT_PASS;
}
