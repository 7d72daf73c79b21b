/* SPDX-License-Identifier: MIT */
/* Unit test of load-bias correlation and svma/offset translation rules. */
#include <errno.h>

#include "check.h"
#include "elf_build.h"
#include "image.h"

/*
 * Each case is a synthetic PT_LOAD table (an ELF header plus program
 * headers, opened with sp__image_open_memory) and mappings as the kernel
 * would create them, with the bias the rules of image_bias.c must give
 * (research/stackpulse-features.md §1.5 and the 0.1.4 / 0.2.0 / 0.5.0 /
 * 0.7.0 entries of §6). Several cases are built so that dropping one rule
 * flips the answer: e.g. without "ignore empty segments" the empty-segment
 * case becomes ambiguous, and without "executable wins" the tail case
 * becomes -ENOENT.
 */
#define PG 0x1000ull
#define B 0x7f0000000000ull
#define R PF_R
#define RX (PF_R | PF_X)
#define RW (PF_R | PF_W)
#define RWX (PF_R | PF_W | PF_X)

static struct sp__mem mem;
static struct eb eb;

static struct sp__image *open_segs(const struct eb_seg *segs, size_t n)
{
	struct sp__image *img = NULL;

	eb_init(&eb, segs, n);
	CHECK_OK(sp__image_open_memory(&mem, eb.buf, eb.len, true, "synth",
				       &img));
	CHECK_EQ(sp__image_load_count(img), n);
	return img;
}

/* Bias of mapping [start, start + len) at @off, or the error. */
static int64_t bias_of(const struct sp__image *img, uint64_t start,
		       uint64_t len, uint64_t off, uint64_t *bias)
{
	*bias = 0xdeadull;
	return sp__image_bias(img, start, start + len, off, PG, bias);
}

static void expect_bias(const struct sp__image *img, uint64_t start,
			uint64_t len, uint64_t off, uint64_t want)
{
	uint64_t bias;

	CHECK_EQ_INT(bias_of(img, start, len, off, &bias), 0);
	CHECK_EQ(bias, want);
}

static void expect_none(const struct sp__image *img, uint64_t start,
			uint64_t len, uint64_t off)
{
	uint64_t bias;

	CHECK_EQ_INT(bias_of(img, start, len, off, &bias), -ENOENT);
	CHECK_EQ(bias, 0xdeadull); /* untouched on failure */
}

/* ld.bfd -z separate-code PIE: R, RX, R, RW sharing its page with R. */
static void test_pie_layout(void)
{
	const struct eb_seg segs[] = {
		{ PT_LOAD, R, 0, 0, 0x628 },
		{ PT_LOAD, RX, 0x1000, 0x1000, 0x1b5 },
		{ PT_LOAD, R, 0x2000, 0x2000, 0x10c },
		{ PT_LOAD, RW, 0x2df0, 0x3df0, 0x228, 0x230 },
	};
	struct sp__image *img = open_segs(segs, 4);

	expect_bias(img, B + 0x1000, PG, 0x1000, B);
	expect_bias(img, B, PG, 0, B);
	/* Page 0x2000 is claimed by R (delta 0) and RW (delta 0x1000), and
	 * neither is executable: ambiguous, rejected. */
	expect_none(img, B + 0x2000, PG, 0x2000);
	expect_none(img, B + 0x3000, PG, 0x2000);
	sp__image_unref(img);
}

/* 0.2.0 / 0.5.0: page-rounded tails, and the executable tail kept. */
static void test_rounded_tail(void)
{
	const struct eb_seg segs[] = {
		{ PT_LOAD, RX, 0x1000, 0x1000, 0x1234 },
		{ PT_LOAD, R, 0x2234, 0x3234, 0x100 },
	};
	struct sp__image *img = open_segs(segs, 2);

	/* The text mapping runs to page_up(0x2234) = 0x3000. */
	expect_bias(img, B + 0x1000, 0x2000, 0x1000, B);
	/* A fragment of the shared page (mprotect/MAP_FIXED split): RX's tail
	 * and R's head disagree; the executable tail wins. */
	expect_bias(img, B + 0x2000, PG, 0x2000, B);
	sp__image_unref(img);
}

