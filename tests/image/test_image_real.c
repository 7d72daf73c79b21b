/* SPDX-License-Identifier: MIT */
/* Unit test on real binaries: bias from /proc/self/maps, build-ids, vDSO. */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <stdlib.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "image.h"
#include "maps.h"

/*
 * The bias computed from this process's own mapping of a function must
 * turn the function's runtime address into the st_value of its symbol,
 * read independently with libelf (for this test binary from .symtab, for
 * libc from .dynsym, for the vDSO from its .dynsym). The build-id found by
 * sp__image_parse is compared with the one libelf's gelf_getnote finds.
 */
static struct sp__mem mem;
static uint64_t page;

__attribute__((noinline)) static int marker_function(int x)
{
	return x * 3 + 1;
}

/*
 * True when a symbol named @name has value @value (in any symbol table);
 * *@seen gets the value of the last symbol named @name, 0 if none.
 */
static bool has_symbol(struct sp__image *img, const char *name, uint64_t value,
		       uint64_t *seen)
{
	Elf *elf = sp__image_elf(img);
	Elf_Scn *scn = NULL;
	Elf_Data *data;
	GElf_Shdr sh;
	GElf_Sym sym;
	const char *s;
	bool found = false;
	size_t i;

	*seen = 0;
	sp__image_lock(img);
	while (!found && (scn = elf_nextscn(elf, scn)) != NULL) {
		if (!gelf_getshdr(scn, &sh) || sh.sh_entsize == 0 ||
		    (sh.sh_type != SHT_SYMTAB && sh.sh_type != SHT_DYNSYM))
			continue;
		data = elf_getdata(scn, NULL);
		for (i = 0; data && i < sh.sh_size / sh.sh_entsize; i++) {
			if (!gelf_getsym(data, (int)i, &sym))
				break;
			s = elf_strptr(elf, sh.sh_link, sym.st_name);
			if (!s || strcmp(s, name) != 0)
				continue;
			*seen = sym.st_value;
			found = found || sym.st_value == value;
		}
	}
	sp__image_unlock(img);
	return found;
}

/* The GNU build-id as libelf's note iterator sees it. */
static void check_build_id(struct sp__image *img)
{
	const struct sp__image_id *id = sp__image_identity(img);
	Elf *elf = sp__image_elf(img);
	Elf_Scn *scn = NULL;
	Elf_Data *data;
	GElf_Shdr sh;
	GElf_Nhdr nh;
	size_t off, next, name_off, desc_off;
	bool found = false;

	sp__image_lock(img);
	while (!found && (scn = elf_nextscn(elf, scn)) != NULL) {
		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_NOTE)
			continue;
		data = elf_getdata(scn, NULL);
		for (off = 0; !found && data &&
			      (next = gelf_getnote(data, off, &nh, &name_off,
						   &desc_off)) > 0;
		     off = next) {
			if (nh.n_type != NT_GNU_BUILD_ID || nh.n_namesz != 4 ||
			    memcmp((char *)data->d_buf + name_off, "GNU", 4))
				continue;
			CHECK_MEM(id->build_id, id->build_id_len,
				  (char *)data->d_buf + desc_off, nh.n_descsz);
			found = true;
		}
	}
	sp__image_unlock(img);
	CHECK(found);
}

/* Opens the file mapped at @addr and checks bias against symbol @name. */
static void check_runtime_symbol(uint64_t addr, const char *name)
{
	struct sp__image *img;
	struct test_map m;
	uint64_t bias, svma, off, seen;

	CHECK(maps_find(addr, &m));
	CHECK(strcmp(m.perms, "r-xp") == 0);
	CHECK_OK(sp__image_open_path(&mem, m.path, &img));
	CHECK_EQ(sp__image_identity(img)->dev, m.dev);
	CHECK_EQ(sp__image_identity(img)->ino, m.ino);
	CHECK_OK(sp__image_bias(img, m.start, m.end, m.offset, page, &bias));
	svma = addr - bias;
	if (!has_symbol(img, name, svma, &seen)) {
		fprintf(stderr, "%s: %s at 0x%" PRIx64 " bias 0x%" PRIx64 "\n",
			m.path, name, addr, bias);
		CHECK(!"symbol value matches runtime address - bias");
	}
	/* The same address through its file offset. */
	CHECK_OK(sp__image_offset_to_svma(img, m.offset + (addr - m.start),
					  &svma));
	CHECK_EQ(svma, addr - bias);
	CHECK_OK(sp__image_svma_to_offset(img, svma, &off));
	CHECK_EQ(off, m.offset + (addr - m.start));
	check_build_id(img);
	sp__image_unref(img);
}

static void test_self_and_libc(void)
{
	void *libc = dlopen("libc.so.6", RTLD_NOW | RTLD_NOLOAD);
	void *fn;

	CHECK_EQ(marker_function(1), 4);
	check_runtime_symbol((uint64_t)(uintptr_t)marker_function,
			     "marker_function");
	CHECK_PTR(libc);
	fn = dlsym(libc, "printf");
	CHECK_PTR(fn);
	check_runtime_symbol((uint64_t)(uintptr_t)fn, "printf");
	fn = dlsym(libc, "qsort");
	CHECK_PTR(fn);
	check_runtime_symbol((uint64_t)(uintptr_t)fn, "qsort");
	dlclose(libc);
}

