/* SPDX-License-Identifier: MIT */
/* CFI tables from raw .eh_frame bytes, and the JIT region index lookups. */
#include <elf.h>
#include <errno.h>
#include <string.h>

#include "for_engine/unwind_jit.h"
#include "image.h"
#include "unwind_internal.h"

/*
 * libdw reads CFI only from an ELF, so raw .eh_frame bytes are wrapped in
 * the smallest ELF it accepts, built in one buffer:
 *
 *   0    Elf64_Ehdr  ET_EXEC, the host's e_machine, 3 section headers
 *   64   .eh_frame   the bytes, sh_addr = vaddr (pc-relative pointers
 *                    resolve against it)
 *   ..   .shstrtab   "\0.eh_frame\0.shstrtab\0"
 *   shoff [null][.eh_frame][.shstrtab]
 *
 * and handed to the same builder as file-backed images, so JIT code gets
 * the same rules, limits and hostile-input checks.
 */

#define EH_MAX (16u << 20)

static const char shstr[] = "\0.eh_frame\0.shstrtab";

static size_t align8(size_t v)
{
	return (v + 7) & ~(size_t)7;
}

static void fill_elf(uint8_t *buf, const void *eh, size_t len, uint64_t vaddr,
		     size_t str_off, size_t shoff)
{
	Elf64_Ehdr eh_hdr = { 0 };
	Elf64_Shdr sh[3] = { { 0 } };

	memcpy(eh_hdr.e_ident, ELFMAG, SELFMAG);
	eh_hdr.e_ident[EI_CLASS] = ELFCLASS64;
	eh_hdr.e_ident[EI_DATA] = ELFDATA2LSB;
	eh_hdr.e_ident[EI_VERSION] = EV_CURRENT;
	eh_hdr.e_type = ET_EXEC;
	eh_hdr.e_machine = SP__JIT_MACHINE;
	eh_hdr.e_version = EV_CURRENT;
	eh_hdr.e_ehsize = sizeof(Elf64_Ehdr);
	eh_hdr.e_shoff = shoff;
	eh_hdr.e_shentsize = sizeof(Elf64_Shdr);
	eh_hdr.e_shnum = 3;
	eh_hdr.e_shstrndx = 2;
	sh[1].sh_name = 1;
	sh[1].sh_type = SHT_PROGBITS;
	sh[1].sh_flags = SHF_ALLOC;
	sh[1].sh_addr = vaddr;
	sh[1].sh_offset = sizeof(Elf64_Ehdr);
	sh[1].sh_size = len;
	sh[1].sh_addralign = 8;
	sh[2].sh_name = 11;
	sh[2].sh_type = SHT_STRTAB;
	sh[2].sh_offset = str_off;
	sh[2].sh_size = sizeof(shstr);
	sh[2].sh_addralign = 1;
	memcpy(buf, &eh_hdr, sizeof(eh_hdr));
	memcpy(buf + sizeof(Elf64_Ehdr), eh, len);
	memcpy(buf + str_off, shstr, sizeof(shstr));
	memcpy(buf + shoff, sh, sizeof(sh));
}

int sp__cfi_table_from_eh_frame(const struct sp__mem *mem, const void *eh,
				size_t len, uint64_t vaddr,
				struct sp__cfi_table **out)
{
	size_t str_off, shoff, size;
	struct sp__image *img;
	uint8_t *buf;
	int err;

	if (len == 0)
		return SP_ECORRUPT;
	if (len > EH_MAX)
		return -E2BIG;
	str_off = sizeof(Elf64_Ehdr) + len;
	shoff = align8(str_off + sizeof(shstr));
	size = shoff + 3 * sizeof(Elf64_Shdr);
	buf = sp__mem_calloc(mem, 1, size);
	if (!buf)
		return -ENOMEM;
	fill_elf(buf, eh, len, vaddr, str_off, shoff);
	err = sp__image_open_memory(mem, buf, size, false, "[jit eh_frame]",
				    &img);
	if (!err) {
		sp__image_lock(img);
		err = sp__cfi_table_build(mem, sp__image_elf(img), out);
		sp__image_unlock(img);
		sp__image_unref(img);
	}
	sp__mem_free(mem, buf, size);
	return err;
}

void sp__cfi_table_range(const struct sp__cfi_table *table, uint64_t *base,
			 uint64_t *span)
{
	*base = table->base;
	*span = table->nrows ? table->span : 0;
}

size_t sp__cfi_table_bytes(const struct sp__cfi_table *table)
{
	return table->bytes;
}

/* ---- the region index ---------------------------------------------------- */

/* Index of the first region starting above @pc. */
static size_t upper(const struct sp__jit_index *ix, uint64_t pc)
{
	size_t lo = 0, hi = ix->n, mid;

	while (lo < hi) {
		mid = lo + (hi - lo) / 2;
		if (ix->regions[mid].start <= pc)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* Is @r a better answer than @best at time @t? Valid beats invalid. */
static bool better(const struct sp__jit_region *r,
		   const struct sp__jit_region *best, uint64_t t)
{
	bool r_ok = r->from <= t && t < r->until, b_ok;

	if (!best)
		return r->from <= t || r_ok;
	b_ok = best->from <= t && t < best->until;
	if (r_ok != b_ok)
		return r_ok;
	return r->from > best->from && r->from <= t;
}

const struct sp__jit_region *sp__jit_index_find(const struct sp__jit_index *ix,
						uint64_t pc, uint64_t t)
{
	const struct sp__jit_region *best = NULL, *r;
	size_t i;

	if (!ix || !ix->n)
		return NULL;
	/* regions[< i] start at or below pc; walk back while any may cover. */
	for (i = upper(ix, pc); i-- > 0 && ix->max_end[i] > pc;) {
		r = &ix->regions[i];
		if (pc < r->end && better(r, best, t))
			best = r;
	}
	return best;
}

void sp__jit_index_gap(const struct sp__jit_index *ix, uint64_t pc,
		       uint64_t *lo, uint64_t *hi)
{
	size_t i;

	if (!ix || !ix->n)
		return;
	i = upper(ix, pc);
	if (i > 0 && ix->max_end[i - 1] > pc) {
		/* Inside a region not valid at this time: this pc only. */
		*lo = pc;
		*hi = pc + 1;
		return;
	}
	if (i < ix->n && ix->regions[i].start < *hi)
		*hi = ix->regions[i].start;
	if (i > 0 && ix->max_end[i - 1] > *lo)
		*lo = ix->max_end[i - 1];
}
