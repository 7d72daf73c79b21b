/* SPDX-License-Identifier: MIT */
/* Symbolizer from a module table: resolve_raw of pinned and absolute frames, bad input, threads. */

/*
 * The module table is what an embedder without a spool has: this
 * process's own executable mapping (so names come from its real
 * .symtab), a library that does not exist (address-only names), an
 * anonymous JIT mapping with a perf map, and a kernel module. Checked:
 *   - a pinned frame (module id + file-relative pc, with or without the
 *     absolute pc) and the same address given absolute resolve to the
 *     same function; identical raw frames share one interned id that
 *     sp_symbolizer_resolve_frame() accepts;
 *   - address-only, marker, kernel and perf-map frames follow §1.10;
 *   - malformed frames and modules are -EINVAL, and so is resolve_raw on
 *     a spool symbolizer;
 *   - repeats allocate nothing (counting allocator), and everything is
 *     freed;
 *   - four threads resolving random raw stacks on a fresh symbolizer
 *     (interning and table growth racing with lock-free hits) agree with
 *     a single-threaded reference.
 */
#include <errno.h>
#include <pthread.h>
#include <unistd.h>

#include "symbolizer_test.h"

#define NTHREADS 4
#define NSTACKS 3000
#define DEPTH 12

__attribute__((noinline)) int mod_target_alpha(int x);
__attribute__((noinline)) int mod_target_beta(int x);

__attribute__((noinline)) int mod_target_alpha(int x)
{
	__asm__ volatile("" ::: "memory");
	return x * 5 + 1;
}

__attribute__((noinline)) int mod_target_beta(int x)
{
	__asm__ volatile("" ::: "memory");
	return mod_target_alpha(x) - 2;
}

enum {
	M_SELF,
	M_MISSING,
	M_ANON,
	M_KERNEL,
	M_COUNT
};

struct table {
	struct tmapping self;
	struct sp_module mods[M_COUNT];
	int32_t pid;
};

static void table_init(struct table *t)
{
	uint64_t a = (uint64_t)(uintptr_t)&mod_target_alpha;

	memset(t, 0, sizeof(*t));
	t->pid = (int32_t)getpid();
	CHECK(tmapping_find(a, NULL, &t->self));
	t->mods[M_SELF] = (struct sp_module){ .start = t->self.start,
					      .end = t->self.end,
					      .file_offset = t->self.offset,
					      .inode = t->self.inode,
					      .dev_major = t->self.major,
					      .dev_minor = t->self.minor,
					      .pid = t->pid,
					      .path = t->self.path };
	t->mods[M_MISSING] =
		(struct sp_module){ .start = 0x100000,
				    .end = 0x900000,
				    .file_offset = 0x2000,
				    .pid = t->pid,
				    .path = "/nonexistent/libm2.so" };
	t->mods[M_ANON] = (struct sp_module){
		.start = 0x7000, .end = 0x8000, .pid = t->pid, .path = "//anon"
	};
	t->mods[M_KERNEL] =
		(struct sp_module){ .start = 0xffffffff81000000ull,
				    .end = 0xffffffff82000000ull,
				    .is_kernel = 1,
				    .path = "[kernel.kallsyms]_text" };
}

static struct sp_frame pinned(const struct table *t, uint32_t id, uint64_t abs)
{
	const struct sp_module *m = &t->mods[id];
	struct sp_frame f = {
		.abs_ip = abs,
		.file_relative_ip = abs - m->start + m->file_offset,
		.module_id = id,
		.mode = m->is_kernel ? SP_FRAME_KERNEL : SP_FRAME_USER
	};
	return f;
}

static struct sp_symbolizer *new_table(const struct table *t,
				       struct sp_symbolizer_opts *o)
{
	struct sp_symbolizer *sym;

	o->size = sizeof(*o);
	CHECK_OK(sp_symbolizer_new_modules(t->mods, M_COUNT, o, &sym));
	return sym;
}

/* The outermost frame of the chain of one raw frame. */
static const struct sp_resolved_frame *one(struct sp_symbolizer *sym,
					   int32_t pid, struct sp_frame f)
{
	const struct sp_resolved_frame *out[16];
	int n = sp_symbolizer_resolve_raw(sym, pid, &f, 1, out, 16);

	CHECK(n >= 1 && n <= 16);
	return out[n - 1];
}

