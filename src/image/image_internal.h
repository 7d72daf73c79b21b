/* SPDX-License-Identifier: MIT */
/* Private layout of struct sp__image, shared by the files of src/image. */
#ifndef SP_IMAGE_INTERNAL_H
#define SP_IMAGE_INTERNAL_H

#include <sys/stat.h>

#include "image.h"

/*
 * Everything above @lock is written once by the opener before the image is
 * published (returned or put in the cache) and is read-only afterwards;
 * @elf is the only field behind @lock. @data/@size are the raw ELF bytes:
 * libelf's read-only private mapping of the file (elf_rawfile), the
 * caller's buffer, or @copy. They never change, so reading them needs no
 * lock, unlike the Elf handle whose lazy section loading mutates it.
 */
struct sp__image {
	struct sp__mem mem;
	struct sp__image_id id;
	unsigned machine;
	const uint8_t *data;
	size_t size;
	struct sp__image_load *loads;
	size_t nloads;
	char *name;
	size_t name_size;
	void *copy; /* owned bytes behind @data, or NULL */
	size_t copy_size;
	uint64_t refs; /* atomic through atomic.h */
	pthread_mutex_t lock;
	Elf *elf;
};

/*
 * Validates the ELF at img->data (64-bit, host byte order, headers in
 * range) and fills img->machine, img->loads and img->id.build_id.
 * Returns 0, SP_ECORRUPT or -ENOMEM.
 */
int sp__image_parse(struct sp__image *img);

/* Inode generation of @fd (FS_IOC_GETVERSION), 0 when unsupported. */
uint64_t sp__image_generation(int fd);

/*
 * Opens the image behind @fd whose fstat is @st and generation @gen (the
 * cache has both already). Same returns as sp__image_open_fd().
 */
int sp__image_open_stat(const struct sp__mem *mem, int fd,
			const struct stat *st, uint64_t gen, const char *name,
			struct sp__image **out);

#endif /* SP_IMAGE_INTERNAL_H */
