/* SPDX-License-Identifier: MIT */
/* Test helper: tiny synthetic 64-bit ELF files built in memory. */
#ifndef SP_TESTS_IMAGE_ELF_BUILD_H
#define SP_TESTS_IMAGE_ELF_BUILD_H

#include <elf.h>
#include <stdint.h>
#include <string.h>

#include "check.h"

/*
 * An image is an ELF header, a program header table right after it, then
 * whatever bytes the test appends (notes, section headers). PT_LOAD file
 * ranges need not lie inside the file: sp__image_parse only reads the
 * headers and the notes, so a 64 + 56 * n byte file describes any layout.
 *
 *   [0, 64)          Elf64_Ehdr (ET_DYN, EM_X86_64)
 *   [64, 64 + 56n)   Elf64_Phdr[n]
 *   [64 + 56n, ...)  extra bytes (eb_append)
 */
#define EB_CAP 4096

struct eb_seg {
	uint32_t type;
	uint32_t flags;
	uint64_t offset;
	uint64_t vaddr;
	uint64_t filesz;
	uint64_t memsz; /* 0 = same as filesz */
	uint64_t align; /* 0 = 0x1000 */
};

struct eb {
	_Alignas(8) uint8_t buf[EB_CAP];
	size_t len;
};

static inline Elf64_Ehdr *eb_ehdr(struct eb *b)
{
	return (Elf64_Ehdr *)(void *)b->buf;
}

static inline void eb_phdr(struct eb *b, size_t i, const struct eb_seg *s)
{
	Elf64_Phdr ph = {
		.p_type = s->type,
		.p_flags = s->flags,
		.p_offset = s->offset,
		.p_vaddr = s->vaddr,
		.p_paddr = s->vaddr,
		.p_filesz = s->filesz,
		.p_memsz = s->memsz ? s->memsz : s->filesz,
		.p_align = s->align ? s->align : 0x1000,
	};

	memcpy(b->buf + sizeof(Elf64_Ehdr) + i * sizeof(ph), &ph, sizeof(ph));
}

/* Starts an image with @n program headers; returns the header's size. */
static inline size_t eb_init(struct eb *b, const struct eb_seg *segs, size_t n)
{
	Elf64_Ehdr *eh = eb_ehdr(b);
	size_t i;

	CHECK(sizeof(*eh) + n * sizeof(Elf64_Phdr) <= EB_CAP);
	memset(b, 0, sizeof(*b));
	memcpy(eh->e_ident, ELFMAG, SELFMAG);
	eh->e_ident[EI_CLASS] = ELFCLASS64;
	eh->e_ident[EI_DATA] = ELFDATA2LSB;
	eh->e_ident[EI_VERSION] = EV_CURRENT;
	eh->e_type = ET_DYN;
	eh->e_machine = EM_X86_64;
	eh->e_version = EV_CURRENT;
	eh->e_phoff = n ? sizeof(*eh) : 0;
	eh->e_ehsize = sizeof(*eh);
	eh->e_phentsize = sizeof(Elf64_Phdr);
	eh->e_phnum = (uint16_t)n;
	eh->e_shentsize = sizeof(Elf64_Shdr);
	for (i = 0; i < n; i++)
		eb_phdr(b, i, &segs[i]);
	b->len = sizeof(*eh) + n * sizeof(Elf64_Phdr);
	return b->len;
}

/* Appends @len bytes (aligned to 8 first); returns their offset. */
static inline size_t eb_append(struct eb *b, const void *data, size_t len)
{
	size_t off = (b->len + 7) & ~(size_t)7;

	CHECK(off + len <= EB_CAP);
	memcpy(b->buf + off, data, len);
	b->len = off + len;
	return off;
}

/* A note record: header, name padded to 4, descriptor padded to 4. */
static inline size_t eb_note(uint8_t *out, const char *name, uint32_t type,
			     const void *desc, uint32_t descsz)
{
	Elf64_Nhdr nh = { (uint32_t)strlen(name) + 1, descsz, type };
	size_t name_pad = (nh.n_namesz + 3) & ~3u;
	size_t desc_pad = (descsz + 3) & ~3u;

	memset(out, 0, sizeof(nh) + name_pad + desc_pad);
	memcpy(out, &nh, sizeof(nh));
	memcpy(out + sizeof(nh), name, nh.n_namesz);
	memcpy(out + sizeof(nh) + name_pad, desc, descsz);
	return sizeof(nh) + name_pad + desc_pad;
}

#endif /* SP_TESTS_IMAGE_ELF_BUILD_H */
