/* SPDX-License-Identifier: MIT */
/* Finding JIT sources among a process's modules: jitdump markers, GDB descriptors. */
#include <errno.h>
#include <string.h>
#include <sys/sysmacros.h>

#include <gelf.h>

#include "image.h"
#include "jit_track.h"
#include "logging.h"
#include "map.h"
#include "process.h"

/*
 * A JIT that supports debuggers defines __jit_debug_descriptor in the
 * image that holds the JIT (the program, or a library such as
 * libLLVM-14.so.1). Each file-backed executable module is looked at
 * once per image (keyed by device and inode, across every process): its
 * .dynsym, then .symtab, is scanned for the symbol. Images that have it
 * stay open (the address in a process needs the image's load bias for
 * that mapping); the others leave a negative entry. The cache is bounded
 * (DESC_CACHE_MAX images, then modules are looked at without caching),
 * and at most SP__JIT_SCAN_BUDGET images are opened per poll over every
 * process (sp__jit_poll refills it), so a machine of processes mapping
 * hundreds of libraries does not stall one poll. A scan for an unwind
 * that stopped in what may be JIT code has a budget of its own,
 * SP__JIT_URGENT_BUDGET per poll: the sample is written right after.
 */

#define DESC_SYMBOL "__jit_debug_descriptor"
#define DESC_CACHE_MAX 4096

struct sp__jit_desc_cache {
	uint64_t dev;
	uint64_t ino;
	uint64_t svma; /* 0: no descriptor in this image */
	struct sp__image *img;
};

void sp__jit_desc_cache_init(struct sp__jit *jit)
{
	sp__vec_init(&jit->descs, sizeof(struct sp__jit_desc_cache));
}

void sp__jit_desc_cache_free(struct sp__jit *jit)
{
	size_t i;

	for (i = 0; i < jit->descs.len; i++) {
		struct sp__jit_desc_cache *c = sp__vec_at(&jit->descs, i);

		if (c->img)
			sp__image_unref(c->img);
	}
	sp__vec_fini(&jit->descs, &jit->mem);
}

/*
 * svma of the descriptor in a symbol table section, or 0. Names are
 * compared in the string table's bytes directly (elf_strptr per symbol
 * costs most of a scan: 140 ms for node's 185k symbols).
 */
static uint64_t scan_symtab(Elf *elf, Elf_Scn *scn, const GElf_Shdr *sh)
{
	static const char want[] = DESC_SYMBOL;
	Elf_Data *d = elf_getdata(scn, NULL), *str;
	size_t i, n;
	GElf_Sym s;

	if (!d || !d->d_buf || sh->sh_entsize != sizeof(Elf64_Sym))
		return 0;
	str = elf_getdata(elf_getscn(elf, sh->sh_link), NULL);
	if (!str || !str->d_buf || str->d_size < sizeof(want))
		return 0;
	n = d->d_size / sizeof(Elf64_Sym);
	for (i = 1; i < n; i++) {
		if (!gelf_getsym(d, (int)i, &s) || s.st_shndx == SHN_UNDEF ||
		    s.st_value == 0 || s.st_name > str->d_size - sizeof(want))
			continue;
		if (memcmp((const char *)str->d_buf + s.st_name, want,
			   sizeof(want)) == 0)
			return s.st_value;
	}
	return 0;
}

static uint64_t find_descriptor(struct sp__image *img)
{
	Elf *elf;
	Elf_Scn *scn = NULL;
	uint64_t found = 0;
	int pass;

	sp__image_lock(img);
	elf = sp__image_elf(img);
	for (pass = 0; elf && pass < 2 && !found; pass++) {
		while (!found && (scn = elf_nextscn(elf, scn)) != NULL) {
			GElf_Shdr sh;

			if (!gelf_getshdr(scn, &sh) ||
			    sh.sh_type != (pass ? SHT_SYMTAB : SHT_DYNSYM))
				continue;
			found = scan_symtab(elf, scn, &sh);
		}
	}
	sp__image_unlock(img);
	return found;
}

