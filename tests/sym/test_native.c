/* SPDX-License-Identifier: MIT */
/* Oracle test: native lookups match eu-addr2line -i -f on real binaries. */
#include "native_test.h"

/*
 * For thousands of random addresses inside function ranges of libc (with
 * libc6-dbg's debug file), the -O2 -g inline test program and the C++
 * program, every frame of our answer must equal eu-addr2line's: the
 * inline chain (names, innermost first), each frame's file, line and
 * column, and the outermost ELF symbol. The only tolerated difference is
 * an alias: both picked a symbol at the same address with another name
 * (symtab.c documents our preference); then the symbol address must be
 * equal.
 *
 * eu-addr2line 0.188 sometimes contradicts itself: its first line says
 * "INNER inlined at F:L:C in SYM" while the caller chain it prints next
 * (dwarf_getscopes_die) starts with another call site, or is missing
 * (seen where an inline instance's lexical block repeats the instance's
 * ranges). GNU
 * addr2line and llvm-symbolizer agree with the first line there, and so
 * do we: such records are checked against the first line only (inner
 * name and line, the inner frame's call site, the symbol) and counted.
 * Argument 1: native_inline_prog; argument 2 (optional):
 * native_cxx_prog.
 */

#define LIBC_ADDRS 3000
#define PROG_ADDRS 2000
#define RANGES_MAX 200000
#define OUT_MAX (SP_DWARF_INLINE_MAX + 1)

struct stats {
	size_t addrs;
	size_t frames;
	size_t inline_addrs;
	size_t aliases;
	size_t eu_inconsistent;
	size_t bad;
};

static bool same_str(const char *ours, const char *theirs)
{
	return strcmp(ours ? ours : "", theirs) == 0;
}

static bool same_loc(const struct sp_resolved_frame *f,
		     const struct nt_frame *e)
{
	return same_str(f->file, e->file) && f->line == e->line &&
	       f->column == e->column;
}

static void report(const char *what, uint64_t addr,
		   const struct sp_resolved_frame *fr, int k,
		   const struct nt_rec *r)
{
	int j;

	fprintf(stderr,
		"%s 0x%" PRIx64 ": ours %d frames, eu %d (sym %s+0x%" PRIx64
		")\n",
		what, addr, k, r->nframes, r->sym, r->sym_off);
	for (j = 0; j < k; j++)
		fprintf(stderr, "  ours %s+0x%" PRIx64 " %s:%u:%u d%u\n",
			fr[j].name, fr[j].offset,
			fr[j].file ? fr[j].file : "??", fr[j].line,
			fr[j].column, fr[j].inline_depth);
	for (j = 0; j < r->nframes; j++)
		fprintf(stderr, "  eu   %s %s:%u:%u\n", r->fr[j].name,
			r->fr[j].file[0] ? r->fr[j].file : "??", r->fr[j].line,
			r->fr[j].column);
}

static bool same_frame_loc(const struct nt_frame *a, const struct nt_frame *b)
{
	return strcmp(a->file, b->file) == 0 && a->line == b->line &&
	       a->column == b->column;
}

/* Is our outermost frame the symbol eu-addr2line picked (or an alias)? */
static bool same_sym(const struct sp_resolved_frame *f, const struct nt_rec *r,
		     struct stats *st)
{
	if (strcmp(f->name, r->sym) == 0)
		return f->offset == r->sym_off;
	if (f->offset == r->sym_off) {
		st->aliases++;
		return true;
	}
	return false;
}

static bool match(const struct sp_resolved_frame *fr, int k,
		  const struct nt_rec *r, struct stats *st)
{
	int j;

	if (!r->sym[0])
		return k == 0;
	if (r->inlined &&
	    (r->nframes < 2 || !same_frame_loc(&r->inl_at, &r->fr[1]))) {
		st->eu_inconsistent++;
		return k > 1 && strcmp(fr[0].name, r->fr[0].name) == 0 &&
		       same_loc(&fr[0], &r->fr[0]) &&
		       same_loc(&fr[1], &r->inl_at) &&
		       same_sym(&fr[k - 1], r, st);
	}
	if (k != r->nframes)
		return false;
	for (j = 0; j + 1 < k; j++) {
		if (strcmp(fr[j].name, r->fr[j].name) != 0 ||
		    !same_loc(&fr[j], &r->fr[j]) || fr[j].offset != 0 ||
		    fr[j].inline_depth != (uint32_t)(k - 1 - j))
			return false;
	}
	return same_sym(&fr[k - 1], r, st) &&
	       same_loc(&fr[k - 1], &r->fr[k - 1]) &&
	       fr[k - 1].inline_depth == 0 &&
	       fr[k - 1].kind == SP_RESOLVED_NATIVE &&
	       fr[k - 1].origin == SP_ORIGIN_ELF && !fr[k - 1].module;
}

/*
 * The flags and a short @cap cut the same answer: cap 1 keeps the
 * function itself (with its own call-site line), NO_INLINE gives the
 * function with the line-table row, NO_LINES the function alone.
 */
