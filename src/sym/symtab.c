/* SPDX-License-Identifier: MIT */
/* Sorted function table of an ELF image from .symtab and .dynsym. */
#include <errno.h>
#include <gelf.h>
#include <stdlib.h>
#include <string.h>

#include "native_internal.h"
#include "vec.h"

/*
 * dwfl_module_addrinfo scans the whole symbol table per lookup (0.1-0.3 ms
 * on libc, research/feasibility.md §4). We read the tables once into a
 * sorted array of [addr, end) ranges and binary-search it (~40 ns).
 *
 * Which symbols: STT_FUNC and STT_GNU_IFUNC, plus STT_NOTYPE in
 * executable sections (hand-written assembly labels such as ld.so's
 * _start and _dl_start_user, which have no size), defined in an allocated
 * section, with a non-empty name. Arm's mapping symbols ($x, $d and their
 * $x.<any> forms on AArch64; $a, $t too on Arm) mark where code and data
 * start, name no function, and are skipped whatever their type and size,
 * by the file's e_machine (so on any host). .symtab (of the debug file
 * when there is one) is merged with the image's .dynsym and with the PLT
 * stubs named from the relocations (plt.c: "rand@plt", whose names the
 * table owns): a partially stripped image keeps its exported names, and
 * duplicates collapse below; a real symbol beats a stub's name.
 *
 * Aliases (several names at one address) keep one name: GLOBAL before
 * WEAK before LOCAL, then the shortest name, then the first seen (symtab
 * order, .symtab before .dynsym). This is close to dwfl's rule (it prefers
 * the better binding) but not identical: dwfl keeps the first name among
 * equal bindings, so tests compare the symbol address, not the name,
 * when the two disagree at one address. The alias keeps the largest size.
 *
 * Sizes: st_size when non-zero. A symbol without a size names the
 * addresses no sized symbol covers, from it to the next symbol of the
 * table if that starts in the same section, else to the end of its
 * section: the nearest preceding symbol, as eu-addr2line and perf choose.
 * One that lies inside a sized symbol's range is dropped: there the sized
 * symbol wins, and past that symbol's end eu-addr2line does not reach
 * back over it either. Nested sized symbols (an inner function inside an
 * outer range) are found by a short walk back from the binary-search hit.
 *
 * Names point into the ELF string tables (libelf keeps the section data
 * alive with the Elf handle, which lives as long as the native object).
 */

#define NESTED_WALK 8

/*
 * Lookup index: a plain binary search over libc's ~10k starts touches ~14
 * cache lines (~100 ns). A two-level index first maps the address to a
 * bucket of 2^shift bytes of the [starts[0], last start] span; bucket[k]
 * is the first symbol starting in or after bucket k, so the search runs
 * over bucket[k] .. bucket[k+1] (a handful of entries) and usually stays
 * in one or two cache lines of @starts. About two symbols per bucket:
 * 4 bytes per bucket, half of @starts' size.
 */
#define BUCKET_TARGET 2

struct sp__symtab {
	struct sp__mem mem;
	uint64_t *starts; /* syms[i].addr, dense for the binary search */
	struct sp__sym *syms;
	size_t count;
	size_t cap;	 /* allocated entries (candidates before merging) */
	char *plt_names; /* "NAME@plt\0" of every stub, NULL when none */
	size_t plt_bytes;
	uint32_t *bucket; /* [nbuckets + 1]; NULL: plain binary search */
	size_t nbuckets;
	unsigned shift;
};

/* A symbol before alias merging. */
struct cand {
	uint64_t addr;
	uint64_t size;
	uint64_t sec_end;
	const char *name;
	size_t name_len;
	uint32_t rank; /* 0 GLOBAL, 1 WEAK, 2 other, 3 a PLT stub */
	uint32_t seq;
};

#define RANK_PLT 3

static uint32_t bind_rank(unsigned char info)
{
	switch (GELF_ST_BIND(info)) {
	case STB_GLOBAL:
		return 0;
	case STB_WEAK:
		return 1;
	default:
		return 2;
	}
}

