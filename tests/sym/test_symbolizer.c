/* SPDX-License-Identifier: MIT */
/* Symbolizer: resolution order, address-only names, flags, native names, zero-alloc hits. */
#include <dlfcn.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "symbolizer_test.h"

/* Functions of this executable, resolved through its own .symtab. */
__attribute__((noinline)) int sym_target_alpha(int x);
__attribute__((noinline)) int sym_target_beta(int x);

__attribute__((noinline)) int sym_target_alpha(int x)
{
	__asm__ volatile("" ::: "memory");
	return x * 3 + 1;
}

__attribute__((noinline)) int sym_target_beta(int x)
{
	__asm__ volatile("" ::: "memory");
	return sym_target_alpha(x) + 2;
}

static struct sp_symbolizer *new_sym(const struct sp_spool *spool,
				     struct sp_symbolizer_opts *o)
{
	struct sp_symbolizer *sym;

	o->size = sizeof(*o);
	CHECK_OK(sp_symbolizer_new(spool, o, &sym));
	return sym;
}

/* Resolves the frame at @abs (user mode; kernel when @abs is high). */
static const struct sp_resolved_frame *at(struct sp_symbolizer *sym,
					  const struct sp_spool *spool,
					  uint64_t abs, int32_t pid)
{
	const struct sp_resolved_frame *r;
	uint32_t mode = abs >> 63 ? SP_FRAME_KERNEL : SP_FRAME_USER;

	if (!abs)
		mode = SP_FRAME_TRUNCATED;
	uint32_t frame = tframe_id(spool, abs, mode);

	CHECK(sp_symbolizer_resolve_frame(sym, frame, pid, &r) >= 1);
	CHECK_EQ(r->frame_id, frame);
	return r;
}

/* Marker, unknown, missing file, pseudo path, Python runtime, kernel. */
static void test_address_only(void)
{
	struct sp_symbolizer_opts o = { .flags = SP_SYMBOLIZER_NO_PERF_MAPS |
						 SP_SYMBOLIZER_NO_KERNEL };
	struct sp_frame f[6];
	const struct sp_resolved_frame *r;
	struct sp_symbolizer *sym;
	const struct sp_spool *spool;
	struct tspool t;
	uint32_t lib, heap, py;

	tspool_begin(&t);
	lib = tspool_module(&t, "/nonexistent/dir/libfoo.so.1", 0x10000,
			    0x20000, 0x3000, 7);
	heap = tspool_module(&t, "[heap]", 0x30000, 0x40000, 0, 7);
	py = tspool_module(&t, "/nonexistent/libpython3.12.so.1.0", 0x50000,
			   0x60000, 0, 7);
	f[0] = tframe_user(0x10123); /* unpinned inside libfoo */
	f[1] = tframe_user(0x30010);
	f[2] = tframe_user(0x50020);
	f[3] = tframe_user(0x99999);
	f[4] = tframe_kernel(0xffffffff81000010ull);
	f[5] = tframe_marker();
	tspool_sample(&t, 7, f, 6);
	spool = tspool_end(&t);
	sym = new_sym(spool, &o);

	r = at(sym, spool, f[0].abs_ip, 7);
	CHECK_STR(r->name, "libfoo.so.1+0x3123");
	CHECK_STR(r->module, "/nonexistent/dir/libfoo.so.1");
	CHECK_EQ(r->kind, SP_RESOLVED_NATIVE);
	CHECK_EQ(r->origin, SP_ORIGIN_ADDRESS_ONLY);
	CHECK_EQ(r->module_id, lib);
	CHECK_EQ(r->pc, 0x10123);
	CHECK_EQ(r->offset, 0);
	CHECK_EQ(r->flags, 0);
	r = at(sym, spool, f[1].abs_ip, 7);
	CHECK_STR(r->name, "[heap]+0x10");
	CHECK_EQ(r->module_id, heap);
	r = at(sym, spool, f[2].abs_ip, 7);
	CHECK_STR(r->name, "libpython3.12.so.1.0+0x20");
	CHECK_EQ(r->module_id, py);
	CHECK_EQ(r->flags,
		 SP_RESOLVED_PYTHON_RUNTIME | SP_RESOLVED_HIDDEN_DEFAULT);
	r = at(sym, spool, f[3].abs_ip, 7);
	CHECK_STR(r->name, "<0x99999>");
	CHECK_EQ(r->kind, SP_RESOLVED_UNKNOWN);
	CHECK(r->module == NULL);
	CHECK_EQ(r->module_id, SP_NO_MODULE);
	r = at(sym, spool, f[4].abs_ip, 7);
	CHECK_STR(r->name, "[kernel]+0xffffffff81000010");
	CHECK_STR(r->module, "[kernel]");
	CHECK_EQ(r->kind, SP_RESOLVED_KERNEL);
	CHECK_EQ(r->origin, SP_ORIGIN_ADDRESS_ONLY);
	r = at(sym, spool, 0, 7);
	CHECK_STR(r->name, "<stack truncated>");
	CHECK_EQ(r->flags, SP_RESOLVED_TRUNCATED_STACK);
	CHECK_EQ(r->pc, 0);

	/* Bad ids and pids. */
	CHECK_EQ_INT(sp_symbolizer_resolve_frame(sym, 6, 7, &r), -EINVAL);
	CHECK(sp_symbolizer_resolve_frame(sym, 5, 7, &r) == 1);
	CHECK_EQ_INT(sp_symbolizer_resolve_frame(sym, 0, -2, &r), -EINVAL);
	CHECK_EQ_INT(sp_symbolizer_resolve_stack(sym, 99, 7, NULL, 0), -EINVAL);
	sp_symbolizer_free(sym);
	tspool_free(&t);
}

