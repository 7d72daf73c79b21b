/* SPDX-License-Identifier: MIT */
/* Names of x86-64 PLT stubs ("rand@plt") from the image's relocations. */
#include <errno.h>
#include <gelf.h>
#include <stdlib.h>
#include <string.h>

#include "native_internal.h"
#include "vec.h"

/*
 * A PLT stub has no symbol of its own; binutils and perf name it after
 * the relocation of the GOT slot it jumps through. Every x86-64 stub,
 * whatever its section, does that with one `jmp *disp32(%rip)` (ff 25,
 * after a bnd prefix f2 and an endbr64 in IBT layouts):
 *
 *   .plt       16-byte entries after PLT0: jmp *slot; push n; jmp PLT0
 *              (static binaries: 8-byte entries, jmp *slot; xchg)
 *   .plt.sec   16-byte entries of IBT binaries: endbr64; bnd jmp *slot
 *              (the .plt entries are then endbr64; push n; bnd jmp PLT0,
 *              no slot of their own: left unnamed)
 *   .plt.got   8 (16 with IBT) bytes per function both called through
 *              the PLT and taken by address: jmp *slot; xchg
 *
 * So each entry is decoded, its slot computed, and the slot looked up
 * among the relocations of every SHT_RELA section: JUMP_SLOT (lazy or
 * -z now) and GLOB_DAT name the .dynsym symbol; IRELATIVE (static
 * binaries, no symbol) names the symbol at its addend, the IFUNC
 * resolver ("strlen"). The entry size is sh_entsize, or, when a section
 * leaves it 0, the one of 16 and 8 that decodes more entries.
 *
 * Hostile input: section data comes from libelf with its bounds, every
 * read is checked against them, and the number of entries and of name
 * bytes is capped.
 */

#define PLT_ENTRIES_MAX (1u << 20)
#define PLT_NAME_MAX 1024

/* A relocated GOT slot and the name of what it holds. */
struct slot {
	uint64_t addr;
	const char *name;
};

static int cmp_slot(const void *pa, const void *pb)
{
	const struct slot *a = pa, *b = pb;

	return (a->addr > b->addr) - (a->addr < b->addr);
}

/* The slot of a relocation, or false for the types no stub jumps through. */
static bool reloc_slot(Elf *elf, const GElf_Rela *rela, Elf_Data *syms,
		       size_t strtab, const struct sp__plt_names *names,
		       struct slot *out)
{
	uint64_t type = GELF_R_TYPE(rela->r_info);
	GElf_Sym sym;

	out->addr = rela->r_offset;
	out->name = NULL;
	if (type == R_X86_64_IRELATIVE) {
		out->name = names->at(names->ctx, (uint64_t)rela->r_addend);
		return out->name != NULL;
	}
	if (type != R_X86_64_JUMP_SLOT && type != R_X86_64_GLOB_DAT)
		return false;
	if (!syms || !gelf_getsym(syms, (int)GELF_R_SYM(rela->r_info), &sym) ||
	    GELF_R_SYM(rela->r_info) == 0)
		return false;
	out->name = elf_strptr(elf, strtab, sym.st_name);
	return out->name && out->name[0];
}

/* Appends the slots of one SHT_RELA section (@shdr) to @slots. */
static int read_relocs(const struct sp__mem *mem, Elf *elf, Elf_Scn *scn,
		       const GElf_Shdr *shdr, const struct sp__plt_names *names,
		       struct sp__vec *slots)
{
	Elf_Scn *link = elf_getscn(elf, shdr->sh_link);
	Elf_Data *data = elf_getdata(scn, NULL), *syms = NULL;
	GElf_Shdr lshdr;
	size_t i, n, strtab = 0;
	GElf_Rela rela;
	struct slot s;

	if (!data || shdr->sh_entsize == 0)
		return 0;
	if (link && gelf_getshdr(link, &lshdr) &&
	    (lshdr.sh_type == SHT_DYNSYM || lshdr.sh_type == SHT_SYMTAB)) {
		syms = elf_getdata(link, NULL);
		strtab = lshdr.sh_link;
	}
	n = data->d_size / shdr->sh_entsize;
	for (i = 0; i < n && slots->len < PLT_ENTRIES_MAX; i++) {
		if (!gelf_getrela(data, (int)i, &rela) ||
		    !reloc_slot(elf, &rela, syms, strtab, names, &s))
			continue;
		if (sp__vec_push(slots, mem, &s) < 0)
			return -ENOMEM;
	}
	return 0;
}

