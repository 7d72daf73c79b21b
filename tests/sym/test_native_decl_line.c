/* SPDX-License-Identifier: MIT */
/* decl_line: every native frame carries its function's definition line. */
#include "native_test.h"

/*
 * At every byte of every function of native_inline_prog (-O2 -g), each
 * frame named after one of the program's functions must have as
 * decl_line the line where that function is defined in the source, found
 * here by its text: the outermost frame (the subprogram's
 * DW_AT_decl_line) and the inline frames (the abstract origin's), in
 * the .c file and in the header. Each expected function must be seen,
 * outermost or inline as the program makes it. Without DWARF lines
 * (SP_NATIVE_NO_LINES) decl_line is 0.
 * Arguments: native_inline_prog, native_inline_prog.c,
 * native_inline_prog.h.
 */

#define RANGES_MAX 4096
#define OUT_MAX (SP_DWARF_INLINE_MAX + 1)
#define FUNCS_MAX 32

struct expect {
	char name[32];
	int src;	   /* 0: the .c file, 1: the header */
	char needle[64];   /* text of the definition's first line */
	unsigned line;	   /* found in the source */
	size_t outer, inl; /* frames seen at depth 0 / inline */
	bool want_outer, want_inline;
};

static struct sp__mem mem;
static struct expect ex[FUNCS_MAX];
static size_t nex;

static void add(const char *name, int src, const char *needle, bool outer,
		bool inl)
{
	struct expect *e = &ex[nex++];

	snprintf(e->name, sizeof(e->name), "%s", name);
	snprintf(e->needle, sizeof(e->needle), "%s", needle);
	e->src = src;
	e->want_outer = outer;
	e->want_inline = inl;
}

/* The 1-based line of @path whose text starts with @needle, or 0. */
static unsigned line_of(const char *path, const char *needle)
{
	char buf[512];
	unsigned n = 0, found = 0;
	FILE *f = fopen(path, "r");

	if (!f)
		return 0;
	while (!found && fgets(buf, sizeof(buf), f)) {
		n++;
		if (strncmp(buf, needle, strlen(needle)) == 0)
			found = n;
	}
	fclose(f);
	return found;
}

static struct expect *find(const char *name)
{
	size_t i;

	for (i = 0; i < nex; i++)
		if (strcmp(ex[i].name, name) == 0)
			return &ex[i];
	return NULL;
}

static void check_addr(struct sp__native *native, uint64_t addr)
{
	struct sp_resolved_frame fr[OUT_MAX];
	int n = sp__native_lookup(native, addr, 0, fr, OUT_MAX), i;

	CHECK(n >= 0);
	for (i = 0; i < n; i++) {
		struct expect *e = find(fr[i].name);

		if (!e)
			continue;
		if (fr[i].decl_line != e->line)
			fprintf(stderr,
				"0x%" PRIx64 ": %s depth %u: decl_line %u\n",
				addr, fr[i].name, fr[i].inline_depth,
				fr[i].decl_line);
		CHECK_EQ(fr[i].decl_line, e->line);
		if (fr[i].inline_depth)
			e->inl++;
		else
			e->outer++;
	}
}

int main(int argc, char **argv)
{
	static struct nt_range r[RANGES_MAX];
	struct sp_resolved_frame fr[OUT_MAX];
	struct sp__native *native;
	size_t nr, i, k, addrs = 0;
	char needle[64], name[32];
	int n;

	if (argc < 4) {
		fprintf(stderr, "usage: %s PROG PROG.c PROG.h\n", argv[0]);
		return T_EXIT_FAIL;
	}
	sp__mem_init(&mem, NULL);
	add("main", 0, "int main(int argc", true, false);
	add("run_all", 0, "static __attribute__((noinline)) uint64_t run_all(",
	    true, false);
	for (k = 1; k <= 16; k++) {
		snprintf(name, sizeof(name), "nip_fn%zu", k);
		snprintf(needle, sizeof(needle), "NIP_FN(%zu)", k);
		add(name, 0, needle, true, false);
	}
	add("local_sum", 0, "NIP_INLINE uint64_t local_sum(", false, true);
	add("local_twice", 0, "NIP_INLINE uint64_t local_twice(", false, true);
	add("nip_mix", 1, "NIP_INLINE uint64_t nip_mix(", false, true);
	add("nip_rot", 1, "NIP_INLINE uint64_t nip_rot(", false, true);
	add("nip_step", 1, "NIP_INLINE uint64_t nip_step(", false, true);
	add("nip_fold", 1, "NIP_INLINE uint64_t nip_fold(", false, true);
	for (i = 0; i < nex; i++) {
		ex[i].line = line_of(argv[2 + ex[i].src], ex[i].needle);
		if (!ex[i].line)
			fprintf(stderr, "%s: no line starts with \"%s\"\n",
				argv[2 + ex[i].src], ex[i].needle);
		CHECK(ex[i].line > 0);
	}

	native = nt_open(&mem, argv[1], NULL);
	nr = nt_func_ranges(argv[1], r, RANGES_MAX, 0);
	CHECK(nr > 0);
	for (i = 0; i < nr; i++) {
		for (k = 0; k < r[i].size; k++, addrs++)
			check_addr(native, r[i].addr + k);
	}
	for (i = 0; i < nex; i++) {
		printf("%-12s line %3u: %zu outermost, %zu inline frames\n",
		       ex[i].name, ex[i].line, ex[i].outer, ex[i].inl);
		CHECK(!ex[i].want_outer || ex[i].outer > 0);
		CHECK(!ex[i].want_inline || ex[i].inl > 0);
	}

	/* Without DWARF lines nothing knows the first line. */
	for (i = 0; i < nr; i++) {
		n = sp__native_lookup(native, r[i].addr, SP_NATIVE_NO_LINES, fr,
				      OUT_MAX);
		CHECK(n >= 0);
		if (n > 0)
			CHECK_EQ(fr[0].decl_line, 0);
	}
	printf("%zu addresses\n", addrs);
	sp__native_free(native);
	return T_EXIT_PASS;
}
