/* SPDX-License-Identifier: MIT */
/* jitdump: parser bounds, the name table's time rules, the file reader. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "jit_names.h"
#include "jitdump_read.h"
#include "jitdump_write.h"
#include "unwind_internal.h"
#include "unwind_jit.h"

/* CPython 3.13's trampoline code and unwinding data, from a real dump. */
static const uint8_t py_code[] = { 0x48, 0x83, 0xec, 0x08, 0xff, 0xd1,
				   0x48, 0x83, 0xc4, 0x08, 0xc3 };
static const uint8_t py_eh[] = {
	0x14, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01, 0x7a, 0x52, 0x00,
	0x01, 0x78, 0x10, 0x01, 0x1b, 0x0c, 0x07, 0x08, 0x90, 0x01, 0x00, 0x00,
	0x14, 0x00, 0x00, 0x00, 0x1c, 0x00, 0x00, 0x00, 0xd0, 0xff, 0xff, 0xff,
	0x0b, 0x00, 0x00, 0x00, 0x00, 0x44, 0x0e, 0x10, 0x46, 0x0e, 0x08, 0x00,
};

static struct sp__mem mem;

static void put(struct sp__vec *v, const void *p, size_t n)
{
	CHECK_OK(sp__vec_reserve(v, &mem, n));
	memcpy((char *)v->data + v->len, p, n);
	v->len += n;
}

static void put_prefix(struct sp__vec *v, uint32_t id, uint32_t size,
		       uint64_t ts)
{
	put(v, &id, 4);
	put(v, &size, 4);
	put(v, &ts, 8);
}

static void put_u64(struct sp__vec *v, uint64_t x)
{
	put(v, &x, 8);
}

static void put_debug(struct sp__vec *v, uint64_t ts, uint64_t addr,
		      uint64_t a0, uint32_t line0, const char *file)
{
	size_t flen = strlen(file) + 1;
	uint32_t size = (uint32_t)(16 + 16 + 2 * (16 + flen));
	int32_t l0 = (int32_t)line0, l1 = (int32_t)line0 + 1, z = 0;

	put_prefix(v, SP__JITDUMP_DEBUG_INFO, size, ts);
	put_u64(v, addr);
	put_u64(v, 2);
	put_u64(v, a0 + 4); /* out of order on purpose: sorted on load */
	put(v, &l1, 4);
	put(v, &z, 4);
	put(v, file, flen);
	put_u64(v, a0);
	put(v, &l0, 4);
	put(v, &z, 4);
	put(v, file, flen);
}

static void put_move(struct sp__vec *v, uint64_t ts, uint64_t old,
		     uint64_t new_addr, uint64_t size, uint64_t index)
{
	uint32_t pid = 7;

	put_prefix(v, SP__JITDUMP_CODE_MOVE, 16 + 48, ts);
	put(v, &pid, 4);
	put(v, &pid, 4);
	put_u64(v, new_addr);
	put_u64(v, old);
	put_u64(v, new_addr);
	put_u64(v, size);
	put_u64(v, index);
}

static void put_unwind(struct sp__vec *v, uint64_t ts)
{
	put_prefix(v, SP__JITDUMP_UNWINDING_INFO, 16 + 24 + sizeof(py_eh), ts);
	put_u64(v, sizeof(py_eh)); /* no .eh_frame_hdr */
	put_u64(v, 0);
	put_u64(v, sizeof(py_eh));
	put(v, py_eh, sizeof(py_eh));
}

/*
 * The dump of the tests: a Python trampoline with unwinding info, a
 * function with lines that moves, and an address reused by later code.
 */
static void build_dump(struct sp__vec *v)
{
	CHECK_OK(sp__jitdump_put_header(v, &mem, 7, 1));
	put_unwind(v, 100);
	CHECK_OK(sp__jitdump_put_load(v, &mem, 101, 7, 7, 0x1000, py_code,
				      sizeof(py_code), 1, "py::fib:/t/a.py"));
	put_debug(v, 200, 0x2000, 0x2004, 10, "/t/b.js");
	CHECK_OK(sp__jitdump_put_load(v, &mem, 201, 7, 7, 0x2000, py_code,
				      sizeof(py_code), 2, "JS:*leaf"));
	put_move(v, 300, 0x2000, 0x3000, sizeof(py_code), 2);
	CHECK_OK(sp__jitdump_put_load(v, &mem, 400, 7, 7, 0x2000, py_code,
				      sizeof(py_code), 3, "JS:*reused"));
	CHECK_OK(sp__jitdump_put_close(v, &mem, 500));
}