static const char *slot_name(const struct sp__vec *slots, uint64_t addr)
{
	struct slot key = { .addr = addr }, *hit;

	hit = bsearch(&key, slots->data, slots->len, sizeof(key), cmp_slot);
	return hit ? hit->name : NULL;
}

/*
 * The GOT slot the entry at @p (@len bytes, at address @addr) jumps
 * through: the first jmp *disp32(%rip) in it. 0 when there is none.
 */
static uint64_t entry_slot(const uint8_t *p, size_t len, uint64_t addr)
{
	size_t i;
	int32_t disp;

	for (i = 0; i + 6 <= len; i++) {
		if (p[i] != 0xff || p[i + 1] != 0x25)
			continue;
		memcpy(&disp, p + i + 2, 4);
		return addr + i + 6 + (uint64_t)(int64_t)disp;
	}
	return 0;
}

/* Entries of @size bytes in @d (at @addr) whose slot has a name. */
static size_t count_named(const Elf_Data *d, uint64_t addr, size_t size,
			  const struct sp__vec *slots)
{
	const uint8_t *p = d->d_buf;
	size_t off, n = 0;

	for (off = 0; off + size <= d->d_size && off / size < PLT_ENTRIES_MAX;
	     off += size)
		n += slot_name(slots, entry_slot(p + off, size, addr + off)) !=
		     NULL;
	return n;
}

static int add_entries(const struct sp__mem *mem, const Elf_Data *d,
		       uint64_t addr, size_t size, const struct sp__vec *slots,
		       struct sp__vec *out)
{
	const uint8_t *p = d->d_buf;
	struct sp__plt_entry e;
	size_t off;

	for (off = 0; off + size <= d->d_size && out->len < PLT_ENTRIES_MAX;
	     off += size) {
		e.name =
			slot_name(slots, entry_slot(p + off, size, addr + off));
		if (!e.name || strlen(e.name) > PLT_NAME_MAX)
			continue;
		e.addr = addr + off;
		e.size = size;
		if (sp__vec_push(out, mem, &e) < 0)
			return -ENOMEM;
	}
	return 0;
}

static bool is_plt_section(Elf *elf, size_t shstrndx, const GElf_Shdr *shdr)
{
	const char *name = elf_strptr(elf, shstrndx, shdr->sh_name);

	return name && shdr->sh_type == SHT_PROGBITS &&
	       (shdr->sh_flags & SHF_EXECINSTR) &&
	       (!strcmp(name, ".plt") || !strcmp(name, ".plt.sec") ||
		!strcmp(name, ".plt.got"));
}

/* The entries of one PLT section. */
static int plt_section(const struct sp__mem *mem, Elf_Scn *scn,
		       const GElf_Shdr *shdr, const struct sp__vec *slots,
		       struct sp__vec *out)
{
	Elf_Data *d = elf_getdata(scn, NULL);
	size_t size = shdr->sh_entsize;

	if (!d || !d->d_buf || d->d_size > shdr->sh_size)
		return 0;
	if (size != 8 && size != 16)
		size = count_named(d, shdr->sh_addr, 8, slots) >
				       count_named(d, shdr->sh_addr, 16,
						   slots) ?
			       8 :
			       16;
	return add_entries(mem, d, shdr->sh_addr, size, slots, out);
}

int sp__plt_entries(const struct sp__mem *mem, Elf *elf,
		    const struct sp__plt_names *names, struct sp__vec *out)
{
	Elf_Scn *scn = NULL;
	struct sp__vec slots;
	GElf_Ehdr ehdr;
	GElf_Shdr shdr;
	size_t shstrndx;
	int err = 0;

	if (!gelf_getehdr(elf, &ehdr) || ehdr.e_machine != EM_X86_64 ||
	    elf_getshdrstrndx(elf, &shstrndx) != 0)
		return 0;
	sp__vec_init(&slots, sizeof(struct slot));
	while (!err && (scn = elf_nextscn(elf, scn)) != NULL)
		if (gelf_getshdr(scn, &shdr) && shdr.sh_type == SHT_RELA)
			err = read_relocs(mem, elf, scn, &shdr, names, &slots);
	if (!err && slots.len)
		qsort(slots.data, slots.len, sizeof(struct slot), cmp_slot);
	while (!err && slots.len && (scn = elf_nextscn(elf, scn)) != NULL)
		if (gelf_getshdr(scn, &shdr) &&
		    is_plt_section(elf, shstrndx, &shdr))
			err = plt_section(mem, scn, &shdr, &slots, out);
	sp__vec_fini(&slots, mem);
	return err;
}
