/* SPDX-License-Identifier: MIT */
/* Oracle test: names of unsized symbols, PLT stubs, stripped non-PIE code, __restore_rt, lambdas. */
#include "native_test.h"

#include <dlfcn.h>
#include <signal.h>

#include <stackpulse.h>

/*
 * Each check compares our names with what binutils and elfutils print
 * for the same address of a program built for it (names_prog.c,
 * names_lambda.cpp, meson.build), never with our own earlier output:
 *
 *  - symbols without a size (assembly labels, ld.so's _start and
 *    _dl_start_user): every byte of names_prog's labels and of ld.so's
 *    entry code is named as eu-addr2line names it (the nearest preceding
 *    symbol, not past a sized symbol's end or the next symbol);
 *  - PLT stubs: each "NAME@plt" that objdump prints in .plt, .plt.sec
 *    and .plt.got (lazy, -z now, IBT, PIE, stripped); in the static
 *    binary, each .plt jump's GOT slot (objdump) has an IRELATIVE
 *    relocation (readelf) whose resolver eu-addr2line names NAME;
 *  - a stripped non-PIE executable: the address-only name of names_work
 *    carries the ELF virtual address, the one eu-addr2line names
 *    names_work in the unstripped copy (sp_symbolizer_resolve_raw);
 *  - the return address of a signal handler (this process's
 *    __restore_rt) is named as eu-addr2line names it (__restore_rt with
 *    libc6-dbg), the byte before it is not (x86-64 only: on AArch64 the
 *    handler returns into the vDSO's __kernel_rt_sigreturn, no file for
 *    eu-addr2line, and qemu-user has none; test_signal_unwind names it);
 *  - two lambdas inlined into run<>, GCC (no DW_AT_linkage_name) and
 *    clang (one): each inlined instance, found with its source line by
 *    eu-addr2line, carries the ELF name of that lambda's out-of-line
 *    copy, so the two stay two names, which c++filt shows as two
 *    lambdas.
 * Arguments: the programs of meson.build, told apart by file name.
 */

#define ADDRS_MAX 4096
#define OUT_MAX (SP_DWARF_INLINE_MAX + 1)
#define STUBS_MAX 64

static struct sp__mem mem;
static int argc_;
static char **argv_;

/* The argument whose file name is @name, or NULL. */
static const char *prog(const char *name)
{
	int i;

	for (i = 1; i < argc_; i++) {
		const char *b = strrchr(argv_[i], '/');

		if (strcmp(b ? b + 1 : argv_[i], name) == 0)
			return argv_[i];
	}
	return NULL;
}

/* The value of symbol @name in @path's .symtab (0: none). */
static uint64_t elf_symbol(const char *path, const char *name, uint64_t *size)
{
	Elf_Scn *scn = NULL;
	GElf_Shdr shdr;
	uint64_t addr = 0;
	Elf *elf;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	CHECK(fd >= 0);
	elf_version(EV_CURRENT);
	elf = elf_begin(fd, ELF_C_READ, NULL);
	while (elf && !addr && (scn = elf_nextscn(elf, scn)) != NULL) {
		Elf_Data *d = elf_getdata(scn, NULL);
		size_t i;

		if (!gelf_getshdr(scn, &shdr) || shdr.sh_type != SHT_SYMTAB)
			continue;
		for (i = 1; d && i < d->d_size / shdr.sh_entsize; i++) {
			GElf_Sym s;
			const char *n;

			if (!gelf_getsym(d, (int)i, &s))
				continue;
			n = elf_strptr(elf, shdr.sh_link, s.st_name);
			if (n && strcmp(n, name) == 0 && s.st_value) {
				addr = s.st_value;
				if (size)
					*size = s.st_size;
				break;
			}
		}
	}
	if (elf)
		elf_end(elf);
	close(fd);
	return addr;
}

/* Our outermost (ELF symbol) name of @svma, "" when none. */
static const char *our_symbol(struct sp__native *native, uint64_t svma)
{
	static struct sp_resolved_frame fr[OUT_MAX];
	int n = sp__native_lookup(native, svma, SP_NATIVE_NO_LINES, fr, 1);

	CHECK(n >= 0);
	return n ? fr[0].name : "";
}