static int cmp_cand(const void *pa, const void *pb)
{
	const struct cand *a = pa, *b = pb;

	if (a->addr != b->addr)
		return a->addr < b->addr ? -1 : 1;
	if (a->rank != b->rank)
		return a->rank < b->rank ? -1 : 1;
	if (a->name_len != b->name_len)
		return a->name_len < b->name_len ? -1 : 1;
	return a->seq < b->seq ? -1 : a->seq > b->seq;
}

/* Is @sym a function we keep? Fills *@sec_end from its section. */
static bool keep_symbol(Elf *elf, const GElf_Sym *sym, uint64_t *sec_end)
{
	unsigned type = GELF_ST_TYPE(sym->st_info);
	GElf_Shdr shdr;
	Elf_Scn *scn;

	if (sym->st_shndx == SHN_UNDEF || sym->st_shndx >= SHN_LORESERVE)
		return false;
	if (type != STT_FUNC && type != STT_GNU_IFUNC && type != STT_NOTYPE)
		return false;
	scn = elf_getscn(elf, sym->st_shndx);
	if (!scn || !gelf_getshdr(scn, &shdr) || !(shdr.sh_flags & SHF_ALLOC))
		return false;
	if (type == STT_NOTYPE && !(shdr.sh_flags & SHF_EXECINSTR))
		return false;
	/* Checked: a hostile section may wrap around the address space. */
	if (shdr.sh_addr + shdr.sh_size < shdr.sh_addr ||
	    sym->st_value < shdr.sh_addr ||
	    sym->st_value >= shdr.sh_addr + shdr.sh_size)
		return false;
	*sec_end = shdr.sh_addr + shdr.sh_size;
	return true;
}

static Elf_Scn *find_type(Elf *elf, Elf64_Word type, GElf_Shdr *shdr)
{
	Elf_Scn *scn = NULL;

	while ((scn = elf_nextscn(elf, scn)) != NULL) {
		if (gelf_getshdr(scn, shdr) && shdr->sh_type == type)
			return scn;
	}
	return NULL;
}

bool sp__elf_has_symtab(Elf *elf)
{
	GElf_Shdr shdr;

	return find_type(elf, SHT_SYMTAB, &shdr) != NULL;
}

/* An Arm mapping symbol: $x, $d, $a, $t, alone or followed by '.'. */
static bool is_mapping_symbol(const char *name)
{
	return name[0] == '$' && name[1] && strchr("xdat", name[1]) &&
	       (name[2] == '\0' || name[2] == '.');
}

static bool has_mapping_symbols(Elf *elf)
{
	GElf_Ehdr eh;

	return gelf_getehdr(elf, &eh) &&
	       (eh.e_machine == EM_AARCH64 || eh.e_machine == EM_ARM);
}

/* Appends the kept symbols of the first section of @type in @elf. */
static int read_table(const struct sp__mem *mem, Elf *elf, Elf64_Word type,
		      struct sp__vec *cands)
{
	GElf_Shdr shdr;
	Elf_Scn *scn = find_type(elf, type, &shdr);
	bool arm = has_mapping_symbols(elf);
	Elf_Data *data;
	size_t i, n;

	if (!scn || shdr.sh_entsize == 0)
		return 0;
	data = elf_getdata(scn, NULL);
	if (!data)
		return 0;
	n = data->d_size / shdr.sh_entsize;
	for (i = 1; i < n; i++) {
		struct cand c = { .seq = (uint32_t)cands->len };
		GElf_Sym sym;

		if (!gelf_getsym(data, (int)i, &sym) ||
		    !keep_symbol(elf, &sym, &c.sec_end))
			continue;
		c.name = elf_strptr(elf, shdr.sh_link, sym.st_name);
		if (!c.name || !c.name[0] || (arm && is_mapping_symbol(c.name)))
			continue;
		c.addr = sym.st_value;
		c.size = sym.st_size;
		c.name_len = strlen(c.name);
		c.rank = bind_rank(sym.st_info);
		if (sp__vec_push(cands, mem, &c) < 0)
			return -ENOMEM;
	}
	return 0;
}

/*
 * Collapses aliases (sorted: the preferred name comes first at each
 * address), computes ends and drops the unsized symbols inside a sized
 * one (@covered: the furthest end of a sized symbol so far). Writes into
 * @syms, returns the count.
 */