static bool split(const char *name, size_t len, const char **func,
		  size_t *func_len, const char **file, size_t *file_len)
{
	const char *colon;

	if (len < 4 || memcmp(name, "py::", 4) != 0)
		return false;
	colon = memchr(name + 4, ':', len - 4);
	if (!colon)
		return false;
	*func = name + 4;
	*func_len = (size_t)(colon - name) - 4;
	*file = colon + 1;
	*file_len = len - (size_t)(colon + 1 - name);
	return true;
}

static struct sp__jit_names *names_of(const void *buf, size_t len)
{
	struct sp__jitdump_stats st;
	struct sp__jit_names *n;

	CHECK_OK(sp__jit_names_new(&mem, split, &n));
	CHECK_OK(sp__jitdump_parse_buffer(buf, len, sp__jit_names_add, n, &st));
	CHECK_OK(sp__jit_names_finish(n));
	return n;
}

static void test_names(void)
{
	struct sp__vec v;
	struct sp__jit_names *n;
	const struct sp__jit_code *c;
	const char *file;
	uint32_t line;

	sp__vec_init(&v, 1);
	build_dump(&v);
	n = names_of(v.data, v.len);
	c = sp__jit_names_find(n, 0x1005, 150);
	CHECK_PTR(c);
	CHECK(strcmp(c->name, "fib") == 0 && strcmp(c->file, "/t/a.py") == 0);
	CHECK(sp__jit_names_find(n, 0x100b, 150) == NULL); /* past the end */
	/* Before the move: the first code at 0x2000, with its lines. */
	c = sp__jit_names_find(n, 0x2006, 250);
	CHECK(c && strcmp(c->name, "JS:*leaf") == 0 && !c->file);
	CHECK(sp__jit_names_line(n, c, 0x2006, &file, &line));
	CHECK(strcmp(file, "/t/b.js") == 0 && line == 10);
	CHECK(sp__jit_names_line(n, c, 0x2007, &file, &line) && line == 10);
	CHECK(sp__jit_names_line(n, c, 0x2008, &file, &line) && line == 11);
	CHECK(!sp__jit_names_line(n, c, 0x2001, &file, &line));
	/* Moved: the same code and lines at 0x3000 from time 300 on. */
	c = sp__jit_names_find(n, 0x3006, 350);
	CHECK(c && strcmp(c->name, "JS:*leaf") == 0);
	CHECK(sp__jit_names_line(n, c, 0x3006, &file, &line) && line == 10);
	/* 0x2000 reused at 400: the old code until then, the new after. */
	c = sp__jit_names_find(n, 0x2006, 399);
	CHECK(c && strcmp(c->name, "JS:*leaf") == 0);
	c = sp__jit_names_find(n, 0x2006, 400);
	CHECK(c && strcmp(c->name, "JS:*reused") == 0);
	/* A time before every load: the earliest entry (clock skew). */
	c = sp__jit_names_find(n, 0x2006, 5);
	CHECK(c && strcmp(c->name, "JS:*leaf") == 0);
	CHECK_EQ(sp__jit_names_stats(n)->codes, 4);
	CHECK_EQ(sp__jit_names_stats(n)->lines, 2);
	sp__jit_names_free(n);
	sp__vec_fini(&v, &mem);
}

/*
 * Line info whose entries point outside the code it describes is not
 * used (node 20 garbles its file names so that later entries shift).
 */
static void test_lines_outside(void)
{
	struct sp__jit_names *n;
	const struct sp__jit_code *c;
	struct sp__vec v;
	const char *file;
	uint32_t line;

	sp__vec_init(&v, 1);
	CHECK_OK(sp__jitdump_put_header(&v, &mem, 7, 1));
	put_debug(&v, 10, 0x2000, 0x2004, 10, "/t/b.js");
	CHECK_OK(sp__jitdump_put_load(&v, &mem, 11, 7, 7, 0x2000, py_code, 6, 1,
				      "short"));
	n = names_of(v.data, v.len);
	c = sp__jit_names_find(n, 0x2002, 20);
	CHECK(c && strcmp(c->name, "short") == 0);
	CHECK(!sp__jit_names_line(n, c, 0x2005, &file, &line));
	CHECK_EQ(sp__jit_names_stats(n)->lines, 0);
	CHECK_EQ(sp__jit_names_stats(n)->debug_unmatched, 1);
	sp__jit_names_free(n);
	sp__vec_fini(&v, &mem);
}

