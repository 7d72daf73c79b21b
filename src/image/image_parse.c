/* SPDX-License-Identifier: MIT */
/* Validation of ELF headers and extraction of PT_LOADs and the build-id. */
#include <elf.h>
#include <errno.h>
#include <string.h>

#include <stackpulse/error.h>

#include "image_internal.h"

/*
 * The parser reads the raw bytes itself instead of trusting libelf's
 * accessors: libelf silently clamps a program header table that runs past
 * the end of the file, while we want such a file rejected. Every structure
 * is copied out with memcpy (the bytes may be unaligned) after a range
 * check of the form `off <= size && len <= size - off`, which cannot
 * overflow. All counts come from 16- or 32-bit fields, so products such as
 * count * entry size are computed in uint64_t without overflow.
 *
 *   Elf64_Ehdr                 class 64, host byte order, version 1
 *   phdrs [e_phoff, +56*n)     n = e_phnum, or shdr[0].sh_info for PN_XNUM
 *   shdrs [e_shoff, +64*m)     m = e_shnum, or shdr[0].sh_size when 0
 *   notes  PT_NOTE ranges, then SHT_NOTE sections if no build-id yet
 *
 * PT_LOAD file ranges are not required to lie inside the file: they are
 * only numbers for address arithmetic here (sp__image_bias ignores the
 * ones that overflow), and nothing reads through them.
 */

static const unsigned char host_data =
	__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__ ? ELFDATA2LSB : ELFDATA2MSB;

struct elf_view {
	const uint8_t *data;
	size_t size;
	Elf64_Ehdr eh;
	uint64_t phnum;
	uint64_t shnum; /* 0 when there is no section header table */
};

static bool in_file(const struct elf_view *v, uint64_t off, uint64_t len)
{
	return off <= v->size && len <= v->size - off;
}

static uint64_t align_up(uint64_t x, uint64_t align)
{
	return (x + align - 1) & ~(align - 1);
}

static int read_ehdr(struct elf_view *v)
{
	const unsigned char *id = v->eh.e_ident;

	if (v->size < sizeof(v->eh))
		return SP_ECORRUPT;
	memcpy(&v->eh, v->data, sizeof(v->eh));
	if (memcmp(id, ELFMAG, SELFMAG) != 0 || id[EI_CLASS] != ELFCLASS64 ||
	    id[EI_DATA] != host_data || id[EI_VERSION] != EV_CURRENT)
		return SP_ECORRUPT;
	return 0;
}

static void read_shdr(const struct elf_view *v, uint64_t i, Elf64_Shdr *sh)
{
	memcpy(sh, v->data + v->eh.e_shoff + i * sizeof(*sh), sizeof(*sh));
}

/* Finds the section and program header counts, with extended numbering. */
static int read_counts(struct elf_view *v)
{
	Elf64_Shdr sh0;

	v->phnum = v->eh.e_phnum;
	v->shnum = 0;
	if (v->eh.e_shoff != 0) {
		if (v->eh.e_shentsize != sizeof(Elf64_Shdr) ||
		    !in_file(v, v->eh.e_shoff, sizeof(sh0)))
			return SP_ECORRUPT;
		read_shdr(v, 0, &sh0);
		v->shnum = v->eh.e_shnum ? v->eh.e_shnum : sh0.sh_size;
		if (v->phnum == PN_XNUM)
			v->phnum = sh0.sh_info;
		if (v->shnum > v->size / sizeof(sh0) ||
		    !in_file(v, v->eh.e_shoff, v->shnum * sizeof(sh0)))
			return SP_ECORRUPT;
	} else if (v->phnum == PN_XNUM) {
		return SP_ECORRUPT;
	}
	if (v->phnum != 0 &&
	    (v->eh.e_phentsize != sizeof(Elf64_Phdr) ||
	     v->phnum > v->size / sizeof(Elf64_Phdr) ||
	     !in_file(v, v->eh.e_phoff, v->phnum * sizeof(Elf64_Phdr))))
		return SP_ECORRUPT;
	return 0;
}

static void read_phdr(const struct elf_view *v, uint64_t i, Elf64_Phdr *ph)
{
	memcpy(ph, v->data + v->eh.e_phoff + i * sizeof(*ph), sizeof(*ph));
}

