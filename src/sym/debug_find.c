/* SPDX-License-Identifier: MIT */
/* Finding an image's separate debug file: build-id dirs, .gnu_debuglink, debuginfod. */
#include <errno.h>
#include <gelf.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "logging.h"
#include "native_internal.h"

/*
 * Search order (research/stackpulse-features.md §1.10, gdb's rules):
 *
 *   1. for each debug root R (colon-separated; "@debug_dirs" argument >
 *      $STACKPULSE_DEBUG_DIRS > /usr/lib/debug):
 *        R/.build-id/<first byte hex>/<rest hex>.debug
 *   2. .gnu_debuglink NAME (+ CRC-32 of the whole debug file), with D the
 *      image's directory (and its realpath when that differs):
 *        D/NAME, D/.debug/NAME, R/D/NAME for each root R
 *   3. debuginfod, only when DEBUGINFOD_URLS is set (debuginfod.c)
 *
 * A debug file compressed with dwz names a supplementary file in
 * .gnu_debugaltlink (name + build-id); sp__debug_find_alt() finds it the
 * same way (build-id under each root, then the name) instead of letting
 * libdw open the name itself, which would block on a FIFO put there by
 * whoever wrote the file. Every file is opened with sp__file_open_data()
 * (through sp__image_open_path): non-blocking, regular, bounded.
 *
 * Every candidate must be a non-empty regular ELF file other than the
 * image itself, and when the image has a build-id the candidate's must
 * be equal: a stale debug file from another build would give confident
 * wrong names, which is worse than none. Debuglink candidates must also
 * match the CRC. Paths live in one scratch block from the allocator.
 */

#define DEBUGLINK_NAME_MAX 255

struct finder {
	const struct sp__mem *mem;
	struct sp__image *img;
	const struct sp__image_id *id;
	const char *roots;
	const struct sp_logger *logger;
	char path[PATH_MAX];
	char dir[PATH_MAX];
	char real[PATH_MAX];
	char link[DEBUGLINK_NAME_MAX + 1];
	uint32_t crc;
};

uint32_t sp__debuglink_crc32(uint32_t crc, const void *buf, size_t len)
{
	const unsigned char *p = buf;
	uint32_t table[256];
	uint32_t i, k, c;

	/* 1 KiB of table per call is cheaper than the file read it serves. */
	for (i = 0; i < 256; i++) {
		for (c = i, k = 0; k < 8; k++)
			c = c & 1 ? 0xedb88320u ^ (c >> 1) : c >> 1;
		table[i] = c;
	}
	crc = ~crc;
	while (len--)
		crc = table[(crc ^ *p++) & 0xff] ^ (crc >> 8);
	return ~crc;
}

bool sp__elf_has_dwarf(Elf *elf)
{
	Elf_Scn *scn = NULL;
	GElf_Shdr shdr;
	size_t shstrndx;

	if (elf_getshdrstrndx(elf, &shstrndx) != 0)
		return false;
	while ((scn = elf_nextscn(elf, scn)) != NULL) {
		const char *name;

		if (!gelf_getshdr(scn, &shdr) || shdr.sh_type == SHT_NOBITS ||
		    shdr.sh_size == 0)
			continue;
		name = elf_strptr(elf, shstrndx, shdr.sh_name);
		if (name && (strcmp(name, ".debug_info") == 0 ||
			     strcmp(name, ".zdebug_info") == 0))
			return true;
	}
	return false;
}

static bool same_build_id(const struct sp__image_id *a,
			  const struct sp__image_id *b)
{
	return a->build_id_len == b->build_id_len &&
	       memcmp(a->build_id, b->build_id, a->build_id_len) == 0;
}

/*
 * Opens f->path as a debug file candidate. Returns 0 and the image, or
 * -ENOENT when it is missing or unusable (never fatal), or -ENOMEM.
 */
