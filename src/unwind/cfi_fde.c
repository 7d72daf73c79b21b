/* SPDX-License-Identifier: MIT */
/* Lists where every FDE of .eh_frame / .debug_frame begins. */
#include <stdlib.h>
#include <string.h>

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <gelf.h>

#include "unwind_internal.h"

/*
 * libdw has no "next row" iterator, so the table builder needs the start
 * of every FDE to know where code with CFI begins after a gap. Each entry
 * of the raw section is read with dwarf_next_cfi; a CIE gives the pointer
 * encoding of its FDEs' initial location (the 'R' letter of a "z"
 * augmentation, absolute for .debug_frame), and the FDE's location is
 * decoded with it:
 *
 *   FDE: | length | CIE pointer | initial location (enc) | range | ...
 *                                 ^ pcrel: relative to this field's svma
 *
 * Only the absolute and pc-relative applications are accepted (the others
 * do not occur in FDEs); an FDE whose CIE is unknown or whose encoding is
 * not understood is skipped: its code is then a gap (frame pointers).
 * Entries are visited at most once each, in increasing offsets, so
 * hostile sections cannot loop.
 */

struct cie_enc {
	uint64_t offset;
	uint8_t enc;
};

static int read_uleb(const uint8_t **p, const uint8_t *end, uint64_t *out)
{
	uint64_t v = 0;
	unsigned shift = 0;

	while (*p < end) {
		uint8_t b = *(*p)++;

		if (shift < 64)
			v |= (uint64_t)(b & 0x7f) << shift;
		shift += 7;
		if (!(b & 0x80)) {
			*out = v;
			return 0;
		}
	}
	return -1;
}

static int read_fixed(const uint8_t **p, const uint8_t *end, size_t n,
		      bool sign, uint64_t *out)
{
	uint64_t v = 0;
	size_t i;

	if ((size_t)(end - *p) < n)
		return -1;
	for (i = 0; i < n; i++)
		v |= (uint64_t)(*p)[i] << (8 * i);
	if (sign && n < 8 && (v >> (8 * n - 1)) & 1)
		v |= ~(uint64_t)0 << (8 * n);
	*p += n;
	*out = v;
	return 0;
}

/* Reads a DW_EH_PE_* encoded value (format bits only). */
static int read_encoded(const uint8_t **p, const uint8_t *end, uint8_t enc,
			uint64_t *out)
{
	uint64_t v;

	switch (enc & 0x0f) {
	case DW_EH_PE_absptr:
	case DW_EH_PE_udata8:
	case DW_EH_PE_sdata8:
		return read_fixed(p, end, 8, false, out);
	case DW_EH_PE_udata2:
		return read_fixed(p, end, 2, false, out);
	case DW_EH_PE_sdata2:
		return read_fixed(p, end, 2, true, out);
	case DW_EH_PE_udata4:
		return read_fixed(p, end, 4, false, out);
	case DW_EH_PE_sdata4:
		return read_fixed(p, end, 4, true, out);
	case DW_EH_PE_uleb128:
		return read_uleb(p, end, out);
	case DW_EH_PE_sleb128:
		if (read_uleb(p, end, &v))
			return -1;
		*out = v; /* only used for ranges; sign is irrelevant here */
		return 0;
	default:
		return -1;
	}
}

/* The FDE pointer encoding of a CIE ('R' in a "z" augmentation). */
static uint8_t cie_fde_encoding(const Dwarf_CIE *cie)
{
	const uint8_t *p = cie->augmentation_data;
	const uint8_t *end = p ? p + cie->augmentation_data_size : NULL;
	const char *aug = cie->augmentation;
	uint64_t skip;

	if (!aug || aug[0] != 'z')
		return DW_EH_PE_absptr;
	for (aug++; *aug && p; aug++) {
		if (*aug == 'R')
			return p < end ? *p : DW_EH_PE_omit;
		if (*aug == 'L') {
			if (p >= end)
				return DW_EH_PE_omit;
			p++;
		} else if (*aug == 'P') {
			uint8_t penc;

			if (p >= end)
				return DW_EH_PE_omit;
			penc = *p++;
			if (read_encoded(&p, end, penc, &skip))
				return DW_EH_PE_omit;
		} else if (*aug != 'S' && *aug != 'B' && *aug != 'G') {
			return DW_EH_PE_omit;
		}
	}
	return DW_EH_PE_absptr;
}

