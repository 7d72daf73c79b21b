/* SPDX-License-Identifier: MIT */
/* Reading a JIT's in-memory ELF object: code sections, functions, .eh_frame. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <gelf.h>
#include <stackpulse/error.h>

#include "image.h"
#include "jit_elf.h"

/*
 * The object is opened through the image leaf (which validates the ELF
 * header and section table against the buffer), then walked once under
 * the image lock; everything kept is copied out, so the image is dropped
 * before returning. Section facts go into a small table first, because
 * ET_REL symbols and relocations are resolved against section addresses.
 */

#define NAME_MAX_LEN 4096
#define SECTIONS_MAX 65536

struct sect {
	uint64_t addr;
	uint64_t size;
	uint64_t flags;
	uint32_t type;
	uint32_t link;
	uint32_t info;
	uint32_t pad;
};

struct reader {
	Elf *elf;
	struct sp__jit_elf *out;
	struct sect *sects;
	size_t nsects;
	size_t shstrndx;
};

static bool is_code(const struct sect *s)
{
	return (s->flags & (SHF_ALLOC | SHF_EXECINSTR)) ==
		       (SHF_ALLOC | SHF_EXECINSTR) &&
	       s->size && s->addr && s->addr + s->size > s->addr;
}

static int cmp_text(const void *a, const void *b)
{
	const struct sp__jit_elf_text *x = a, *y = b;

	return x->start < y->start ? -1 : x->start > y->start;
}

static int read_sections(struct reader *rd)
{
	const struct sp__mem *mem = &rd->out->mem;
	Elf_Scn *scn = NULL;
	size_t n;

	if (elf_getshdrnum(rd->elf, &n) != 0 || n > SECTIONS_MAX ||
	    elf_getshdrstrndx(rd->elf, &rd->shstrndx) != 0)
		return SP_ECORRUPT;
	rd->sects = sp__mem_calloc(mem, n ? n : 1, sizeof(struct sect));
	if (!rd->sects)
		return -ENOMEM;
	rd->nsects = n;
	while ((scn = elf_nextscn(rd->elf, scn)) != NULL) {
		size_t i = elf_ndxscn(scn);
		GElf_Shdr sh;

		if (i >= n || !gelf_getshdr(scn, &sh))
			continue;
		rd->sects[i] =
			(struct sect){ sh.sh_addr, sh.sh_size, sh.sh_flags,
				       sh.sh_type, sh.sh_link, sh.sh_info,
				       0 };
	}
	return 0;
}

static int collect_text(struct reader *rd)
{
	struct sp__jit_elf *e = rd->out;
	size_t i;

	for (i = 1; i < rd->nsects; i++) {
		struct sp__jit_elf_text t;

		if (!is_code(&rd->sects[i])) /* PROGBITS, or NOBITS: bytes */
			continue;	     /* only in the target */
		if (e->text.len >= SP__JIT_ELF_MAX_TEXT)
			break;
		t.start = rd->sects[i].addr;
		t.end = t.start + rd->sects[i].size;
		if (sp__vec_push(&e->text, &e->mem, &t))
			return -ENOMEM;
	}
	if (e->text.len > 1) /* an empty vector's data is NULL */
		qsort(e->text.data, e->text.len,
		      sizeof(struct sp__jit_elf_text), cmp_text);
	return 0;
}

bool sp__jit_elf_covers(const struct sp__jit_elf *e, uint64_t addr)
{
	const struct sp__jit_elf_text *t = e->text.data;
	size_t i;

	for (i = 0; i < e->text.len; i++)
		if (addr >= t[i].start && addr < t[i].end)
			return true;
	return false;
}

/* Absolute address of symbol @s, or false when it has none we can use. */
static bool sym_addr(const struct reader *rd, const GElf_Sym *s, uint64_t *out)
{
	if (s->st_shndx == SHN_UNDEF || s->st_shndx >= SHN_LORESERVE) {
		if (s->st_shndx != SHN_ABS)
			return false;
		*out = s->st_value;
		return true;
	}
	if (s->st_shndx >= rd->nsects)
		return false;
	if (rd->out->type != ET_REL) {
		*out = s->st_value;
		return true;
	}
	*out = rd->sects[s->st_shndx].addr + s->st_value;
	return *out >= s->st_value; /* no wrap */
}

/* The symbol table to use: .symtab, else .dynsym; 0 when none. */
static size_t find_symtab(const struct reader *rd)
{
	size_t i, dyn = 0;

	for (i = 1; i < rd->nsects; i++) {
		if (rd->sects[i].type == SHT_SYMTAB)
			return i;
		if (rd->sects[i].type == SHT_DYNSYM && !dyn)
			dyn = i;
	}
	return dyn;
}

static bool wanted(const struct reader *rd, const GElf_Sym *s, uint64_t addr)
{
	unsigned type = GELF_ST_TYPE(s->st_info);

	if (type != STT_FUNC && type != STT_NOTYPE && type != STT_GNU_IFUNC)
		return false;
	if (type == STT_NOTYPE && s->st_size == 0 && s->st_shndx < rd->nsects &&
	    !is_code(&rd->sects[s->st_shndx]))
		return false;
	return sp__jit_elf_covers(rd->out, addr);
}

