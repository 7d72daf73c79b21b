/* SPDX-License-Identifier: MIT */
/* The native backend: ELF symbols plus DWARF lines and inline frames per image. */
#include <errno.h>
#include <string.h>

#include "logging.h"
#include "native_internal.h"
#include "sym_internal.h"

/*
 * One sp__native per image (layout in native_internal.h). Creation does
 * the cheap, bounded work: find the debug file (unless the image itself
 * carries .debug_info) and build the symbol table. DWARF is opened at the
 * first lookup that wants lines, and each CU's tables at the first lookup
 * inside that CU.
 *
 * A lookup returns frames innermost first:
 *
 *   out[0]       innermost inline instance   line-table row of @svma
 *   out[1]       its caller (inline)         call site of out[0]
 *   ...
 *   out[n-1]     the ELF symbol              call site of out[n-2]
 *                (offset = svma - start, inline_depth 0)
 *
 * Each frame's decl_line is its function's first line: the abstract
 * origin's DW_AT_decl_line for an inline instance, the subprogram's
 * covering @svma for the symbol (0 without DWARF there).
 *
 * With fewer than n slots the innermost frames are dropped (the function
 * itself is what a profile needs most); the remaining first frame keeps
 * its own call-site line. SP_NATIVE_NO_INLINE gives the symbol alone
 * with the line-table row (what addr2line prints without -i), and
 * SP_NATIVE_NO_LINES the symbol alone without DWARF.
 */

struct sp__native {
	struct sp__mem mem;
	struct sp__image *img;
	struct sp__image *debug; /* separate debug file, or NULL */
	struct sp__symtab *symtab;
	struct sp__dwarf_info *dwarf; /* NULL: no DWARF anywhere */
};

static bool image_has_dwarf(struct sp__image *img)
{
	bool has;

	sp__image_lock(img);
	has = sp__elf_has_dwarf(sp__image_elf(img));
	sp__image_unlock(img);
	return has;
}

/* .symtab of the debug file when it has one, else of the image. */
static int build_symtab(struct sp__native *n)
{
	Elf *elf = sp__image_elf(n->img), *symelf = elf;
	int err;

	if (n->debug)
		sp__image_lock(n->debug);
	sp__image_lock(n->img);
	if (n->debug && sp__elf_has_symtab(sp__image_elf(n->debug)))
		symelf = sp__image_elf(n->debug);
	err = sp__symtab_build(&n->mem, symelf, elf, &n->symtab);
	sp__image_unlock(n->img);
	if (n->debug)
		sp__image_unlock(n->debug);
	return err;
}

int sp__native_new(const struct sp__mem *mem, struct sp__image *img,
		   const char *debug_dirs, const struct sp_logger *logger,
		   struct sp__native **out)
{
	struct sp__image *dwarf_owner = NULL;
	struct sp__native *n;
	int err;

	n = sp__mem_calloc(mem, 1, sizeof(*n));
	if (!n)
		return -ENOMEM;
	n->mem = *mem;
	sp__image_ref(img);
	n->img = img;
	if (image_has_dwarf(img)) {
		dwarf_owner = img;
	} else {
		err = sp__debug_find(mem, img, debug_dirs, logger, &n->debug);
		if (err == -ENOMEM)
			goto err_free;
		if (n->debug && image_has_dwarf(n->debug))
			dwarf_owner = n->debug;
	}
	err = build_symtab(n);
	if (err == 0 && dwarf_owner)
		err = sp__dwarf_info_new(mem, dwarf_owner, debug_dirs, logger,
					 0, &n->dwarf);
	if (err < 0)
		goto err_free;
	sp__log(logger, SP_LOG_DEBUG, "%s: %zu symbols%s%s",
		sp__image_name(img), sp__symtab_count(n->symtab),
		n->debug ? ", debug file " : "",
		n->debug ? sp__image_name(n->debug) : "");
	*out = n;
	return 0;
err_free:
	sp__native_free(n);
	return -ENOMEM;
}

void sp__native_free(struct sp__native *native)
{
	if (!native)
		return;
	/* The DWARF tables borrow strings from the debug file's Elf. */
	sp__dwarf_info_free(native->dwarf);
	sp__symtab_free(native->symtab);
	if (native->debug)
		sp__image_unref(native->debug);
	sp__image_unref(native->img);
	sp__mem_free(&native->mem, native, sizeof(*native));
}

void sp__native_stats(const struct sp__native *native, size_t *symbols,
		      size_t *dwarf_bytes)
{
	*symbols = sp__symtab_count(native->symtab);
	*dwarf_bytes = sp__dwarf_info_bytes(native->dwarf);
}

const struct sp__symtab *sp__native_symtab(const struct sp__native *native)
{
	return native->symtab;
}

static void fill(struct sp_resolved_frame *f, const char *name,
		 const struct sp__src_loc *loc, uint32_t decl_line,
		 uint64_t offset, size_t depth)
{
	memset(f, 0, sizeof(*f));
	f->name = name;
	f->file = loc->file;
	f->line = loc->line;
	f->column = loc->column;
	f->decl_line = decl_line;
	f->offset = offset;
	f->inline_depth = (uint32_t)depth;
	f->kind = SP_RESOLVED_NATIVE;
	f->origin = SP_ORIGIN_ELF;
}

/*
 * The name of inline instance @inl: its DWARF name, or for a C++
 * function DWARF gives no linkage name (GCC's lambdas), the mangled
 * name of its out-of-line copy, if the ELF symbol at the copy's entry is
 * one ("_Z...", no clone suffix): two lambdas then stay two names, which
 * demangle to main::{lambda(int)#1}::operator()(int) const and #2.
 */
static const char *inline_frame_name(const struct sp__native *native,
				     const struct sp__inline *inl)
{
	const struct sp__sym *sym;

	if (!inl->origin_pc)
		return inl->name;
	sym = sp__symtab_find(native->symtab, inl->origin_pc);
	if (!sym || sym->addr != inl->origin_pc ||
	    strncmp(sym->name, "_Z", 2) != 0 || strchr(sym->name, '.'))
		return inl->name;
	return sym->name;
}

int sp__native_lookup(struct sp__native *native, uint64_t svma, uint32_t flags,
		      struct sp_resolved_frame *out, size_t cap)
{
	const struct sp__inline *chain[SP_DWARF_INLINE_MAX];
	struct sp__src_loc loc = { 0 };
	const struct sp__sym *sym;
	uint32_t decl_line = 0;
	size_t k, nc = 0, skip;
	int ret;

	sym = sp__symtab_find(native->symtab, svma);
	if (!sym || cap == 0)
		return 0;
	if (native->dwarf && !(flags & SP_NATIVE_NO_LINES)) {
		ret = sp__dwarf_info_lookup(native->dwarf, svma,
					    !(flags & SP_NATIVE_NO_INLINE),
					    &loc, &decl_line, chain,
					    SP_DWARF_INLINE_MAX);
		if (ret < 0)
			return ret;
		nc = (size_t)ret;
	}
	/* Frames 0..nc-1 are chain[], frame nc the symbol; keep the last cap. */
	skip = nc + 1 > cap ? nc + 1 - cap : 0;
	for (k = skip; k <= nc; k++) {
		const struct sp__src_loc *at = k ? &chain[k - 1]->call : &loc;

		if (k < nc)
			fill(&out[k - skip],
			     inline_frame_name(native, chain[k]), at,
			     chain[k]->decl_line, 0, nc - k);
		else
			fill(&out[k - skip], sym->name, at, decl_line,
			     svma - sym->addr, 0);
	}
	return (int)(nc + 1 - skip);
}
