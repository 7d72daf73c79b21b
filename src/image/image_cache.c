/* SPDX-License-Identifier: MIT */
/* The shared image cache: one open image per file identity. */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include "file_open.h"
#include "image_internal.h"
#include "map.h"
#include "vec.h"

/*
 * Every module of every process that maps the same file shares one image,
 * keyed by the identity fstat and FS_IOC_GETVERSION report for the file
 * now at the path:
 *
 *   map    (dev, ino, generation) -> index into entries
 *   entries[i] = { image (the cache's reference), size, mtime, path }
 *
 * The path is only a key when the file has no inode number (never on a
 * real filesystem, kept for completeness); those entries are found by a
 * linear scan. Without a generation (tmpfs, btrfs) an inode number can be
 * reused by a new file, so a hit whose size or mtime differs reopens the
 * file and replaces the entry's image; holders of the old one keep it.
 *
 * The caller's expected dev/ino (from MMAP2 or /proc/PID/maps) are checked
 * against the file before the cache is consulted: a replaced file gives
 * -ESTALE and never lends its image to an old mapping. One mutex guards
 * the map and the entries; opening an image under it costs an mmap and a
 * header scan, which keeps concurrent misses of one file from opening it
 * twice. Entries live until sp__image_cache_free().
 */

struct cache_entry {
	struct sp__image *img;
	uint64_t size;
	int64_t mtime_ns;
	char *path; /* key only when the identity is unknown, else NULL */
	size_t path_size;
};

struct sp__image_cache {
	struct sp__mem mem;
	pthread_mutex_t lock;
	struct sp__map by_id;
	struct sp__vec entries;
};

/* What the file at the path is now. */
struct file_probe {
	int fd;
	struct stat st;
	uint64_t gen;
	const char *path;
};

int sp__image_cache_new(const struct sp__mem *mem, struct sp__image_cache **out)
{
	struct sp__image_cache *cache = sp__mem_calloc(mem, 1, sizeof(*cache));

	if (!cache)
		return -ENOMEM;
	cache->mem = *mem;
	pthread_mutex_init(&cache->lock, NULL);
	sp__map_init(&cache->by_id);
	sp__vec_init(&cache->entries, sizeof(struct cache_entry));
	*out = cache;
	return 0;
}

void sp__image_cache_free(struct sp__image_cache *cache)
{
	struct cache_entry *e;
	size_t i;

	if (!cache)
		return;
	for (i = 0; i < cache->entries.len; i++) {
		e = sp__vec_at(&cache->entries, i);
		sp__image_unref(e->img);
		sp__mem_free(&cache->mem, e->path, e->path_size);
	}
	sp__vec_fini(&cache->entries, &cache->mem);
	sp__map_fini(&cache->by_id, &cache->mem);
	pthread_mutex_destroy(&cache->lock);
	sp__mem_free(&cache->mem, cache, sizeof(*cache));
}

static int64_t mtime_ns(const struct stat *st)
{
	return (int64_t)st->st_mtim.tv_sec * 1000000000 + st->st_mtim.tv_nsec;
}

static void probe_key(const struct file_probe *f, uint64_t key[3])
{
	key[0] = f->st.st_dev;
	key[1] = f->st.st_ino;
	key[2] = f->gen;
}

/* The entry for @f, or NULL. */
static struct cache_entry *find(struct sp__image_cache *cache,
				const struct file_probe *f)
{
	struct cache_entry *e;
	uint64_t key[3];
	uint32_t idx;
	size_t i;

	if (f->st.st_ino != 0) {
		probe_key(f, key);
		if (!sp__map_get(&cache->by_id, key, sp__map_hash(key), &idx))
			return NULL;
		return sp__vec_at(&cache->entries, idx);
	}
	for (i = 0; i < cache->entries.len; i++) {
		e = sp__vec_at(&cache->entries, i);
		if (e->path && strcmp(e->path, f->path) == 0)
			return e;
	}
	return NULL;
}

static int entry_init(struct sp__image_cache *cache, struct cache_entry *e,
		      const struct file_probe *f)
{
	size_t len = strlen(f->path);

	memset(e, 0, sizeof(*e));
	e->size = (uint64_t)f->st.st_size;
	e->mtime_ns = mtime_ns(&f->st);
	if (f->st.st_ino != 0)
		return 0;
	e->path_size = len + 1;
	e->path = sp__mem_alloc(&cache->mem, e->path_size);
	if (!e->path)
		return -ENOMEM;
	memcpy(e->path, f->path, len + 1);
	return 0;
}

/* Adds an entry for @f holding @img; on failure nothing changes. */
static int insert(struct sp__image_cache *cache, const struct file_probe *f,
		  struct sp__image *img)
{
	struct cache_entry e;
	uint64_t key[3];
	int err;

	if (cache->entries.len >= UINT32_MAX)
		return -ENOMEM;
	err = entry_init(cache, &e, f);
	if (err == 0)
		err = sp__vec_reserve(&cache->entries, &cache->mem, 1);
	if (err == 0 && f->st.st_ino != 0) {
		probe_key(f, key);
		err = sp__map_put(&cache->by_id, &cache->mem, key,
				  sp__map_hash(key),
				  (uint32_t)cache->entries.len);
	}
	if (err < 0) {
		sp__mem_free(&cache->mem, e.path, e.path_size);
		return err;
	}
	e.img = img;
	return sp__vec_push(&cache->entries, &cache->mem, &e);
}

static int open_probe(struct sp__image_cache *cache, const struct file_probe *f,
		      struct sp__image **img)
{
	return sp__image_open_stat(&cache->mem, f->fd, &f->st, f->gen, f->path,
				   img);
}

/* Called with the lock held; returns a new reference in *@out. */
static int lookup_or_open(struct sp__image_cache *cache,
			  const struct file_probe *f, struct sp__image **out)
{
	struct cache_entry *e = find(cache, f);
	struct sp__image *img;
	int err;

	if (e && e->size == (uint64_t)f->st.st_size &&
	    e->mtime_ns == mtime_ns(&f->st)) {
		sp__image_ref(e->img);
		*out = e->img;
		return 0;
	}
	err = open_probe(cache, f, &img);
	if (err < 0)
		return err;
	if (e) {
		/* Same inode key, different file (no generation): replace. */
		sp__image_unref(e->img);
		e->img = img;
		e->size = (uint64_t)f->st.st_size;
		e->mtime_ns = mtime_ns(&f->st);
	} else if ((err = insert(cache, f, img)) < 0) {
		sp__image_unref(img);
		return err;
	}
	sp__image_ref(img);
	*out = img;
	return 0;
}

int sp__image_cache_get(struct sp__image_cache *cache, const char *path,
			uint64_t dev, uint64_t ino, struct sp__image **out)
{
	struct file_probe f = { .path = path };
	int err;

	/* Never blocks on a FIFO put where a module's file was. */
	f.fd = sp__file_open_data(path, 0, SP__IMAGE_FILE_MAX, &f.st);
	if (f.fd < 0)
		return f.fd;
	if ((dev != 0 && dev != (uint64_t)f.st.st_dev) ||
	    (ino != 0 && ino != (uint64_t)f.st.st_ino)) {
		err = -ESTALE;
		goto out_close;
	}
	f.gen = sp__image_generation(f.fd);
	pthread_mutex_lock(&cache->lock);
	err = lookup_or_open(cache, &f, out);
	pthread_mutex_unlock(&cache->lock);
out_close:
	close(f.fd);
	return err;
}
