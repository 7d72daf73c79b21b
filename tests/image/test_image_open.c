/* SPDX-License-Identifier: MIT */
/* Unit test of image opening: build-id notes, malformed ELF, allocation failure. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "elf_build.h"
#include "image.h"
#include "test_alloc.h"

/*
 * Every malformed input is opened both from memory (borrowed and copied)
 * and from a temporary file, and must give SP_ECORRUPT. The inputs are
 * exactly sized heap copies, so under ASan a read one byte past any of
 * them is reported. Real binaries are covered by test_image_real.
 */
static struct sp__mem mem;
static struct eb eb;
static char tmpdir[] = "/tmp/sp-image-open-XXXXXX";

static const uint8_t build_id[20] = { 0xde, 0xad, 0xbe, 0xef, 1,  2, 3,
				      4,    5,	  6,	7,    8,  9, 10,
				      11,   12,	  13,	14,   15, 16 };

static int open_file_bytes(const void *data, size_t len, struct sp__image **out)
{
	char path[64];
	int fd, err;

	snprintf(path, sizeof(path), "%s/elf", tmpdir);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	CHECK(fd >= 0);
	CHECK_EQ(write(fd, data, len), len);
	close(fd);
	err = sp__image_open_path(&mem, path, out);
	unlink(path);
	return err;
}

/* Opens @data three ways; all must agree on @want (0 or an error). */
static void expect_open(const void *data, size_t len, int want)
{
	struct sp__image *img = NULL;
	uint8_t *copy = malloc(len ? len : 1);
	int err;

	CHECK_PTR(copy);
	memcpy(copy, data, len);
	err = sp__image_open_memory(&mem, copy, len, false, "m", &img);
	CHECK_EQ_INT(err, want);
	sp__image_unref(err == 0 ? img : NULL);
	err = sp__image_open_memory(&mem, copy, len, true, "m", &img);
	CHECK_EQ_INT(err, want);
	sp__image_unref(err == 0 ? img : NULL);
	err = open_file_bytes(copy, len, &img);
	CHECK_EQ_INT(err, want);
	sp__image_unref(err == 0 ? img : NULL);
	free(copy);
}

static const struct eb_seg rx_seg = { PT_LOAD, PF_R | PF_X, 0, 0, 0x100 };

/* An image with one PT_LOAD and one PT_NOTE holding @notes. */
static void build_with_notes(const void *notes, size_t len, uint64_t align)
{
	struct eb_seg segs[2] = { rx_seg,
				  { PT_NOTE, PF_R, 0, 0, len, len, align } };
	size_t off;

	eb_init(&eb, segs, 2);
	off = eb_append(&eb, notes, len);
	segs[1].offset = segs[1].vaddr = off;
	eb_phdr(&eb, 1, &segs[1]);
}

static void test_build_id_phdr(void)
{
	uint8_t notes[128];
	size_t n = eb_note(notes, "GNU", NT_GNU_ABI_TAG, "\0\0\0\0\3\0\0\0", 8);
	struct sp__image *img;
	const struct sp__image_id *id;

	n += eb_note(notes + n, "GNU", NT_GNU_BUILD_ID, build_id, 20);
	build_with_notes(notes, n, 4);
	CHECK_OK(sp__image_open_memory(&mem, eb.buf, eb.len, false, "n", &img));
	id = sp__image_identity(img);
	CHECK_MEM(id->build_id, id->build_id_len, build_id, 20);
	CHECK_EQ(id->dev, 0);
	CHECK_EQ(id->ino, 0);
	CHECK_EQ(sp__image_machine(img), EM_X86_64);
	CHECK(strcmp(sp__image_name(img), "n") == 0);
	CHECK_EQ(sp__image_load_count(img), 1);
	CHECK_EQ(sp__image_load(img, 0)->filesz, 0x100);
	CHECK(sp__image_load(img, 1) == NULL);
	sp__image_unref(img);
	/* A "GNU" note of another type and a foreign owner are not build-ids. */
	n = eb_note(notes, "GNU", 1, build_id, 16);
	n += eb_note(notes + n, "Linux", NT_GNU_BUILD_ID, build_id, 20);
	build_with_notes(notes, n, 4);
	CHECK_OK(sp__image_open_memory(&mem, eb.buf, eb.len, false, "n", &img));
	CHECK_EQ(sp__image_identity(img)->build_id_len, 0);
	sp__image_unref(img);
}

