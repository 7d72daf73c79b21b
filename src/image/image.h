/* SPDX-License-Identifier: MIT */
/* ELF images: open once per file identity, share read-only, compute load bias. */
#ifndef SP_IMAGE_H
#define SP_IMAGE_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <libelf.h>

#include "mem.h"

/*
 * An image is one ELF file (or in-memory ELF such as the vDSO) opened once
 * and shared by every process and module that maps it. Everything exported
 * by the image after sp__image_open*() returns is immutable (identity,
 * build-id, PT_LOAD table, section ranges) and may be read from any thread.
 * The libelf handle is NOT thread-safe (research/feasibility.md §3): callers
 * that use it (the CFI table builder, the symbolizer) hold the image lock
 * around every libelf/libdw call on it.
 *
 *   struct sp__image
 *   +-- id         dev, ino, generation, build-id   (cache key)
 *   +-- loads[]    PT_LOAD {vaddr, memsz, offset, filesz, flags}
 *   +-- elf        Elf * (ELF_C_READ_MMAP), guarded by lock
 *   +-- refcount   atomic; the cache holds one reference
 *
 * Malformed or hostile files give an error code, never a crash: every
 * header field is range-checked against the file size before use.
 */

#define SP_BUILD_ID_MAX 64

struct sp__image_id {
	uint64_t dev;	     /* makedev(major, minor), 0 = unknown */
	uint64_t ino;	     /* 0 = unknown */
	uint64_t generation; /* inode generation, 0 = unknown */
	uint8_t build_id[SP_BUILD_ID_MAX];
	size_t build_id_len; /* 0 = none */
};

struct sp__image_load {
	uint64_t vaddr;
	uint64_t memsz;
	uint64_t offset;
	uint64_t filesz;
	uint32_t flags; /* PF_X | PF_W | PF_R */
};

struct sp__image;

/*
 * Opens @path (sp__file_open_data: never blocks, regular files of at most
 * SP__IMAGE_FILE_MAX bytes; a /proc/PID/map_files path works for deleted
 * files while the process lives). Fills identity from fstat and the GNU
 * build-id note.
 * Returns 0, -errno, -EINVAL (not a regular file), -EFBIG, SP_ECORRUPT
 * (not a valid 64-bit ELF), -ENOMEM.
 */
int sp__image_open_path(const struct sp__mem *mem, const char *path,
			struct sp__image **out);

/* Same, from an open descriptor (not retained; the caller keeps @fd). */
int sp__image_open_fd(const struct sp__mem *mem, int fd, const char *name,
		      struct sp__image **out);

/*
 * Opens an ELF image held in memory (the vDSO, fuzz inputs). @data must
 * outlive the image unless @copy is true.
 */
int sp__image_open_memory(const struct sp__mem *mem, const void *data,
			  size_t len, bool copy, const char *name,
			  struct sp__image **out);

/* Opens this process's vDSO (getauxval(AT_SYSINFO_EHDR)); -ENOENT if none. */
int sp__image_open_vdso(const struct sp__mem *mem, struct sp__image **out);

/* Reference counting: images start with one reference. */
void sp__image_ref(struct sp__image *img);
void sp__image_unref(struct sp__image *img);

const struct sp__image_id *sp__image_identity(const struct sp__image *img);
const char *sp__image_name(const struct sp__image *img);
/* ELF e_machine (EM_X86_64, EM_AARCH64). */
unsigned sp__image_machine(const struct sp__image *img);
size_t sp__image_load_count(const struct sp__image *img);
const struct sp__image_load *sp__image_load(const struct sp__image *img,
					    size_t i);

/*
 * Load bias for a mapping of this image at [@map_start, @map_end) backed
 * by file offset @map_offset (research/stackpulse-features.md §1.5): prefer
 * the PT_LOAD whose page-aligned offset equals the mapping's offset; accept
 * page-rounded tails; reject ambiguous shared pages; ignore empty or
 * overflowing ranges; checked arithmetic only. Then
 *   svma (address in the ELF's vaddr space) = avma - bias.
 * Segments that claim the mapping's offset page but disagree on the bias
 * resolve to the executable one(s), so the answer is meant for executable
 * mappings. A mapping whose offset no segment claims falls back to the
 * segments its file range overlaps, under the same rules.
 * Returns 0 and sets *@bias, or -ENOENT when no segment correlates, or
 * -EINVAL when @page_size is not a power of two.
 */
int sp__image_bias(const struct sp__image *img, uint64_t map_start,
		   uint64_t map_end, uint64_t map_offset, uint64_t page_size,
		   uint64_t *bias);

/*
 * File offset <-> svma translation through the PT_LOAD table, checked.
 * Return 0 or -ERANGE.
 */
int sp__image_offset_to_svma(const struct sp__image *img, uint64_t offset,
			     uint64_t *svma);
int sp__image_svma_to_offset(const struct sp__image *img, uint64_t svma,
			     uint64_t *offset);

/*
 * The raw ELF bytes (the file's read-only mapping or the memory image),
 * immutable and readable from any thread without the lock. Borrowed:
 * valid until the last sp__image_unref().
 */
const void *sp__image_data(const struct sp__image *img, size_t *size);

/* The libelf handle; hold the lock around every libelf/libdw use. */
Elf *sp__image_elf(struct sp__image *img);
void sp__image_lock(struct sp__image *img);
void sp__image_unlock(struct sp__image *img);

/*
 * A cache of open images keyed by identity (dev, ino, generation, and the
 * path when the identity is unknown). Thread-safe (one mutex; lookups are
 * short). Returns a new reference.
 */
struct sp__image_cache;

int sp__image_cache_new(const struct sp__mem *mem,
			struct sp__image_cache **out);
void sp__image_cache_free(struct sp__image_cache *cache);
/*
 * Finds or opens the image for @path with the expected identity (@dev,
 * @ino may be 0 = unknown; a file whose identity differs is rejected with
 * -ESTALE so a replaced file is never used for an old mapping).
 */
int sp__image_cache_get(struct sp__image_cache *cache, const char *path,
			uint64_t dev, uint64_t ino, struct sp__image **out);

#endif /* SP_IMAGE_H */