static int add_sym(struct reader *rd, size_t strsec, const GElf_Sym *s,
		   uint64_t addr)
{
	struct sp__jit_elf *e = rd->out;
	struct sp__jit_elf_sym out;
	const char *name = elf_strptr(rd->elf, strsec, s->st_name);
	size_t len;

	if (!name || !*name)
		return 0;
	len = strnlen(name, NAME_MAX_LEN);
	out.start = addr;
	out.end = addr + s->st_size >= addr ? addr + s->st_size : UINT64_MAX;
	out.name = sp__arena_strndup(&e->arena, &e->mem, name, len);
	if (!out.name || sp__vec_push(&e->syms, &e->mem, &out))
		return -ENOMEM;
	return 0;
}

static int cmp_sym(const void *a, const void *b)
{
	const struct sp__jit_elf_sym *x = a, *y = b;

	return x->start < y->start ? -1 : x->start > y->start;
}

/* Size-0 symbols run to the next symbol or the end of their section. */
static void close_sizes(struct sp__jit_elf *e)
{
	struct sp__jit_elf_sym *s = e->syms.data;
	const struct sp__jit_elf_text *t = e->text.data;
	size_t i, k;

	if (e->syms.len > 1) /* an empty vector's data is NULL */
		qsort(s, e->syms.len, sizeof(*s), cmp_sym);
	for (i = 0; i < e->syms.len; i++) {
		if (s[i].end != s[i].start)
			continue;
		for (k = 0; k < e->text.len; k++)
			if (s[i].start >= t[k].start && s[i].start < t[k].end)
				s[i].end = t[k].end;
		if (i + 1 < e->syms.len && s[i + 1].start > s[i].start &&
		    s[i + 1].start < s[i].end)
			s[i].end = s[i + 1].start;
	}
}

static int collect_syms(struct reader *rd)
{
	size_t symsec = find_symtab(rd), i, n;
	Elf_Data *d;
	GElf_Sym s;
	uint64_t addr;
	int err;

	if (!symsec)
		return 0;
	d = elf_getdata(elf_getscn(rd->elf, symsec), NULL);
	if (!d || !d->d_buf)
		return 0;
	n = d->d_size / sizeof(Elf64_Sym);
	if (n > SP__JIT_ELF_MAX_SYMS)
		n = SP__JIT_ELF_MAX_SYMS;
	for (i = 1; i < n; i++) {
		if (!gelf_getsym(d, (int)i, &s) || !sym_addr(rd, &s, &addr) ||
		    !wanted(rd, &s, addr))
			continue;
		err = add_sym(rd, rd->sects[symsec].link, &s, addr);
		if (err)
			return err;
	}
	close_sizes(rd->out);
	return 0;
}

/* ---- .eh_frame ---------------------------------------------------------- */

static size_t find_named(const struct reader *rd, const char *want)
{
	size_t i;

	for (i = 1; i < rd->nsects; i++) {
		GElf_Shdr sh;
		const char *name;

		if (!gelf_getshdr(elf_getscn(rd->elf, i), &sh))
			continue;
		name = elf_strptr(rd->elf, rd->shstrndx, sh.sh_name);
		if (name && strcmp(name, want) == 0)
			return i;
	}
	return 0;
}

/* How a relocation type of .eh_frame is computed. */
struct reloc_kind {
	unsigned width; /* bytes written: 4 or 8 */
	bool pcrel;	/* S + A - P, else S + A */
	bool sign32;	/* a 4-byte value checked as signed, else unsigned */
};

/* The kind of relocation @type of machine @mach, or false (not applied). */
static bool reloc_kind(unsigned mach, unsigned type, struct reloc_kind *k)
{
	if (mach == EM_X86_64) {
		switch (type) {
		case R_X86_64_64:
			*k = (struct reloc_kind){ 8, false, false };
			return true;
		case R_X86_64_PC64:
			*k = (struct reloc_kind){ 8, true, false };
			return true;
		case R_X86_64_PC32:
			*k = (struct reloc_kind){ 4, true, true };
			return true;
		case R_X86_64_32:
			*k = (struct reloc_kind){ 4, false, false };
			return true;
		case R_X86_64_32S:
			*k = (struct reloc_kind){ 4, false, true };
			return true;
		}
	} else if (mach == EM_AARCH64) {
		switch (type) {
		case R_AARCH64_ABS64:
			*k = (struct reloc_kind){ 8, false, false };
			return true;
		case R_AARCH64_PREL64:
			*k = (struct reloc_kind){ 8, true, false };
			return true;
		case R_AARCH64_PREL32:
			*k = (struct reloc_kind){ 4, true, true };
			return true;
		case R_AARCH64_ABS32:
			*k = (struct reloc_kind){ 4, false, false };
			return true;
		}
	}
	return false;
}