/* /bin/true is not mapped here: translate its entry point both ways. */
static void test_bin_true(void)
{
	const struct sp__image_load *l = NULL;
	struct sp__image *img;
	GElf_Ehdr eh;
	uint64_t off, svma, bias, base = 0x555555554000ull;
	size_t i;

	CHECK_OK(sp__image_open_path(&mem, "/bin/true", &img));
	CHECK_EQ(sp__image_machine(img), EM_X86_64);
	CHECK_EQ(sp__image_identity(img)->build_id_len, 20);
	check_build_id(img);
	for (i = 0; i < sp__image_load_count(img); i++)
		if (sp__image_load(img, i)->flags & PF_X)
			l = sp__image_load(img, i);
	CHECK_PTR(l);
	sp__image_lock(img);
	CHECK_PTR(gelf_getehdr(sp__image_elf(img), &eh));
	sp__image_unlock(img);
	CHECK_OK(sp__image_svma_to_offset(img, eh.e_entry, &off));
	CHECK_OK(sp__image_offset_to_svma(img, off, &svma));
	CHECK_EQ(svma, eh.e_entry);
	CHECK_OK(sp__image_bias(img, base + (l->vaddr & ~(page - 1)),
				base + l->vaddr + l->filesz,
				l->offset & ~(page - 1), page, &bias));
	CHECK_EQ(bias, base);
	sp__image_unref(img);
}

static void test_vdso(void)
{
	uint64_t base = getauxval(AT_SYSINFO_EHDR), bias, value = 0;
	struct sp__image *img;
	struct test_map m;
	Elf *elf;
	size_t shnum = 0;

	if (!base) {
		fprintf(stderr, "no vDSO: skipping its test\n");
		return;
	}
	CHECK_OK(sp__image_open_vdso(&mem, &img));
	CHECK(strcmp(sp__image_name(img), "[vdso]") == 0);
	CHECK(sp__image_load_count(img) >= 1);
	CHECK_EQ(sp__image_load(img, 0)->vaddr, 0);
	CHECK(maps_find(base, &m));
	CHECK(strcmp(m.path, "[vdso]") == 0);
	CHECK_EQ(m.start, base);
	CHECK_OK(sp__image_bias(img, m.start, m.end, m.offset, page, &bias));
	CHECK_EQ(bias, m.start);
	/* The section headers were copied too: .dynsym is reachable. */
	elf = sp__image_elf(img);
	sp__image_lock(img);
	CHECK_EQ(elf_getshdrnum(elf, &shnum), 0);
	sp__image_unlock(img);
	CHECK(shnum > 1);
	if (sp__image_identity(img)->build_id_len)
		check_build_id(img);
	/* __vdso_clock_gettime lies inside the [vdso] mapping. */
	has_symbol(img, "__vdso_clock_gettime", 0, &value);
	CHECK(value != 0);
	CHECK(value + bias >= m.start && value + bias < m.end);
	sp__image_unref(img);
}

/* A deleted file stays openable through /proc/self/map_files. */
static void test_map_files(void)
{
	char tmp[] = "/tmp/sp-image-mapfile-XXXXXX", path[128];
	struct sp__image *img;
	struct stat st, orig;
	void *map;
	int fd = mkstemp(tmp), src = open("/bin/true", O_RDONLY | O_CLOEXEC);
	char buf[4096];
	ssize_t n;
	int err;

	CHECK(fd >= 0 && src >= 0);
	while ((n = read(src, buf, sizeof(buf))) > 0)
		CHECK_EQ(write(fd, buf, (size_t)n), n);
	close(src);
	CHECK_EQ(fstat(fd, &st), 0);
	map = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	CHECK(map != MAP_FAILED);
	close(fd);
	unlink(tmp);
	snprintf(path, sizeof(path),
		 "/proc/self/map_files/%" PRIxPTR "-%" PRIxPTR, (uintptr_t)map,
		 (uintptr_t)map +
			 (((size_t)st.st_size + page - 1) & ~(page - 1)));
	err = sp__image_open_path(&mem, path, &img);
	if (err == -EPERM || err == -EACCES) {
		fprintf(stderr, "map_files not readable: skipping that part\n");
	} else {
		CHECK_OK(err);
		CHECK_EQ(sp__image_identity(img)->ino, st.st_ino);
		CHECK_EQ(sp__image_identity(img)->build_id_len, 20);
		CHECK(stat(tmp, &orig) < 0 && errno == ENOENT);
		sp__image_unref(img);
	}
	munmap(map, (size_t)st.st_size);
}

int main(void)
{
	page = (uint64_t)sysconf(_SC_PAGESIZE);
	sp__mem_init(&mem, NULL);
	test_self_and_libc();
	test_bin_true();
	test_vdso();
	test_map_files();
	return T_EXIT_PASS;
}
