/* SPDX-License-Identifier: MIT */
/* Symbolizer: the stack cache option (internal / external), allocations and invalidation. */

/*
 * Each check runs for both values of struct sp_symbolizer_opts.stack_cache
 * and counts allocations through the options' allocator:
 *   - the same answers in both modes, with and without a small @cap;
 *   - a stack whose frames are all cached is one new allocation (its
 *     stack entry) in internal mode and none in external mode, and a
 *     repeat is zero allocations in both;
 *   - on a Tail, an update that reloads a pid's perf map or applies a
 *     process retirement drops that pid's stacks and frames (the repeat
 *     allocates again and shows the new names: a stale stack entry would
 *     show the old ones or, under ASan, read freed memory), and leaves
 *     other pids' stacks cached (zero allocations).
 */
#include <errno.h>
#include <unistd.h>

#include "symbolizer_test.h"

static const uint32_t modes[2] = { SP_STACK_CACHE_INTERNAL,
				   SP_STACK_CACHE_EXTERNAL };

static struct sp_symbolizer *new_counted(const struct sp_spool *spool,
					 struct sp_allocator *a, uint32_t mode,
					 const char *perf_map_dir)
{
	struct sp_symbolizer_opts o = { .size = sizeof(o),
					.allocator = a,
					.flags = SP_SYMBOLIZER_NO_KERNEL,
					.perf_map_dir = perf_map_dir,
					.stack_cache = mode };
	struct sp_symbolizer *sym;

	if (!perf_map_dir)
		o.flags |= SP_SYMBOLIZER_NO_PERF_MAPS;
	CHECK_OK(sp_symbolizer_new(spool, &o, &sym));
	return sym;
}

/* Allocations made by one resolve_stack call that must return @want. */
static unsigned long allocs_of(struct sp_symbolizer *sym, struct tcount *c,
			       uint32_t stack, int32_t pid,
			       const struct sp_resolved_frame **out, size_t cap,
			       int want)
{
	unsigned long before = c->allocs;

	CHECK_EQ_INT(sp_symbolizer_resolve_stack(sym, stack, pid, out, cap),
		     want);
	return c->allocs - before;
}

/* The leaf stack node of the only sample whose leaf frame is at @abs. */
static uint32_t stack_of(const struct sp_spool *spool, uint64_t abs)
{
	uint32_t i, n = sp_spool_stack_count(spool);
	struct sp_stack_node node;
	struct sp_frame f;
	uint32_t found = UINT32_MAX;

	for (i = 0; i < n; i++) {
		CHECK_OK(sp_spool_stack_node(spool, i, &node));
		CHECK_OK(sp_spool_frame(spool, node.frame, &f));
		if (f.abs_ip == abs)
			found = i;
	}
	CHECK(found != UINT32_MAX);
	return found;
}

