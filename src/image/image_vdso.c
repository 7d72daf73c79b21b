/* SPDX-License-Identifier: MIT */
/* This process's vDSO as a memory image (unwind info and symbols). */
#include <elf.h>
#include <errno.h>
#include <string.h>
#include <sys/auxv.h>

#include "image_internal.h"

/*
 * The kernel maps the vDSO as whole pages of one small ELF image and
 * passes its address in AT_SYSINFO_EHDR; it is identical in every process
 * on this kernel (research/feasibility.md §3), so our copy serves targets
 * too. The image's length is not passed anywhere, so it is derived from
 * its own headers without ever reading past memory known to be mapped:
 *
 *   page 0            ELF header + program headers (must fit here)
 *   ..load_end        max(p_offset + p_filesz) over PT_LOAD: mapped
 *   ..page_up(end)    the rest of the last page: mapped, so the section
 *                     header table counts too when it ends inside it
 *                     (libelf and libdw find .eh_frame through sections)
 *
 * VDSO_MAX bounds the result against a corrupt kernel image; the vDSO is
 * 8 KiB on x86-64 6.x. The bytes are copied: the mapping is not writable
 * and a target's vDSO is never at the same address.
 */
#define VDSO_MAX (256u * 1024)

static uint64_t vdso_page(void)
{
	unsigned long page = getauxval(AT_PAGESZ);

	return page && !(page & (page - 1)) ? page : 4096;
}

/* Largest end of a PT_LOAD, or 0 when the headers are unusable. */
static uint64_t loads_end(const uint8_t *base, const Elf64_Ehdr *eh,
			  uint64_t page)
{
	uint64_t phend = eh->e_phoff + eh->e_phnum * sizeof(Elf64_Phdr);
	uint64_t end = 0, i;
	Elf64_Phdr ph;

	if (eh->e_phentsize != sizeof(ph) || eh->e_phoff > page || phend > page)
		return 0;
	for (i = 0; i < eh->e_phnum; i++) {
		memcpy(&ph, base + eh->e_phoff + i * sizeof(ph), sizeof(ph));
		if (ph.p_type != PT_LOAD)
			continue;
		if (ph.p_offset > VDSO_MAX ||
		    ph.p_filesz > VDSO_MAX - ph.p_offset)
			return 0;
		if (ph.p_offset + ph.p_filesz > end)
			end = ph.p_offset + ph.p_filesz;
	}
	return end > phend ? end : phend;
}

static size_t vdso_size(const uint8_t *base)
{
	uint64_t page = vdso_page(), end, mapped, shend;
	Elf64_Ehdr eh;

	memcpy(&eh, base, sizeof(eh));
	if (memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0 ||
	    eh.e_ident[EI_CLASS] != ELFCLASS64)
		return 0;
	end = loads_end(base, &eh, page);
	if (end == 0)
		return 0;
	mapped = (end + page - 1) & ~(page - 1);
	shend = eh.e_shoff + (uint64_t)eh.e_shnum * eh.e_shentsize;
	if (eh.e_shoff != 0 && eh.e_shoff <= mapped && shend <= mapped &&
	    shend > end)
		end = shend;
	return end <= VDSO_MAX ? (size_t)end : 0;
}

int sp__image_open_vdso(const struct sp__mem *mem, struct sp__image **out)
{
	const uint8_t *base = (const uint8_t *)getauxval(AT_SYSINFO_EHDR);
	size_t size;

	if (!base)
		return -ENOENT;
	size = vdso_size(base);
	if (size == 0)
		return -ENOENT;
	return sp__image_open_memory(mem, base, size, true, "[vdso]", out);
}
