/* SPDX-License-Identifier: MIT */
/* Writes a spool whose frames are real functions of this program, for `spulse report`. */

/*
 * usage: report_gen OUT.spool [split]
 * The module is this executable's own code mapping (from /proc/self/maps,
 * with its offset, device and inode), so the CLI resolves the frames
 * through the file's .symtab after this process has exited. Samples
 * (pid 4242; tid 4242 or 4243):
 *   30 x  rg_root <- rg_middle <- rg_leaf          (tid 4242)
 *   10 x  rg_root <- rg_middle                     (tid 4243)
 *    5 x  <truncated> <- rg_middle <- rg_leaf       (tid 4242)
 * With "split", 6 more samples of rg_root <- rg_middle <- rg_leaf on tid
 * 4243 whose leaf is another address inside rg_leaf: a different spool
 * stack with the same function chain.
 */
#include <stdint.h>
#include <string.h>

#include <stackpulse.h>

#include "self_spool.h"

__attribute__((noinline)) int rg_leaf(int x);
__attribute__((noinline)) int rg_middle(int x);
__attribute__((noinline)) int rg_root(int x);

__attribute__((noinline)) int rg_leaf(int x)
{
	__asm__ volatile("" ::: "memory");
	return x + 1;
}

__attribute__((noinline)) int rg_middle(int x)
{
	__asm__ volatile("" ::: "memory");
	return rg_leaf(x) * 2;
}

__attribute__((noinline)) int rg_root(int x)
{
	__asm__ volatile("" ::: "memory");
	return rg_middle(x) - 1;
}

/* A frame inside function @fn (one byte in, as a return address - 1 is). */
static struct sp_frame at(const struct sp_module *m, uint32_t id,
			  int (*fn)(int))
{
	return self_spool_frame(m, id, (uint64_t)(uintptr_t)fn + 1);
}

int main(int argc, char **argv)
{
	struct sp_frame full[3], part[2], trunc[3], split[3];
	struct sp_module m;
	struct sp_writer *w;
	struct sp_sink *sink;
	char path[512];
	uint64_t ts = 1;
	uint32_t id;
	int i;

	if (argc < 2 || argc > 3 ||
	    self_spool_module((uint64_t)(uintptr_t)&rg_leaf, 4242, &m, path,
			      sizeof(path)))
		return 2;
	if (sp_sink_open_file(argv[1], NULL, &sink) ||
	    sp_writer_new(sink, NULL, &w) || sp_writer_module(w, &m, &id))
		return 1;
	full[0] = at(&m, id, rg_leaf);
	full[1] = at(&m, id, rg_middle);
	full[2] = at(&m, id, rg_root);
	part[0] = full[1];
	part[1] = full[2];
	trunc[0] = full[0];
	trunc[1] = full[1];
	memset(&trunc[2], 0, sizeof(trunc[2]));
	trunc[2].module_id = SP_NO_MODULE;
	trunc[2].mode = SP_FRAME_TRUNCATED;
	for (i = 0; i < 45; i++) {
		int err;

		if (i < 30)
			err = sp_writer_sample(w, ts++, 4242, 4242, full, 3);
		else if (i < 40)
			err = sp_writer_sample(w, ts++, 4242, 4243, part, 2);
		else
			err = sp_writer_sample(w, ts++, 4242, 4242, trunc, 3);
		if (err)
			return 1;
	}
	split[0] = full[0];
	split[0].abs_ip++;
	split[0].file_relative_ip++;
	split[1] = full[1];
	split[2] = full[2];
	for (i = 0; argc == 3 && i < 6; i++)
		if (sp_writer_sample(w, ts++, 4242, 4243, split, 3))
			return 1;
	if (sp_writer_finish(w))
		return 1;
	sp_writer_free(w);
	return rg_root(0) == 1 ? 0 : 1;
}