static void check_flags(struct sp__native *native, uint64_t addr,
			const struct sp_resolved_frame *full, int k)
{
	struct sp_resolved_frame f[2];

	if (k == 0)
		return;
	CHECK_EQ_INT(sp__native_lookup(native, addr, 0, f, 1), 1);
	CHECK(strcmp(f[0].name, full[k - 1].name) == 0);
	CHECK_EQ(f[0].line, full[k - 1].line);
	CHECK_EQ(f[0].inline_depth, 0);
	CHECK_EQ_INT(sp__native_lookup(native, addr, SP_NATIVE_NO_INLINE, f, 2),
		     1);
	CHECK(strcmp(f[0].name, full[k - 1].name) == 0);
	CHECK_EQ(f[0].line, full[0].line);
	CHECK_EQ(f[0].offset, full[k - 1].offset);
	CHECK_EQ_INT(sp__native_lookup(native, addr, SP_NATIVE_NO_LINES, f, 2),
		     1);
	CHECK(f[0].file == NULL && f[0].line == 0);
	CHECK_EQ(f[0].offset, full[k - 1].offset);
	CHECK_EQ_INT(sp__native_lookup(native, addr, 0, f, 0), 0);
}

static void compare(const char *what, const char *path,
		    const struct nt_range *ranges, size_t nranges, size_t count,
		    uint64_t seed)
{
	struct sp_resolved_frame fr[OUT_MAX];
	struct stats st = { 0 };
	struct sp__native *native;
	struct nt_rec *recs;
	uint64_t *addrs;
	struct sp__mem mem;
	size_t i;

	sp__mem_init(&mem, NULL);
	CHECK(nranges > 0);
	addrs = calloc(count, sizeof(*addrs));
	recs = calloc(count, sizeof(*recs));
	CHECK(addrs && recs);
	nt_pick(ranges, nranges, seed, addrs, count);
	CHECK_EQ_INT(nt_addr2line(path, addrs, count, recs), 0);
	native = nt_open(&mem, path, NULL);
	for (i = 0; i < count; i++) {
		int k = sp__native_lookup(native, addrs[i], 0, fr, OUT_MAX);

		CHECK_OK(k);
		CHECK_EQ(recs[i].addr, addrs[i]);
		st.addrs++;
		st.frames += (size_t)k;
		st.inline_addrs += k > 1;
		check_flags(native, addrs[i], fr, k);
		if (match(fr, k, &recs[i], &st))
			continue;
		if (st.bad++ < 10)
			report(what, addrs[i], fr, k, &recs[i]);
	}
	printf("%s: %zu addresses, %zu frames, %zu with inline frames, "
	       "%zu aliases, %zu eu-addr2line self-contradictions, "
	       "%zu mismatches\n",
	       what, st.addrs, st.frames, st.inline_addrs, st.aliases,
	       st.eu_inconsistent, st.bad);
	CHECK_EQ(st.bad, 0);
	sp__native_free(native);
	free(addrs);
	free(recs);
}

static void debug_path(const char *path, char *out, size_t cap)
{
	const struct sp__image_id *id;
	struct sp__image *img;
	struct sp__mem mem;
	size_t i, n;

	sp__mem_init(&mem, NULL);
	CHECK_OK(sp__image_open_path(&mem, path, &img));
	id = sp__image_identity(img);
	CHECK(id->build_id_len > 1);
	n = (size_t)snprintf(out, cap, "/usr/lib/debug/.build-id/%02x/",
			     id->build_id[0]);
	for (i = 1; i < id->build_id_len; i++)
		n += (size_t)snprintf(out + n, cap - n, "%02x",
				      id->build_id[i]);
	snprintf(out + n, cap - n, ".debug");
	sp__image_unref(img);
}

static void check_binary(const char *what, const char *path,
			 const char *symfile, size_t count, uint64_t seed,
			 bool need_inline)
{
	struct nt_range *ranges = calloc(RANGES_MAX, sizeof(*ranges));
	size_t n;

	CHECK(ranges);
	n = nt_func_ranges(symfile, ranges, RANGES_MAX, 0);
	compare(what, path, ranges, n, count, seed);
	(void)need_inline;
	free(ranges);
}

int main(int argc, char **argv)
{
	char libc[512], dbg[600];

	unsetenv("DEBUGINFOD_URLS");
	if (argc < 2) {
		fprintf(stderr, "usage: test_native INLINE_PROG [CXX_PROG]\n");
		return T_EXIT_FAIL;
	}
	if (!nt_have_tool("eu-addr2line")) {
		printf("SKIP: eu-addr2line (elfutils) not installed\n");
		return T_EXIT_SKIP;
	}
	check_binary("inline_prog", argv[1], argv[1], PROG_ADDRS, 0x1234, true);
	if (argc > 2)
		check_binary("cxx_prog", argv[2], argv[2], PROG_ADDRS, 0x5678,
			     true);
	else
		printf("cxx_prog: no C++ compiler, part skipped\n");
	nt_libc_path(libc);
	debug_path(libc, dbg, sizeof(dbg));
	if (access(dbg, R_OK) == 0)
		check_binary("libc", libc, dbg, LIBC_ADDRS, 0x9abc, true);
	else
		printf("libc: no libc6-dbg debug file %s, part skipped\n", dbg);
	return T_EXIT_PASS;
}
