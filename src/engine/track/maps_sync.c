/* SPDX-License-Identifier: MIT */
/* Loading and reconciling a process's modules with /proc/PID/maps. */

/*
 * At attach the maps file is the only source of modules (a running target
 * sends no MMAP2 for what it mapped earlier). Later it is re-read when
 * records may have been missed: after a loss batch (recovery sweep) or
 * when a sample's PC lies outside every module. A re-read is a snapshot of
 * "now": modules that still match keep their generation so samples keep
 * pointing at the same ids; the rest are retired and re-registered.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "proc_maps.h"
#include "process.h"

/* Reads all of @path into @buf (grown as needed, NUL-terminated). */
static int read_all(const struct sp__mem *mem, const char *path,
		    struct sp__vec *buf)
{
	FILE *f = fopen(path, "re");
	size_t n;
	int err = 0;

	if (!f)
		return -errno;
	buf->len = 0;
	for (;;) {
		if (sp__vec_reserve(buf, mem, 4096)) {
			err = -ENOMEM;
			break;
		}
		n = fread((char *)buf->data + buf->len, 1,
			  buf->cap - buf->len - 1, f);
		buf->len += n;
		if (n == 0) {
			err = ferror(f) ? -EIO : 0;
			break;
		}
	}
	fclose(f);
	if (!err)
		((char *)buf->data)[buf->len] = '\0';
	return err;
}

static void desc_from_entry(const struct sp__maps_entry *e,
			    struct sp__map_desc *d)
{
	memset(d, 0, sizeof(*d));
	d->start = e->start;
	d->end = e->end;
	d->offset = e->offset;
	d->inode = e->inode;
	d->dev_major = e->dev_major;
	d->dev_minor = e->dev_minor;
	d->path = e->path;
	d->path_len = e->path_len;
	/* As an MMAP2 record gives anonymous code (vm_pgoff = start). */
	if (e->path_len == 0) {
		d->path = "//anon";
		d->path_len = 6;
		d->offset = e->start;
	}
}

/*
 * The tracked entries of /proc/PID/maps as descriptors in @descs; their
 * paths point into @text, which must outlive them.
 */
static int maps_read(const struct sp__procs *procs, int32_t pid,
		     struct sp__vec *text, struct sp__vec *descs)
{
	struct sp__maps_entry e;
	struct sp__map_desc d;
	char path[64], *p, *nl;
	int err;

	snprintf(path, sizeof(path), "/proc/%d/maps", pid);
	err = read_all(procs->mem, path, text);
	for (p = text->data; !err && p && *p; p = nl + 1) {
		nl = strchr(p, '\n');
		if (!nl)
			nl = p + strlen(p);
		if (!sp__maps_parse_line(p, (size_t)(nl - p), &e) &&
		    sp__maps_is_tracked(&e)) {
			/* The path lies in @text: decode it where it is. */
			e.path_len = sp__maps_unescape_path(p + (e.path - p),
							    e.path_len);
			desc_from_entry(&e, &d);
			err = sp__vec_push(descs, procs->mem, &d);
		}
		if (!*nl)
			break;
	}
	return err;
}

static bool module_listed(const struct sp__module *m,
			  const struct sp__vec *descs)
{
	size_t i;

	for (i = 0; i < descs->len; i++)
		if (sp__module_matches(m, sp__vec_at(descs, i)))
			return true;
	return false;
}

static bool desc_known(const struct sp__process *proc,
		       const struct sp__map_desc *d)
{
	size_t i;

	for (i = 0; i < proc->modules.len; i++)
		if (sp__module_matches(sp__vec_at(&proc->modules, i), d))
			return true;
	return false;
}

/* Retires what @descs no longer lists, then registers what is new. */
static int apply_descs(struct sp__procs *procs, struct sp__process *proc,
		       const struct sp__vec *descs, bool *changed)
{
	size_t i;
	int err;

	for (i = proc->modules.len; i-- > 0;) {
		if (module_listed(sp__vec_at(&proc->modules, i), descs))
			continue;
		*changed = true;
		err = sp__process_retire_module(procs, proc, i);
		if (err)
			return err;
	}
	for (i = 0; i < descs->len; i++) {
		const struct sp__map_desc *d = sp__vec_at(descs, i);

		if (desc_known(proc, d))
			continue;
		*changed = true;
		err = sp__process_map(procs, proc, d);
		if (err)
			return err;
	}
	return 0;
}

static int sync_maps(struct sp__procs *procs, struct sp__process *proc,
		     bool keep_if_empty, bool *changed)
{
	struct sp__vec text, descs;
	int err;

	*changed = false;
	sp__vec_init(&text, 1);
	sp__vec_init(&descs, sizeof(struct sp__map_desc));
	err = maps_read(procs, proc->pid, &text, &descs);
	if (!err && !(keep_if_empty && descs.len == 0))
		err = apply_descs(procs, proc, &descs, changed);
	sp__vec_fini(&descs, procs->mem);
	sp__vec_fini(&text, procs->mem);
	return err;
}

int sp__process_load_maps(struct sp__procs *procs, struct sp__process *proc)
{
	bool changed;

	return sync_maps(procs, proc, false, &changed);
}

int sp__process_reconcile(struct sp__procs *procs, struct sp__process *proc,
			  bool *changed)
{
	return sync_maps(procs, proc, true, changed);
}