/* Same answers, cap handling, and where allocations happen, per mode. */
static void test_modes(void)
{
	const struct sp_resolved_frame *out[2][16], *small[2];
	struct tcount c[2] = { { 0 }, { 0 } };
	struct sp_allocator a[2] = { { tcount_alloc, tcount_free, &c[0] },
				     { tcount_alloc, tcount_free, &c[1] } };
	struct sp_symbolizer *sym[2];
	const struct sp_spool *spool;
	struct sp_frame f[5];
	uint32_t deep, root;
	struct tspool t;
	int m, i;

	tspool_begin(&t);
	tspool_module(&t, "/nonexistent/libq.so", 0x10000, 0x20000, 0x3000, 7);
	for (i = 0; i < 5; i++)
		f[i] = tframe_user(0x10000 + 0x100 * (uint64_t)(i + 1));
	f[4] = tframe_marker();
	tspool_sample(&t, 7, f, 5);
	tspool_sample(&t, 7, &f[3], 2); /* a suffix: the root node of f */
	spool = tspool_end(&t);
	deep = stack_of(spool, 0x10100);
	root = stack_of(spool, f[3].abs_ip);
	CHECK_EQ_INT(sp_spool_stack_frames(spool, root, NULL, 0), 2);

	for (m = 0; m < 2; m++) {
		sym[m] = new_counted(spool, &a[m], modes[m], NULL);
		CHECK(allocs_of(sym[m], &c[m], deep, 7, out[m], 16, 5) > 0);
		/* Every frame of @root is cached through @deep already. */
		CHECK_EQ(allocs_of(sym[m], &c[m], root, 7, small, 2, 2),
			 m == 0 ? 1 : 0);
		CHECK_EQ(allocs_of(sym[m], &c[m], deep, 7, out[m], 16, 5), 0);
		CHECK_EQ(allocs_of(sym[m], &c[m], root, 7, small, 2, 2), 0);
		/* A small cap: the first pointers, the full count. */
		CHECK_EQ(allocs_of(sym[m], &c[m], deep, 7, small, 2, 5), 0);
		CHECK(small[0] == out[m][0] && small[1] == out[m][1]);
		CHECK_EQ(allocs_of(sym[m], &c[m], deep, 7, NULL, 0, 5), 0);
	}
	for (i = 0; i < 5; i++) {
		CHECK_STR(out[0][i]->name, out[1][i]->name);
		CHECK_EQ(out[0][i]->pc, out[1][i]->pc);
	}
	CHECK_STR(out[0][0]->name, "libq.so+0x3100");
	CHECK_STR(out[0][4]->name, "<stack truncated>");
	for (m = 0; m < 2; m++) {
		sp_symbolizer_free(sym[m]);
		CHECK_EQ(c[m].allocs, c[m].frees);
	}
	tspool_free(&t);
}

static void write_map(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	CHECK_PTR(f);
	fputs(text, f);
	CHECK_OK(fclose(f));
}

struct live {
	char dir[64], spool_path[128], map_path[128];
	struct sp_writer *w;
	struct sp_tail *tail;
	uint64_t ts;
};

static void sample2(struct live *l, int32_t pid, uint64_t leaf, uint64_t root)
{
	struct sp_frame f[2] = { tframe_user(leaf), tframe_user(root) };

	CHECK_OK(sp_writer_sample(l->w, l->ts++, pid, pid, f, 2));
}

static struct sp_invalidation step(struct live *l, struct sp_symbolizer *sym)
{
	struct sp_invalidation inv;

	CHECK_OK(sp_writer_flush(l->w));
	CHECK(sp_tail_poll(l->tail) >= 0);
	CHECK_OK(sp_symbolizer_update(sym, l->tail, &inv));
	return inv;
}

static bool reported(const struct sp_invalidation *inv, int32_t pid)
{
	size_t i;

	for (i = 0; i < inv->pid_count; i++)
		if (inv->pids[i] == pid)
			return true;
	return inv->all;
}

/*
 * Pid @a: address-only frames of a module it later retires; pid @b: perf
 * map frames whose map changes. Run once per stack-cache mode.
 */