/* eu-addr2line's symbol of each address equals ours; returns matches. */
static size_t same_symbols(const char *what, const char *path,
			   const uint64_t *addrs, size_t n)
{
	struct nt_rec *recs = calloc(n, sizeof(*recs));
	struct sp__native *native = nt_open(&mem, path, NULL);
	size_t i, named = 0;

	CHECK_PTR(recs);
	CHECK_EQ_INT(nt_addr2line(path, addrs, n, recs), 0);
	for (i = 0; i < n; i++) {
		const char *ours = our_symbol(native, addrs[i]);

		if (strcmp(ours, recs[i].sym) != 0) {
			fprintf(stderr,
				"%s 0x%" PRIx64 ": ours \"%s\", "
				"eu-addr2line \"%s\"\n",
				what, addrs[i], ours, recs[i].sym);
			exit(T_EXIT_FAIL);
		}
		named += ours[0] != 0;
	}
	sp__native_free(native);
	free(recs);
	return named;
}

/* One name at @svma of @path, ours: for the checks by name below. */
static void expect_symbol(const char *path, uint64_t svma, const char *want)
{
	struct sp__native *native = nt_open(&mem, path, NULL);

	if (strcmp(our_symbol(native, svma), want) != 0) {
		fprintf(stderr, "%s 0x%" PRIx64 ": \"%s\", want \"%s\"\n", path,
			svma, our_symbol(native, svma), want);
		exit(T_EXIT_FAIL);
	}
	sp__native_free(native);
}

/* ---- symbols without a size ------------------------------------------- */

static void test_unsized(const char *path)
{
	uint64_t entry = elf_symbol(path, "names_entry", NULL);
	uint64_t tail = elf_symbol(path, "names_tail", NULL);
	uint64_t sized, size, addrs[ADDRS_MAX];
	size_t i, n = 0;

	sized = elf_symbol(path, "names_sized", &size);
	CHECK(entry && tail > entry && sized && size);
	for (i = entry; i < tail + 3 && n < ADDRS_MAX; i++)
		addrs[n++] = i;
	printf("labels: %zu of %zu bytes named as eu-addr2line names them\n",
	       same_symbols("names_prog", path, addrs, n), n);
	/* What eu-addr2line said, spelt out. */
	expect_symbol(path, entry + 2, "names_entry");
	expect_symbol(path, elf_symbol(path, "names_entry_user", NULL),
		      "names_entry_user");
	expect_symbol(path, elf_symbol(path, "names_inner", NULL),
		      "names_sized");
	expect_symbol(path, sized + size, "");
	expect_symbol(path, tail + 1, "names_tail");
}

/* ld.so's entry code: _start, then _dl_start_user, both unsized. */
static void test_ld_so(void)
{
	const char *path = "/lib64/ld-linux-x86-64.so.2";
	uint64_t addrs[64];
	GElf_Ehdr ehdr;
	size_t i, named;
	Elf *elf;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0) {
		printf("ld.so: %s missing, part skipped\n", path);
		return;
	}
	elf = elf_begin(fd, ELF_C_READ, NULL);
	CHECK(elf && gelf_getehdr(elf, &ehdr));
	for (i = 0; i < 64; i++)
		addrs[i] = ehdr.e_entry + i;
	elf_end(elf);
	close(fd);
	named = same_symbols("ld.so", path, addrs, 64);
	printf("ld.so: %zu of 64 bytes from the entry named as eu-addr2line "
	       "names them\n",
	       named);
}

/* ---- PLT stubs -------------------------------------------------------- */

struct stub {
	uint64_t addr;
	char name[NT_NAME_MAX];
};