static size_t merge(const struct cand *c, size_t n, struct sp__sym *syms)
{
	uint64_t covered = 0;
	size_t i, j, out = 0;

	for (i = 0; i < n; i = j) {
		uint64_t size = c[i].size, next, end;

		for (j = i + 1; j < n && c[j].addr == c[i].addr; j++)
			size = c[j].size > size ? c[j].size : size;
		if (size == 0 && c[i].addr < covered)
			continue;
		next = j < n ? c[j].addr : c[i].sec_end;
		if (size == 0)
			end = next < c[i].sec_end ? next : c[i].sec_end;
		else
			end = c[i].addr + size;
		/* A wrapping size from a hostile file: clamp to the section. */
		if (end <= c[i].addr)
			end = c[i].sec_end;
		if (size && end > covered)
			covered = end;
		syms[out].addr = c[i].addr;
		syms[out].end = end;
		syms[out].name = c[i].name;
		out++;
	}
	return out;
}

/* The preferred name at exactly @addr among sorted candidates (plt.c). */
static const char *cand_name_at(void *ctx, uint64_t addr)
{
	const struct sp__vec *cands = ctx;
	const struct cand *c = cands->data;
	size_t lo = 0, hi = cands->len;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (c[mid].addr < addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < cands->len && c[lo].addr == addr ? c[lo].name : NULL;
}

/*
 * Appends the PLT stubs of @elf to the sorted @cands as "NAME@plt"
 * candidates (strings in @tab->plt_names), then sorts again.
 */
static int add_plt(struct sp__symtab *tab, Elf *elf, struct sp__vec *cands)
{
	struct sp__plt_names names = { cand_name_at, cands };
	const struct sp__plt_entry *e;
	struct sp__vec plt;
	size_t i, bytes = 0, len;
	char *p;
	int err;

	sp__vec_init(&plt, sizeof(struct sp__plt_entry));
	err = sp__plt_entries(&tab->mem, elf, &names, &plt);
	for (i = 0, e = plt.data; !err && i < plt.len; i++)
		bytes += strlen(e[i].name) + sizeof("@plt");
	if (!err && bytes)
		tab->plt_names = sp__mem_alloc(&tab->mem, bytes);
	if (!err && bytes && !tab->plt_names)
		err = -ENOMEM;
	tab->plt_bytes = tab->plt_names ? bytes : 0;
	for (i = 0, p = tab->plt_names; !err && i < plt.len; i++) {
		struct cand c = { .addr = e[i].addr,
				  .size = e[i].size,
				  .sec_end = e[i].addr + e[i].size,
				  .name = p,
				  .rank = RANK_PLT,
				  .seq = (uint32_t)cands->len };

		len = strlen(e[i].name);
		memcpy(p, e[i].name, len);
		memcpy(p + len, "@plt", sizeof("@plt"));
		p += len + sizeof("@plt");
		c.name_len = len + 4;
		err = sp__vec_push(cands, &tab->mem, &c) < 0 ? -ENOMEM : 0;
	}
	if (!err && plt.len)
		qsort(cands->data, cands->len, sizeof(struct cand), cmp_cand);
	sp__vec_fini(&plt, &tab->mem);
	return err;
}

/* Builds the two-level index; without memory the table still works. */
static void build_index(struct sp__symtab *tab)
{
	uint64_t span = tab->starts[tab->count - 1] - tab->starts[0];
	size_t k, i = 0;
	unsigned shift = 0;

	while (shift < 63 && (span >> shift) / BUCKET_TARGET >= tab->count)
		shift++;
	tab->nbuckets = (size_t)(span >> shift) + 1;
	tab->bucket =
		sp__mem_calloc(&tab->mem, tab->nbuckets + 1, sizeof(uint32_t));
	if (!tab->bucket || tab->count > UINT32_MAX) {
		sp__mem_free(&tab->mem, tab->bucket,
			     (tab->nbuckets + 1) * sizeof(uint32_t));
		tab->bucket = NULL;
		return;
	}
	tab->shift = shift;
	for (k = 0; k <= tab->nbuckets; k++) {
		while (i < tab->count &&
		       (tab->starts[i] - tab->starts[0]) >> shift < k)
			i++;
		tab->bucket[k] = (uint32_t)i;
	}
}

int sp__symtab_build(const struct sp__mem *mem, Elf *symtab_elf,
		     Elf *dynsym_elf, struct sp__symtab **out)
{
	struct sp__symtab *tab;
	struct sp__vec cands;
	int err = -ENOMEM;
	size_t i;

	tab = sp__mem_calloc(mem, 1, sizeof(*tab));
	if (!tab)
		return -ENOMEM;
	tab->mem = *mem;
	sp__vec_init(&cands, sizeof(struct cand));
	if (symtab_elf && read_table(mem, symtab_elf, SHT_SYMTAB, &cands) < 0)
		goto out;
	if (dynsym_elf && read_table(mem, dynsym_elf, SHT_DYNSYM, &cands) < 0)
		goto out;
	if (cands.len)
		qsort(cands.data, cands.len, sizeof(struct cand), cmp_cand);
	if (dynsym_elf && add_plt(tab, dynsym_elf, &cands) < 0)
		goto out;
	if (cands.len) {
		tab->syms = sp__mem_calloc(mem, cands.len, sizeof(*tab->syms));
		if (!tab->syms)
			goto out;
		tab->cap = cands.len;
		tab->count = merge(cands.data, cands.len, tab->syms);
		tab->starts = sp__mem_calloc(mem, tab->count, sizeof(uint64_t));
		if (!tab->starts)
			goto out;
		for (i = 0; i < tab->count; i++)
			tab->starts[i] = tab->syms[i].addr;
		build_index(tab);
	}
	*out = tab;
	tab = NULL;
	err = 0;
out:
	sp__vec_fini(&cands, mem);
	sp__symtab_free(tab);
	return err;
}

void sp__symtab_free(struct sp__symtab *tab)
{
	if (!tab)
		return;
	if (tab->bucket)
		sp__mem_free(&tab->mem, tab->bucket,
			     (tab->nbuckets + 1) * sizeof(uint32_t));
	sp__mem_free(&tab->mem, tab->starts, tab->count * sizeof(uint64_t));
	sp__mem_free(&tab->mem, tab->syms, tab->cap * sizeof(*tab->syms));
	sp__mem_free(&tab->mem, tab->plt_names, tab->plt_bytes);
	sp__mem_free(&tab->mem, tab, sizeof(*tab));
}

size_t sp__symtab_count(const struct sp__symtab *tab)
{
	return tab ? tab->count : 0;
}

/* The last symbol at or before @addr among syms[lo..hi), then nesting. */
static const struct sp__sym *find_in(const struct sp__symtab *tab,
				     uint64_t addr, size_t lo, size_t hi)
{
	size_t i, k;

	/* Find the last symbol with start <= addr. */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (tab->starts[mid] <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == 0)
		return NULL;
	for (k = 0, i = lo; k < NESTED_WALK && i > 0; k++, i--) {
		if (addr < tab->syms[i - 1].end)
			return &tab->syms[i - 1];
	}
	return NULL;
}

const struct sp__sym *sp__symtab_find_bsearch(const struct sp__symtab *tab,
					      uint64_t addr)
{
	if (!tab || !tab->count)
		return NULL;
	return find_in(tab, addr, 0, tab->count);
}

const struct sp__sym *sp__symtab_find(const struct sp__symtab *tab,
				      uint64_t addr)
{
	uint64_t k;

	if (!tab || !tab->count || addr < tab->starts[0])
		return NULL;
	if (!tab->bucket)
		return find_in(tab, addr, 0, tab->count);
	k = (addr - tab->starts[0]) >> tab->shift;
	if (k >= tab->nbuckets)
		return find_in(tab, addr, tab->count, tab->count);
	/*
	 * Starts before bucket[k] are <= addr, starts from bucket[k+1] on
	 * are > addr: the last start <= addr is found by searching between.
	 */
	return find_in(tab, addr, tab->bucket[k], tab->bucket[k + 1]);
}