static void test_names(void)
{
	char dir[] = "/tmp/sp_symm_XXXXXX", path[256];
	struct sp_symbolizer_opts o = { .flags = SP_SYMBOLIZER_NO_KERNEL };
	uint64_t a = (uint64_t)(uintptr_t)&mod_target_alpha + 1;
	uint64_t b = (uint64_t)(uintptr_t)&mod_target_beta + 1;
	const struct sp_resolved_frame *r, *q;
	struct sp_symbolizer *sym;
	struct sp_frame f;
	struct table t;
	FILE *mf;
	int n;

	table_init(&t);
	CHECK_PTR(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/perf-%d.map", dir, t.pid);
	mf = fopen(path, "w");
	CHECK_PTR(mf);
	fputs("7000 100 jit_in_anon\n3000 10 jit_nowhere\n", mf);
	CHECK_OK(fclose(mf));
	o.perf_map_dir = dir;
	sym = new_table(&t, &o);

	r = one(sym, t.pid, pinned(&t, M_SELF, a));
	CHECK_STR(r->name, "mod_target_alpha");
	CHECK_EQ(r->origin, SP_ORIGIN_ELF);
	CHECK_EQ(r->module_id, M_SELF);
	CHECK_EQ(r->pc, a);
	/* Without the absolute pc: the same interned frame. */
	f = pinned(&t, M_SELF, a);
	f.abs_ip = 0;
	q = one(sym, t.pid, f);
	CHECK(q == r);
	/* The same address given absolute: matched to the module. */
	q = one(sym, t.pid, tframe_user(a));
	CHECK_STR(q->name, "mod_target_alpha");
	CHECK_EQ(q->module_id, M_SELF);
	CHECK(q->frame_id != r->frame_id);
	CHECK_STR(one(sym, t.pid, tframe_user(b))->name, "mod_target_beta");
	n = sp_symbolizer_resolve_frame(sym, r->frame_id, t.pid, &q);
	CHECK_EQ_INT(n, (int)(r - q) + 1);

	r = one(sym, t.pid, pinned(&t, M_MISSING, 0x100010));
	CHECK_STR(r->name, "libm2.so+0x2010");
	CHECK_EQ(r->origin, SP_ORIGIN_ADDRESS_ONLY);
	CHECK_STR(one(sym, t.pid, tframe_user(0x100020))->name,
		  "libm2.so+0x2020");
	CHECK_STR(one(sym, t.pid, tframe_user(0x7010))->name, "jit_in_anon");
	CHECK_STR(one(sym, t.pid, tframe_user(0x3004))->name, "jit_nowhere");
	/* Another pid has no map and owns no module of the table. */
	CHECK_STR(one(sym, t.pid + 1, tframe_user(0x3004))->name, "<0x3004>");
	CHECK_STR(one(sym, t.pid, tframe_marker())->name, "<stack truncated>");
	r = one(sym, t.pid, pinned(&t, M_KERNEL, 0xffffffff81000100ull));
	CHECK_STR(r->name, "[kernel]+0xffffffff81000100");
	CHECK_EQ(r->kind, SP_RESOLVED_KERNEL);
	sp_symbolizer_free(sym);
	unlink(path);
	rmdir(dir);
}

static void test_bad_input(void)
{
	struct sp_symbolizer_opts o = { .flags = SP_SYMBOLIZER_NO_KERNEL };
	const struct sp_resolved_frame *out[4];
	struct sp_symbolizer *sym, *spool_sym;
	struct sp_frame f, ok = tframe_user(0x10);
	struct sp_module bad;
	struct tspool ts;
	struct table t;

	table_init(&t);
	sym = new_table(&t, &o);
	f = pinned(&t, M_MISSING, 0x100010);
	f.file_relative_ip = 0x10; /* below the file offset */
	CHECK_EQ_INT(sp_symbolizer_resolve_raw(sym, t.pid, &f, 1, out, 4),
		     -EINVAL);
	f = pinned(&t, M_MISSING, 0x100010);
	f.file_relative_ip += 0x800000; /* past the end */
	CHECK_EQ_INT(sp_symbolizer_resolve_raw(sym, t.pid, &f, 1, out, 4),
		     -EINVAL);
	f = pinned(&t, M_MISSING, 0x100010);
	f.abs_ip += 1; /* disagrees with the module */
	CHECK_EQ_INT(sp_symbolizer_resolve_raw(sym, t.pid, &f, 1, out, 4),
		     -EINVAL);
	f = pinned(&t, M_MISSING, 0x100010);
	f.mode = SP_FRAME_KERNEL; /* a user module */
	CHECK_EQ_INT(sp_symbolizer_resolve_raw(sym, t.pid, &f, 1, out, 4),
		     -EINVAL);
	f.module_id = M_COUNT;
	CHECK_EQ_INT(sp_symbolizer_resolve_raw(sym, t.pid, &f, 1, out, 4),
		     -EINVAL);
	f = tframe_marker();
	f.abs_ip = 1;
	CHECK_EQ_INT(sp_symbolizer_resolve_raw(sym, t.pid, &f, 1, out, 4),
		     -EINVAL);
	f = tframe_user(0x10);
	f.mode = 7;
	CHECK_EQ_INT(sp_symbolizer_resolve_raw(sym, t.pid, &f, 1, out, 4),
		     -EINVAL);
	CHECK_EQ_INT(sp_symbolizer_resolve_raw(sym, t.pid, NULL, 1, out, 4),
		     -EINVAL);
	CHECK_EQ_INT(sp_symbolizer_resolve_raw(sym, -2, &ok, 1, out, 4),
		     -EINVAL);
	CHECK_EQ_INT(sp_symbolizer_resolve_raw(sym, t.pid, &ok, 1, NULL, 0), 1);
	CHECK_EQ_INT(sp_symbolizer_resolve_raw(sym, t.pid, NULL, 0, out, 4), 0);
	/* Ids not interned yet, and stacks, which a table has none of. */
	CHECK_EQ_INT(sp_symbolizer_resolve_frame(sym, 1000, t.pid, &out[0]),
		     -EINVAL);
	CHECK_EQ_INT(sp_symbolizer_resolve_stack(sym, 0, t.pid, out, 4),
		     -EINVAL);
	sp_symbolizer_free(sym);

	bad = t.mods[M_MISSING];
	bad.end = bad.start;
	CHECK_EQ_INT(sp_symbolizer_new_modules(&bad, 1, &o, &sym), -EINVAL);
	bad = t.mods[M_MISSING];
	bad.pid = 0;
	CHECK_EQ_INT(sp_symbolizer_new_modules(&bad, 1, &o, &sym), -EINVAL);
	bad = t.mods[M_MISSING];
	bad.path = NULL;
	bad.path_len = 3;
	CHECK_EQ_INT(sp_symbolizer_new_modules(&bad, 1, &o, &sym), -EINVAL);
	CHECK_EQ_INT(sp_symbolizer_new_modules(NULL, 1, &o, &sym), -EINVAL);
	CHECK_OK(sp_symbolizer_new_modules(NULL, 0, NULL, &sym));
	CHECK_STR(one(sym, 5, tframe_user(0x42))->name, "<0x42>");
	sp_symbolizer_free(sym);

	/* resolve_raw needs a module-table symbolizer. */
	tspool_begin(&ts);
	tspool_sample(&ts, 1, &ok, 1);
	CHECK_OK(sp_symbolizer_new(tspool_end(&ts), &o, &spool_sym));
	CHECK_EQ_INT(sp_symbolizer_resolve_raw(spool_sym, 1, &ok, 1, out, 4),
		     -EINVAL);
	sp_symbolizer_free(spool_sym);
	tspool_free(&ts);
}

/* A raw stack of pinned, absolute, address-only and kernel frames. */
static void make_stack(const struct table *t, unsigned seed, struct sp_frame *f)
{
	uint64_t a = (uint64_t)(uintptr_t)&mod_target_alpha + 1;
	int i;

	for (i = 0; i < DEPTH; i++) {
		unsigned r = rand_r(&seed);

		switch (r % 5) {
		case 0:
			f[i] = pinned(t, M_SELF, a);
			break;
		case 1:
			f[i] = tframe_user(a);
			break;
		case 2:
			f[i] = pinned(t, M_MISSING, 0x100000 + (r >> 8) % 8192);
			break;
		case 3:
			f[i] = tframe_user(0x100000 + (r >> 8) % 8192 * 16);
			break;
		default:
			f[i] = tframe_kernel(0xffffffff81000000ull + r % 4096);
			break;
		}
	}
	f[DEPTH - 1] = tframe_marker();
}

static void test_zero_alloc(void)
{
	struct tcount c = { 0 };
	struct sp_allocator al = { tcount_alloc, tcount_free, &c };
	struct sp_symbolizer_opts o = { .allocator = &al,
					.flags = SP_SYMBOLIZER_NO_KERNEL |
						 SP_SYMBOLIZER_NO_PERF_MAPS };
	const struct sp_resolved_frame *out[64];
	struct sp_frame f[DEPTH];
	struct sp_symbolizer *sym;
	unsigned long before;
	struct table t;
	int pass, s;

	table_init(&t);
	sym = new_table(&t, &o);
	for (pass = 0; pass < 2; pass++) {
		before = c.allocs;
		for (s = 0; s < 200; s++) {
			make_stack(&t, (unsigned)s, f);
			CHECK(sp_symbolizer_resolve_raw(sym, t.pid + s % 2, f,
							DEPTH, out,
							64) >= DEPTH);
		}
		if (pass == 0)
			CHECK(c.allocs - before > 0);
		else
			CHECK_EQ(c.allocs - before, 0);
	}
	sp_symbolizer_free(sym);
	CHECK_EQ(c.allocs, c.frees);
}

struct worker {
	struct sp_symbolizer *sym, *ref;
	const struct table *t;
	pthread_barrier_t *start;
	unsigned seed;
	int failures;
};

/* Interned ids depend on arrival order, so frame_id is not compared. */
static bool same(const struct sp_resolved_frame *x,
		 const struct sp_resolved_frame *y)
{
	return strcmp(x->name, y->name) == 0 && x->pc == y->pc &&
	       x->kind == y->kind && x->origin == y->origin &&
	       x->module_id == y->module_id && x->offset == y->offset &&
	       x->inline_depth == y->inline_depth;
}

static void *work(void *arg)
{
	struct worker *w = arg;
	const struct sp_resolved_frame *got[64], *want[64];
	struct sp_frame f[DEPTH];
	int i, k, n, m;

	pthread_barrier_wait(w->start);
	for (i = 0; i < NSTACKS; i++) {
		unsigned s = (w->seed + (unsigned)i * 7919u) % NSTACKS;

		make_stack(w->t, s, f);
		n = sp_symbolizer_resolve_raw(w->sym, w->t->pid, f, DEPTH, got,
					      64);
		m = sp_symbolizer_resolve_raw(w->ref, w->t->pid, f, DEPTH, want,
					      64);
		if (n != m || n < DEPTH || n > 64) {
			w->failures++;
			continue;
		}
		for (k = 0; k < n; k++)
			if (!same(got[k], want[k]))
				w->failures++;
	}
	return NULL;
}

static void test_threads(void)
{
	struct sp_symbolizer_opts o = { .flags = SP_SYMBOLIZER_NO_KERNEL |
						 SP_SYMBOLIZER_NO_PERF_MAPS };
	struct worker w[NTHREADS];
	pthread_barrier_t start;
	pthread_t th[NTHREADS];
	struct sp_symbolizer *sym, *ref;
	struct sp_frame f[DEPTH];
	const struct sp_resolved_frame *out[64];
	struct table t;
	int i;

	table_init(&t);
	sym = new_table(&t, &o);
	ref = new_table(&t, &o);
	/* The reference is warm first: the workers only read it. */
	for (i = 0; i < NSTACKS; i++) {
		make_stack(&t, (unsigned)i, f);
		CHECK(sp_symbolizer_resolve_raw(ref, t.pid, f, DEPTH, out,
						64) >= DEPTH);
	}
	pthread_barrier_init(&start, NULL, NTHREADS);
	for (i = 0; i < NTHREADS; i++) {
		w[i] = (struct worker){
			sym, ref, &t, &start, (unsigned)i * 977u, 0
		};
		CHECK_OK(pthread_create(&th[i], NULL, work, &w[i]));
	}
	for (i = 0; i < NTHREADS; i++) {
		CHECK_OK(pthread_join(th[i], NULL));
		CHECK_EQ_INT(w[i].failures, 0);
	}
	pthread_barrier_destroy(&start);
	sp_symbolizer_free(sym);
	sp_symbolizer_free(ref);
}

int main(void)
{
	test_names();
	test_bad_input();
	test_zero_alloc();
	test_threads();
	return T_EXIT_PASS;
}
