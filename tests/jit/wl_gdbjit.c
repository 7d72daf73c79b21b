/* SPDX-License-Identifier: MIT */
/* Workload: a tiny JIT that registers in-memory ELF objects through GDB's JIT interface. */

/*
 * The program generates one function of machine code (no frame pointer:
 * only its CFI unwinds it), copies it into executable anonymous memory
 * and registers an ELF object describing it with GDB's JIT interface: a
 * .symtab naming it and an .eh_frame describing its stack. The function
 * calls back into the program, where the CPU time is spent, so a sample
 * unwinds host -> JIT -> host:
 *
 *   wl_spin (host) <- jit_phase_a (JIT code) <- wl_run_jit <- main
 *
 * Phases (each argv[1] seconds):
 *   A  object naming the code jit_phase_a registered, run, removed
 *      (unregistered, its ELF freed, the code page unmapped)
 *   -  a pause of GAP_S with nothing registered (longer than the
 *      recorder's lag behind the samples, even on a loaded machine: the
 *      recorder learns of objects by looking at the live list)
 *   B  the same addresses mapped again, an object naming the code
 *      jit_phase_b registered, run, removed
 * argv[2], when given, receives "a_end b_start" (CLOCK_MONOTONIC ns):
 * samples before a_end ran jit_phase_a, after b_start jit_phase_b.
 *
 *   code   48 83 ec 18   sub  $24, %rsp      CFA rsp+8, then rsp+32
 *          ff d7         call *%rdi
 *          48 83 c4 18   add  $24, %rsp
 *          c3            ret                 CFA rsp+8
 */
#define _GNU_SOURCE
#include <elf.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "wl_common.h"

#define GAP_S 2.0
#define CODE_ADDR 0x7e5a00000000ull /* fixed, so phase B reuses it */

/* GDB's interface (gdb/jit.h). */
struct jit_code_entry {
	struct jit_code_entry *next_entry;
	struct jit_code_entry *prev_entry;
	const char *symfile_addr;
	uint64_t symfile_size;
};

struct jit_descriptor {
	uint32_t version;
	uint32_t action_flag;
	struct jit_code_entry *relevant_entry;
	struct jit_code_entry *first_entry;
};

struct jit_descriptor __jit_debug_descriptor = { 1, 0, NULL, NULL };

WL_NAMED void __jit_debug_register_code(void);
WL_NAMED void __jit_debug_register_code(void)
{
	__asm__ volatile("" ::: "memory");
}

static const uint8_t code[] = { 0x48, 0x83, 0xec, 0x18, 0xff, 0xd7,
				0x48, 0x83, 0xc4, 0x18, 0xc3 };

/* ---- the ELF object ----------------------------------------------------- */

struct object {
	uint8_t *buf;
	size_t len;
};

static void put(uint8_t *b, size_t *at, const void *p, size_t n)
{
	memcpy(b + *at, p, n);
	*at += n;
}

static void put32(uint8_t *b, size_t *at, uint32_t v)
{
	put(b, at, &v, 4);
}

/*
 * .eh_frame placed (in the object's address space) at @eh_addr: a CIE
 * with pc-relative FDE pointers, one FDE for the code at CODE_ADDR.
 */
static size_t eh_frame(uint8_t *b, uint64_t eh_addr)
{
	static const uint8_t
		cie[] = {
			0x14, 0,    0,	 0,    0,
			0,    0,    0, /* length 20, CIE id 0 */
			1,    'z',  'R', 0,    1,
			0x78, 16,   /* v1 "zR" caf 1 daf -8 ra 16 */
			1,    0x1b, /* aug length 1, pcrel|sdata4 */
			0x0c, 7,    8,	 0x90, 1, /* cfa rsp+8; ra at cfa-8 */
			0,    0,		  /* padding */
		};
	static const uint8_t insns[] = {
		0x44, 0x0e, 32, /* advance 4: cfa offset 32 */
		0x46, 0x0e, 8,	/* advance 6: cfa offset 8 */
		0,
	};
	size_t at = 0;
	int32_t pcrel;

	put(b, &at, cie, sizeof(cie));
	put32(b, &at, 4 + 4 + 4 + 1 + sizeof(insns)); /* length: 20 */
	put32(b, &at, (uint32_t)at); /* CIE pointer: back to offset 0 */
	pcrel = (int32_t)(int64_t)(CODE_ADDR - (eh_addr + at));
	put(b, &at, &pcrel, 4);
	put32(b, &at, sizeof(code)); /* pc range */
	b[at++] = 0;		     /* augmentation length */
	put(b, &at, insns, sizeof(insns));
	put32(b, &at, 0); /* terminator */
	return at;
}