/* Every prefix of a valid dump parses to a prefix of its records. */
static void test_prefixes(void)
{
	struct sp__jitdump_stats whole, st;
	struct sp__vec v;
	size_t k;
	int r;

	sp__vec_init(&v, 1);
	build_dump(&v);
	CHECK_EQ_INT(
		sp__jitdump_parse_buffer(v.data, v.len, NULL, NULL, &whole), 7);
	CHECK_EQ(whole.partial, 0);
	CHECK_EQ(whole.loads, 3);
	for (k = 0; k < v.len; k++) {
		r = sp__jitdump_parse_buffer(v.data, k, NULL, NULL, &st);
		if (k < SP__JITDUMP_HEADER_SIZE) {
			CHECK_EQ_INT(r, k ? SP_ETRUNCATED : 0);
			continue;
		}
		CHECK(r >= 0 && (size_t)r < whole.records);
		CHECK_EQ(st.bytes + st.partial, k);
	}
	sp__vec_fini(&v, &mem);
}

/* Records that cannot be valid are SP_ECORRUPT; newer formats EOPNOTSUPP. */
static void test_corrupt(void)
{
	struct sp__jitdump_header h;
	struct sp__jitdump_record rec;
	struct sp__vec v;
	uint8_t b[128] = { 0 };
	uint32_t x;

	sp__vec_init(&v, 1);
	CHECK_OK(sp__jitdump_put_header(&v, &mem, 1, 1));
	CHECK_EQ_INT(sp__jitdump_parse_header(v.data, v.len, &h), 40);
	memcpy(b, v.data, 40);
	x = 2; /* version 2 */
	memcpy(b + 4, &x, 4);
	CHECK_EQ_INT(sp__jitdump_parse_header(b, 40, &h), -EOPNOTSUPP);
	memcpy(b, v.data, 40);
	b[39] = 0x80; /* unknown flag */
	CHECK_EQ_INT(sp__jitdump_parse_header(b, 40, &h), -EOPNOTSUPP);
	b[0] = 'X';
	CHECK_EQ_INT(sp__jitdump_parse_header(b, 40, &h), SP_ECORRUPT);
	sp__jitdump_parse_header(v.data, v.len, &h);
	/* Size below the prefix, size over the bound. */
	memset(b, 0, sizeof(b));
	x = 8;
	memcpy(b + 4, &x, 4);
	CHECK_EQ_INT(sp__jitdump_parse_record(&h, b, 64, &rec), SP_ECORRUPT);
	x = SP__JITDUMP_RECORD_MAX + 1;
	memcpy(b + 4, &x, 4);
	CHECK_EQ_INT(sp__jitdump_parse_record(&h, b, 64, &rec), SP_ECORRUPT);
	/* A code load whose name has no NUL, whose code runs past the end. */
	x = 16 + 40 + 4;
	memcpy(b + 4, &x, 4);
	memcpy(b + 56, "abcd", 4);
	CHECK_EQ_INT(sp__jitdump_parse_record(&h, b, 64, &rec), SP_ECORRUPT);
	b[58] = 0;
	b[40] = 2; /* code_size 2 with 1 byte after the name */
	CHECK_EQ_INT(sp__jitdump_parse_record(&h, b, 64, &rec), SP_ECORRUPT);
	b[40] = 1;
	CHECK_EQ_INT(sp__jitdump_parse_record(&h, b, 64, &rec), 60);
	CHECK(rec.u.load.name_len == 2 && rec.u.load.code_size == 1);
	/* Debug info claiming more entries than fit. */
	x = SP__JITDUMP_DEBUG_INFO;
	memcpy(b, &x, 4);
	b[24] = 9;
	CHECK_EQ_INT(sp__jitdump_parse_record(&h, b, 64, &rec), SP_ECORRUPT);
	/* Unknown ids are returned for the caller to skip. */
	x = 99;
	memcpy(b, &x, 4);
	CHECK_EQ_INT(sp__jitdump_parse_record(&h, b, 64, &rec), 60);
	CHECK_EQ(rec.id, 99);
	sp__vec_fini(&v, &mem);
}

