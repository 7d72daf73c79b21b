/* SPDX-License-Identifier: MIT */
/* Unit test of kernel symbols: perf's kallsyms rules, sparse loading, host. */
#define _GNU_SOURCE
#include <errno.h>
#include <pwd.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "ksyms_internal.h"

/*
 * Crafted kallsyms text checks each selection rule on its own; a larger
 * generated file (with duplicates, rejected types, labels, module symbols
 * and garbage) checks that sparse loads answer exactly as full loads for
 * the requested PCs, sorted or shuffled. The host's /proc/kallsyms is then
 * checked against a floor table built here independently with stdio.
 */
static struct sp__mem mem;
static uint64_t rng = 0x9e3779b97f4a7c15ull;

static uint64_t rnd(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

static void check_str(int line, const char *got, const char *want)
{
	if (!got || strcmp(got, want) != 0) {
		fprintf(stderr, "line %d: got \"%s\", want \"%s\"\n", line,
			got ? got : "(null)", want);
		exit(T_EXIT_FAIL);
	}
}

static struct sp__ksyms *parse(const char *text, const uint64_t *pcs,
			       size_t npcs)
{
	struct sp__ksyms *ks = NULL;

	CHECK_OK(sp__ksyms_parse(&mem, text, strlen(text), pcs, npcs, &ks));
	CHECK_PTR(ks);
	return ks;
}

#define EXPECT(ks, addr, name, off, mod)                                       \
	expect(__LINE__, ks, addr, name, off, mod)

static void expect(int line, const struct sp__ksyms *ks, uint64_t addr,
		   const char *name, uint64_t off, const char *mod)
{
	struct sp_resolved_frame f;

	memset(&f, 0, sizeof(f));
	if (sp__ksyms_lookup(ks, addr, &f) != 1) {
		fprintf(stderr, "line %d: 0x%llx unresolved, want %s\n", line,
			(unsigned long long)addr, name);
		exit(T_EXIT_FAIL);
	}
	check_str(line, f.name, name);
	check_str(line, f.module, mod);
	CHECK_EQ(f.offset, off);
	CHECK_EQ(f.kind, SP_RESOLVED_KERNEL);
	CHECK_EQ(f.origin, SP_ORIGIN_KERNEL_SYMBOLS);
	CHECK_EQ(f.file, NULL);
}

static void expect_none(const struct sp__ksyms *ks, uint64_t addr)
{
	struct sp_resolved_frame f;

	CHECK_EQ_INT(sp__ksyms_lookup(ks, addr, &f), 0);
}

#define K(x) (0xffffffff81000000ull + (x))

static void test_types_and_labels(void)
{
	static const char text[] = "0000000000000000 A fixed_percpu_data\n"
				   "ffffffff81000000 T _text\n"
				   "ffffffff81000100 t t_lower\n"
				   "ffffffff81000200 W w_upper\n"
				   "ffffffff81000300 w w_lower\n"
				   "ffffffff81000400 R r_rodata\n"
				   "ffffffff81000500 D d_upper\n"
				   "ffffffff81000600 d d_lower\n"
				   "ffffffff81000700 B b_upper\n"
				   "ffffffff81000800 b b_lower\n"
				   "ffffffff81000900 A a_abs\n"
				   "ffffffff81000940 U u_undef\n"
				   "ffffffff81000a00 T $x.mapping\n"
				   "ffffffff81000b00 T .Lanon\n"
				   "ffffffff81000c00 t L0123\n"
				   "ffffffff81000d00 T Lfoo\n"
				   "ffffffff81000e00 T _etext\n";
	struct sp__ksyms *ks = parse(text, NULL, 0);

	EXPECT(ks, K(0), "_text", 0, "[kernel]");
	EXPECT(ks, K(0x180), "t_lower", 0x80, "[kernel]");
	EXPECT(ks, K(0x200), "w_upper", 0, "[kernel]");
	EXPECT(ks, K(0x401), "w_lower", 0x101, "[kernel]");
	EXPECT(ks, K(0x500), "d_upper", 0, "[kernel]");
	EXPECT(ks, K(0x610), "d_lower", 0x10, "[kernel]");
	EXPECT(ks, K(0x700), "b_upper", 0, "[kernel]");
	EXPECT(ks, K(0xa10), "b_lower", 0x210, "[kernel]");
	EXPECT(ks, K(0xd05), "Lfoo", 5, "[kernel]");
	/* The last symbol: _etext is not above it, so a 1 MiB bound. */
	EXPECT(ks, K(0xe00 + 0x1000), "_etext", 0x1000, "[kernel]");
	expect_none(ks, K(0xe00) + SP_KSYM_SPAN);
	expect_none(ks, K(0) - 1);
	CHECK_EQ(ks->n, 10);
	CHECK(sp__ksyms_is_usable(ks));
	sp__ksyms_free(ks);
}

static void test_anchor(void)
{
	static const char stext_only[] = "ffffffff80000000 T early_core\n"
					 "ffffffff80000010 t low_mod\t[mymod]\n"
					 "ffffffff81000000 T _stext\n"
					 "ffffffff81000010 T func_a\n";
	static const char both[] = "ffffffff80ff0000 T before\n"
				   "ffffffff81000000 T _text\n"
				   "ffffffff81000040 T between\n"
				   "ffffffff81001000 T _stext\n";
	static const char none[] = "ffffffff80000000 T early_core\n"
				   "ffffffff81000010 T func_a\n";
	struct sp__ksyms *ks = parse(stext_only, NULL, 0);

	expect_none(ks, 0xffffffff80000000ull);
	/* Module symbols count even below the anchor. */
	EXPECT(ks, 0xffffffff80000018ull, "low_mod", 8, "[mymod]");
	EXPECT(ks, K(0x20), "func_a", 0x10, "[kernel]");
	sp__ksyms_free(ks);
	/* Both anchors: the lower one counts. */
	ks = parse(both, NULL, 0);
	expect_none(ks, 0xffffffff80ff0000ull);
	EXPECT(ks, K(0x50), "between", 0x10, "[kernel]");
	sp__ksyms_free(ks);
	/* No anchor at all: nothing to filter against. */
	ks = parse(none, NULL, 0);
	EXPECT(ks, 0xffffffff80000004ull, "early_core", 4, "[kernel]");
	sp__ksyms_free(ks);
}

static void test_modules_and_ends(void)
{
	static const char text[] = "ffffffff81000000 T _stext\n"
				   "ffffffff81000100 T func_b\n"
				   "ffffffff81000200 T _etext\n"
				   "ffffffffc0000000 t mod_a1\t[ext4]\n"
				   "ffffffffc0000100 t mod_a2\t[ext4]\n"
				   "ffffffffc1000000 t mod_b1\t[xfs]\n";
	struct sp__ksyms *ks = parse(text, NULL, 0);

	EXPECT(ks, K(0x1ff), "func_b", 0xff, "[kernel]");
	/* _etext ends the core, it does not reach the first module. */
	EXPECT(ks, K(0x200) + 0x10, "_etext", 0x10, "[kernel]");
	expect_none(ks, K(0x200) + SP_KSYM_SPAN);
	expect_none(ks, 0xffffffffbfffffffull);
	EXPECT(ks, 0xffffffffc0000080ull, "mod_a1", 0x80, "[ext4]");
	EXPECT(ks, 0xffffffffc0000180ull, "mod_a2", 0x80, "[ext4]");
	/* The last symbol of a module: 1 MiB, not up to the next module. */
	expect_none(ks, 0xffffffffc0000100ull + SP_KSYM_SPAN);
	EXPECT(ks, 0xffffffffc1000000ull + SP_KSYM_SPAN - 1, "mod_b1",
	       SP_KSYM_SPAN - 1, "[xfs]");
	expect_none(ks, 0xffffffffc1000000ull + SP_KSYM_SPAN);
	sp__ksyms_free(ks);
}

static void test_equal_addresses(void)
{
	static const char text[] = "ffffffff81000000 T srso_alias_untrain_ret\n"
				   "ffffffff81000000 T _stext\n"
				   "ffffffff81000000 T _text\n"
				   "ffffffff81000000 T __pi__text\n"
				   "ffffffff81000050 T first\n"
				   "ffffffff81000050 r rejected_later\n"
				   "ffffffff81000060 T core_then_mod\n"
				   "ffffffff81000060 t mod_wins\t[m]\n";
	const uint64_t pcs[] = { K(0), K(0x55), K(0x61) };
	struct sp__ksyms *ks = parse(text, NULL, 0);

	EXPECT(ks, K(0), "__pi__text", 0, "[kernel]");
	EXPECT(ks, K(0x55), "first", 5, "[kernel]");
	EXPECT(ks, K(0x61), "mod_wins", 1, "[m]");
	sp__ksyms_free(ks);
	ks = parse(text, pcs, 3);
	CHECK(ks->sparse);
	EXPECT(ks, K(0), "__pi__text", 0, "[kernel]");
	EXPECT(ks, K(0x55), "first", 5, "[kernel]");
	EXPECT(ks, K(0x61), "mod_wins", 1, "[m]");
	CHECK_EQ(ks->n, 3);
	sp__ksyms_free(ks);
}

static void test_garbage(void)
{
	char text[4096];
	char longname[1500];
	struct sp__ksyms *ks;
	size_t n;

	memset(longname, 'x', sizeof(longname) - 1);
	longname[sizeof(longname) - 1] = '\0';
	n = (size_t)snprintf(text, sizeof(text),
			     "ffffffff81000000 T _stext\n"
			     "garbage line\n"
			     "\n"
			     "zzzzffff81000010 T bad_hex\n"
			     "ffffffff81000020\n"
			     "ffffffff81000030 T\n"
			     "ffffffff81000040 TT two_char_type\n"
			     "ffffffff81000050 T name trailing junk\n"
			     "ffffffff81000060 T name [unterminated\n"
			     "ffffffff81000070 T name []\n"
			     "1ffffffff81000080 T seventeen_digits\n"
			     "ffffffff81000090 T %s\n"
			     "ffffffff810000a0 T with\1ctl\n"
			     "ffffffff810000b0 T crlf_fn\r\n"
			     "ffffffff810000c0 T nul_XX\n"
			     "ffffffff810000d0 T last",
			     longname);
	/* A NUL byte inside a line makes the line malformed. */
	memcpy(strstr(text, "nul_XX") + 4, "\0X", 2);
	ks = NULL;
	CHECK_OK(sp__ksyms_parse(&mem, text, n, NULL, 0, &ks));
	EXPECT(ks, K(0x9f), "_stext", 0x9f, "[kernel]");
	EXPECT(ks, K(0xa4), "with\1ctl", 4, "[kernel]");
	EXPECT(ks, K(0xc8), "crlf_fn", 0x18, "[kernel]");
	EXPECT(ks, K(0xd1), "last", 1, "[kernel]");
	CHECK_EQ(ks->n, 4);
	sp__ksyms_free(ks);
	/* Nothing but zeros (kptr_restrict): parsed, but unusable. */
	ks = parse("0000000000000000 T _stext\n0000000000000000 T f\n", NULL,
		   0);
	CHECK(!sp__ksyms_is_usable(ks));
	CHECK_EQ(ks->n, 0);
	sp__ksyms_free(ks);
	ks = parse("", NULL, 0);
	expect_none(ks, K(0));
	sp__ksyms_free(ks);
}

/* ---- generated files: sparse == full ---- */

struct gen {
	char **lines;
	size_t nlines;
};

static void gen_add(struct gen *g, const char *line)
{
	g->lines = realloc(g->lines, (g->nlines + 1) * sizeof(*g->lines));
	CHECK_PTR(g->lines);
	g->lines[g->nlines] = strdup(line);
	CHECK_PTR(g->lines[g->nlines++]);
}

/* One line at @a: mostly symbols of random types, some labels, garbage. */
static void gen_symbol(struct gen *g, uint64_t a, int i)
{
	static const char types[] = "TtWwDdBbRrAaU";
	unsigned long long la = a;
	char buf[160];
	int r = (int)(rnd() % 100);

	if (r < 2)
		snprintf(buf, sizeof(buf), "%016llx T .Lfn_%d", la, i);
	else if (r < 4)
		snprintf(buf, sizeof(buf), "%016llx t $x_%d", la, i);
	else if (r < 5)
		snprintf(buf, sizeof(buf), "%016llx t L0_%d", la, i);
	else if (r < 7)
		snprintf(buf, sizeof(buf), "%016llx garbage here", la);
	else
		snprintf(buf, sizeof(buf), "%016llx %c fn_%d", la,
			 types[rnd() % (sizeof(types) - 1)], i);
	gen_add(g, buf);
}

/* A sorted kallsyms-like file exercising every rule. */
static void gen_file(struct gen *g, bool mod_before_anchor)
{
	static const char *const mods[] = { "[ext4]", "[xfs]", "[bpf]" };
	uint64_t a = 0xffffffff81000000ull;
	char buf[160];
	int i;

	memset(g, 0, sizeof(*g));
	gen_add(g, "0000000000001000 A percpu_base");
	gen_add(g, "0000000000000000 D zeroed");
	gen_add(g, "ffffffff80fff000 T below_anchor");
	if (mod_before_anchor)
		gen_add(g, "ffffffff80fff800 t early\t[early]");
	gen_add(g, "ffffffff81000000 T _stext");
	gen_add(g, "ffffffff81000000 T _text");
	for (i = 0; i < 4000; i++) {
		/* One address in five repeats: equal-address lines. */
		a += rnd() % 5 == 0 ? 0 : 1 + rnd() % 0x400;
		gen_symbol(g, a, i);
	}
	snprintf(buf, sizeof(buf), "%016llx T _etext",
		 (unsigned long long)(a + 0x10));
	gen_add(g, buf);
	for (i = 0; i < 300; i++) {
		a += 0x1000 + rnd() % 0x100000;
		snprintf(buf, sizeof(buf), "%016llx t mod_fn_%d\t%s",
			 (unsigned long long)a, i, mods[(i / 100) % 3]);
		gen_add(g, buf);
	}
}

static char *join(const struct gen *g, size_t *len)
{
	size_t i, n = 0, l;
	char *t;

	for (i = 0; i < g->nlines; i++)
		n += strlen(g->lines[i]) + 1;
	t = malloc(n + 1);
	CHECK_PTR(t);
	for (i = 0, n = 0; i < g->nlines; i++) {
		l = strlen(g->lines[i]);
		memcpy(t + n, g->lines[i], l);
		n += l;
		t[n++] = '\n';
	}
	t[n] = '\0';
	*len = n;
	return t;
}

static void gen_free(struct gen *g)
{
	size_t i;

	for (i = 0; i < g->nlines; i++)
		free(g->lines[i]);
	free(g->lines);
}

static void same_answer(const struct sp__ksyms *a, const struct sp__ksyms *b,
			uint64_t pc)
{
	struct sp_resolved_frame fa, fb;
	int ra = sp__ksyms_lookup(a, pc, &fa),
	    rb = sp__ksyms_lookup(b, pc, &fb);

	if (ra != rb) {
		fprintf(stderr, "pc 0x%llx: %d vs %d (%s)\n",
			(unsigned long long)pc, ra, rb, ra ? fa.name : fb.name);
		exit(T_EXIT_FAIL);
	}
	if (!ra)
		return;
	check_str(__LINE__, fa.name, fb.name);
	check_str(__LINE__, fa.module, fb.module);
	CHECK_EQ(fa.offset, fb.offset);
}

static uint64_t *random_pcs(size_t n)
{
	uint64_t *pcs = calloc(n, sizeof(*pcs));
	size_t i;

	CHECK_PTR(pcs);
	for (i = 0; i < n; i++) {
		switch (rnd() % 4) {
		case 0: /* core text, tight */
			pcs[i] = 0xffffffff81000000ull + rnd() % 0x100000;
			break;
		case 1: /* anywhere around modules */
			pcs[i] = 0xffffffff81000000ull + rnd() % 0x10000000;
			break;
		case 2: /* below the anchor */
			pcs[i] = 0xffffffff80fff000ull + rnd() % 0x2000;
			break;
		default: /* out of the kernel */
			pcs[i] = rnd();
		}
	}
	return pcs;
}

static void check_sparse_vs_full(const char *text, size_t len)
{
	struct sp__ksyms *full = NULL, *sparse = NULL;
	size_t npcs = 3000, i, hits = 0;
	uint64_t *pcs = random_pcs(npcs);
	struct sp_resolved_frame f;

	CHECK_OK(sp__ksyms_parse(&mem, text, len, NULL, 0, &full));
	CHECK_OK(sp__ksyms_parse(&mem, text, len, pcs, npcs, &sparse));
	CHECK(sparse->sparse);
	CHECK(sparse->n <= npcs && sparse->n < full->n);
	for (i = 0; i < npcs; i++) {
		same_answer(full, sparse, pcs[i]);
		hits += sp__ksyms_lookup(full, pcs[i], &f) == 1;
	}
	CHECK(hits > npcs / 4);
	/* Every symbol of the full table answers for its own start. */
	for (i = 0; i < full->n; i++) {
		CHECK_EQ_INT(sp__ksyms_lookup(full, full->syms[i].addr, &f), 1);
		CHECK_EQ(f.offset, 0);
		check_str(__LINE__, f.name, full->syms[i].name);
	}
	sp__ksyms_free(full);
	sp__ksyms_free(sparse);
	free(pcs);
}

static void test_sparse_generated(bool mod_before_anchor)
{
	char *text;
	size_t len, i, j;
	struct gen g;
	char *tmp;

	gen_file(&g, mod_before_anchor);
	text = join(&g, &len);
	check_sparse_vs_full(text, len);
	free(text);
	/* Shuffled: sparse must notice and fall back to a full parse. */
	for (i = g.nlines - 1; i > 0; i--) {
		j = rnd() % (i + 1);
		tmp = g.lines[i];
		g.lines[i] = g.lines[j];
		g.lines[j] = tmp;
	}
	text = join(&g, &len);
	check_sparse_vs_full(text, len);
	free(text);
	gen_free(&g);
}

/*
 * The file reader refills a 64 KiB buffer: a generated file of a few
 * hundred KiB (lines split across refills, a 100 KiB line that must be
 * skipped, no final newline) must give the same table as in memory.
 */
static void test_file_reader(void)
{
	char path[] = "/tmp/sp-kallsyms-XXXXXX";
	struct sp__ksyms *mem_ks = NULL, *file_ks = NULL;
	size_t len = 0, cap = 1 << 20, i;
	char *text = malloc(cap);
	int fd = mkstemp(path);

	CHECK_PTR(text);
	CHECK(fd >= 0);
	len += (size_t)sprintf(text, "ffffffff81000000 T _stext\n");
	for (i = 0; i < 12000; i++) {
		if (i == 5000) {
			len += (size_t)sprintf(text + len,
					       "ffffffff8100ffff T ");
			memset(text + len, 'y', 100000);
			len += 100000;
			text[len++] = '\n';
		}
		len += (size_t)sprintf(text + len, "%016llx %c f%zu%s",
				       0xffffffff81000010ull + i * 16,
				       i % 2 ? 'T' : 't', i,
				       i + 1 < 12000 ? "\n" : "");
	}
	CHECK_EQ(write(fd, text, len), len);
	close(fd);
	CHECK_OK(sp__ksyms_parse(&mem, text, len, NULL, 0, &mem_ks));
	CHECK_OK(sp__ksyms_load(&mem, path, NULL, 0, NULL, &file_ks));
	CHECK_EQ(mem_ks->n, 12001);
	CHECK_EQ(file_ks->n, mem_ks->n);
	for (i = 0; i < mem_ks->n; i++) {
		CHECK_EQ(file_ks->syms[i].addr, mem_ks->syms[i].addr);
		CHECK_EQ(file_ks->syms[i].end, mem_ks->syms[i].end);
		check_str(__LINE__, file_ks->syms[i].name,
			  mem_ks->syms[i].name);
	}
	EXPECT(file_ks, 0xffffffff81000010ull + 11999 * 16, "f11999", 0,
	       "[kernel]");
	sp__ksyms_free(file_ks);
	sp__ksyms_free(mem_ks);
	unlink(path);
	free(text);
}

/* ---- the host's /proc/kallsyms ---- */

struct ref_sym {
	uint64_t addr;
	char name[128];
};

static bool ref_accept(char type, const char *name)
{
	return strchr("TtWwDdBb", type) && name[0] != '$' &&
	       strncmp(name, ".L", 2) != 0 && strncmp(name, "L0", 2) != 0;
}

/* Core symbols from stdio: [_stext, _etext], later line wins. */
static struct ref_sym *ref_load(size_t *n, uint64_t *stext, uint64_t *etext)
{
	FILE *f = fopen("/proc/kallsyms", "r");
	struct ref_sym *r = NULL;
	char line[1024], name[128], type;
	unsigned long long a;
	size_t cap = 0, i, w;

	CHECK_PTR(f);
	*n = 0;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%llx %c %127s", &a, &type, name) != 3 ||
		    strchr(line, '['))
			continue;
		if (!strcmp(name, "_stext"))
			*stext = a;
		if (!strcmp(name, "_etext"))
			*etext = a;
		if (!a || !ref_accept(type, name))
			continue;
		if (*n == cap)
			r = realloc(r,
				    (cap = cap ? cap * 2 : 4096) * sizeof(*r));
		r[*n].addr = a;
		strcpy(r[(*n)++].name, name);
	}
	fclose(f);
	for (i = 1; i < *n; i++)
		CHECK(r[i].addr >= r[i - 1].addr); /* the host file is sorted */
	for (i = 0, w = 0; i < *n; i++) {
		if (w && r[w - 1].addr == r[i].addr)
			r[w - 1] = r[i];
		else
			r[w++] = r[i];
	}
	*n = w;
	return r;
}