/* An ET_EXEC object: .text (NOBITS, at CODE_ADDR), .eh_frame, symbols. */
static struct object make_object(const char *name)
{
	enum {
		NULLS,
		TEXT,
		EH,
		SYMTAB,
		STRTAB,
		SHSTRTAB,
		NSECT
	};
	static const char shstr[] =
		"\0.text\0.eh_frame\0.symtab\0.strtab\0.shstrtab";
	struct object o;
	Elf64_Ehdr eh = { 0 };
	Elf64_Shdr sh[NSECT] = { { 0 } };
	Elf64_Sym sym[2] = { { 0 } };
	uint64_t eh_addr = CODE_ADDR + 0x1000;
	size_t at = sizeof(eh), eh_off, eh_len, sym_off, str_off, shstr_off;
	size_t name_len = strlen(name);

	o.len = 4096;
	o.buf = calloc(1, o.len);
	if (!o.buf)
		exit(1);
	eh_off = at;
	eh_len = eh_frame(o.buf + at, eh_addr);
	at += eh_len;
	at = (at + 7) & ~(size_t)7;
	sym_off = at;
	sym[1].st_name = 1;
	sym[1].st_info = ELF64_ST_INFO(STB_GLOBAL, STT_FUNC);
	sym[1].st_shndx = TEXT;
	sym[1].st_value = CODE_ADDR;
	sym[1].st_size = sizeof(code);
	put(o.buf, &at, sym, sizeof(sym));
	str_off = at;
	o.buf[at++] = 0;
	put(o.buf, &at, name, name_len + 1);
	shstr_off = at;
	put(o.buf, &at, shstr, sizeof(shstr));
	at = (at + 7) & ~(size_t)7;
	sh[TEXT] = (Elf64_Shdr){ .sh_name = 1,
				 .sh_type = SHT_NOBITS,
				 .sh_flags = SHF_ALLOC | SHF_EXECINSTR,
				 .sh_addr = CODE_ADDR,
				 .sh_size = sizeof(code),
				 .sh_addralign = 16 };
	sh[EH] = (Elf64_Shdr){ .sh_name = 7,
			       .sh_type = SHT_PROGBITS,
			       .sh_flags = SHF_ALLOC,
			       .sh_addr = eh_addr,
			       .sh_offset = eh_off,
			       .sh_size = eh_len,
			       .sh_addralign = 8 };
	sh[SYMTAB] = (Elf64_Shdr){ .sh_name = 17,
				   .sh_type = SHT_SYMTAB,
				   .sh_offset = sym_off,
				   .sh_size = sizeof(sym),
				   .sh_link = STRTAB,
				   .sh_info = 1,
				   .sh_addralign = 8,
				   .sh_entsize = sizeof(Elf64_Sym) };
	sh[STRTAB] = (Elf64_Shdr){ .sh_name = 25,
				   .sh_type = SHT_STRTAB,
				   .sh_offset = str_off,
				   .sh_size = name_len + 2,
				   .sh_addralign = 1 };
	sh[SHSTRTAB] = (Elf64_Shdr){ .sh_name = 33,
				     .sh_type = SHT_STRTAB,
				     .sh_offset = shstr_off,
				     .sh_size = sizeof(shstr),
				     .sh_addralign = 1 };
	memcpy(eh.e_ident, ELFMAG, SELFMAG);
	eh.e_ident[EI_CLASS] = ELFCLASS64;
	eh.e_ident[EI_DATA] = ELFDATA2LSB;
	eh.e_ident[EI_VERSION] = EV_CURRENT;
	eh.e_type = ET_EXEC;
	eh.e_machine = EM_X86_64;
	eh.e_version = EV_CURRENT;
	eh.e_ehsize = sizeof(eh);
	eh.e_shoff = at;
	eh.e_shentsize = sizeof(Elf64_Shdr);
	eh.e_shnum = NSECT;
	eh.e_shstrndx = SHSTRTAB;
	memcpy(o.buf, &eh, sizeof(eh));
	memcpy(o.buf + at, sh, sizeof(sh));
	o.len = at + sizeof(sh);
	return o;
}