/* A byte-swapped dump (written on the other endianness) reads the same. */
static void test_swapped(void)
{
	uint8_t b[40 + 16 + 40 + 2 + 1] = { 0 };
	struct sp__jitdump_stats st;
	struct sp__jit_names *n;
	const struct sp__jit_code *c;
	uint32_t w;
	uint64_t q;

	w = __builtin_bswap32(SP__JITDUMP_MAGIC);
	memcpy(b, &w, 4);
	w = __builtin_bswap32(1);
	memcpy(b + 4, &w, 4);
	w = __builtin_bswap32(40);
	memcpy(b + 8, &w, 4);
	w = __builtin_bswap32((uint32_t)sizeof(b) - 40);
	memcpy(b + 44, &w, 4);
	q = __builtin_bswap64(0x5000);
	memcpy(b + 40 + 16 + 16, &q, 8); /* code_addr */
	q = __builtin_bswap64(1);
	memcpy(b + 40 + 16 + 24, &q, 8); /* code_size */
	b[40 + 16 + 40] = 'x';
	CHECK_OK(sp__jit_names_new(&mem, NULL, &n));
	CHECK_EQ_INT(sp__jitdump_parse_buffer(b, sizeof(b), sp__jit_names_add,
					      n, &st),
		     1);
	CHECK_OK(sp__jit_names_finish(n));
	c = sp__jit_names_find(n, 0x5000, 0);
	CHECK(c && strcmp(c->name, "x") == 0);
	sp__jit_names_free(n);
}

/* CPython's trampoline CFI: the table matches its three rows. */
static void test_unwind_table(void)
{
	struct sp__cfi_table *t;
	const struct sp__cfi_rules *r;
	uint64_t base, span, vaddr = 0x100000000ull;

	CHECK_OK(sp__cfi_table_from_eh_frame(&mem, py_eh, sizeof(py_eh), vaddr,
					     &t));
	sp__cfi_table_range(t, &base, &span);
	/* The FDE starts 16 bytes before the .eh_frame copy (pc-relative). */
	CHECK_EQ(base, vaddr - 16);
	CHECK_EQ(span, sizeof(py_code));
	r = sp__cfi_table_find(t, base);
	CHECK(r && r->cfa_reg == SP_X86_64_RSP && r->cfa_off == 8);
	r = sp__cfi_table_find(t, base + 6); /* after call *%rcx */
	CHECK(r && r->cfa_reg == SP_X86_64_RSP && r->cfa_off == 16);
	r = sp__cfi_table_find(t, base + 10); /* the ret */
	CHECK(r && r->cfa_off == 8);
	CHECK(sp__cfi_table_find(t, base + 11) == NULL);
	sp__cfi_table_free(t);
	CHECK_EQ_INT(sp__cfi_table_from_eh_frame(&mem, py_eh, 0, vaddr, &t),
		     SP_ECORRUPT);
}

static int counted;

static int count_cb(void *ctx, const struct sp__jitdump_header *h,
		    const struct sp__jitdump_record *rec)
{
	(void)ctx;
	(void)h;
	(void)rec;
	counted++;
	return 0;
}

static void append(int fd, const void *p, size_t n)
{
	CHECK_EQ(write(fd, p, n), n);
}