/* Value of relocation @r at .eh_frame offset r_offset, or false. */
static bool reloc_value(const struct reader *rd, Elf_Data *syms,
			const GElf_Rela *r, unsigned *width, uint64_t *v)
{
	struct reloc_kind k;
	GElf_Sym s;
	uint64_t sv;

	if (!reloc_kind(SP__JIT_MACHINE, (unsigned)GELF_R_TYPE(r->r_info), &k))
		return false;
	*width = k.width;
	if (!syms || !gelf_getsym(syms, (int)GELF_R_SYM(r->r_info), &s) ||
	    !sym_addr(rd, &s, &sv))
		return false;
	*v = sv + (uint64_t)r->r_addend;
	if (k.pcrel)
		*v -= rd->out->eh_addr + r->r_offset;
	if (k.width == 8)
		return true;
	if (k.sign32)
		return (int64_t)*v == (int64_t)(int32_t)(uint32_t)*v;
	return *v <= UINT32_MAX;
}

static void apply_relocs(struct reader *rd, size_t eh)
{
	struct sp__jit_elf *e = rd->out;
	Elf_Data *rel, *syms;
	size_t i, k, n;
	GElf_Rela r;

	for (i = 1; i < rd->nsects; i++) {
		if (rd->sects[i].type != SHT_RELA || rd->sects[i].info != eh ||
		    rd->sects[i].link >= rd->nsects)
			continue;
		rel = elf_getdata(elf_getscn(rd->elf, i), NULL);
		syms = elf_getdata(elf_getscn(rd->elf, rd->sects[i].link),
				   NULL);
		n = rel ? rel->d_size / sizeof(Elf64_Rela) : 0;
		for (k = 0; k < n; k++) {
			unsigned width;
			uint64_t v;

			if (!gelf_getrela(rel, (int)k, &r))
				break;
			if (GELF_R_TYPE(r.r_info) == 0) /* R_*_NONE */
				continue;
			if (!reloc_value(rd, syms, &r, &width, &v) ||
			    e->eh_len < width ||
			    r.r_offset > e->eh_len - width) {
				e->eh_relocs_skipped++;
				continue;
			}
			memcpy(e->eh_frame + r.r_offset, &v, width); /* LE */
		}
	}
}

static int collect_eh_frame(struct reader *rd)
{
	struct sp__jit_elf *e = rd->out;
	size_t eh = find_named(rd, ".eh_frame");
	Elf_Data *d;

	if (!eh || rd->sects[eh].type == SHT_NOBITS)
		return 0;
	d = elf_getdata(elf_getscn(rd->elf, eh), NULL);
	if (!d || !d->d_buf || d->d_size == 0)
		return 0;
	e->eh_frame = sp__mem_alloc(&e->mem, d->d_size);
	if (!e->eh_frame)
		return -ENOMEM;
	memcpy(e->eh_frame, d->d_buf, d->d_size);
	e->eh_len = d->d_size;
	e->eh_addr = rd->sects[eh].addr;
	if (e->type == ET_REL)
		apply_relocs(rd, eh);
	return 0;
}

/* ---- entry points ----------------------------------------------------- */

static int read_all(struct reader *rd)
{
	GElf_Ehdr eh;
	int err;

	if (!gelf_getehdr(rd->elf, &eh) || eh.e_machine != SP__JIT_MACHINE ||
	    eh.e_ident[EI_DATA] != ELFDATA2LSB ||
	    (eh.e_type != ET_REL && eh.e_type != ET_EXEC &&
	     eh.e_type != ET_DYN))
		return SP_ECORRUPT;
	rd->out->type = eh.e_type;
	err = read_sections(rd);
	if (!err)
		err = collect_text(rd);
	if (!err)
		err = collect_syms(rd);
	if (!err)
		err = collect_eh_frame(rd);
	return err;
}

int sp__jit_elf_parse(const struct sp__mem *mem, const uint8_t *image,
		      size_t len, struct sp__jit_elf *out)
{
	struct reader rd = { .out = out };
	struct sp__image *img;
	int err;

	memset(out, 0, sizeof(*out));
	out->mem = *mem;
	sp__arena_init(&out->arena);
	sp__vec_init(&out->text, sizeof(struct sp__jit_elf_text));
	sp__vec_init(&out->syms, sizeof(struct sp__jit_elf_sym));
	err = sp__image_open_memory(mem, image, len, false, "[gdb-jit]", &img);
	if (err) {
		sp__jit_elf_fini(out);
		return err == -ENOMEM ? err : SP_ECORRUPT;
	}
	sp__image_lock(img);
	rd.elf = sp__image_elf(img);
	err = rd.elf ? read_all(&rd) : SP_ECORRUPT;
	sp__image_unlock(img);
	sp__image_unref(img);
	sp__mem_free(mem, rd.sects,
		     (rd.nsects ? rd.nsects : 1) * sizeof(struct sect));
	if (err)
		sp__jit_elf_fini(out);
	return err;
}

void sp__jit_elf_fini(struct sp__jit_elf *e)
{
	sp__vec_fini(&e->text, &e->mem);
	sp__vec_fini(&e->syms, &e->mem);
	sp__arena_fini(&e->arena, &e->mem);
	sp__mem_free(&e->mem, e->eh_frame, e->eh_len);
	e->eh_frame = NULL;
	e->eh_len = 0;
}