static void write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	CHECK_PTR(f);
	fputs(text, f);
	CHECK_OK(fclose(f));
}

/* Kernel symbols from a preserved kallsyms file; a missing file fails. */
static void test_kernel(void)
{
	char dir[] = "/tmp/sp_symk_XXXXXX", path[256];
	struct sp_symbolizer_opts o = { .flags = SP_SYMBOLIZER_NO_PERF_MAPS };
	struct sp_frame f[3];
	const struct sp_resolved_frame *r;
	struct sp_symbolizer *sym;
	const struct sp_spool *spool;
	struct tspool t;

	CHECK_PTR(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/kallsyms", dir);
	write_file(path, "ffffffff81000000 T _text\n"
			 "ffffffff81001000 T do_thing\n"
			 "ffffffff81002000 t other_fn\n"
			 "ffffffffc0000000 t modfn\t[mymod]\n"
			 "ffffffffc0001000 t modend\t[mymod]\n");
	tspool_begin(&t);
	f[0] = tframe_kernel(0xffffffff81001010ull);
	f[1] = tframe_kernel(0xffffffffc0000004ull);
	f[2] = tframe_user(0x1234);
	tspool_sample(&t, 9, f, 3);
	spool = tspool_end(&t);

	o.kallsyms_path = path;
	sym = new_sym(spool, &o);
	r = at(sym, spool, f[0].abs_ip, 9);
	CHECK_EQ(r->kind, SP_RESOLVED_KERNEL);
	CHECK_EQ(r->origin, SP_ORIGIN_KERNEL_SYMBOLS);
	CHECK(strstr(r->name, "do_thing") == r->name);
	CHECK_EQ(r->offset, 0x10);
	CHECK_STR(r->module, "[kernel]");
	CHECK_EQ(r->pc, 0xffffffff81001010ull);
	r = at(sym, spool, f[1].abs_ip, 9);
	CHECK(strstr(r->name, "modfn") == r->name);
	CHECK_STR(r->module, "[mymod]");
	sp_symbolizer_free(sym);

	snprintf(path, sizeof(path), "%s/missing", dir);
	o.size = sizeof(o);
	CHECK_EQ_INT(sp_symbolizer_new(spool, &o, &sym), -ENOENT);
	unlink(path);
	snprintf(path, sizeof(path), "%s/kallsyms", dir);
	unlink(path);
	rmdir(dir);
	tspool_free(&t);
}

/* Perf maps: unknown and anonymous modules only, never a file-backed one. */
static void test_perf_map(void)
{
	char dir[] = "/tmp/sp_symp_XXXXXX", path[256];
	struct sp_symbolizer_opts o = { .flags = SP_SYMBOLIZER_NO_KERNEL };
	int32_t pid = (int32_t)getpid(), other = pid + 1;
	struct sp_frame f[4];
	const struct sp_resolved_frame *r;
	struct sp_symbolizer *sym;
	const struct sp_spool *spool;
	struct tspool t;

	CHECK_PTR(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/perf-%d.map", dir, pid);
	write_file(path, "1000 100 jit_func\n"
			 "2000 80 py::myfunc:/app/x.py\n"
			 "5000 100 should_not_win\n"
			 "7000 100 anon_jit\n");
	tspool_begin(&t);
	tspool_module(&t, "/nonexistent/libx.so", 0x5000, 0x6000, 0, pid);
	tspool_module(&t, "//anon", 0x7000, 0x8000, 0, pid);
	f[0] = tframe_user(0x1010);
	f[1] = tframe_user(0x2010);
	f[2] = tframe_user(0x5010);
	f[3] = tframe_user(0x7020);
	tspool_sample(&t, pid, f, 4);
	spool = tspool_end(&t);

	o.perf_map_dir = dir;
	sym = new_sym(spool, &o);
	r = at(sym, spool, f[0].abs_ip, pid);
	CHECK_STR(r->name, "jit_func");
	CHECK_EQ(r->origin, SP_ORIGIN_PERF_MAP);
	CHECK(r->flags & SP_RESOLVED_JIT);
	CHECK_EQ(r->offset, 0x10);
	r = at(sym, spool, f[1].abs_ip, pid);
	CHECK_EQ(r->kind, SP_RESOLVED_PYTHON);
	CHECK_STR(r->name, "myfunc");
	CHECK_STR(r->file, "/app/x.py");
	r = at(sym, spool, f[2].abs_ip, pid);
	CHECK_STR(r->name, "libx.so+0x10");
	CHECK_EQ(r->origin, SP_ORIGIN_ADDRESS_ONLY);
	r = at(sym, spool, f[3].abs_ip, pid);
	CHECK_STR(r->name, "anon_jit");
	sp_symbolizer_free(sym);

	/* Not listed: the map is not read. */
	o.perf_map_pids = &other;
	o.perf_map_pid_count = 1;
	sym = new_sym(spool, &o);
	CHECK_STR(at(sym, spool, f[0].abs_ip, pid)->name, "<0x1010>");
	sp_symbolizer_free(sym);
	o.perf_map_pids = NULL;
	o.perf_map_pid_count = 0;
	o.flags |= SP_SYMBOLIZER_NO_PERF_MAPS;
	sym = new_sym(spool, &o);
	CHECK_STR(at(sym, spool, f[0].abs_ip, pid)->name, "<0x1010>");
	CHECK_STR(at(sym, spool, f[3].abs_ip, pid)->name, "anon+0x20");
	sp_symbolizer_free(sym);
	unlink(path);
	rmdir(dir);
	tspool_free(&t);
}

struct plug {
	int calls;
	size_t last_n;
	char names[8][64];
};

static int plug_lookup(void *ctx, const struct sp_native_lookup *l, size_t n,
		       struct sp_resolved_frame *out)
{
	struct plug *p = ctx;
	size_t i;

	p->calls++;
	p->last_n = n;
	for (i = 0; i < n && i < 8; i++) {
		if (l[i].file_relative_ip == 0x40) {
			out[i].name = NULL; /* unresolved */
			continue;
		}
		snprintf(p->names[i], sizeof(p->names[i]),
			 l[i].file_relative_ip == 0x30 ?
				 "_PyEval_EvalFrameDefault" :
				 "plug_%" PRIx64,
			 l[i].file_relative_ip);
		out[i].name = p->names[i];
		out[i].offset = 1;
	}
	return 0;
}

/* A plug-in gets one batch per resolve call; names are copied; flags. */
static void test_plugin(void)
{
	struct plug p = { 0 };
	struct sp_native_symbolizer ns = { .lookup = plug_lookup, .ctx = &p };
	struct sp_symbolizer_opts o = { .flags = SP_SYMBOLIZER_NO_PERF_MAPS,
					.native = &ns };
	const struct sp_resolved_frame *out[8];
	struct sp_frame f[4];
	struct sp_symbolizer *sym;
	const struct sp_spool *spool;
	struct tspool t;

	tspool_begin(&t);
	tspool_module(&t, "/opt/app/libplug.so", 0x10000, 0x20000, 0, 5);
	tspool_module(&t, "/usr/bin/python3.12", 0x30000, 0x40000, 0, 5);
	f[0] = tframe_user(0x10010);
	f[1] = tframe_user(0x10020);
	f[2] = tframe_user(0x30030);
	f[3] = tframe_user(0x10040);
	tspool_sample(&t, 5, f, 4);
	spool = tspool_end(&t);
	sym = new_sym(spool, &o);
	CHECK_EQ_INT(sp_symbolizer_resolve_stack(sym, 3, 5, out, 8), 4);
	CHECK_EQ_INT(p.calls, 1);
	CHECK_EQ(p.last_n, 4);
	memset(p.names, 0, sizeof(p.names)); /* the library kept copies */
	CHECK_STR(out[0]->name, "plug_10");
	CHECK_EQ(out[0]->origin, SP_ORIGIN_PLUGIN);
	CHECK_STR(out[0]->module, "/opt/app/libplug.so");
	CHECK_STR(out[1]->name, "plug_20");
	CHECK_STR(out[2]->name, "_PyEval_EvalFrameDefault");
	CHECK_EQ(out[2]->flags, SP_RESOLVED_PYTHON_RUNTIME |
					SP_RESOLVED_HIDDEN_DEFAULT |
					SP_RESOLVED_EVAL_FRAME);
	CHECK_STR(out[3]->name, "libplug.so+0x40");
	CHECK_EQ(out[3]->origin, SP_ORIGIN_ADDRESS_ONLY);
	/* Cached: no second plug-in call. */
	CHECK_EQ_INT(sp_symbolizer_resolve_stack(sym, 3, 5, out, 2), 4);
	CHECK_EQ_INT(p.calls, 1);
	sp_symbolizer_free(sym);
	tspool_free(&t);
}

/* Real names of this executable's functions, and of the vDSO. */
static void test_native_self(void)
{
	struct sp_symbolizer_opts o = { .flags = SP_SYMBOLIZER_NO_PERF_MAPS |
						 SP_SYMBOLIZER_NO_KERNEL };
	uint64_t a = (uint64_t)(uintptr_t)&sym_target_alpha + 2;
	uint64_t b = (uint64_t)(uintptr_t)&sym_target_beta + 2;
	const struct sp_resolved_frame *out[16];
	struct tmapping m, vm;
	struct sp_frame f[3];
	struct sp_symbolizer *sym;
	const struct sp_spool *spool;
	struct tspool t;
	void *vdso = dlopen("linux-vdso.so.1", RTLD_NOW | RTLD_NOLOAD);
	void *vfn = vdso ? dlsym(vdso, "__vdso_clock_gettime") : NULL;
	uint32_t id, vid = SP_NO_MODULE;
	int n, i;

	CHECK(tmapping_find(a, NULL, &m));
	tspool_begin(&t);
	id = tspool_mapping(&t, &m, (int32_t)getpid());
	f[0] = tframe_pinned(&m, id, a);
	f[1] = tframe_user(b); /* unpinned: resolved through the spool */
	n = 2;
	if (vfn && tmapping_find((uint64_t)(uintptr_t)vfn, NULL, &vm)) {
		vid = tspool_mapping(&t, &vm, (int32_t)getpid());
		f[n++] = tframe_pinned(&vm, vid, (uint64_t)(uintptr_t)vfn + 1);
	}
	tspool_sample(&t, (int32_t)getpid(), f, (size_t)n);
	spool = tspool_end(&t);
	sym = new_sym(spool, &o);
	n = sp_symbolizer_resolve_stack(sym, (uint32_t)n - 1, (int32_t)getpid(),
					out, 16);
	CHECK(n >= 2);
	CHECK_STR(out[0]->name, "sym_target_alpha");
	CHECK_EQ(out[0]->origin, SP_ORIGIN_ELF);
	CHECK_EQ(out[0]->offset, 2);
	CHECK_STR(out[0]->module, m.path);
	for (i = 1; i < n && out[i]->frame_id == out[0]->frame_id; i++)
		;
	CHECK_STR(out[i]->name, "sym_target_beta");
	CHECK_EQ(out[i]->module_id, id);
	if (vid != SP_NO_MODULE) {
		CHECK(strstr(out[n - 1]->name, "clock_gettime") != NULL);
		CHECK_STR(out[n - 1]->module, "[vdso]");
	} else {
		fprintf(stderr, "note: vDSO symbol not found, skipped\n");
	}
	sp_symbolizer_free(sym);
	tspool_free(&t);
	if (vdso)
		dlclose(vdso);
}

/* The second full pass over every stack performs zero allocations. */
static void test_zero_alloc(void)
{
	struct tcount c = { 0 };
	struct sp_allocator a = { tcount_alloc, tcount_free, &c };
	struct sp_symbolizer_opts o = { .allocator = &a,
					.flags = SP_SYMBOLIZER_NO_PERF_MAPS |
						 SP_SYMBOLIZER_NO_KERNEL };
	uint64_t fa = (uint64_t)(uintptr_t)&sym_target_alpha + 1;
	const struct sp_resolved_frame *out[64];
	struct sp_frame f[40];
	struct sp_symbolizer *sym;
	const struct sp_spool *spool;
	struct tmapping m;
	struct tspool t;
	uint32_t id, s, nstacks;
	int pass, i, k;

	CHECK(tmapping_find(fa, NULL, &m));
	tspool_begin(&t);
	id = tspool_mapping(&t, &m, 3);
	tspool_module(&t, "/nonexistent/libz.so", 0x100000, 0x900000, 0, 3);
	for (k = 0; k < 300; k++) {
		for (i = 0; i < 40; i++)
			f[i] = tframe_user(0x100000 +
					   (uint64_t)(k * 40 + i) * 16);
		f[0] = tframe_pinned(&m, id, fa);
		f[39] = tframe_marker();
		tspool_sample(&t, 3 + k % 3, f, 40);
	}
	spool = tspool_end(&t);
	sym = new_sym(spool, &o);
	nstacks = sp_spool_stack_count(spool);
	for (pass = 0; pass < 2; pass++) {
		unsigned long before = c.allocs;

		for (s = 0; s < nstacks; s++)
			for (k = 3; k < 6; k++)
				CHECK(sp_symbolizer_resolve_stack(sym, s, k,
								  out, 64) > 0);
		if (pass == 1)
			CHECK_EQ(c.allocs - before, 0);
		else
			CHECK(c.allocs - before > 0);
	}
	sp_symbolizer_free(sym);
	CHECK_EQ(c.allocs, c.frees);
	tspool_free(&t);
}

/* A very deep stack resolves completely; the count exceeds the cap. */
static void test_huge_stack(void)
{
	struct sp_symbolizer_opts o = { .flags = SP_SYMBOLIZER_NO_PERF_MAPS |
						 SP_SYMBOLIZER_NO_KERNEL };
	const struct sp_resolved_frame *out[8];
	struct sp_frame *f = calloc(20000, sizeof(*f));
	struct sp_symbolizer *sym;
	const struct sp_spool *spool;
	struct tspool t;
	uint32_t i;

	CHECK_PTR(f);
	tspool_begin(&t);
	tspool_module(&t, "", 0x1000, 0x2000, 0, 4); /* empty path */
	for (i = 0; i < 20000; i++)
		f[i] = tframe_user(0x1000 + (i % 4000));
	tspool_sample(&t, 4, f, 20000);
	spool = tspool_end(&t);
	sym = new_sym(spool, &o);
	CHECK_EQ_INT(sp_symbolizer_resolve_stack(
			     sym, sp_spool_stack_count(spool) - 1, 4, out, 8),
		     20000);
	CHECK_STR(out[0]->name, "<0x1000>");
	CHECK_EQ(out[0]->kind, SP_RESOLVED_UNKNOWN);
	sp_symbolizer_free(sym);
	tspool_free(&t);
	free(f);
}

static void test_opts(void)
{
	struct sp_symbolizer_opts o = { .size = 4 };
	struct sp_symbolizer *sym;
	struct tspool t;
	const struct sp_spool *spool;
	struct sp_frame f = tframe_user(0x10);

	tspool_begin(&t);
	tspool_sample(&t, 1, &f, 1);
	spool = tspool_end(&t);
	CHECK_EQ_INT(sp_symbolizer_new(spool, &o, &sym), -EINVAL);
	o.size = sizeof(o);
	o.flags = 0x100;
	CHECK_EQ_INT(sp_symbolizer_new(spool, &o, &sym), -EINVAL);
	CHECK_EQ_INT(sp_symbolizer_new(NULL, NULL, &sym), -EINVAL);
	CHECK_OK(sp_symbolizer_new(spool, NULL, &sym));
	sp_symbolizer_free(sym);
	sp_symbolizer_free(NULL);
	tspool_free(&t);
}

int main(void)
{
	test_opts();
	test_address_only();
	test_kernel();
	test_perf_map();
	test_plugin();
	test_native_self();
	test_zero_alloc();
	test_huge_stack();
	return T_EXIT_PASS;
}