static const struct cie_enc *find_cie(const struct sp__vec *cies,
				      uint64_t offset)
{
	const struct cie_enc *c = cies->data;
	size_t lo = 0, hi = cies->len;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (c[mid].offset == offset)
			return &c[mid];
		if (c[mid].offset < offset)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

/* Decodes an FDE's initial location; 0 or -1 (unsupported encoding). */
static int fde_location(const Dwarf_FDE *fde, uint8_t enc, uint64_t field_addr,
			uint64_t *pc)
{
	const uint8_t *p = fde->start;
	uint64_t v;

	if (enc == DW_EH_PE_omit || (enc & DW_EH_PE_indirect))
		return -1;
	if (read_encoded(&p, fde->end, enc, &v))
		return -1;
	switch (enc & 0x70) {
	case DW_EH_PE_absptr:
		*pc = v;
		return 0;
	case DW_EH_PE_pcrel:
		*pc = field_addr + v;
		return 0;
	default:
		return -1;
	}
}

static int scan_entry(const struct sp__mem *mem, struct sp__vec *starts,
		      struct sp__vec *cies, const Dwarf_CFI_Entry *e,
		      Dwarf_Off off, const Elf_Data *data, uint64_t sec_addr)
{
	const struct cie_enc *cie;
	uint64_t pc;

	if (dwarf_cfi_cie_p(e)) {
		struct cie_enc c = { off, cie_fde_encoding(&e->cie) };

		return sp__vec_push(cies, mem, &c);
	}
	cie = find_cie(cies, e->fde.CIE_pointer);
	if (!cie)
		return 0;
	if (fde_location(&e->fde, cie->enc,
			 sec_addr + (uint64_t)(e->fde.start -
					       (const uint8_t *)data->d_buf),
			 &pc))
		return 0;
	return sp__vec_push(starts, mem, &pc);
}

int sp__cfi_fde_starts(const struct sp__mem *mem, Elf *elf, Elf_Scn *scn,
		       bool eh, struct sp__vec *starts, size_t *bytes)
{
	const unsigned char *ident =
		(const unsigned char *)elf_getident(elf, NULL);
	struct sp__vec cies;
	Dwarf_CFI_Entry e;
	Dwarf_Off off = 0, next;
	GElf_Shdr shdr;
	Elf_Data *data;
	size_t n = 0;
	int err = 0;

	if (!ident || !gelf_getshdr(scn, &shdr) || shdr.sh_type == SHT_NOBITS)
		return 0;
	data = elf_getdata(scn, NULL);
	if (!data || !data->d_buf)
		return 0;
	sp__vec_init(&cies, sizeof(struct cie_enc));
	while (!err && n++ < data->d_size &&
	       dwarf_next_cfi(ident, data, eh, off, &next, &e) == 0) {
		err = scan_entry(mem, starts, &cies, &e, off, data,
				 shdr.sh_addr);
		if (next <= off)
			break;
		off = next;
	}
	*bytes += data->d_size;
	sp__vec_fini(&cies, mem);
	return err;
}

int sp__cfi_find_sections(Elf *elf, Elf_Scn **eh, Elf_Scn **debug)
{
	Elf_Scn *scn = NULL;
	size_t shstrndx;

	*eh = *debug = NULL;
	if (elf_getshdrstrndx(elf, &shstrndx) != 0)
		return SP_ECORRUPT;
	while ((scn = elf_nextscn(elf, scn)) != NULL) {
		GElf_Shdr shdr;
		const char *name;

		if (!gelf_getshdr(scn, &shdr))
			continue;
		name = elf_strptr(elf, shstrndx, shdr.sh_name);
		if (!name)
			continue;
		if (strcmp(name, ".eh_frame") == 0)
			*eh = scn;
		else if (strcmp(name, ".debug_frame") == 0)
			*debug = scn;
	}
	return 0;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

void sp__cfi_sort_starts(struct sp__vec *starts)
{
	uint64_t *s = starts->data;
	size_t i, n = 0;

	if (starts->len == 0)
		return;
	qsort(s, starts->len, sizeof(*s), cmp_u64);
	for (i = 0; i < starts->len; i++)
		if (n == 0 || s[n - 1] != s[i])
			s[n++] = s[i];
	starts->len = n;
}
