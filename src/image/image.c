/* SPDX-License-Identifier: MIT */
/* Image lifecycle: open from a path, a descriptor or memory; refcounting. */
#include <errno.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <stackpulse/error.h>

#include "atomic.h"
#include "file_open.h"
#include "image_internal.h"

/*
 * Opening is: allocate the struct, hand the bytes to libelf (a read-only
 * private mapping for files, elf_memory for buffers), validate and extract
 * with sp__image_parse() from the raw bytes, publish. A file's descriptor
 * is not kept: ELF_C_FDREAD makes libelf finish reading (a no-op when the
 * mmap worked) and forget the descriptor, so an image costs no fd.
 *
 * The image is freed by the last sp__image_unref(); the decrement is
 * acq_rel so the freeing thread sees every other holder's writes done
 * under the lock before elf_end().
 */

static pthread_once_t elf_once = PTHREAD_ONCE_INIT;
static bool elf_ready;

/* elf_version() sets process-wide libelf state: exactly once. */
static void elf_init(void)
{
	elf_ready = elf_version(EV_CURRENT) != EV_NONE;
}

static int image_alloc(const struct sp__mem *mem, const char *name,
		       struct sp__image **out)
{
	struct sp__image *img;
	size_t len = strlen(name ? name : "");

	pthread_once(&elf_once, elf_init);
	if (!elf_ready)
		return -EOPNOTSUPP;
	img = sp__mem_calloc(mem, 1, sizeof(*img));
	if (!img)
		return -ENOMEM;
	img->mem = *mem;
	img->name_size = len + 1;
	img->name = sp__mem_alloc(mem, img->name_size);
	if (!img->name) {
		sp__mem_free(mem, img, sizeof(*img));
		return -ENOMEM;
	}
	memcpy(img->name, name ? name : "", len + 1);
	img->refs = 1;
	pthread_mutex_init(&img->lock, NULL);
	*out = img;
	return 0;
}

static void image_free(struct sp__image *img)
{
	struct sp__mem mem = img->mem;

	if (img->elf)
		elf_end(img->elf);
	pthread_mutex_destroy(&img->lock);
	sp__mem_free(&mem, img->loads, img->nloads * sizeof(*img->loads));
	sp__mem_free(&mem, img->copy, img->copy_size);
	sp__mem_free(&mem, img->name, img->name_size);
	sp__mem_free(&mem, img, sizeof(*img));
}

uint64_t sp__image_generation(int fd)
{
	/* The kernel stores an int (ext4, xfs); absent on tmpfs, btrfs. */
	int gen = 0;

	if (ioctl(fd, FS_IOC_GETVERSION, &gen) < 0)
		return 0;
	return (uint32_t)gen;
}

/* Maps the file through libelf and points img->data at its bytes. */
static int elf_from_fd(struct sp__image *img, int fd)
{
	char *raw;
	size_t size = 0;

	img->elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (!img->elf || elf_kind(img->elf) != ELF_K_ELF)
		return SP_ECORRUPT;
	if (elf_cntl(img->elf, ELF_C_FDREAD) < 0)
		return -EIO;
	raw = elf_rawfile(img->elf, &size);
	if (!raw)
		return SP_ECORRUPT;
	img->data = (const uint8_t *)raw;
	img->size = size;
	return 0;
}

int sp__image_open_stat(const struct sp__mem *mem, int fd,
			const struct stat *st, uint64_t gen, const char *name,
			struct sp__image **out)
{
	struct sp__image *img;
	int err;

	if (!S_ISREG(st->st_mode))
		return -EINVAL;
	/* Too small for an ELF header; elf_begin cannot mmap 0 bytes. */
	if ((uint64_t)st->st_size < sizeof(Elf64_Ehdr))
		return SP_ECORRUPT;
	err = image_alloc(mem, name, &img);
	if (err < 0)
		return err;
	img->id.dev = st->st_dev;
	img->id.ino = st->st_ino;
	img->id.generation = gen;
	err = elf_from_fd(img, fd);
	if (err == 0)
		err = sp__image_parse(img);
	if (err < 0) {
		image_free(img);
		return err;
	}
	*out = img;
	return 0;
}

int sp__image_open_fd(const struct sp__mem *mem, int fd, const char *name,
		      struct sp__image **out)
{
	struct stat st;

	if (fstat(fd, &st) < 0)
		return -errno;
	return sp__image_open_stat(mem, fd, &st, sp__image_generation(fd), name,
				   out);
}

int sp__image_open_path(const struct sp__mem *mem, const char *path,
			struct sp__image **out)
{
	struct stat st;
	int fd = sp__file_open_data(path, 0, SP__IMAGE_FILE_MAX, &st);
	int err;

	if (fd < 0)
		return fd;
	err = sp__image_open_stat(mem, fd, &st, sp__image_generation(fd), path,
				  out);
	close(fd);
	return err;
}

/*
 * The bytes are validated before libelf sees them. libelf only reads
 * through the pointer (elf_memory takes a non-const one for historical
 * reasons); the integer round trip drops const without -Wcast-qual noise.
 */
static int memory_elf(struct sp__image *img, const void *data, size_t len,
		      bool copy)
{
	int err;

	if (copy) {
		img->copy = sp__mem_alloc(&img->mem, len);
		if (!img->copy)
			return -ENOMEM;
		img->copy_size = len;
		memcpy(img->copy, data, len);
		data = img->copy;
	}
	img->data = data;
	img->size = len;
	err = sp__image_parse(img);
	if (err < 0)
		return err;
	img->elf = elf_memory((char *)(uintptr_t)data, len);
	if (!img->elf || elf_kind(img->elf) != ELF_K_ELF)
		return SP_ECORRUPT;
	return 0;
}

int sp__image_open_memory(const struct sp__mem *mem, const void *data,
			  size_t len, bool copy, const char *name,
			  struct sp__image **out)
{
	struct sp__image *img;
	int err;

	if (!data || len < sizeof(Elf64_Ehdr))
		return SP_ECORRUPT;
	err = image_alloc(mem, name, &img);
	if (err < 0)
		return err;
	err = memory_elf(img, data, len, copy);
	if (err < 0) {
		image_free(img);
		return err;
	}
	*out = img;
	return 0;
}

void sp__image_ref(struct sp__image *img)
{
	sp__fetch_add_u64(&img->refs, 1);
}

void sp__image_unref(struct sp__image *img)
{
	/* Adding UINT64_MAX is a decrement; acq_rel orders the free. */
	if (img && sp__fetch_add_u64(&img->refs, UINT64_MAX) == 1)
		image_free(img);
}

const struct sp__image_id *sp__image_identity(const struct sp__image *img)
{
	return &img->id;
}

const char *sp__image_name(const struct sp__image *img)
{
	return img->name;
}

unsigned sp__image_machine(const struct sp__image *img)
{
	return img->machine;
}

size_t sp__image_load_count(const struct sp__image *img)
{
	return img->nloads;
}

const struct sp__image_load *sp__image_load(const struct sp__image *img,
					    size_t i)
{
	return i < img->nloads ? &img->loads[i] : NULL;
}

const void *sp__image_data(const struct sp__image *img, size_t *size)
{
	*size = img->size;
	return img->data;
}

Elf *sp__image_elf(struct sp__image *img)
{
	return img->elf;
}

void sp__image_lock(struct sp__image *img)
{
	pthread_mutex_lock(&img->lock);
}

void sp__image_unlock(struct sp__image *img)
{
	pthread_mutex_unlock(&img->lock);
}