static struct sp__jit_desc_cache *cache_find(struct sp__jit *jit, uint64_t dev,
					     uint64_t ino)
{
	size_t i;

	for (i = 0; i < jit->descs.len; i++) {
		struct sp__jit_desc_cache *c = sp__vec_at(&jit->descs, i);

		if (c->dev == dev && c->ino == ino)
			return c;
	}
	return NULL;
}

/* The cache entry of module @m's image (opened now if unknown), or NULL. */
static struct sp__jit_desc_cache *desc_entry(struct sp__jit *jit,
					     const struct sp__module *m,
					     struct sp__jit_desc_cache *scratch,
					     unsigned *budget)
{
	uint64_t dev = makedev(m->dev_major, m->dev_minor);
	struct sp__jit_desc_cache *c = cache_find(jit, dev, m->inode);
	struct sp__image *img = NULL;

	if (c)
		return c;
	if (*budget == 0)
		return NULL;
	(*budget)--;
	memset(scratch, 0, sizeof(*scratch));
	scratch->dev = dev;
	scratch->ino = m->inode;
	/* An image that does not open is remembered as one without. */
	if (sp__image_open_path(&jit->mem, m->unwind_path, &img) == 0) {
		scratch->svma = find_descriptor(img);
		if (scratch->svma)
			scratch->img = img;
		else
			sp__image_unref(img);
	}
	if (jit->descs.len < DESC_CACHE_MAX &&
	    sp__vec_push(&jit->descs, &jit->mem, scratch) == 0)
		return sp__vec_at(&jit->descs, jit->descs.len - 1);
	return scratch; /* uncached: the caller drops scratch->img */
}

/* Records @m's descriptor for @jp when its image defines one. */
static void look_for_descriptor(struct sp__jit *jit, struct sp__jit_proc *jp,
				const struct sp__module *m, unsigned *budget,
				bool *done)
{
	struct sp__jit_desc_cache scratch, *c;
	uint64_t bias;

	*done = true;
	if (jp->desc_addr || m->inode == 0 || !m->path_len ||
	    m->path[0] != '/' || !m->unwind_path)
		return;
	if (*budget == 0 &&
	    !cache_find(jit, makedev(m->dev_major, m->dev_minor), m->inode)) {
		*done = false;
		return;
	}
	c = desc_entry(jit, m, &scratch, budget);
	if (!c || !c->svma)
		goto out;
	if (sp__image_bias(c->img, m->start, m->end, m->offset, jit->page_size,
			   &bias) == 0) {
		jp->desc_addr = c->svma + bias;
		jp->desc_module = m->id;
		jp->next_check_ns = 0;
		jit->st.gdb_processes++;
		sp__log(jit->logger, SP_LOG_DEBUG,
			"GDB JIT descriptor of pid %d in %s at %#llx", jp->pid,
			m->path, (unsigned long long)jp->desc_addr);
	}
out:
	if (c == &scratch && scratch.img)
		sp__image_unref(scratch.img);
}

bool sp__jit_modules_unseen(const struct sp__jit *jit,
			    const struct sp__process *p,
			    const struct sp__jit_proc *jp)
{
	size_t i;

	if (jit->urgent_budget == 0)
		return false;
	for (i = 0; i < p->modules.len; i++)
		if (((const struct sp__module *)sp__vec_at(&p->modules, i))
			    ->id >= jp->next_module)
			return true;
	return false;
}

int sp__jit_scan_modules(struct sp__procs *procs, struct sp__process *p,
			 struct sp__jit_proc *jp, bool urgent)
{
	struct sp__jit *jit = procs->jit;
	unsigned *budget = urgent ? &jit->urgent_budget : &jit->scan_budget;
	uint32_t next = jp->next_module;
	size_t i;

	for (i = 0; i < p->modules.len; i++) {
		const struct sp__module *m = sp__vec_at(&p->modules, i);
		bool done;

		if (m->id < jp->next_module)
			continue;
		if (!jp->dump && !jp->dump_failed &&
		    sp__jit_dump_name(m->path, p->pid))
			sp__jit_dump_open(jp, m->path, m->id);
		look_for_descriptor(jit, jp, m, budget, &done);
		if (!done)
			return 0; /* the rest at the next check */
		if (m->id + 1 > next)
			next = m->id + 1;
	}
	jp->next_module = next;
	return 0;
}
