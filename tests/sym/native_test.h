/* SPDX-License-Identifier: MIT */
/* Shared helpers of the test_native* tests: ELF function ranges, eu-addr2line oracle. */
#ifndef SP_NATIVE_TEST_H
#define SP_NATIVE_TEST_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* dl_iterate_phdr */
#endif

#include <fcntl.h>
#include <gelf.h>
#include <link.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "native_internal.h"
#include "sym_internal.h"

/*
 * The oracle is eu-addr2line (elfutils), run once per binary over all the
 * addresses: `eu-addr2line -a -i -f -S -e FILE < addrs`. Its output per
 * address (0x line first) is one of:
 *
 *   0xADDR / SYM[+0xOFF] / FILE:LINE[:COL]          no DWARF function
 *   0xADDR / NAME / SYM[+0xOFF] / FILE:LINE[:COL]   function, no inline
 *   0xADDR / INNER inlined at F:L:C in SYM[+0xOFF] / FILE:LINE[:COL]
 *          / CALLER / F:L[:C] / ... / FUNCTION / F:L[:C]
 *
 * so the chain is innermost first, exactly our frame order; SYM is
 * dwfl's ELF symbol choice, which we compare with our outermost frame.
 */

#define NT_NAME_MAX 512
#define NT_FRAMES_MAX 24

struct nt_range {
	uint64_t addr;
	uint64_t size;
};

struct nt_frame {
	char name[NT_NAME_MAX];
	char file[NT_NAME_MAX]; /* "" when ?? */
	unsigned line;
	unsigned column;
};

struct nt_rec {
	uint64_t addr;
	char sym[NT_NAME_MAX]; /* "" when none */
	uint64_t sym_off;
	int nframes;
	struct nt_frame fr[NT_FRAMES_MAX];
	bool inlined;		/* first line has "inlined at" */
	struct nt_frame inl_at; /* its call site */
};