/* A live file: a record cut by the writer is delivered once complete. */
static void test_reader(void)
{
	char dir[] = "/tmp/sp-jitdump-XXXXXX", path[64], link_path[80];
	struct sp__jitdump_reader *r;
	struct sp__vec v;
	size_t cut;
	int fd;

	CHECK_PTR(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/jit-7.dump", dir);
	sp__vec_init(&v, 1);
	build_dump(&v);
	fd = open(path, O_CREAT | O_WRONLY | O_TRUNC, 0600);
	CHECK(fd >= 0);
	cut = 40 + 88 + 10; /* header, unwinding record, 10 bytes of a load */
	append(fd, v.data, cut);
	CHECK_OK(sp__jitdump_reader_open(&mem, path, 0, 0, &r));
	counted = 0;
	CHECK_EQ_INT(sp__jitdump_reader_poll(r, 0, count_cb, NULL), 1);
	CHECK_EQ(sp__jitdump_reader_stats(r)->partial, 10);
	CHECK_PTR(sp__jitdump_reader_header(r));
	append(fd, (char *)v.data + cut, v.len - cut);
	CHECK_EQ_INT(sp__jitdump_reader_poll(r, 0, count_cb, NULL), 6);
	CHECK_EQ(counted, 7);
	CHECK_EQ(sp__jitdump_reader_stats(r)->partial, 0);
	CHECK_EQ_INT(sp__jitdump_reader_poll(r, 0, count_cb, NULL), 0);
	/* Rewritten by a new process with the same pid: the reader stops. */
	CHECK_OK(ftruncate(fd, 40));
	CHECK_EQ_INT(sp__jitdump_reader_poll(r, 0, count_cb, NULL), SP_ESHRANK);
	CHECK_EQ_INT(sp__jitdump_reader_poll(r, 0, count_cb, NULL), SP_ESHRANK);
	sp__jitdump_reader_free(r);
	/* The lifetime bound. */
	CHECK_OK(ftruncate(fd, 0));
	CHECK_OK(pwrite(fd, v.data, v.len, 0));
	CHECK_OK(sp__jitdump_reader_open(&mem, path, 0, 100, &r));
	CHECK_EQ_INT(sp__jitdump_reader_poll(r, 0, count_cb, NULL), -EFBIG);
	sp__jitdump_reader_free(r);
	close(fd);
	/* No symlinks, no FIFOs. */
	snprintf(link_path, sizeof(link_path), "%s/link.dump", dir);
	CHECK_OK(symlink(path, link_path));
	CHECK_EQ_INT(sp__jitdump_reader_open(&mem, link_path, 0, 0, &r),
		     -EPERM);
	unlink(link_path);
	CHECK_OK(mkfifo(link_path, 0600));
	CHECK_EQ_INT(sp__jitdump_reader_open(&mem, link_path, 0, 0, &r),
		     -EPERM);
	unlink(link_path);
	unlink(path);
	rmdir(dir);
	sp__vec_fini(&v, &mem);
}

/* Names over the bound are cut at a character boundary, never mid-way. */
static void test_long_name(void)
{
	char name[SP__JIT_NAME_MAX + 64];
	const struct sp__jit_code *c;
	struct sp__jit_names *n;
	struct sp__vec v;
	size_t i;

	for (i = 0; i + 2 < sizeof(name); i += 2) {
		name[i] = (char)0xc3; /* U+00E9, two bytes each */
		name[i + 1] = (char)0xa9;
	}
	name[i] = 0;
	name[SP__JIT_NAME_MAX - 1] = (char)0xc3;
	sp__vec_init(&v, 1);
	CHECK_OK(sp__jitdump_put_header(&v, &mem, 1, 1));
	/* The writer cuts at 4 KiB too; write the record by hand. */
	put_prefix(&v, SP__JITDUMP_CODE_LOAD,
		   (uint32_t)(16 + 40 + strlen(name) + 1 + 1), 5);
	put(&v, "\1\0\0\0\1\0\0\0", 8);
	put_u64(&v, 0x1000);
	put_u64(&v, 0x1000);
	put_u64(&v, 1);
	put_u64(&v, 1);
	put(&v, name, strlen(name) + 1);
	put(&v, "\xc3", 1);
	n = names_of(v.data, v.len);
	c = sp__jit_names_find(n, 0x1000, 5);
	CHECK(c && strlen(c->name) <= SP__JIT_NAME_MAX);
	CHECK((strlen(c->name) % 2) == 0);
	sp__jit_names_free(n);
	sp__vec_fini(&v, &mem);
}

int main(void)
{
	sp__mem_init(&mem, NULL);
	test_names();
	test_lines_outside();
	test_prefixes();
	test_corrupt();
	test_swapped();
	if (SP__ARCH == SP_ARCH_X86_64) /* py_eh: x86-64 DWARF registers */
		test_unwind_table();
	test_reader();
	test_long_name();
	return T_EXIT_PASS;
}