/* "ADDR <NAME@plt>:" lines of objdump -d: binutils' names of the stubs. */
static size_t objdump_stubs(const char *path, struct stub *out)
{
	char cmd[1024], line[1024], name[NT_NAME_MAX];
	uint64_t addr;
	size_t n = 0;
	FILE *p;

	snprintf(cmd, sizeof(cmd), "objdump -d --no-show-raw-insn '%s'", path);
	p = popen(cmd, "r");
	CHECK_PTR(p);
	while (fgets(line, sizeof(line), p))
		if (sscanf(line, "%" SCNx64 " <%511[^>]>:", &addr, name) == 2 &&
		    strstr(name, "@plt") && !strchr(name, '-') &&
		    !strchr(name, '+') && n < STUBS_MAX) {
			out[n].addr = addr;
			snprintf(out[n].name, sizeof(out[n].name), "%s", name);
			n++;
		}
	CHECK_EQ(pclose(p), 0);
	return n;
}

static void test_plt(const char *path)
{
	struct stub stubs[STUBS_MAX];
	size_t i, n = objdump_stubs(path, stubs);
	const char *b = strrchr(path, '/') + 1;

	printf("%s: %zu PLT stubs named by objdump\n", b, n);
	CHECK(n >= 3);
	for (i = 0; i < n; i++) {
		expect_symbol(path, stubs[i].addr, stubs[i].name);
		expect_symbol(path, stubs[i].addr + 3, stubs[i].name);
	}
}

/* The addend of the IRELATIVE relocation of GOT slot @slot (readelf). */
static uint64_t irelative_addend(const char *path, uint64_t slot)
{
	char cmd[1024], line[1024], type[64];
	uint64_t off, info, addend, found = 0;
	FILE *p;

	snprintf(cmd, sizeof(cmd), "readelf -rW '%s'", path);
	p = popen(cmd, "r");
	CHECK_PTR(p);
	while (fgets(line, sizeof(line), p))
		if (sscanf(line, "%" SCNx64 " %" SCNx64 " %63s %" SCNx64, &off,
			   &info, type, &addend) == 4 &&
		    off == slot && strcmp(type, "R_X86_64_IRELATIVE") == 0)
			found = addend;
	pclose(p);
	return found;
}

/*
 * The static binary's .plt: objdump prints each stub's jmp with its
 * GOT slot ("jmp *X(%rip) # SLOT"), readelf the slot's IRELATIVE
 * relocation, eu-addr2line the name of its resolver.
 */
static void test_plt_static(const char *path)
{
	char cmd[1024], line[1024];
	uint64_t stub[STUBS_MAX], addend[STUBS_MAX], slot;
	struct nt_rec recs[STUBS_MAX];
	size_t i, n = 0;
	char *hash;
	FILE *p;

	snprintf(cmd, sizeof(cmd), "objdump -d -j .plt --no-show-raw-insn '%s'",
		 path);
	p = popen(cmd, "r");
	CHECK_PTR(p);
	while (fgets(line, sizeof(line), p) && n < STUBS_MAX) {
		hash = strstr(line, "# ");
		if (!strstr(line, "jmp") || !hash ||
		    sscanf(line, " %" SCNx64 ":", &stub[n]) != 1 ||
		    sscanf(hash + 2, "%" SCNx64, &slot) != 1)
			continue;
		addend[n] = irelative_addend(path, slot);
		n += addend[n] != 0;
	}
	CHECK_EQ(pclose(p), 0);
	printf("names_static: %zu IRELATIVE PLT stubs\n", n);
	CHECK(n >= 2);
	CHECK_EQ_INT(nt_addr2line(path, addend, n, recs), 0);
	for (i = 0; i < n; i++) {
		char want[NT_NAME_MAX + 8];

		CHECK(recs[i].sym[0] != 0);
		snprintf(want, sizeof(want), "%s@plt", recs[i].sym);
		expect_symbol(path, stub[i], want);
	}
}

/* ---- address-only names: the ELF virtual address ---------------------- */