/* ---- registration --------------------------------------------------------- */

static struct jit_code_entry *jit_register(const struct object *o)
{
	struct jit_code_entry *e = calloc(1, sizeof(*e));

	if (!e)
		exit(1);
	e->symfile_addr = (const char *)o->buf;
	e->symfile_size = o->len;
	e->next_entry = __jit_debug_descriptor.first_entry;
	if (e->next_entry)
		e->next_entry->prev_entry = e;
	__jit_debug_descriptor.first_entry = e;
	__jit_debug_descriptor.relevant_entry = e;
	__jit_debug_descriptor.action_flag = 1; /* JIT_REGISTER_FN */
	__jit_debug_register_code();
	return e;
}

static void jit_unregister(struct jit_code_entry *e)
{
	if (e->prev_entry)
		e->prev_entry->next_entry = e->next_entry;
	else
		__jit_debug_descriptor.first_entry = e->next_entry;
	if (e->next_entry)
		e->next_entry->prev_entry = e->prev_entry;
	__jit_debug_descriptor.relevant_entry = e;
	__jit_debug_descriptor.action_flag = 2; /* JIT_UNREGISTER_FN */
	__jit_debug_register_code();
	free(e);
}

static void *map_code(void)
{
	void *p =
		mmap((void *)(uintptr_t)CODE_ADDR, 4096, PROT_READ | PROT_WRITE,
		     MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);

	if (p == MAP_FAILED || (uintptr_t)p != CODE_ADDR) {
		perror("mmap");
		exit(1);
	}
	memcpy(p, code, sizeof(code));
	if (mprotect(p, 4096, PROT_READ | PROT_EXEC)) {
		perror("mprotect");
		exit(1);
	}
	return p;
}

/* ---- the work ---------------------------------------------------------------- */

static volatile unsigned sink;
static double spin_until;

WL_NAMED void wl_spin(void);
WL_NAMED void wl_spin(void)
{
	unsigned acc = sink;

	WL_SPIN(acc);
	sink = acc;
}

WL_NAMED void wl_run_jit(void (*fn)(void (*)(void)), double seconds);
WL_NAMED void wl_run_jit(void (*fn)(void (*)(void)), double seconds)
{
	spin_until = wl_now() + seconds;
	while (wl_now() < spin_until)
		fn(wl_spin);
}

static uint64_t now_ns(void)
{
	return (uint64_t)(wl_now() * 1e9);
}

static void phase(const char *name, double seconds)
{
	struct object o = make_object(name);
	void (*fn)(void (*)(void));
	struct jit_code_entry *e;
	void *mem = map_code();

	memcpy(&fn, &mem, sizeof(fn)); /* the generated code's entry */
	e = jit_register(&o);
	wl_run_jit(fn, seconds);
	jit_unregister(e);
	free(o.buf);
	munmap(mem, 4096);
}

int main(int argc, char **argv)
{
	double seconds = wl_duration(argc, argv);
	uint64_t a_end, b_start;
	FILE *f;

	phase("jit_phase_a", seconds);
	a_end = now_ns();
	usleep((useconds_t)(GAP_S * 1e6));
	b_start = now_ns();
	phase("jit_phase_b", seconds);
	if (argc > 2 && (f = fopen(argv[2], "w"))) {
		fprintf(f, "%llu %llu\n", (unsigned long long)a_end,
			(unsigned long long)b_start);
		fclose(f);
	}
	return 0;
}