static const struct ref_sym *ref_floor(const struct ref_sym *r, size_t n,
				       uint64_t a)
{
	size_t lo = 0, hi = n, mid;

	while (lo < hi) {
		mid = (lo + hi) / 2;
		if (r[mid].addr <= a)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo ? &r[lo - 1] : NULL;
}

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static void check_host_pcs(const struct sp__ksyms *ks, const struct ref_sym *r,
			   size_t n, const uint64_t *pcs, size_t npcs)
{
	const struct ref_sym *want;
	struct sp_resolved_frame f;
	size_t i;

	for (i = 0; i < npcs; i++) {
		want = ref_floor(r, n, pcs[i]);
		CHECK_PTR(want);
		CHECK_EQ_INT(sp__ksyms_lookup(ks, pcs[i], &f), 1);
		check_str(__LINE__, f.name, want->name);
		CHECK_EQ(f.offset, pcs[i] - want->addr);
		check_str(__LINE__, f.module, "[kernel]");
	}
}

static int test_host(void)
{
	uint64_t stext = 0, etext = 0, pcs[1000];
	struct sp__ksyms *full = NULL, *sparse = NULL;
	const struct ref_sym *sched = NULL;
	struct sp_resolved_frame f;
	struct ref_sym *r;
	double t0, t1, t2;
	size_t n, i;

	r = ref_load(&n, &stext, &etext);
	if (!n || !stext || !etext || etext <= stext) {
		fprintf(stderr, "host kallsyms restricted: skipping\n");
		free(r);
		return T_EXIT_SKIP;
	}
	for (i = 0; i < 1000; i++)
		pcs[i] = stext + rnd() % (etext - stext);
	t0 = now_ms();
	CHECK_OK(sp__ksyms_load(&mem, NULL, NULL, 0, NULL, &full));
	t1 = now_ms();
	CHECK_OK(sp__ksyms_load(&mem, NULL, pcs, 1000, NULL, &sparse));
	t2 = now_ms();
	CHECK(sparse->sparse && sparse->n <= 1000);
	check_host_pcs(full, r, n, pcs, 1000);
	check_host_pcs(sparse, r, n, pcs, 1000);
	/* Known symbols: _stext's address, and a function at offset 0. */
	CHECK_EQ_INT(sp__ksyms_lookup(full, stext, &f), 1);
	check_str(__LINE__, f.name, ref_floor(r, n, stext)->name);
	for (i = 0; i < n && !sched; i++)
		if (!strcmp(r[i].name, "schedule"))
			sched = &r[i];
	if (sched) {
		CHECK_EQ_INT(sp__ksyms_lookup(full, sched->addr + 4, &f), 1);
		check_str(__LINE__, f.name, "schedule");
		CHECK_EQ(f.offset, 4);
	}
	printf("host kallsyms: %zu symbols, full load %.1f ms (%zu KiB names),"
	       " sparse 1000 PCs %.1f ms -> %zu symbols (%zu B names)\n",
	       full->n, t1 - t0, full->arena.total / 1024, t2 - t1, sparse->n,
	       sparse->arena.total);
	sp__ksyms_free(full);
	sp__ksyms_free(sparse);
	free(r);
	return T_EXIT_PASS;
}

/*
 * As nobody, /proc/kallsyms shows zeros: the loader must fall back
 * (System.map, absent here, or an empty table) and still succeed.
 */
static void test_restricted_fallback(void)
{
	struct passwd *pw = getpwnam("nobody");
	uint64_t pcs[2] = { 0xffffffff81000000ull, 0xffffffff81000010ull };
	pid_t pid;
	int status;

	if (geteuid() != 0 || !pw)
		return;
	pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		struct sp__ksyms *ks = NULL;

		if (setresgid(pw->pw_gid, pw->pw_gid, pw->pw_gid) ||
		    setresuid(pw->pw_uid, pw->pw_uid, pw->pw_uid))
			_exit(3);
		if (sp__ksyms_load(&mem, NULL, pcs, 2, NULL, &ks) != 0 || !ks)
			_exit(1);
		sp__ksyms_free(ks);
		if (sp__ksyms_load(&mem, "/nonexistent/kallsyms", NULL, 0, NULL,
				   &ks) != -ENOENT)
			_exit(2);
		_exit(0);
	}
	CHECK_EQ(waitpid(pid, &status, 0), pid);
	CHECK(WIFEXITED(status));
	CHECK_EQ_INT(WEXITSTATUS(status), 0);
}

int main(void)
{
	struct sp__ksyms *ks = NULL;

	sp__mem_init(&mem, NULL);
	test_types_and_labels();
	test_anchor();
	test_modules_and_ends();
	test_equal_addresses();
	test_garbage();
	test_sparse_generated(false);
	test_sparse_generated(true);
	test_restricted_fallback();
	test_file_reader();
	CHECK_EQ_INT(sp__ksyms_load(&mem, "/nonexistent", NULL, 0, NULL, &ks),
		     -ENOENT);
	CHECK_EQ_INT(sp__ksyms_load(&mem, "/tmp", NULL, 0, NULL, &ks), -EINVAL);
	return test_host();
}