/*
 * 8-aligned notes (.note.gnu.property style): a 12-byte property note ends
 * at 28, so the build-id note starts at 32, not at 28 as 4-alignment
 * would place it.
 */
static void test_build_id_align8(void)
{
	uint8_t notes[96] = { 0 };
	Elf64_Nhdr prop = { 4, 12, NT_GNU_PROPERTY_TYPE_0 };
	Elf64_Nhdr nh = { 4, 20, NT_GNU_BUILD_ID };
	struct sp__image *img;
	const struct sp__image_id *id;

	memcpy(notes, &prop, sizeof(prop));
	memcpy(notes + 12, "GNU", 4);
	memset(notes + 16, 0x55, 12);
	memcpy(notes + 32, &nh, sizeof(nh));
	memcpy(notes + 44, "GNU", 4);
	memcpy(notes + 48, build_id, 20);
	build_with_notes(notes, 72, 8);
	CHECK_OK(sp__image_open_memory(&mem, eb.buf, eb.len, false, "n", &img));
	id = sp__image_identity(img);
	CHECK_MEM(id->build_id, id->build_id_len, build_id, 20);
	sp__image_unref(img);
}

/* No PT_NOTE: the build-id comes from a SHT_NOTE section. */
static void test_build_id_section(void)
{
	Elf64_Shdr sh[2] = { { 0 } };
	uint8_t note[64];
	size_t n = eb_note(note, "GNU", NT_GNU_BUILD_ID, build_id, 20);
	struct sp__image *img;
	const struct sp__image_id *id;

	eb_init(&eb, &rx_seg, 1);
	sh[1].sh_type = SHT_NOTE;
	sh[1].sh_offset = eb_append(&eb, note, n);
	sh[1].sh_size = n;
	sh[1].sh_addralign = 4;
	eb_ehdr(&eb)->e_shoff = eb_append(&eb, sh, sizeof(sh));
	eb_ehdr(&eb)->e_shnum = 2;
	expect_open(eb.buf, eb.len, 0);
	CHECK_OK(sp__image_open_memory(&mem, eb.buf, eb.len, false, "s", &img));
	id = sp__image_identity(img);
	CHECK_MEM(id->build_id, id->build_id_len, build_id, 20);
	sp__image_unref(img);
	/* The same section running past the end of the file is corrupt. */
	sh[1].sh_size = 4096;
	memcpy(eb.buf + eb_ehdr(&eb)->e_shoff, sh, sizeof(sh));
	expect_open(eb.buf, eb.len, SP_ECORRUPT);
}

static void test_bad_headers(void)
{
	const char text[] = "#!/bin/sh\necho this is not an ELF file at all\n"
			    "...............................................";

	eb_init(&eb, &rx_seg, 1);
	expect_open(eb.buf, eb.len, 0);
	expect_open(eb.buf, 40, SP_ECORRUPT);  /* truncated header */
	expect_open(eb.buf, 100, SP_ECORRUPT); /* phdr cut off */
	expect_open(text, sizeof(text), SP_ECORRUPT);
	eb.buf[EI_CLASS] = ELFCLASS32;
	expect_open(eb.buf, eb.len, SP_ECORRUPT);
	eb_init(&eb, &rx_seg, 1);
	eb.buf[EI_DATA] = ELFDATA2MSB;
	expect_open(eb.buf, eb.len, SP_ECORRUPT);
	eb_init(&eb, &rx_seg, 1);
	eb_ehdr(&eb)->e_phoff = eb.len - 8; /* table past EOF */
	expect_open(eb.buf, eb.len, SP_ECORRUPT);
	eb_init(&eb, &rx_seg, 1);
	eb_ehdr(&eb)->e_phoff = UINT64_MAX - 16; /* offset + size wraps */
	expect_open(eb.buf, eb.len, SP_ECORRUPT);
	eb_init(&eb, &rx_seg, 1);
	eb_ehdr(&eb)->e_phnum = 0xfffe; /* huge count */
	expect_open(eb.buf, eb.len, SP_ECORRUPT);
	eb_init(&eb, &rx_seg, 1);
	eb_ehdr(&eb)->e_phnum = PN_XNUM; /* extended count, no sections */
	expect_open(eb.buf, eb.len, SP_ECORRUPT);
	eb_init(&eb, &rx_seg, 1);
	eb_ehdr(&eb)->e_phentsize = 32;
	expect_open(eb.buf, eb.len, SP_ECORRUPT);
	eb_init(&eb, &rx_seg, 1);
	eb_ehdr(&eb)->e_shoff = 64; /* 0xffff sections (e_shnum 0 -> sh_size) */
	memset(eb.buf + 64 + 32, 0xff, 8);
	expect_open(eb.buf, eb.len, SP_ECORRUPT);
}

