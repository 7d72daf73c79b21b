/* SPDX-License-Identifier: MIT */
/* AArch64 rows of the CFI table: tracked registers, packing, PLT stubs. */
#include <errno.h>
#include <string.h>

#include <gelf.h>

#include "unwind_internal.h"

/*
 * What cfi_build.c asks of AArch64 (unwind_internal.h). A normal row
 * tracks X30 (the return address column), X29 and X19-X28. libdw applies
 * the AArch64 ABI's initial rules (X19-X30 same value), so an X30 the CIE
 * leaves alone comes back "same": the return address is still in the
 * link register (SP__ROW_RA_LR); only an explicit DW_CFA_undefined X30
 * (glibc's _start) is the outermost frame. Pointer authentication
 * (DW_CFA_AARCH64_negate_ra_state) needs no rule: the step strips every
 * return address (arch/aarch64_regs.h).
 *
 * PLT stubs have no CFI (ld emits none on AArch64) and a sample inside
 * one is common: a stub loads the target into X16/X17 and branches, SP
 * and X30 untouched, so the caller is in X30 (CFA = SP, RA in X30).
 * PLT0, the lazy-binding entry, first pushes X16 and X30
 * (stp x16, x30, [sp, #-16]!): after that instruction CFA = SP + 16,
 * X30 at CFA - 8. sp__arch_synth describes .plt and .iplt so; frame
 * pointers would skip the stub's caller, whose return address is only
 * in X30.
 *
 * The vDSO's signal trampoline, __kernel_rt_sigreturn, has no CFI since
 * Linux 5.x (arch/arm64/kernel/vdso/sigreturn.S comments its directives
 * out), and its frame record only leads past the interrupted function.
 * sp__arch_synth gives it a signal row (the step reads the sigcontext),
 * from its symbol, over the nop before it too: a return address - 1
 * lands there.
 */

const uint8_t sp__arch_tracked_regs[] = {
	SP_AARCH64_X30, SP_AARCH64_X29, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28
};
const size_t sp__arch_ntracked = sizeof(sp__arch_tracked_regs);

/* An undefined callee-saved register keeps its value (AAPCS64). */
void sp__arch_rule_default(unsigned reg, struct sp__cfi_rule *rule)
{
	if (reg != SP_AARCH64_X30)
		rule->kind = SP__RULE_SAME;
}

bool sp__arch_pack(const struct sp__cfi_extra *x, struct sp__cfi_rules *row)
{
	const struct sp__cfi_rule *ra = &x->rule[SP_AARCH64_X30];
	const struct sp__cfi_rule *fp = &x->rule[SP_AARCH64_X29];
	uint64_t others = x->mask &
			  ~((0x3ffull << 19) | (1ull << SP_AARCH64_X29) |
			    (1ull << SP_AARCH64_X30));

	if (others || !sp__cfi_pack_saves(x, &row->saves))
		return false;
	if (ra->kind == SP__RULE_UNDEF)
		row->flags |= SP__ROW_RA_UNDEF;
	else if (ra->kind == SP__RULE_SAME)
		row->flags |= SP__ROW_RA_LR;
	else if (ra->kind == SP__RULE_AT_CFA && sp__cfi_small_off(ra))
		row->ra = (int8_t)(ra->off / 8);
	else
		return false;
	if (fp->kind == SP__RULE_UNDEF)
		row->flags |= SP__ROW_FP_UNDEF;
	else if (fp->kind == SP__RULE_AT_CFA && sp__cfi_small_off(fp))
		row->flags |= SP__ROW_FP_SAVED;
	else if (fp->kind != SP__RULE_SAME)
		return false;
	row->fp = fp->kind == SP__RULE_AT_CFA ? (int8_t)(fp->off / 8) : 0;
	return true;
}

/* stp x16, x30, [sp, #-16]! */
#define PLT0_PUSH 0xa9bf7bf0u
#define PLT0_SIZE 32

static int add(const struct sp__mem *mem, struct sp__vec *out, uint64_t start,
	       uint64_t end, const struct sp__cfi_rules *rules)
{
	struct sp__cfi_synth sy = { .start = start, .end = end };

	if (end <= start)
		return 0;
	sy.rules = *rules;
	return sp__vec_push(out, mem, &sy);
}

