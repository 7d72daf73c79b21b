/* SPDX-License-Identifier: MIT */
/* Fuzz target: ELF image validation, load-bias correlation, translations. */
#include <errno.h>
#include <gelf.h>

#include "fuzz.h"
#include "image.h"

/*
 * The input is opened as a borrowed memory image (the driver's exactly
 * sized copy, so ASan catches any read past it). It must either open or
 * fail with SP_ECORRUPT (or -ENOMEM when the accounting allocator was told
 * to fail). An opened image is then queried as the recorder would: a
 * mapping per PT_LOAD as the kernel would create it, plus mappings and
 * offsets derived from the input's hash. Invariants checked:
 *   - a bias is only ever returned when some PT_LOAD maps the mapping's
 *     offset to exactly map_start - bias without wrapping (model below);
 *   - offset -> svma -> offset always succeeds once the first step did;
 *   - every allocation is freed once the image is released.
 * libelf's section walk runs too, under the image lock, because the CFI
 * builder and the symbolizer will do the same on any image that opened.
 */
#define MAX_LOADS 64
#define BASE 0x7f0000000000ull

/* Model: does some segment put file offset @off at svma @svma? */
static bool some_load_maps(const struct sp__image *img, uint64_t off,
			   uint64_t svma)
{
	const struct sp__image_load *l;
	uint64_t s;
	size_t i;

	for (i = 0; i < sp__image_load_count(img); i++) {
		l = sp__image_load(img, i);
		if (off >= l->offset) {
			if (__builtin_add_overflow(l->vaddr, off - l->offset,
						   &s))
				continue;
		} else if (__builtin_sub_overflow(l->vaddr, l->offset - off,
						  &s)) {
			continue;
		}
		if (s == svma)
			return true;
	}
	return false;
}

static void query_bias(const struct sp__image *img, uint64_t start,
		       uint64_t end, uint64_t off, uint64_t page)
{
	uint64_t bias = 0;
	int err = sp__image_bias(img, start, end, off, page, &bias);

	FUZZ_CHECK(err == 0 || err == -ENOENT || err == -EINVAL);
	if (err != 0)
		return;
	FUZZ_CHECK(end > start && bias <= start);
	FUZZ_CHECK(some_load_maps(img, off, start - bias));
}

static void query_offset(const struct sp__image *img, uint64_t off)
{
	uint64_t svma, back;

	if (sp__image_offset_to_svma(img, off, &svma) < 0)
		return;
	FUZZ_CHECK(sp__image_svma_to_offset(img, svma, &back) == 0);
	FUZZ_CHECK(sp__image_offset_to_svma(img, back, &svma) == 0);
}

static void query_loads(const struct sp__image *img, uint64_t h)
{
	const struct sp__image_load *l;
	uint64_t page = 4096, start, off;
	size_t i, n = sp__image_load_count(img);

	for (i = 0; i < n && i < MAX_LOADS; i++) {
		l = sp__image_load(img, i);
		FUZZ_CHECK(l != NULL);
		off = l->offset & ~(page - 1);
		start = BASE + (l->vaddr & ~(page - 1) & 0xffffffffffull);
		query_bias(img, start, start + page, off, page);
		query_bias(img, start, start + l->filesz + page, off, page);
		query_bias(img, start, start + 0x10000, off, 0x4000);
		query_offset(img,
			     l->offset + (h >> (i % 48)) % (l->filesz | 1));
		query_offset(img, l->offset);
		query_offset(img, l->offset + l->filesz);
	}
	FUZZ_CHECK(sp__image_load(img, n) == NULL);
	query_bias(img, h, h + (h >> 40), (h >> 20) & ~0xfffull, page);
	query_bias(img, h >> 1, UINT64_MAX, 0, page);
	query_offset(img, h);
}

static void walk_sections(struct sp__image *img)
{
	Elf *elf = sp__image_elf(img);
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;
	size_t shnum = 0, strndx = 0, n = 0;

	sp__image_lock(img);
	elf_getshdrnum(elf, &shnum);
	elf_getshdrstrndx(elf, &strndx);
	while ((scn = elf_nextscn(elf, scn)) != NULL && n++ < 4096)
		if (gelf_getshdr(scn, &sh))
			elf_strptr(elf, strndx, sh.sh_name);
	sp__image_unlock(img);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint64_t h = fuzz_hash(data, size);
	struct sp__image *img = NULL;
	struct fuzz_alloc fa;
	struct sp__mem mem;
	int err;

	/* One input in eight fails one of the first allocations. */
	fuzz_alloc_init(&fa, (h & 7) == 0 ? 1 + (h >> 3) % 4 : 0);
	sp__mem_init(&mem, &fa.hook);
	err = sp__image_open_memory(&mem, data, size, false, "fuzz", &img);
	FUZZ_CHECK(err == 0 || err == SP_ECORRUPT ||
		   (err == -ENOMEM && fa.failed));
	if (err == 0) {
		FUZZ_CHECK(sp__image_identity(img)->build_id_len <=
			   SP_BUILD_ID_MAX);
		query_loads(img, h);
		walk_sections(img);
		sp__image_unref(img);
	}
	FUZZ_CHECK(fa.outstanding == 0);
	return 0;
}