static bool is_gnu_build_id(const uint8_t *note, const Elf64_Nhdr *nh)
{
	return nh->n_type == NT_GNU_BUILD_ID && nh->n_namesz == 4 &&
	       memcmp(note + sizeof(*nh), "GNU", 4) == 0 && nh->n_descsz > 0 &&
	       nh->n_descsz <= SP_BUILD_ID_MAX;
}

/*
 * Walks the notes of [off, off + len). A note whose name or descriptor
 * runs past the range is corrupt; fewer than 12 trailing bytes are
 * padding. The first GNU build-id wins. Notes are 4-byte aligned except
 * in 8-aligned containers (.note.gnu.property), as libelf reads them.
 */
static int scan_notes(const struct elf_view *v, uint64_t off, uint64_t len,
		      uint64_t align, struct sp__image_id *id)
{
	uint64_t pos = 0, name_end, desc, desc_end;
	const uint8_t *p;
	Elf64_Nhdr nh;

	/* Checked before forming the pointer: data + off must not wrap. */
	if (!in_file(v, off, len))
		return SP_ECORRUPT;
	p = v->data + off;
	align = align == 8 ? 8 : 4;
	while (len - pos >= sizeof(nh)) {
		memcpy(&nh, p + pos, sizeof(nh));
		name_end = pos + sizeof(nh) + nh.n_namesz;
		desc = align_up(name_end, align);
		desc_end = desc + nh.n_descsz;
		if (name_end > len || desc > len || desc_end > len)
			return SP_ECORRUPT;
		if (id->build_id_len == 0 && is_gnu_build_id(p + pos, &nh)) {
			memcpy(id->build_id, p + desc, nh.n_descsz);
			id->build_id_len = nh.n_descsz;
		}
		pos = align_up(desc_end, align);
		if (pos > len)
			break;
	}
	return 0;
}

static int notes_from_phdrs(const struct elf_view *v, struct sp__image_id *id)
{
	Elf64_Phdr ph;
	uint64_t i;
	int err;

	for (i = 0; i < v->phnum; i++) {
		read_phdr(v, i, &ph);
		if (ph.p_type != PT_NOTE || ph.p_filesz == 0)
			continue;
		err = scan_notes(v, ph.p_offset, ph.p_filesz, ph.p_align, id);
		if (err < 0)
			return err;
	}
	return 0;
}

static int notes_from_sections(const struct elf_view *v,
			       struct sp__image_id *id)
{
	Elf64_Shdr sh;
	uint64_t i;
	int err;

	for (i = 0; i < v->shnum && id->build_id_len == 0; i++) {
		read_shdr(v, i, &sh);
		if (sh.sh_type != SHT_NOTE || sh.sh_size == 0)
			continue;
		err = scan_notes(v, sh.sh_offset, sh.sh_size, sh.sh_addralign,
				 id);
		if (err < 0)
			return err;
	}
	return 0;
}

static int copy_loads(struct sp__image *img, const struct elf_view *v)
{
	struct sp__image_load *load;
	size_t n = 0;
	Elf64_Phdr ph;
	uint64_t i;

	for (i = 0; i < v->phnum; i++) {
		read_phdr(v, i, &ph);
		n += ph.p_type == PT_LOAD;
	}
	if (n == 0)
		return 0;
	img->loads = sp__mem_calloc(&img->mem, n, sizeof(*img->loads));
	if (!img->loads)
		return -ENOMEM;
	img->nloads = n;
	load = img->loads;
	for (i = 0; i < v->phnum; i++) {
		read_phdr(v, i, &ph);
		if (ph.p_type != PT_LOAD)
			continue;
		load->vaddr = ph.p_vaddr;
		load->memsz = ph.p_memsz;
		load->offset = ph.p_offset;
		load->filesz = ph.p_filesz;
		load->flags = ph.p_flags;
		load++;
	}
	return 0;
}

int sp__image_parse(struct sp__image *img)
{
	struct elf_view v = { .data = img->data, .size = img->size };
	int err;

	err = read_ehdr(&v);
	if (err < 0)
		return err;
	err = read_counts(&v);
	if (err < 0)
		return err;
	err = notes_from_phdrs(&v, &img->id);
	if (err < 0)
		return err;
	if (img->id.build_id_len == 0) {
		err = notes_from_sections(&v, &img->id);
		if (err < 0)
			return err;
	}
	img->machine = v.eh.e_machine;
	return copy_loads(img, &v);
}
