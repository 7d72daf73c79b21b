/* SPDX-License-Identifier: MIT */
/* Seeded recordings written by the writer read back identically by all three readers. */
#include <stdint.h>

#include "format/reader_common.h"

/*
 * Each seed drives gen_recording() (reader_common.h): several processes
 * and threads, kernel and user modules, retirements by pid and by module,
 * pinned, unpinned and marker frames, Python-runtime records and negative
 * timestamp deltas. The expected list is built alongside, from the calls
 * made and an independent model of §6 resolution; Snapshot, Replay and
 * Tail must each return exactly that list, sample for sample, with every
 * frame and the module it resolves to. Different chunk sizes move the
 * sink boundaries around.
 */

struct round {
	uint64_t seed;
	size_t samples;
	size_t chunk;
};

static const struct round rounds[] = {
	{ 1, 5000, 0 },
	{ 2, 40000, 512 },
	{ 3, 20000, 65536 },
	{ 4, 1, 0 },
};

static void run(const struct round *rd)
{
	const char *path = tmp_path("roundtrip.spool");
	struct sp_sink *mem;
	struct sp_writer *w = mem_writer(0, rd->chunk, &mem);
	struct recording *rec = gen_recording(w, rd->seed, rd->samples);

	CHECK_EQ(rec->nsamples, rd->samples);
	finish_to_file(w, mem, path);
	verify_snapshot(path, rec);
	verify_replay(path, rec);
	verify_tail(path, rec);
	rec_free(rec);
}

int main(void)
{
	size_t i;

	for (i = 0; i < sizeof(rounds) / sizeof(rounds[0]); i++)
		run(&rounds[i]);
	return T_EXIT_PASS;
}