/* Two claimants of a shared page that disagree with no single winner. */
static void test_ambiguous(void)
{
	const struct eb_seg r_rw[] = {
		{ PT_LOAD, R, 0, 0, 0x1234 },
		{ PT_LOAD, RW, 0x1234, 0x2234, 0x100 },
	};
	const struct eb_seg rx_rwx[] = {
		{ PT_LOAD, RX, 0, 0, 0x1234 },
		{ PT_LOAD, RWX, 0x1234, 0x2234, 0x100 },
	};
	const struct eb_seg agree[] = {
		{ PT_LOAD, R, 0, 0, 0x1234 },
		{ PT_LOAD, RW, 0x1234, 0x1234, 0x100 },
	};
	struct sp__image *img = open_segs(r_rw, 2);

	expect_none(img, B + 0x1000, PG, 0x1000);
	expect_bias(img, B, PG, 0, B); /* page 0 has one claimant */
	sp__image_unref(img);
	img = open_segs(rx_rwx, 2);
	expect_none(img, B + 0x1000, PG, 0x1000);
	sp__image_unref(img);
	/* Same delta on both sides of the shared page: no ambiguity. */
	img = open_segs(agree, 2);
	expect_bias(img, B + 0x1000, PG, 0x1000, B);
	sp__image_unref(img);
}

/* Old layout without separate-code: RW's head page is RX's page 0. */
static void test_exec_head_wins(void)
{
	const struct eb_seg segs[] = {
		{ PT_LOAD, RX, 0, 0, 0x7fc },
		{ PT_LOAD, RW, 0xdb8, 0x200db8, 0x258, 0x260 },
	};
	struct sp__image *img = open_segs(segs, 2);

	expect_bias(img, B, PG, 0, B);
	sp__image_unref(img);
}

/* 0.5.0: empty file ranges never vote. */
static void test_empty_ignored(void)
{
	const struct eb_seg segs[] = {
		{ PT_LOAD, RX, 0x1000, 0x1000, 0x2000 },
		/* Empty, but its head page would be 0x2000. */
		{ PT_LOAD, RWX, 0x2100, 0x9100, 0, 0x1000 },
	};
	const struct eb_seg only_empty[] = {
		{ PT_LOAD, RX, 0x5100, 0x5100, 0, 0x1000 },
	};
	struct sp__image *img = open_segs(segs, 2);

	/* Were the empty RWX segment counted, two executables would disagree. */
	expect_bias(img, B + 0x2000, PG, 0x2000, B);
	sp__image_unref(img);
	img = open_segs(only_empty, 1);
	expect_none(img, B + 0x5000, PG, 0x5000);
	sp__image_unref(img);
}

/* 0.2.0 / 0.5.0: wrapping ranges never vote and never wrap the bias. */
static void test_overflow_ignored(void)
{
	const struct eb_seg wrap_file[] = {
		{ PT_LOAD, RX, 0xfffffffffffff000ull, 0, 0x2000 },
		{ PT_LOAD, RX, 0xffffffffffff0000ull, 0, 0xf800 },
	};
	const struct eb_seg wrap_vaddr[] = {
		{ PT_LOAD, RX, 0x1000, 0x1000, 0x1000 },
		{ PT_LOAD, RX, 0x1000, 0x2000, 0x1000, 0xffffffffffffff00ull },
	};
	const struct eb_seg high[] = {
		{ PT_LOAD, RX, 0, 0x400000, 0x1000 },
	};
	struct sp__image *img = open_segs(wrap_file, 2);

	expect_none(img, B, PG, 0xfffffffffffff000ull);
	expect_none(img, B, PG, 0xffffffffffff0000ull);
	sp__image_unref(img);
	img = open_segs(wrap_vaddr, 2);
	expect_bias(img, B + 0x1000, PG, 0x1000, B);
	sp__image_unref(img);
	/* svma 0x400000 above avma 0x1000: a negative bias is refused. */
	img = open_segs(high, 1);
	expect_none(img, 0x1000, PG, 0);
	expect_bias(img, 0x400000, PG, 0, 0);
	sp__image_unref(img);
}

/* 0.1.4 / 0.7.0: coarse mappings use the segment at their start offset. */
static void test_coarse(void)
{
	const struct eb_seg same_delta[] = {
		{ PT_LOAD, R, 0, 0, 0x800 },
		{ PT_LOAD, RX, 0x1000, 0x1000, 0x1000 },
		{ PT_LOAD, R, 0x3000, 0x3000, 0x400 },
	};
	const struct eb_seg split_delta[] = {
		{ PT_LOAD, R, 0, 0, 0x800 },
		{ PT_LOAD, RX, 0x1000, 0x201000, 0x1000 },
	};
	struct sp__image *img = open_segs(same_delta, 3);

	expect_bias(img, B, 0x4000, 0, B);
	/* A fragment starting mid-segment. */
	expect_bias(img, B + 0x1000, PG, 0x1000, B);
	sp__image_unref(img);
	img = open_segs(split_delta, 2);
	expect_bias(img, B, 0x3000, 0, B);
	expect_bias(img, B + 0x1000, PG, 0x1000, B - 0x200000);
	sp__image_unref(img);
}

