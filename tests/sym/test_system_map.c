/* SPDX-License-Identifier: MIT */
/* Unit test of the System.map fallback and its KASLR slide inference. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "ksyms_internal.h"

/*
 * A fake System.map at link addresses (_text = 0xffffffff81000000) and
 * fake runtime PCs taken inside its functions, moved by a known slide.
 * The inference must find the slide whenever enough PCs are given, stay
 * at 0 when it should (few PCs, PCs that fit no candidate, no KASLR),
 * and the relocated table must name every PC as the map does.
 */
#define TEXT 0xffffffff81000000ull
#define NFUNC 3000

static struct sp__mem mem;
static uint64_t rng = 0x2545f4914f6cdd1dull;
static uint64_t func_addr[NFUNC];

static uint64_t rnd(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

/* Builds the map text; functions are 0x10..0x800 bytes apart. */
static char *fake_map(size_t *len)
{
	size_t cap = 64 * (NFUNC + 16), n = 0, i;
	char *t = malloc(cap);
	uint64_t a = TEXT;

	CHECK_PTR(t);
	n += (size_t)snprintf(t + n, cap - n,
			      "0000000000000000 D __per_cpu_start\n"
			      "ffffffff81000000 T _text\n"
			      "ffffffff81000000 T startup_64\n");
	for (i = 0; i < NFUNC; i++) {
		a += 0x10 + rnd() % 0x800;
		func_addr[i] = a;
		n += (size_t)snprintf(t + n, cap - n, "%016llx %c func_%zu\n",
				      (unsigned long long)a, i % 3 ? 'T' : 't',
				      i);
	}
	n += (size_t)snprintf(t + n, cap - n, "%016llx T _etext\n",
			      (unsigned long long)(a + 0x40));
	*len = n;
	return t;
}

/* @n PCs inside random functions (offset below the next function). */
static void make_pcs(uint64_t *pcs, size_t *idx, size_t n, uint64_t slide)
{
	size_t i, f;

	for (i = 0; i < n; i++) {
		f = rnd() % (NFUNC - 1);
		idx[i] = f;
		pcs[i] = func_addr[f] +
			 rnd() % (func_addr[f + 1] - func_addr[f]) + slide;
	}
}

static void check_names(const struct sp__ksyms *ks, const uint64_t *pcs,
			const size_t *idx, size_t n, uint64_t slide)
{
	struct sp_resolved_frame f;
	char want[32];
	size_t i;

	for (i = 0; i < n; i++) {
		snprintf(want, sizeof(want), "func_%zu", idx[i]);
		CHECK_EQ_INT(sp__ksyms_lookup(ks, pcs[i], &f), 1);
		if (strcmp(f.name, want) != 0) {
			fprintf(stderr, "pc %zu: %s, want %s\n", i, f.name,
				want);
			exit(T_EXIT_FAIL);
		}
		CHECK_EQ(f.offset, pcs[i] - slide - func_addr[idx[i]]);
		CHECK(strcmp(f.module, "[kernel]") == 0);
	}
}

static void check_slide(const char *text, size_t len, size_t npcs,
			uint64_t slide, uint64_t want_slide)
{
	uint64_t pcs[512], got = 1;
	size_t idx[512];
	struct sp__ksyms *ks = NULL;

	CHECK(npcs <= 512);
	make_pcs(pcs, idx, npcs, slide);
	CHECK_OK(sp__system_map_parse(&mem, text, len, pcs, npcs, &got, &ks));
	CHECK_EQ(got, want_slide);
	if (slide == want_slide) {
		check_names(ks, pcs, idx, npcs, slide);
		CHECK(ks->sparse && ks->n <= npcs);
	}
	sp__ksyms_free(ks);
}

static void test_inference(const char *text, size_t len)
{
	/* KASLR slides are multiples of 2 MiB, up to ~1 GiB on x86-64. */
	const uint64_t slides[] = { 0, 2ull << 20, 0x1c600000, 0x3e000000 };
	size_t i;

	for (i = 0; i < sizeof(slides) / sizeof(slides[0]); i++) {
		check_slide(text, len, 200, slides[i], slides[i]);
		/*
		 * With 8 PCs and a slide smaller than the text, slide 0
		 * may match them all too (a tie on the offsets): only
		 * slides beyond the text are unambiguous.
		 */
		if (slides[i] == 0 || slides[i] > (64ull << 20))
			check_slide(text, len, 8, slides[i], slides[i]);
	}
	/* Seven PCs are too few to trust an inferred slide. */
	check_slide(text, len, 7, 0x1c600000, 0);
	check_slide(text, len, 7, 0, 0);
}

static void test_no_candidate(const char *text, size_t len)
{
	struct sp__ksyms *map = NULL;
	uint64_t pcs[64], slide = 1;
	size_t i;

	/* User-space addresses: neither candidate matches 8 PCs. */
	for (i = 0; i < 64; i++)
		pcs[i] = 0x7f0000000000ull + i * 0x1000000;
	CHECK_OK(sp__system_map_parse(&mem, text, len, pcs, 64, &slide, &map));
	CHECK_EQ(slide, 0);
	CHECK_EQ(map->n, 0);
	sp__ksyms_free(map);
	/* The inference on its own, on the unrelocated full table. */
	CHECK_OK(sp__ksyms_parse(&mem, text, len, NULL, 0, &map));
	CHECK_EQ(map->text, TEXT);
	for (i = 0; i < 64; i++)
		pcs[i] = func_addr[i * 40] + 0x5e00000 + 1;
	CHECK_EQ(sp__system_map_infer_slide(map, pcs, 64), 0x5e00000);
	CHECK_EQ(sp__system_map_infer_slide(map, pcs, 7), 0);
	sp__ksyms_free(map);
}

static void test_files(const char *text, size_t len)
{
	char dir[] = "/tmp/sp-sysmap-XXXXXX", path[64];
	struct sp__ksyms *ks = NULL;
	struct sp_resolved_frame f;
	uint64_t slide = 1;
	FILE *fp;

	CHECK_PTR(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/System.map", dir);
	fp = fopen(path, "w");
	CHECK_PTR(fp);
	CHECK_EQ(fwrite(text, 1, len, fp), len);
	fclose(fp);
	/* Full table from a file, no PCs: no slide, every symbol kept. */
	CHECK_OK(sp__system_map_load_path(&mem, path, NULL, 0, &slide, &ks));
	CHECK_EQ(slide, 0);
	CHECK_EQ(ks->n, NFUNC + 2);
	CHECK_EQ_INT(sp__ksyms_lookup(ks, func_addr[7] + 1, &f), 1);
	CHECK(strcmp(f.name, "func_7") == 0);
	sp__ksyms_free(ks);
	/* Debian's placeholder System.map has no usable symbol. */
	fp = fopen(path, "w");
	CHECK_PTR(fp);
	fputs("ffffffffffffffff B The real System.map is in the "
	      "linux-image-<version>-dbg package\n",
	      fp);
	fclose(fp);
	CHECK_OK(sp__system_map_load_path(&mem, path, NULL, 0, &slide, &ks));
	CHECK(!sp__ksyms_is_usable(ks));
	sp__ksyms_free(ks);
	CHECK_EQ_INT(sp__system_map_load_path(&mem, dir, NULL, 0, &slide, &ks),
		     -EINVAL);
	unlink(path);
	CHECK_EQ_INT(sp__system_map_load_path(&mem, path, NULL, 0, &slide, &ks),
		     -ENOENT);
	rmdir(dir);
	CHECK_EQ_INT(sp__system_map_load(&mem, "0.0.0-no-such-release", NULL, 0,
					 NULL, &ks),
		     -ENOENT);
}

int main(void)
{
	size_t len;
	char *text;

	sp__mem_init(&mem, NULL);
	text = fake_map(&len);
	test_inference(text, len);
	test_no_candidate(text, len);
	test_files(text, len);
	free(text);
	return T_EXIT_PASS;
}