static int try_path(struct finder *f, bool check_crc, struct sp__image **out)
{
	const struct sp__image_id *did;
	struct sp__image *dbg;
	const void *data;
	struct stat st;
	size_t size;
	int err;

	if (stat(f->path, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size == 0)
		return -ENOENT;
	if (st.st_dev == f->id->dev && st.st_ino == f->id->ino)
		return -ENOENT;
	err = sp__image_open_path(f->mem, f->path, &dbg);
	if (err < 0)
		return err == -ENOMEM ? err : -ENOENT;
	did = sp__image_identity(dbg);
	if (f->id->build_id_len && !same_build_id(f->id, did)) {
		sp__log(f->logger, SP_LOG_WARN,
			"%s: build-id differs from %s, not used", f->path,
			sp__image_name(f->img));
		goto reject;
	}
	data = sp__image_data(dbg, &size);
	if (check_crc && sp__debuglink_crc32(0, data, size) != f->crc) {
		sp__log(f->logger, SP_LOG_WARN, "%s: CRC mismatch, not used",
			f->path);
		goto reject;
	}
	*out = dbg;
	return 0;
reject:
	sp__image_unref(dbg);
	return -ENOENT;
}

/* Formats f->path; -ENOENT when it does not fit (never a cut path). */
static int set_path(struct finder *f, const char *a, size_t alen, const char *b,
		    const char *c)
{
	int n = snprintf(f->path, sizeof(f->path), "%.*s%s%s", (int)alen, a, b,
			 c);

	return n < 0 || (size_t)n >= sizeof(f->path) ? -ENOENT : 0;
}

/* Tries root + @b + @c for each non-empty root of the colon list. */
static int each_root(struct finder *f, const char *b, const char *c, bool crc,
		     struct sp__image **out)
{
	const char *r = f->roots, *end;
	int err;

	for (; *r; r = *end ? end + 1 : end) {
		end = strchr(r, ':');
		if (!end)
			end = r + strlen(r);
		if (end == r || set_path(f, r, (size_t)(end - r), b, c) < 0)
			continue;
		err = try_path(f, crc, out);
		if (err != -ENOENT)
			return err;
	}
	return -ENOENT;
}

static int by_build_id(struct finder *f, struct sp__image **out)
{
	char rel[32 + 2 * SP_BUILD_ID_MAX];
	size_t i, n = 0;

	if (f->id->build_id_len < 2)
		return -ENOENT;
	n += (size_t)snprintf(rel + n, sizeof(rel) - n, "/.build-id/%02x/",
			      f->id->build_id[0]);
	for (i = 1; i < f->id->build_id_len; i++)
		n += (size_t)snprintf(rel + n, sizeof(rel) - n, "%02x",
				      f->id->build_id[i]);
	return each_root(f, rel, ".debug", false, out);
}

/* Reads .gnu_debuglink into f->link and f->crc. Caller holds the lock. */
static int read_debuglink(struct finder *f, Elf *elf)
{
	Elf_Scn *scn = NULL;
	GElf_Shdr shdr;
	Elf_Data *data;
	size_t shstrndx, len;
	const char *name;

	if (elf_getshdrstrndx(elf, &shstrndx) != 0)
		return -ENOENT;
	while ((scn = elf_nextscn(elf, scn)) != NULL) {
		if (!gelf_getshdr(scn, &shdr) || shdr.sh_type == SHT_NOBITS)
			continue;
		name = elf_strptr(elf, shstrndx, shdr.sh_name);
		if (name && strcmp(name, ".gnu_debuglink") == 0)
			break;
	}
	data = scn ? elf_getdata(scn, NULL) : NULL;
	if (!data || !data->d_buf || data->d_size < 8)
		return -ENOENT;
	len = strnlen(data->d_buf, data->d_size);
	/* NAME NUL, padding to 4, then the CRC: all inside the section. */
	if (len == 0 || len > DEBUGLINK_NAME_MAX ||
	    ((len + 4) & ~(size_t)3) + 4 > data->d_size)
		return -ENOENT;
	memcpy(f->link, data->d_buf, len);
	f->link[len] = '\0';
	memcpy(&f->crc, (const char *)data->d_buf + ((len + 4) & ~(size_t)3),
	       4);
	/* A bare file name only: no directories, no way out of the dirs. */
	if (strchr(f->link, '/') || strcmp(f->link, "..") == 0)
		return -ENOENT;
	return 0;
}

/* Tries D/NAME, D/.debug/NAME and R/D/NAME for one directory D. */
static int debuglink_in(struct finder *f, const char *dir,
			struct sp__image **out)
{
	char sub[PATH_MAX];
	int err, n;

	if (set_path(f, dir, strlen(dir), "/", f->link) == 0) {
		err = try_path(f, true, out);
		if (err != -ENOENT)
			return err;
	}
	if (set_path(f, dir, strlen(dir), "/.debug/", f->link) == 0) {
		err = try_path(f, true, out);
		if (err != -ENOENT)
			return err;
	}
	n = snprintf(sub, sizeof(sub), "%s/", dir);
	if (n < 0 || (size_t)n >= sizeof(sub))
		return -ENOENT;
	return each_root(f, sub, f->link, true, out);
}

static int by_debuglink(struct finder *f, struct sp__image **out)
{
	const char *name = sp__image_name(f->img), *slash;
	int err;

	sp__image_lock(f->img);
	err = read_debuglink(f, sp__image_elf(f->img));
	sp__image_unlock(f->img);
	slash = name ? strrchr(name, '/') : NULL;
	if (err < 0 || !slash || name[0] != '/' ||
	    (size_t)(slash - name) >= sizeof(f->dir))
		return -ENOENT;
	memcpy(f->dir, name, (size_t)(slash - name));
	f->dir[slash - name] = '\0';
	err = debuglink_in(f, f->dir, out);
	if (err != -ENOENT)
		return err;
	/* /lib -> /usr/lib on merged-/usr systems: also the real directory. */
	if (!realpath(f->dir[0] ? f->dir : "/", f->real) ||
	    strcmp(f->real, f->dir) == 0)
		return -ENOENT;
	return debuglink_in(f, f->real, out);
}

static int by_debuginfod(struct finder *f, struct sp__image **out)
{
	int err;

	if (!f->id->build_id_len)
		return -ENOENT;
	err = sp__debuginfod_find(f->id->build_id, f->id->build_id_len,
				  f->logger, f->path, sizeof(f->path));
	if (err < 0)
		return err == -ENOMEM ? err : -ENOENT;
	return try_path(f, false, out);
}

/* Tries @name: absolute, or relative to the directory of @img's file. */
static int alt_by_name(struct finder *f, const char *name,
		       struct sp__image **out)
{
	const char *img_name = sp__image_name(f->img);
	const char *slash = img_name ? strrchr(img_name, '/') : NULL;

	if (name[0] == '/') {
		if (set_path(f, name, strlen(name), "", "") < 0)
			return -ENOENT;
	} else if (!slash ||
		   set_path(f, img_name, (size_t)(slash + 1 - img_name), name,
			    "") < 0) {
		return -ENOENT;
	}
	return try_path(f, false, out);
}

static const char *default_roots(const char *debug_dirs);

int sp__debug_find_alt(const struct sp__mem *mem, struct sp__image *img,
		       const char *name, const void *bid, size_t bid_len,
		       const char *debug_dirs, const struct sp_logger *logger,
		       struct sp__image **out)
{
	struct sp__image_id alt = { 0 };
	struct finder *f;
	int err;

	if (bid_len < 2 || bid_len > SP_BUILD_ID_MAX || !name || !*name)
		return -ENOENT;
	f = sp__mem_calloc(mem, 1, sizeof(*f));
	if (!f)
		return -ENOMEM;
	memcpy(alt.build_id, bid, bid_len);
	alt.build_id_len = bid_len;
	f->mem = mem;
	f->img = img;
	f->id = &alt; /* candidates must carry the alt file's build-id */
	f->roots = default_roots(debug_dirs);
	f->logger = logger;
	err = by_build_id(f, out);
	if (err == -ENOENT)
		err = alt_by_name(f, name, out);
	if (err == 0)
		sp__log(logger, SP_LOG_DEBUG, "%s: dwz file %s",
			sp__image_name(img), sp__image_name(*out));
	sp__mem_free(mem, f, sizeof(*f));
	return err;
}

static const char *default_roots(const char *debug_dirs)
{
	const char *env;

	if (debug_dirs)
		return debug_dirs;
	env = getenv("STACKPULSE_DEBUG_DIRS");
	return env && env[0] ? env : "/usr/lib/debug";
}

int sp__debug_find(const struct sp__mem *mem, struct sp__image *img,
		   const char *debug_dirs, const struct sp_logger *logger,
		   struct sp__image **out)
{
	struct finder *f;
	int err;

	f = sp__mem_calloc(mem, 1, sizeof(*f));
	if (!f)
		return -ENOMEM;
	f->mem = mem;
	f->img = img;
	f->id = sp__image_identity(img);
	f->roots = default_roots(debug_dirs);
	f->logger = logger;
	err = by_build_id(f, out);
	if (err == -ENOENT)
		err = by_debuglink(f, out);
	if (err == -ENOENT)
		err = by_debuginfod(f, out);
	if (err == 0)
		sp__log(logger, SP_LOG_DEBUG, "%s: debug file %s",
			sp__image_name(img), sp__image_name(*out));
	sp__mem_free(mem, f, sizeof(*f));
	return err;
}