/* No segment at the mapping's offset: the overlapped segments decide. */
static void test_fallback_overlap(void)
{
	const struct eb_seg segs[] = {
		{ PT_LOAD, RX, 0x1000, 0x401000, 0x1000 },
	};
	struct sp__image *img = open_segs(segs, 1);

	expect_bias(img, B, 0x3000, 0, B - 0x400000);
	expect_none(img, B, PG, 0); /* ends before the segment */
	sp__image_unref(img);
}

static void test_mid_segment_and_pages(void)
{
	const struct eb_seg segs[] = {
		{ PT_LOAD, RX, 0x1000, 0x1000, 0x5000 },
		/* p_vaddr and p_offset disagree modulo the page: unmappable. */
		{ PT_LOAD, RX, 0x1000, 0x5800, 0x1000 },
	};
	const struct eb_seg big_pages[] = {
		{ PT_LOAD, R, 0, 0, 0x2345, 0, 0x4000 },
		{ PT_LOAD, RX, 0x4000, 0x8000, 0x2345, 0, 0x4000 },
	};
	struct sp__image *img = open_segs(segs, 2);
	uint64_t bias;

	expect_bias(img, B + 0x3000, PG, 0x3000, B);
	expect_bias(img, B + 0x1000, PG, 0x1000, B);
	CHECK_EQ_INT(sp__image_bias(img, B, B + PG, 0x1000, 0, &bias), -EINVAL);
	CHECK_EQ_INT(sp__image_bias(img, B, B + PG, 0x1000, 3000, &bias),
		     -EINVAL);
	expect_none(img, B, 0, 0x1000);
	CHECK_EQ_INT(sp__image_bias(img, B, B - 1, 0x1000, PG, &bias), -ENOENT);
	sp__image_unref(img);
	img = open_segs(big_pages, 2);
	CHECK_OK(sp__image_bias(img, B + 0x8000, B + 0xc000, 0x4000, 0x4000,
				&bias));
	CHECK_EQ(bias, B);
	sp__image_unref(img);
}

static void test_translate(void)
{
	const struct eb_seg segs[] = {
		{ PT_LOAD, RX, 0x1000, 0x1000, 0x1b5 },
		{ PT_LOAD, RW, 0x2df0, 0x3df0, 0x228, 0x230 },
		{ PT_LOAD, R, 0x10000, 0xfffffffffffff000ull, 0x2000 },
	};
	struct sp__image *img = open_segs(segs, 3);
	uint64_t v = 0;

	CHECK_OK(sp__image_offset_to_svma(img, 0x1100, &v));
	CHECK_EQ(v, 0x1100);
	CHECK_OK(sp__image_offset_to_svma(img, 0x2e00, &v));
	CHECK_EQ(v, 0x3e00);
	CHECK_EQ_INT(sp__image_offset_to_svma(img, 0x11b5, &v), -ERANGE);
	CHECK_EQ_INT(sp__image_offset_to_svma(img, 0x3018, &v), -ERANGE);
	CHECK_EQ_INT(sp__image_offset_to_svma(img, 0x500, &v), -ERANGE);
	CHECK_OK(sp__image_svma_to_offset(img, 0x3e00, &v));
	CHECK_EQ(v, 0x2e00);
	CHECK_OK(sp__image_svma_to_offset(img, 0x11b4, &v));
	CHECK_EQ(v, 0x11b4);
	/* .bss (past p_filesz) has no file offset. */
	CHECK_EQ_INT(sp__image_svma_to_offset(img, 0x4018, &v), -ERANGE);
	/* The last segment's svma range wraps past 2^64 halfway through. */
	CHECK_OK(sp__image_offset_to_svma(img, 0x10ff0, &v));
	CHECK_EQ(v, 0xffffffffffffffffull - 0xf);
	CHECK_EQ_INT(sp__image_offset_to_svma(img, 0x11000, &v), -ERANGE);
	CHECK_OK(sp__image_svma_to_offset(img, 0xfffffffffffffff0ull, &v));
	CHECK_EQ(v, 0x10ff0);
	sp__image_unref(img);
}

int main(void)
{
	sp__mem_init(&mem, NULL);
	test_pie_layout();
	test_rounded_tail();
	test_ambiguous();
	test_exec_head_wins();
	test_empty_ignored();
	test_overflow_ignored();
	test_coarse();
	test_fallback_overlap();
	test_mid_segment_and_pages();
	test_translate();
	return T_EXIT_PASS;
}