/* The offset of PLT0's push in the first bytes of @scn, or -1. */
static long plt0_push(Elf_Scn *scn, const GElf_Shdr *sh)
{
	Elf_Data *d = elf_getdata(scn, NULL);
	const unsigned char *p;
	uint32_t insn;
	size_t off;

	if (sh->sh_type != SHT_PROGBITS || !d || !d->d_buf)
		return -1;
	p = d->d_buf;
	for (off = 0; off + 4 <= d->d_size && off < PLT0_SIZE; off += 4) {
		insn = (uint32_t)p[off] | (uint32_t)p[off + 1] << 8 |
		       (uint32_t)p[off + 2] << 16 | (uint32_t)p[off + 3] << 24;
		if (insn == PLT0_PUSH)
			return (long)off;
	}
	return -1;
}

/* The rows of one PLT section [lo, hi). */
static int plt_rows(const struct sp__mem *mem, Elf_Scn *scn,
		    const GElf_Shdr *sh, struct sp__vec *out)
{
	static const struct sp__cfi_rules in_lr = { .cfa_reg = SP_AARCH64_SP,
						    .flags = SP__ROW_RA_LR };
	static const struct sp__cfi_rules pushed = { .cfa_off = 16,
						     .cfa_reg = SP_AARCH64_SP,
						     .ra = -1 };
	uint64_t lo = sh->sh_addr, hi = lo + sh->sh_size;
	long push = plt0_push(scn, sh);
	int err;

	if (push < 0 || sh->sh_size < PLT0_SIZE)
		return add(mem, out, lo, hi, &in_lr);
	err = add(mem, out, lo, lo + (uint64_t)push + 4, &in_lr);
	if (!err)
		err = add(mem, out, lo + (uint64_t)push + 4, lo + PLT0_SIZE,
			  &pushed);
	if (!err)
		err = add(mem, out, lo + PLT0_SIZE, hi, &in_lr);
	return err;
}

/* The signal row of __kernel_rt_sigreturn when @scn's symbols have it. */
static int sigreturn_row(const struct sp__mem *mem, Elf *elf, Elf_Scn *scn,
			 const GElf_Shdr *sh, struct sp__vec *out)
{
	static const struct sp__cfi_rules signal = { .cfa_reg = SP_AARCH64_SP,
						     .flags = SP__ROW_SIGNAL };
	Elf_Data *d = elf_getdata(scn, NULL);
	const char *name;
	size_t i, n;
	GElf_Sym sym;

	if (!d || sh->sh_entsize == 0)
		return 0;
	n = d->d_size / sh->sh_entsize;
	for (i = 1; i < n; i++) {
		if (!gelf_getsym(d, (int)i, &sym) || sym.st_value < 4 ||
		    sym.st_value > UINT64_MAX - 8)
			continue;
		name = elf_strptr(elf, sh->sh_link, sym.st_name);
		if (name && strcmp(name, "__kernel_rt_sigreturn") == 0)
			return add(mem, out, sym.st_value - 4, sym.st_value + 8,
				   &signal);
	}
	return 0;
}

int sp__arch_synth(const struct sp__mem *mem, Elf *elf, struct sp__vec *out)
{
	Elf_Scn *scn = NULL;
	size_t shstrndx;
	GElf_Shdr sh;
	const char *name;
	int err = 0;

	if (elf_getshdrstrndx(elf, &shstrndx) != 0)
		return 0;
	while (!err && (scn = elf_nextscn(elf, scn)) != NULL) {
		if (!gelf_getshdr(scn, &sh) || !(sh.sh_flags & SHF_EXECINSTR) ||
		    sh.sh_size == 0 || sh.sh_addr > UINT64_MAX - sh.sh_size)
			continue;
		name = elf_strptr(elf, shstrndx, sh.sh_name);
		if (name && (!strcmp(name, ".plt") || !strcmp(name, ".iplt")))
			err = plt_rows(mem, scn, &sh, out);
	}
	/* __kernel_rt_sigreturn, among the dynamic symbols (the vDSO). */
	scn = NULL;
	while (!err && (scn = elf_nextscn(elf, scn)) != NULL)
		if (gelf_getshdr(scn, &sh) && sh.sh_type == SHT_DYNSYM)
			err = sigreturn_row(mem, elf, scn, &sh, out);
	return err;
}
