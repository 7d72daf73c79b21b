/* SPDX-License-Identifier: MIT */
/* Unit test of the image cache: sharing, replaced files, concurrent gets. */
#include <errno.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <pthread.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "check.h"
#include "elf_build.h"
#include "image.h"
#include "maps.h"

/*
 * Files are tiny synthetic ELFs that differ in their build-id, so a test
 * can tell which file an image was opened from. Replacing a file by
 * rename() gives it a new inode: the old identity must get -ESTALE and
 * the new one a new image. Rewriting it in place keeps the inode (and on
 * ext4 the generation): the size/mtime check must still notice.
 */
#define NTHREADS 4
#define ROUNDS 300

static struct sp__mem mem;
static char tmpdir[] = "/tmp/sp-image-cache-XXXXXX";

static void write_elf(const char *path, uint8_t tag, size_t pad)
{
	const struct eb_seg segs[2] = {
		{ PT_LOAD, PF_R | PF_X, 0, 0, 0x100 },
		{ PT_NOTE, PF_R, 0, 0, 0 },
	};
	uint8_t id[20], note[64], zeros[256] = { 0 };
	struct eb_seg nseg = segs[1];
	static struct eb eb;
	size_t n;
	int fd;

	memset(id, tag, sizeof(id));
	n = eb_note(note, "GNU", NT_GNU_BUILD_ID, id, sizeof(id));
	eb_init(&eb, segs, 2);
	nseg.offset = nseg.vaddr = eb_append(&eb, note, n);
	nseg.filesz = n;
	eb_phdr(&eb, 1, &nseg);
	CHECK(pad <= sizeof(zeros));
	eb_append(&eb, zeros, pad);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	CHECK(fd >= 0);
	CHECK_EQ(write(fd, eb.buf, eb.len), eb.len);
	close(fd);
}

/* The identity carries FS_IOC_GETVERSION's answer (0 if unsupported). */
static void check_generation(const char *path, const struct sp__image *img)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC), gen = 0;

	CHECK(fd >= 0);
	if (ioctl(fd, FS_IOC_GETVERSION, &gen) < 0)
		gen = 0;
	close(fd);
	CHECK_EQ(sp__image_identity(img)->generation, (uint32_t)gen);
}

static uint8_t tag_of(const struct sp__image *img)
{
	CHECK_EQ(sp__image_identity(img)->build_id_len, 20);
	return sp__image_identity(img)->build_id[0];
}

/* The old identity of a replaced file, in part or whole, is refused. */
static void expect_stale(struct sp__image_cache *cache, const char *path,
			 const struct stat *old)
{
	struct sp__image *img = NULL;

	CHECK_EQ_INT(sp__image_cache_get(cache, path, old->st_dev, old->st_ino,
					 &img),
		     -ESTALE);
	CHECK_EQ_INT(sp__image_cache_get(cache, path, 0, old->st_ino, &img),
		     -ESTALE);
	CHECK_EQ_INT(sp__image_cache_get(cache, path, old->st_dev + 1, 0, &img),
		     -ESTALE);
	CHECK(img == NULL);
}

/*
 * Rewritten in place (same inode, and on ext4 the same generation), longer
 * so @old's mapping stays backed: the cache must not hand out @old for the
 * new content. Returns the new image.
 */
static struct sp__image *rewrite_in_place(struct sp__image_cache *cache,
					  const char *path,
					  const struct stat *st,
					  struct sp__image *old)
{
	struct sp__image *img, *none = NULL;

	write_elf(path, 0xcc, 128);
	CHECK_OK(
		sp__image_cache_get(cache, path, st->st_dev, st->st_ino, &img));
	CHECK(img != old);
	CHECK_EQ(tag_of(img), 0xcc);
	CHECK_EQ(sp__image_identity(img)->ino, st->st_ino);
	CHECK_EQ_INT(sp__image_cache_get(cache, "/nonexistent/lib.so", 0, 0,
					 &none),
		     -ENOENT);
	CHECK(none == NULL);
	return img;
}

static void test_replace(void)
{
	struct sp__image_cache *cache;
	struct sp__image *a, *a2, *b, *b2, *c;
	char path[64], next[64];
	struct stat st_a, st_b;

	snprintf(path, sizeof(path), "%s/lib.so", tmpdir);
	snprintf(next, sizeof(next), "%s/lib.so.new", tmpdir);
	write_elf(path, 0xaa, 0);
	CHECK_EQ(stat(path, &st_a), 0);
	CHECK_OK(sp__image_cache_new(&mem, &cache));
	CHECK_OK(sp__image_cache_get(cache, path, 0, 0, &a));
	CHECK_OK(sp__image_cache_get(
		cache, path, makedev(major(st_a.st_dev), minor(st_a.st_dev)),
		st_a.st_ino, &a2));
	CHECK(a == a2);
	CHECK_EQ(tag_of(a), 0xaa);
	CHECK_EQ(sp__image_identity(a)->ino, st_a.st_ino);
	CHECK_EQ(sp__image_identity(a)->dev, st_a.st_dev);
	check_generation(path, a);
	sp__image_unref(a2);

	write_elf(next, 0xbb, 0);
	CHECK_EQ(rename(next, path), 0);
	CHECK_EQ(stat(path, &st_b), 0);
	CHECK(st_b.st_ino != st_a.st_ino);
	expect_stale(cache, path, &st_a);
	CHECK_OK(
		sp__image_cache_get(cache, path, st_b.st_dev, st_b.st_ino, &b));
	CHECK(b != a);
	CHECK_EQ(tag_of(b), 0xbb);
	CHECK_OK(sp__image_cache_get(cache, path, 0, 0, &b2));
	CHECK(b2 == b);
	sp__image_unref(b2);
	/* The old image lives on for its holder, intact. */
	CHECK_EQ(tag_of(a), 0xaa);

	c = rewrite_in_place(cache, path, &st_b, b);
	sp__image_cache_free(cache);
	/* References outlive the cache. */
	CHECK_EQ(tag_of(a), 0xaa);
	CHECK_EQ(tag_of(b), 0xbb);
	CHECK_EQ(tag_of(c), 0xcc);
	sp__image_unref(a);
	sp__image_unref(b);
	sp__image_unref(c);
	unlink(path);
}

