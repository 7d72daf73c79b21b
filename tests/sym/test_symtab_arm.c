/* SPDX-License-Identifier: MIT */
/* Symbol table of AArch64 files on any host: mapping symbols are skipped. */

/*
 * The test writes two tiny ELF files with libelf, identical but for
 * e_machine: a .text of 0x100 bytes at 0x1000 with a function f (sized
 * FUNC, 0x1000-0x1040), an assembly routine g (sized NOTYPE, 0x1040-
 * 0x1080), and the mapping symbols an Arm toolchain adds: $x at f and
 * g, $d at 0x1080 (a literal pool), and a sized "$x.lit" NOTYPE over it
 * that would otherwise look like a routine. On EM_AARCH64 the table holds
 * f and g only, and 0x1080 (the pool) has no symbol; on EM_X86_64 the
 * same names are ordinary symbols, unsized ones too (symtab.c), so the
 * pool is named there, "$d" (two local aliases: the shorter name wins):
 * the rule follows the file's machine, not the host's.
 */
#include <fcntl.h>
#include <gelf.h>
#include <stdlib.h>
#include <unistd.h>

#include "check.h"
#include "native_internal.h"

static const char strtab[] = "\0f\0g\0$x\0$d\0$x.lit\0.text\0.symtab\0"
			     ".strtab\0.shstrtab";
enum {
	N_F = 1,
	N_G = 3,
	N_X = 5,
	N_D = 8,
	N_XLIT = 11,
	N_TEXT = 18,
	N_SYMTAB = 24,
	N_STRTAB = 32,
	N_SHSTRTAB = 40
};

static Elf_Scn *add_scn(Elf *e, Elf64_Word name, Elf64_Word type,
			Elf64_Xword flags, uint64_t addr, void *buf,
			size_t size, Elf64_Xword entsize)
{
	Elf_Scn *scn = elf_newscn(e);
	Elf_Data *d = elf_newdata(scn);
	GElf_Shdr sh;

	CHECK_PTR(d);
	d->d_buf = buf;
	d->d_size = size;
	d->d_type = type == SHT_SYMTAB ? ELF_T_SYM : ELF_T_BYTE;
	d->d_align = 8;
	CHECK(gelf_getshdr(scn, &sh) != NULL);
	sh.sh_name = name;
	sh.sh_type = type;
	sh.sh_flags = flags;
	sh.sh_addr = addr;
	sh.sh_entsize = entsize;
	CHECK(gelf_update_shdr(scn, &sh));
	return scn;
}

static void write_elf(const char *path, unsigned machine)
{
	static unsigned char text[0x100];
	static char names[sizeof(strtab)];
	static Elf64_Sym syms[7];
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	Elf_Scn *strscn;
	GElf_Ehdr eh;
	GElf_Shdr sh;
	Elf *e;

	CHECK(fd >= 0);
	memcpy(names, strtab, sizeof(strtab));
	memset(syms, 0, sizeof(syms));
	/* index 0 is the null symbol; text is section 1 */
	syms[1] = (Elf64_Sym){ N_X,    ELF64_ST_INFO(STB_LOCAL, STT_NOTYPE),
			       0,      1,
			       0x1000, 0 };
	syms[2] = (Elf64_Sym){ N_X,    ELF64_ST_INFO(STB_LOCAL, STT_NOTYPE),
			       0,      1,
			       0x1040, 0 };
	syms[3] = (Elf64_Sym){ N_D,    ELF64_ST_INFO(STB_LOCAL, STT_NOTYPE),
			       0,      1,
			       0x1080, 0 };
	syms[4] = (Elf64_Sym){ N_XLIT, ELF64_ST_INFO(STB_LOCAL, STT_NOTYPE),
			       0,      1,
			       0x1080, 0x40 };
	syms[5] = (Elf64_Sym){ N_F,    ELF64_ST_INFO(STB_GLOBAL, STT_FUNC),
			       0,      1,
			       0x1000, 0x40 };
	syms[6] = (Elf64_Sym){ N_G,    ELF64_ST_INFO(STB_GLOBAL, STT_NOTYPE),
			       0,      1,
			       0x1040, 0x40 };
	e = elf_begin(fd, ELF_C_WRITE, NULL);
	CHECK_PTR(e);
	CHECK(gelf_newehdr(e, ELFCLASS64) != NULL);
	CHECK(gelf_getehdr(e, &eh) != NULL);
	eh.e_ident[EI_DATA] = ELFDATA2LSB;
	eh.e_type = ET_DYN;
	eh.e_machine = (Elf64_Half)machine;
	eh.e_version = EV_CURRENT;
	add_scn(e, N_TEXT, SHT_PROGBITS, SHF_ALLOC | SHF_EXECINSTR, 0x1000,
		text, sizeof(text), 0);
	add_scn(e, N_SYMTAB, SHT_SYMTAB, 0, 0, syms, sizeof(syms),
		sizeof(Elf64_Sym));
	strscn =
		add_scn(e, N_STRTAB, SHT_STRTAB, 0, 0, names, sizeof(names), 0);
	add_scn(e, N_SHSTRTAB, SHT_STRTAB, 0, 0, names, sizeof(names), 0);
	/* .symtab links .strtab (section 3); .shstrtab is section 4. */
	CHECK(gelf_getshdr(elf_getscn(e, 2), &sh) != NULL);
	sh.sh_link = (Elf64_Word)elf_ndxscn(strscn);
	sh.sh_info = 5; /* first non-local symbol */
	CHECK(gelf_update_shdr(elf_getscn(e, 2), &sh));
	eh.e_shstrndx = 4;
	CHECK(gelf_update_ehdr(e, &eh));
	CHECK(elf_update(e, ELF_C_WRITE) > 0);
	elf_end(e);
	close(fd);
}

static const char *name_at(const struct sp__symtab *tab, uint64_t addr)
{
	const struct sp__sym *s = sp__symtab_find(tab, addr);

	return s ? s->name : NULL;
}

static void check_machine(const char *path, unsigned machine)
{
	struct sp__symtab *tab;
	struct sp__mem mem;
	const char *at_pool;
	int fd;
	Elf *elf;

	write_elf(path, machine);
	sp__mem_init(&mem, NULL);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	CHECK(fd >= 0);
	elf = elf_begin(fd, ELF_C_READ, NULL);
	CHECK_PTR(elf);
	CHECK_OK(sp__symtab_build(&mem, elf, NULL, &tab));
	CHECK(strcmp(name_at(tab, 0x1000), "f") == 0);
	CHECK(strcmp(name_at(tab, 0x103f), "f") == 0);
	CHECK(strcmp(name_at(tab, 0x1040), "g") == 0);
	at_pool = name_at(tab, 0x1080);
	if (machine == EM_AARCH64) {
		CHECK_EQ(sp__symtab_count(tab), 2);
		CHECK(at_pool == NULL);
	} else {
		CHECK_EQ(sp__symtab_count(tab), 3);
		CHECK(at_pool && strcmp(at_pool, "$d") == 0);
	}
	sp__symtab_free(tab);
	elf_end(elf);
	close(fd);
	unlink(path);
}

int main(void)
{
	char path[64];

	CHECK(elf_version(EV_CURRENT) != EV_NONE);
	snprintf(path, sizeof(path), "/tmp/sp-symtab-arm-%d", (int)getpid());
	check_machine(path, EM_AARCH64);
	check_machine(path, EM_X86_64);
	return T_EXIT_PASS;
}