/* Module of non-PIE @path's executable PT_LOAD, mapped at its address. */
static void text_module(const char *path, struct sp_module *m)
{
	GElf_Phdr ph;
	size_t i, n = 0;
	Elf *elf;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	CHECK(fd >= 0);
	elf = elf_begin(fd, ELF_C_READ, NULL);
	CHECK(elf && elf_getphdrnum(elf, &n) == 0);
	memset(m, 0, sizeof(*m));
	for (i = 0; i < n; i++) {
		if (!gelf_getphdr(elf, (int)i, &ph) || ph.p_type != PT_LOAD ||
		    !(ph.p_flags & PF_X))
			continue;
		m->start = ph.p_vaddr & ~0xfffull;
		m->end = (ph.p_vaddr + ph.p_memsz + 0xfff) & ~0xfffull;
		m->file_offset = ph.p_offset & ~0xfffull;
	}
	elf_end(elf);
	close(fd);
	CHECK(m->end > m->start);
	m->pid = 1;
	m->path = path;
}

/* The symbolizer's (public API) outermost name of @addr in module @m. */
static void resolve_public(const struct sp_module *m, uint64_t addr, char *out,
			   size_t cap)
{
	const struct sp_resolved_frame *fr[OUT_MAX];
	struct sp_symbolizer *sym;
	struct sp_frame f = { .abs_ip = addr,
			      .file_relative_ip =
				      addr - m->start + m->file_offset,
			      .module_id = 0,
			      .mode = SP_FRAME_USER };
	int n;

	CHECK_OK(sp_symbolizer_new_modules(m, 1, NULL, &sym));
	n = sp_symbolizer_resolve_raw(sym, 1, &f, 1, fr, OUT_MAX);
	CHECK(n >= 1);
	snprintf(out, cap, "%s", fr[n - 1]->name);
	sp_symbolizer_free(sym);
}

static void test_address_only(const char *stripped, const char *full)
{
	uint64_t work = elf_symbol(full, "names_work", NULL);
	struct stub stubs[STUBS_MAX];
	char got[NT_NAME_MAX], want[NT_NAME_MAX];
	struct nt_rec rec;
	struct sp_module m;
	size_t n;

	CHECK(work != 0);
	/* The oracle: the unstripped twin names that address names_work. */
	CHECK_EQ_INT(nt_addr2line(full, &work, 1, &rec), 0);
	CHECK(strcmp(rec.sym, "names_work") == 0);
	text_module(stripped, &m);
	resolve_public(&m, work, got, sizeof(got));
	snprintf(want, sizeof(want), "names_stripped+0x%" PRIx64, work);
	printf("stripped non-PIE: names_work at 0x%" PRIx64 " is \"%s\"\n",
	       work, got);
	CHECK(strcmp(got, want) == 0);
	/* PLT stubs keep their names in a stripped binary. */
	n = objdump_stubs(stripped, stubs);
	CHECK(n >= 3);
	resolve_public(&m, stubs[0].addr, got, sizeof(got));
	CHECK(strcmp(got, stubs[0].name) == 0);
}

/* ---- the signal trampoline -------------------------------------------- */
#if defined(__x86_64__)

static volatile uint64_t handler_ra;

static void on_usr2(int sig)
{
	(void)sig;
	handler_ra = (uint64_t)(uintptr_t)__builtin_return_address(0);
}

static void test_restore_rt(void)
{
	struct sigaction sa = { .sa_handler = on_usr2 };
	uint64_t addrs[2];
	struct nt_rec recs[2];
	struct sp__native *native;
	Dl_info info;

	CHECK_EQ(sigaction(SIGUSR2, &sa, NULL), 0);
	raise(SIGUSR2);
	CHECK(handler_ra != 0);
	CHECK(dladdr((void *)(uintptr_t)handler_ra, &info) != 0);
	/* libc's first PT_LOAD is at 0: svma = address - load base. */
	addrs[0] = handler_ra - (uint64_t)(uintptr_t)info.dli_fbase;
	addrs[1] = addrs[0] - 1;
	CHECK_EQ_INT(nt_addr2line(info.dli_fname, addrs, 2, recs), 0);
	native = nt_open(&mem, info.dli_fname, NULL);
	printf("trampoline: return address %s+0x%" PRIx64
	       ": ours \"%s\", eu-addr2line \"%s\"\n",
	       info.dli_fname, addrs[0], our_symbol(native, addrs[0]),
	       recs[0].sym);
	CHECK(strcmp(our_symbol(native, addrs[0]), recs[0].sym) == 0);
	CHECK(strcmp(our_symbol(native, addrs[1]), recs[1].sym) == 0);
	if (strcmp(recs[0].sym, "__restore_rt") != 0)
		printf("trampoline: no libc6-dbg symbols, name not checked\n");
	else
		CHECK(strcmp(recs[1].sym, "__restore_rt") != 0);
	sp__native_free(native);
}
#endif

