/* SPDX-License-Identifier: MIT */
/* Fuzz target: the native symbolizer's ELF/DWARF path on hostile files. */
#define _GNU_SOURCE
#include <errno.h>
#include <gelf.h>
#include <sys/mman.h>
#include <unistd.h>

#include "fuzz.h"
#include "image.h"
#include "native_internal.h"
#include "sym_internal.h"

/*
 * The input is written to a memfd and opened by descriptor, as the
 * symbolizer opens a mapped file, so libelf and libdw read it the way
 * they read real binaries. An image that opens gets a native backend
 * (symbol table from .symtab/.dynsym, .gnu_debuglink and build-id
 * lookups that find nothing under a missing debug root, lazy DWARF line
 * and inline tables) and is queried at addresses of its PT_LOAD segments
 * and of the input's hash, with and without lines and inline frames.
 * Invariants:
 *   - every lookup returns -ENOMEM (only under the failing allocator) or
 *     0..cap frames, each named, inline depths counting down to 0;
 *   - the symbol-only lookup agrees with the symbol table, and the
 *     table's bucket index with a plain binary search;
 *   - every allocation is freed when the backend and image are released.
 */
#define OUT_CAP 8
#define PER_LOAD 16

static void check_frames(const struct sp_resolved_frame *f, int n)
{
	int i;

	FUZZ_CHECK(n >= 0 && n <= OUT_CAP);
	for (i = 0; i < n; i++) {
		FUZZ_CHECK(f[i].name != NULL);
		FUZZ_CHECK(f[i].inline_depth == (uint32_t)(n - 1 - i) ||
			   n == OUT_CAP);
	}
	if (n > 0)
		FUZZ_CHECK(f[n - 1].inline_depth == 0);
}

static void query(struct sp__native *native, uint64_t svma)
{
	const struct sp__symtab *tab = sp__native_symtab(native);
	struct sp_resolved_frame f[OUT_CAP];
	const struct sp__sym *s = sp__symtab_find(tab, svma);
	int n;

	FUZZ_CHECK(s == sp__symtab_find_bsearch(tab, svma));
	n = sp__native_lookup(native, svma, SP_NATIVE_NO_LINES, f, OUT_CAP);
	if (n == -ENOMEM)
		return;
	FUZZ_CHECK(n == (s ? 1 : 0));
	if (n)
		FUZZ_CHECK(f[0].name == s->name &&
			   f[0].offset == svma - s->addr);
	n = sp__native_lookup(native, svma, 0, f, OUT_CAP);
	if (n != -ENOMEM)
		check_frames(f, n);
	n = sp__native_lookup(native, svma, SP_NATIVE_NO_INLINE, f, OUT_CAP);
	if (n != -ENOMEM)
		check_frames(f, n);
}

static void run(const struct sp__mem *mem, int fd, uint64_t h)
{
	struct sp__native *native;
	struct sp__image *img;
	size_t i, k;

	if (sp__image_open_fd(mem, fd, "/nonexistent/sp-fuzz/img.so", &img))
		return;
	if (sp__native_new(mem, img, "/nonexistent/sp-fuzz-debug", NULL,
			   &native) == 0) {
		for (i = 0; i < sp__image_load_count(img) && i < 8; i++) {
			const struct sp__image_load *l = sp__image_load(img, i);

			for (k = 0; k < PER_LOAD; k++)
				query(native, l->vaddr +
						      (h >> (k * 3)) % 0x4000 +
						      k * 7);
		}
		query(native, h);
		query(native, 0);
		query(native, UINT64_MAX);
		sp__native_free(native);
	}
	sp__image_unref(img);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static bool init;
	uint64_t h = fuzz_hash(data, size);
	struct fuzz_alloc a;
	struct sp__mem mem;
	int fd;

	if (!init) {
		elf_version(EV_CURRENT);
		unsetenv("DEBUGINFOD_URLS");
		init = true;
	}
	fd = memfd_create("sp-fuzz-native", MFD_CLOEXEC);
	if (fd < 0)
		return 0;
	if (write(fd, data, size) != (ssize_t)size) {
		close(fd);
		return 0;
	}
	/* One run with a working allocator, one failing at a hashed point. */
	fuzz_alloc_init(&a, 0);
	sp__mem_init(&mem, &a.hook);
	run(&mem, fd, h);
	FUZZ_CHECK(a.outstanding == 0);
	fuzz_alloc_init(&a, 1 + h % 64);
	sp__mem_init(&mem, &a.hook);
	run(&mem, fd, h);
	FUZZ_CHECK(a.outstanding == 0);
	close(fd);
	return 0;
}
