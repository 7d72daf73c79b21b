/* SPDX-License-Identifier: MIT */
/* Symbolizer: update() on a growing spool read by a Tail. */

/*
 * A writer appends to a file batch by batch; after each flush the Tail
 * polls, update() runs, and the new batch is resolved. Checked: new
 * modules become visible; a retired pid stays resolvable for the batch
 * that retired it and is invalidated (and reported) at the next update;
 * the plug-in is told about retired modules then; a perf map that
 * changes between batches is reloaded and its pid invalidated; a new
 * kernel mapping invalidates everything (all).
 */
#include <errno.h>
#include <unistd.h>

#include "symbolizer_test.h"

struct retired {
	uint32_t ids[16];
	int n;
};

static int plug_lookup(void *ctx, const struct sp_native_lookup *l, size_t n,
		       struct sp_resolved_frame *out)
{
	size_t i;

	(void)ctx;
	for (i = 0; i < n; i++)
		out[i].name = l[i].file_relative_ip & 1 ? "odd_fn" : "even_fn";
	return 0;
}

static void plug_retire(void *ctx, uint32_t module_id)
{
	struct retired *r = ctx;

	if (r->n < 16)
		r->ids[r->n++] = module_id;
}

static void write_map(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	CHECK_PTR(f);
	fputs(text, f);
	CHECK_OK(fclose(f));
}

static uint32_t module(struct sp_writer *w, const char *path, uint64_t start,
		       int32_t pid)
{
	struct sp_module m = { .start = start,
			       .end = start + 0x1000,
			       .pid = pid,
			       .path = path,
			       .path_len = strlen(path),
			       .is_kernel = pid < 0 };
	uint32_t id;

	CHECK_OK(sp_writer_module(w, &m, &id));
	return id;
}

static void sample(struct sp_writer *w, int32_t pid, uint64_t abs)
{
	static uint64_t ts = 1;
	struct sp_frame f = tframe_user(abs);

	CHECK_OK(sp_writer_sample(w, ts++, pid, pid, &f, 1));
}

/* Polls one batch and applies it; returns the invalidation. */
static struct sp_invalidation step(struct sp_writer *w, struct sp_tail *tail,
				   struct sp_symbolizer *sym)
{
	struct sp_invalidation inv;

	CHECK_OK(sp_writer_flush(w));
	CHECK(sp_tail_poll(tail) >= 0);
	CHECK_OK(sp_symbolizer_update(sym, tail, &inv));
	return inv;
}

static const char *name_at(struct sp_symbolizer *sym, struct sp_tail *tail,
			   uint64_t abs, int32_t pid)
{
	const struct sp_resolved_frame *r;
	uint32_t id = tframe_id(sp_tail_spool(tail), abs, SP_FRAME_USER);

	CHECK_EQ_INT(sp_symbolizer_resolve_frame(sym, id, pid, &r), 1);
	return r->name;
}

int main(void)
{
	char dir[] = "/tmp/sp_symu_XXXXXX", spool_path[256], map_path[256];
	struct retired ret = { .n = 0 };
	struct sp_native_symbolizer ns = { plug_lookup, plug_retire, &ret };
	struct sp_symbolizer_opts o = { .size = sizeof(o),
					.native = &ns,
					.flags = 0 };
	int32_t a = 50, b = (int32_t)getpid();
	struct sp_invalidation inv;
	struct sp_symbolizer *sym;
	struct sp_writer *w;
	struct sp_sink *sink;
	struct sp_tail *tail;
	uint32_t ma, mb;

	CHECK_PTR(mkdtemp(dir));
	snprintf(spool_path, sizeof(spool_path), "%s/s.spool", dir);
	snprintf(map_path, sizeof(map_path), "%s/perf-%d.map", dir, b);
	write_map(map_path, "9000 100 jit_one\n");
	o.perf_map_dir = dir;
	CHECK_OK(sp_sink_open_file(spool_path, NULL, &sink));
	CHECK_OK(sp_writer_new(sink, NULL, &w));
	ma = module(w, "/opt/a/liba.so", 0x1000, a);
	sample(w, a, 0x1011);
	sample(w, b, 0x9010); /* no module: perf map */
	CHECK_OK(sp_writer_flush(w));
	CHECK_OK(sp_tail_open(spool_path, NULL, &tail));
	CHECK_OK(sp_symbolizer_new(sp_tail_spool(tail), &o, &sym));
	CHECK(sp_tail_poll(tail) > 0);
	CHECK_OK(sp_symbolizer_update(sym, tail, &inv));
	CHECK_EQ(inv.pid_count, 0);
	CHECK_STR(name_at(sym, tail, 0x1011, a), "odd_fn");
	CHECK_STR(name_at(sym, tail, 0x9010, b), "jit_one");

	/* Batch 2: a new module; pid a retired in the same batch. */
	mb = module(w, "/opt/b/libb.so", 0x4000, a);
	sample(w, a, 0x4010);
	CHECK_OK(sp_writer_deactivate_process(w, a));
	inv = step(w, tail, sym);
	CHECK_EQ(inv.pid_count, 0); /* deferred to the next update */
	CHECK_EQ_INT(ret.n, 0);
	CHECK_STR(name_at(sym, tail, 0x4010, a), "even_fn");
	CHECK_STR(name_at(sym, tail, 0x1011, a), "odd_fn");

	/* Batch 3: pid b only, with a changed perf map. */
	write_map(map_path, "9000 100 jit_two_longer\n");
	sample(w, b, 0x9020);
	inv = step(w, tail, sym);
	CHECK_EQ(inv.pid_count, 2);
	CHECK_EQ_INT(inv.pids[0] < inv.pids[1] ? inv.pids[0] : inv.pids[1], a);
	CHECK_EQ_INT(inv.pids[0] < inv.pids[1] ? inv.pids[1] : inv.pids[0], b);
	CHECK_EQ_INT(ret.n, 2);
	CHECK_EQ(ret.ids[0] + ret.ids[1], ma + mb);
	CHECK_STR(name_at(sym, tail, 0x9010, b), "jit_two_longer");
	CHECK_STR(name_at(sym, tail, 0x9020, b), "jit_two_longer");

	/* Batch 4: nothing changed: nothing invalidated. */
	sample(w, b, 0x9030);
	inv = step(w, tail, sym);
	CHECK_EQ(inv.pid_count, 0);
	CHECK(!inv.all);
	CHECK_STR(name_at(sym, tail, 0x9030, b), "jit_two_longer");

	/* Batch 5: a kernel mapping appears: every result is invalidated. */
	module(w, "[kernel.kallsyms]_text", 0xffffffff81000000ull, -1);
	sample(w, b, 0x9040);
	inv = step(w, tail, sym);
	CHECK(inv.all);
	CHECK_STR(name_at(sym, tail, 0x9040, b), "jit_two_longer");
	sample(w, b, 0x9050);
	inv = step(w, tail, sym);
	CHECK(!inv.all);

	sp_symbolizer_free(sym);
	sp_tail_close(tail);
	sp_writer_free(w);
	unlink(map_path);
	unlink(spool_path);
	rmdir(dir);
	return T_EXIT_PASS;
}