static void test_invalidation(uint32_t mode)
{
	struct tcount c = { 0 };
	struct sp_allocator al = { tcount_alloc, tcount_free, &c };
	const struct sp_resolved_frame *out[4];
	int32_t a = 60, b = (int32_t)getpid();
	struct sp_module mod = { .start = 0x1000,
				 .end = 0x2000,
				 .pid = a,
				 .path = "/opt/a/liba.so",
				 .path_len = 14 };
	struct sp_invalidation inv;
	struct sp_symbolizer *sym;
	struct sp_sink *sink;
	struct live l = { .ts = 1 };
	uint32_t sa, sb;
	uint32_t id;

	snprintf(l.dir, sizeof(l.dir), "/tmp/sp_syms_XXXXXX");
	CHECK_PTR(mkdtemp(l.dir));
	snprintf(l.spool_path, sizeof(l.spool_path), "%s/s.spool", l.dir);
	snprintf(l.map_path, sizeof(l.map_path), "%s/perf-%d.map", l.dir, b);
	write_map(l.map_path, "9000 100 jit_one\n9100 100 jit_root\n");
	CHECK_OK(sp_sink_open_file(l.spool_path, NULL, &sink));
	CHECK_OK(sp_writer_new(sink, NULL, &l.w));
	CHECK_OK(sp_writer_module(l.w, &mod, &id));
	sample2(&l, a, 0x1010, 0x1020);
	sample2(&l, b, 0x9010, 0x9110);
	CHECK_OK(sp_writer_flush(l.w));
	CHECK_OK(sp_tail_open(l.spool_path, NULL, &l.tail));
	sym = new_counted(sp_tail_spool(l.tail), &al, mode, l.dir);
	inv = step(&l, sym);
	CHECK_EQ(inv.pid_count, 0);
	sa = stack_of(sp_tail_spool(l.tail), 0x1010);
	sb = stack_of(sp_tail_spool(l.tail), 0x9010);
	CHECK(allocs_of(sym, &c, sb, b, out, 4, 2) > 0);
	CHECK_STR(out[0]->name, "jit_one");
	CHECK_STR(out[1]->name, "jit_root");
	CHECK(allocs_of(sym, &c, sa, a, out, 4, 2) > 0);
	CHECK_STR(out[0]->name, "liba.so+0x10");
	CHECK_EQ(allocs_of(sym, &c, sb, b, out, 4, 2), 0);

	/* Batch 2: b's map changes (longer text: a new size); a retires. */
	write_map(l.map_path, "9000 100 jit_two_xx\n9100 100 jit_root_2\n");
	sample2(&l, b, 0x9020, 0x9120);
	CHECK_OK(sp_writer_deactivate_process(l.w, a));
	inv = step(&l, sym);
	CHECK(reported(&inv, b));
	CHECK(!reported(&inv, a)); /* deferred past its own batch */
	CHECK(allocs_of(sym, &c, sb, b, out, 4, 2) > 0);
	CHECK_STR(out[0]->name, "jit_two_xx");
	CHECK_STR(out[1]->name, "jit_root_2");
	CHECK_EQ(allocs_of(sym, &c, sa, a, out, 4, 2), 0); /* still cached */
	CHECK_STR(out[0]->name, "liba.so+0x10");

	/* Batch 3: the retirement of a applies; b is untouched. */
	sample2(&l, b, 0x9030, 0x9130);
	inv = step(&l, sym);
	CHECK(reported(&inv, a));
	CHECK(!reported(&inv, b));
	CHECK_EQ(allocs_of(sym, &c, sb, b, out, 4, 2), 0);
	CHECK_STR(out[0]->name, "jit_two_xx");
	CHECK(allocs_of(sym, &c, sa, a, out, 4, 2) > 0);
	CHECK_STR(out[0]->name, "liba.so+0x10");
	CHECK_EQ(allocs_of(sym, &c, sa, a, out, 4, 2), 0);

	sp_symbolizer_free(sym);
	CHECK_EQ(c.allocs, c.frees);
	sp_tail_close(l.tail);
	sp_writer_free(l.w);
	unlink(l.map_path);
	unlink(l.spool_path);
	rmdir(l.dir);
}

static void test_opts(void)
{
	struct sp_symbolizer_opts o = { .size = sizeof(o), .stack_cache = 2 };
	struct sp_symbolizer *sym;
	struct sp_frame f = tframe_user(0x10);
	const struct sp_spool *spool;
	struct tspool t;

	tspool_begin(&t);
	tspool_sample(&t, 1, &f, 1);
	spool = tspool_end(&t);
	CHECK_EQ_INT(sp_symbolizer_new(spool, &o, &sym), -EINVAL);
	o.stack_cache = SP_STACK_CACHE_EXTERNAL;
	CHECK_OK(sp_symbolizer_new(spool, &o, &sym));
	sp_symbolizer_free(sym);
	tspool_free(&t);
}

int main(void)
{
	test_opts();
	test_modes();
	test_invalidation(SP_STACK_CACHE_INTERNAL);
	test_invalidation(SP_STACK_CACHE_EXTERNAL);
	return T_EXIT_PASS;
}