/* ---- lambdas ---------------------------------------------------------- */

struct copy {
	uint64_t addr, size;
	unsigned line;
	char name[NT_NAME_MAX];
};

/* FUNC symbols of @path whose name contains @part ("clEi", "3run"). */
static size_t functions(const char *path, const char *part, struct copy *out,
			size_t cap)
{
	char cmd[1024], line[1024], type[8];
	FILE *p;
	size_t n = 0;

	snprintf(cmd, sizeof(cmd), "nm -S '%s'", path);
	p = popen(cmd, "r");
	CHECK_PTR(p);
	while (fgets(line, sizeof(line), p) && n < cap)
		if (sscanf(line, "%" SCNx64 " %" SCNx64 " %7s %511s",
			   &out[n].addr, &out[n].size, type,
			   out[n].name) == 4 &&
		    strstr(out[n].name, part) && out[n].size)
			n++;
	pclose(p);
	return n;
}

/* c++filt's reading of @mangled. */
static void demangle(const char *mangled, char *out, size_t cap)
{
	char cmd[1024];
	FILE *p;

	snprintf(cmd, sizeof(cmd), "c++filt '%s'", mangled);
	p = popen(cmd, "r");
	CHECK_PTR(p);
	if (!fgets(out, (int)cap, p))
		out[0] = 0;
	out[strcspn(out, "\n")] = 0;
	pclose(p);
}

/*
 * The source line of each address's innermost frame, by `TOOL -a -i -f`
 * (eu-addr2line, or binutils' addr2line for clang's DWARF, which
 * eu-addr2line 0.188 does not read): per address "0xADDR", then one
 * NAME / FILE:LINE[:COL] pair per frame, innermost first. @line gets the
 * first line, @inlined whether more than one frame (an inline instance).
 */
static void tool_lines(const char *tool, const char *path,
		       const uint64_t *addrs, size_t n, unsigned *line,
		       bool *inlined)
{
	char tmp[] = "/tmp/nt_lines_XXXXXX", cmd[1024], buf[2 * NT_NAME_MAX];
	struct nt_frame loc;
	size_t i, cur = 0, k = 0, pairs = 0;
	FILE *in, *p;
	int fd = mkstemp(tmp);

	CHECK(fd >= 0 && (in = fdopen(fd, "w")) != NULL);
	for (i = 0; i < n; i++)
		fprintf(in, "0x%" PRIx64 "\n", addrs[i]);
	fclose(in);
	snprintf(cmd, sizeof(cmd), "%s -a -i -f -e '%s' < %s", tool, path, tmp);
	p = popen(cmd, "r");
	CHECK_PTR(p);
	while (fgets(buf, sizeof(buf), p)) {
		buf[strcspn(buf, "\n")] = 0;
		if (!strncmp(buf, "0x", 2) && !strchr(buf, ' ')) {
			cur = k++; /* records come in input order */
			pairs = 0;
			continue;
		}
		if (cur >= n || !k || pairs++ % 2 == 0)
			continue; /* a NAME line */
		nt_parse_loc(buf, &loc);
		if (pairs == 2)
			line[cur] = loc.line;
		else
			inlined[cur] = true;
	}
	pclose(p);
	unlink(tmp);
	CHECK_EQ(k, n);
}