static inline uint64_t nt_rand(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

/* Sized FUNC symbols of @path (.symtab and .dynsym), appended to @out. */
static inline size_t nt_func_ranges(const char *path, struct nt_range *out,
				    size_t cap, size_t n)
{
	Elf_Scn *scn = NULL;
	GElf_Shdr shdr;
	Elf *elf;
	int fd;

	elf_version(EV_CURRENT);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return n;
	elf = elf_begin(fd, ELF_C_READ, NULL);
	while (elf && (scn = elf_nextscn(elf, scn)) != NULL) {
		Elf_Data *d;
		size_t i;

		if (!gelf_getshdr(scn, &shdr) ||
		    (shdr.sh_type != SHT_SYMTAB && shdr.sh_type != SHT_DYNSYM))
			continue;
		d = elf_getdata(scn, NULL);
		for (i = 1; d && shdr.sh_entsize &&
			    i < d->d_size / shdr.sh_entsize && n < cap;
		     i++) {
			GElf_Sym s;

			if (!gelf_getsym(d, (int)i, &s) ||
			    GELF_ST_TYPE(s.st_info) != STT_FUNC ||
			    s.st_shndx == SHN_UNDEF || s.st_size == 0)
				continue;
			out[n].addr = s.st_value;
			out[n].size = s.st_size;
			n++;
		}
	}
	if (elf)
		elf_end(elf);
	close(fd);
	return n;
}

/* @count addresses inside random function ranges (fixed seed). */
static inline void nt_pick(const struct nt_range *r, size_t nr, uint64_t seed,
			   uint64_t *addrs, size_t count)
{
	size_t i;

	for (i = 0; i < count; i++) {
		const struct nt_range *f = &r[nt_rand(&seed) % nr];

		addrs[i] = f->addr + nt_rand(&seed) % f->size;
	}
}

static inline bool nt_have_tool(const char *tool)
{
	char cmd[256];

	snprintf(cmd, sizeof(cmd), "command -v %s >/dev/null 2>&1", tool);
	return system(cmd) == 0;
}

static inline void nt_copy(char *dst, size_t cap, const char *src, size_t len)
{
	if (len >= cap)
		len = cap - 1;
	memcpy(dst, src, len);
	dst[len] = '\0';
}

/* "FILE:LINE[:COL]" or "??:0". */
static inline void nt_parse_loc(const char *s, struct nt_frame *f)
{
	const char *c1 = strrchr(s, ':'), *c2;
	size_t len;

	f->file[0] = '\0';
	f->line = f->column = 0;
	if (!c1)
		return;
	len = (size_t)(c1 - s);
	f->line = (unsigned)strtoul(c1 + 1, NULL, 10);
	for (c2 = c1 - 1; c2 > s && *c2 >= '0' && *c2 <= '9'; c2--)
		;
	if (c2 > s && *c2 == ':' && c2 < c1 - 1) {
		f->column = f->line;
		f->line = (unsigned)strtoul(c2 + 1, NULL, 10);
		len = (size_t)(c2 - s);
	}
	if (len == 2 && strncmp(s, "??", 2) == 0)
		return;
	nt_copy(f->file, sizeof(f->file), s, len);
}

/* "SYM+0xOFF", "SYM", or "()+0" (none). */
static inline void nt_parse_sym(const char *s, struct nt_rec *r)
{
	const char *plus = strstr(s, "+0x");
	size_t len = plus ? (size_t)(plus - s) : strlen(s);

	r->sym_off = plus ? strtoull(plus + 3, NULL, 16) : 0;
	if (strncmp(s, "()", 2) == 0 || strcmp(s, "??") == 0)
		len = 0;
	nt_copy(r->sym, sizeof(r->sym), s, len);
}

static inline void nt_parse_rec(char lines[][2 * NT_NAME_MAX], int n,
				struct nt_rec *r)
{
	const char *in = strstr(lines[0], " inlined at "), *at;
	char buf[2 * NT_NAME_MAX];
	int i;

	r->nframes = 0;
	r->inlined = false;
	if (n == 2 && !in) { /* no DWARF function: SYM / LOC */
		nt_parse_sym(lines[0], r);
		nt_copy(r->fr[0].name, NT_NAME_MAX, r->sym, strlen(r->sym));
		nt_parse_loc(lines[1], &r->fr[0]);
		r->nframes = 1;
		return;
	}
	if (!in) { /* NAME / SYM / LOC */
		nt_parse_sym(lines[1], r);
		nt_copy(r->fr[0].name, NT_NAME_MAX, lines[0], strlen(lines[0]));
		nt_parse_loc(n > 2 ? lines[2] : "??:0", &r->fr[0]);
		r->nframes = 1;
		return;
	}
	nt_copy(r->fr[0].name, NT_NAME_MAX, lines[0], (size_t)(in - lines[0]));
	at = in + strlen(" inlined at ");
	in = strrchr(lines[0], ' ');
	nt_parse_sym(in + 1, r);
	r->inlined = true;
	if (in - 3 > at) {
		nt_copy(buf, sizeof(buf), at, (size_t)(in - 3 - at));
		nt_parse_loc(buf, &r->inl_at);
	}
	nt_parse_loc(lines[1], &r->fr[0]);
	r->nframes = 1;
	for (i = 2; i + 1 < n && r->nframes < NT_FRAMES_MAX; i += 2) {
		struct nt_frame *f = &r->fr[r->nframes++];

		nt_parse_loc(lines[i + 1], f);
		nt_copy(f->name, NT_NAME_MAX, lines[i], strlen(lines[i]));
	}
}

/* Runs the oracle over @addrs; fills @recs (same order). Returns 0/-1. */
static inline int nt_addr2line(const char *file, const uint64_t *addrs,
			       size_t n, struct nt_rec *recs)
{
	static char lines[2 * NT_FRAMES_MAX + 4][2 * NT_NAME_MAX];
	char tmp[] = "/tmp/nt_addrs_XXXXXX", cmd[1024], buf[2 * NT_NAME_MAX];
	size_t i, cur = (size_t)-1;
	int fd, st, nl = 0;
	FILE *in, *p;

	fd = mkstemp(tmp);
	if (fd < 0 || !(in = fdopen(fd, "w")))
		return -1;
	for (i = 0; i < n; i++)
		fprintf(in, "0x%" PRIx64 "\n", addrs[i]);
	fclose(in);
	snprintf(cmd, sizeof(cmd), "eu-addr2line -a -i -f -S -e '%s' < %s",
		 file, tmp);
	p = popen(cmd, "r");
	if (!p)
		return -1;
	while (fgets(buf, sizeof(buf), p)) {
		buf[strcspn(buf, "\n")] = '\0';
		if (strncmp(buf, "0x", 2) == 0 && strchr(buf, ' ') == NULL) {
			if (cur != (size_t)-1 && cur < n)
				nt_parse_rec(lines, nl, &recs[cur]);
			cur++;
			if (cur < n)
				recs[cur].addr = strtoull(buf, NULL, 16);
			nl = 0;
			continue;
		}
		if (nl < (int)(sizeof(lines) / sizeof(lines[0])))
			nt_copy(lines[nl++], sizeof(lines[0]), buf,
				strlen(buf));
	}
	if (cur != (size_t)-1 && cur < n)
		nt_parse_rec(lines, nl, &recs[cur]);
	unlink(tmp);
	/* eu-addr2line exits 1 when some address has no line information. */
	st = pclose(p);
	if (!WIFEXITED(st) || WEXITSTATUS(st) > 1)
		return -1;
	return cur + 1 == n ? 0 : -1;
}

/* Opens @path and its native symbolizer (debug dirs: default). */
static inline struct sp__native *nt_open(const struct sp__mem *mem,
					 const char *path, const char *dirs)
{
	struct sp__native *native = NULL;
	struct sp__image *img;

	CHECK_OK(sp__image_open_path(mem, path, &img));
	CHECK_OK(sp__native_new(mem, img, dirs, NULL, &native));
	sp__image_unref(img);
	return native;
}

static int nt_find_libc_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
	(void)size;
	if (strstr(info->dlpi_name, "/libc.so.6")) {
		snprintf(arg, 512, "%s", info->dlpi_name);
		return 1;
	}
	return 0;
}

/* Path of the libc this test runs with. */
static inline void nt_libc_path(char *out)
{
	snprintf(out, 512, "/lib/x86_64-linux-gnu/libc.so.6");
	dl_iterate_phdr(nt_find_libc_cb, out);
}

#endif /* SP_NATIVE_TEST_H */