/* A corrupt file is not cached: fixing it makes the next get work. */
static void test_corrupt_not_cached(void)
{
	struct sp__image_cache *cache;
	struct sp__image *img;
	char path[64];
	int fd;

	snprintf(path, sizeof(path), "%s/bad.so", tmpdir);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	CHECK(fd >= 0);
	CHECK_EQ(write(fd,
		       "\177ELF garbage garbage garbage garbage garbage "
		       "garbage garbage garbage",
		       68),
		 68);
	close(fd);
	CHECK_OK(sp__image_cache_new(&mem, &cache));
	CHECK_EQ_INT(sp__image_cache_get(cache, path, 0, 0, &img), SP_ECORRUPT);
	write_elf(path, 0x11, 0);
	CHECK_OK(sp__image_cache_get(cache, path, 0, 0, &img));
	CHECK_EQ(tag_of(img), 0x11);
	sp__image_unref(img);
	sp__image_cache_free(cache);
	unlink(path);
}

struct worker {
	pthread_t thread;
	struct sp__image_cache *cache;
	const char *const *paths;
	struct sp__image *const *want; /* NULL: compare with @first */
	size_t npaths;
	struct sp__image *first; /* a reference, when @want is NULL */
	int failures;
};

static bool is_expected(struct worker *w, size_t i, struct sp__image *img)
{
	if (w->want)
		return img == w->want[i];
	if (!w->first) {
		sp__image_ref(img);
		w->first = img;
	}
	return img == w->first;
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	struct sp__image *img;
	size_t shnum, i;
	int r;

	for (r = 0; r < ROUNDS; r++) {
		i = (size_t)r % w->npaths;
		if (sp__image_cache_get(w->cache, w->paths[i], 0, 0, &img) <
		    0) {
			w->failures++;
			continue;
		}
		w->failures += !is_expected(w, i, img);
		/* libelf use is serialized by the image lock. */
		sp__image_lock(img);
		w->failures += elf_getshdrnum(sp__image_elf(img), &shnum) != 0;
		sp__image_unlock(img);
		sp__image_unref(img);
	}
	return NULL;
}

/* Four threads race on a cold cache, then on a warm one. */
static void test_threads(void)
{
	const char *paths[3] = { "/bin/true", "/proc/self/exe", NULL };
	struct sp__image *want[3];
	struct worker w[NTHREADS];
	struct sp__image_cache *cache;
	struct test_map m;
	int i;

	CHECK(maps_find((uint64_t)(uintptr_t)&printf, &m));
	paths[2] = m.path;
	CHECK_OK(sp__image_cache_new(&mem, &cache));
	for (i = 0; i < 3; i++) {
		CHECK_OK(sp__image_cache_get(cache, paths[i], 0, 0, &want[i]));
		sp__image_unref(want[i]); /* the cache keeps it alive */
	}
	for (i = 0; i < NTHREADS; i++) {
		w[i] = (struct worker){ .cache = cache,
					.paths = paths,
					.want = want,
					.npaths = 3 };
		CHECK_EQ(pthread_create(&w[i].thread, NULL, worker_main, &w[i]),
			 0);
	}
	for (i = 0; i < NTHREADS; i++) {
		CHECK_EQ(pthread_join(w[i].thread, NULL), 0);
		CHECK_EQ(w[i].failures, 0);
	}
	sp__image_cache_free(cache);
}

/* Cold cache: every thread asks for the same new file at once. */
static void test_threads_cold(void)
{
	const char *paths[1] = { "/bin/true" };
	struct sp__image_cache *cache;
	struct sp__image *img;
	struct worker w[NTHREADS];
	int i;

	CHECK_OK(sp__image_cache_new(&mem, &cache));
	for (i = 0; i < NTHREADS; i++) {
		w[i] = (struct worker){ .cache = cache,
					.paths = paths,
					.npaths = 1 };
		CHECK_EQ(pthread_create(&w[i].thread, NULL, worker_main, &w[i]),
			 0);
	}
	for (i = 0; i < NTHREADS; i++)
		CHECK_EQ(pthread_join(w[i].thread, NULL), 0);
	/* Every thread saw one image from its first get on, the same one. */
	CHECK_OK(sp__image_cache_get(cache, "/bin/true", 0, 0, &img));
	for (i = 0; i < NTHREADS; i++) {
		CHECK_EQ(w[i].failures, 0);
		CHECK(w[i].first == img);
		sp__image_unref(w[i].first);
	}
	sp__image_unref(img);
	sp__image_cache_free(cache);
}

int main(void)
{
	sp__mem_init(&mem, NULL);
	CHECK_PTR(mkdtemp(tmpdir));
	test_replace();
	test_corrupt_not_cached();
	test_threads();
	test_threads_cold();
	rmdir(tmpdir);
	return T_EXIT_PASS;
}