static void test_bad_notes(void)
{
	uint8_t notes[64];
	size_t n = eb_note(notes, "GNU", NT_GNU_BUILD_ID, build_id, 20);
	Elf64_Nhdr nh;

	/* Descriptor length past the segment. */
	memcpy(&nh, notes, sizeof(nh));
	nh.n_descsz = 21;
	memcpy(notes, &nh, sizeof(nh));
	build_with_notes(notes, n, 4);
	expect_open(eb.buf, eb.len, SP_ECORRUPT);
	nh.n_descsz = 0xffffffff;
	memcpy(notes, &nh, sizeof(nh));
	build_with_notes(notes, n, 4);
	expect_open(eb.buf, eb.len, SP_ECORRUPT);
	/* Name length past the segment. */
	nh.n_descsz = 20;
	nh.n_namesz = 0xfffffff0;
	memcpy(notes, &nh, sizeof(nh));
	build_with_notes(notes, n, 4);
	expect_open(eb.buf, eb.len, SP_ECORRUPT);
	/* A PT_NOTE whose range runs past the file. */
	n = eb_note(notes, "GNU", NT_GNU_BUILD_ID, build_id, 20);
	build_with_notes(notes, n, 4);
	eb.len -= 4;
	expect_open(eb.buf, eb.len, SP_ECORRUPT);
	/* Fewer than 12 trailing bytes are padding, not a note. */
	memset(notes + n, 0, 8);
	build_with_notes(notes, n + 8, 4);
	expect_open(eb.buf, eb.len, 0);
}

static void test_not_regular(void)
{
	struct sp__image *img;
	char path[64];
	int fd;

	CHECK_EQ_INT(sp__image_open_path(&mem, tmpdir, &img), -EINVAL);
	CHECK_EQ_INT(sp__image_open_path(&mem, "/nonexistent/x", &img),
		     -ENOENT);
	snprintf(path, sizeof(path), "%s/empty", tmpdir);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	CHECK(fd >= 0);
	close(fd);
	CHECK_EQ_INT(sp__image_open_path(&mem, path, &img), SP_ECORRUPT);
	unlink(path);
}

/* Fails the n-th allocation for n = 0, 1, ... until opening succeeds. */
static void test_alloc_failure(void)
{
	struct sp_allocator hook = { .alloc = test_alloc_fn,
				     .free = test_free_fn };
	struct test_alloc ta = { 0 };
	struct sp__image *img;
	struct sp__mem fmem;
	int err = -ENOMEM;
	long n;

	hook.ctx = &ta;
	sp__mem_init(&fmem, &hook);
	build_with_notes(build_id, 0, 4);
	for (n = 0; err == -ENOMEM && n < 100; n++) {
		ta.fail_after = n;
		err = sp__image_open_memory(&fmem, eb.buf, eb.len, true, "a",
					    &img);
		if (err == -ENOMEM)
			CHECK_EQ(ta.live_blocks, 0);
	}
	CHECK_OK(err);
	CHECK(n > 1);
	CHECK(ta.live_blocks > 0);
	sp__image_ref(img);
	sp__image_unref(img);
	CHECK(ta.live_blocks > 0);
	sp__image_unref(img);
	CHECK_EQ(ta.live_blocks, 0);
}

int main(void)
{
	sp__mem_init(&mem, NULL);
	CHECK_PTR(mkdtemp(tmpdir));
	test_build_id_phdr();
	test_build_id_align8();
	test_build_id_section();
	test_bad_headers();
	test_bad_notes();
	test_not_regular();
	test_alloc_failure();
	rmdir(tmpdir);
	return T_EXIT_PASS;
}