/* Checks every inlined lambda instance of run<>; returns how many. */
static size_t check_instances(const char *tool, const char *path,
			      const struct copy *c, size_t nc,
			      const struct copy *run, size_t nrun)
{
	static uint64_t addrs[ADDRS_MAX];
	static unsigned line[ADDRS_MAX];
	static bool inlined[ADDRS_MAX];
	struct sp_resolved_frame fr[OUT_MAX];
	struct sp__native *native = nt_open(&mem, path, NULL);
	size_t i, j, n = 0, found = 0;

	for (i = 0; i < nrun; i++)
		for (j = 0; j < run[i].size && n < ADDRS_MAX; j++)
			addrs[n++] = run[i].addr + j;
	tool_lines(tool, path, addrs, n, line, inlined);
	for (i = 0; i < n; i++) {
		int k = sp__native_lookup(native, addrs[i], 0, fr, OUT_MAX);

		for (j = 0; inlined[i] && j < nc; j++) {
			if (line[i] != c[j].line)
				continue;
			CHECK(k >= 2);
			if (strcmp(fr[0].name, c[j].name) != 0) {
				fprintf(stderr,
					"0x%" PRIx64 ": inline \"%s\", want "
					"\"%s\"\n",
					addrs[i], fr[0].name, c[j].name);
				exit(T_EXIT_FAIL);
			}
			found++;
		}
	}
	sp__native_free(native);
	return found;
}

static void test_lambdas(const char *tool, const char *path)
{
	struct copy c[8], run[8];
	char d0[NT_NAME_MAX], d1[NT_NAME_MAX];
	unsigned line[8] = { 0 };
	bool inlined[8] = { 0 };
	uint64_t addrs[8];
	size_t i, nc, nrun, found;

	if (!path)
		return;
	nc = functions(path, "clEi", c, 8);
	nrun = functions(path, "3run", run, 8);
	CHECK_EQ(nc, 2);
	CHECK_EQ(nrun, 2);
	CHECK(strcmp(c[0].name, c[1].name) != 0);
	/* Which source line each out-of-line copy is (eu-addr2line). */
	for (i = 0; i < nc; i++)
		addrs[i] = c[i].addr;
	tool_lines(tool, path, addrs, nc, line, inlined);
	for (i = 0; i < nc; i++)
		c[i].line = line[i];
	CHECK(c[0].line && c[1].line && c[0].line != c[1].line);
	found = check_instances(tool, path, c, nc, run, nrun);
	demangle(c[0].name, d0, sizeof(d0));
	demangle(c[1].name, d1, sizeof(d1));
	printf("%s: %zu inlined lambda addresses named \"%s\" or \"%s\"\n",
	       strrchr(path, '/') + 1, found, d0, d1);
	CHECK(found >= 2);
	CHECK(strstr(d0, "operator()") && strstr(d1, "operator()") &&
	      strcmp(d0, d1) != 0);
}

int main(int argc, char **argv)
{
	static const char *const plt[] = { "names_lazy", "names_now",
					   "names_ibt", "names_pie",
					   "names_stripped" };
	size_t i;

	argc_ = argc;
	argv_ = argv;
	unsetenv("DEBUGINFOD_URLS");
	sp__mem_init(&mem, NULL);
	if (!nt_have_tool("eu-addr2line") || !nt_have_tool("objdump") ||
	    !nt_have_tool("addr2line") || !nt_have_tool("c++filt")) {
		printf("SKIP: eu-addr2line (elfutils) or binutils missing\n");
		return T_EXIT_SKIP;
	}
	CHECK(prog("names_lazy") && prog("names_static") &&
	      prog("names_stripped"));
	test_unsized(prog("names_lazy"));
	test_ld_so();
	for (i = 0; i < sizeof(plt) / sizeof(plt[0]); i++)
		test_plt(prog(plt[i]));
	test_plt_static(prog("names_static"));
	test_address_only(prog("names_stripped"), prog("names_lazy"));
#if defined(__x86_64__)
	test_restore_rt();
#endif
	test_lambdas("eu-addr2line", prog("names_lambda_gcc"));
	test_lambdas("addr2line", prog("names_lambda_clang"));
	return T_EXIT_PASS;
}
