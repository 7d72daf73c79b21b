/* SPDX-License-Identifier: MIT */
/* Exporters: the flame graph's prefix tree of merged stacks. */

/*
 * A flame graph merges identical frames at each level: the children of a
 * node are keyed by (parent node, frame name and kind), so one function
 * reached through different lines or processes is one box. Frames are
 * first mapped to a representative with the same name and kind, then
 * each stack (root first) walks down from the root, creating nodes on the
 * way and adding its sample count to every node it passes.
 *
 * Children are then linked in name order (as flamegraph.pl sorts them),
 * which makes the picture deterministic. The tree has at most one node
 * per distinct stack prefix: bounded by the profile, not by the samples.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "export_internal.h"

#define FT_NONE UINT32_MAX

/* Maps every frame to the first frame of the same name and kind. */
static int name_reps(struct sp__profile *prof, uint32_t *rep)
{
	struct sp__xmap map = { 0 };
	size_t i, pos;
	uint32_t cand;
	uint64_t key;
	int err = 0;

	for (i = 0; !err && i < prof->nframes; i++) {
		const struct sp__xframe *f = &prof->frames[i];

		key = sp__xhash(f->name, strlen(f->name), f->kind);
		rep[i] = (uint32_t)i;
		pos = 0;
		while (sp__xmap_next(&map, key, &pos, &cand)) {
			if (prof->frames[cand].kind == f->kind &&
			    !strcmp(prof->frames[cand].name, f->name)) {
				rep[i] = cand;
				break;
			}
		}
		if (rep[i] == i)
			err = sp__xmap_put(&map, &prof->mem, key, (uint32_t)i);
	}
	sp__xmap_fini(&map, &prof->mem);
	return err;
}

static int new_node(struct sp__ftree *tree, const struct sp__xmem *mem,
		    uint32_t parent, uint32_t frame, uint32_t *idx)
{
	int err = sp__xmem_reserve(mem, (void **)&tree->nodes, &tree->cap,
				   tree->nnodes + 1, sizeof(*tree->nodes));

	if (err)
		return err;
	tree->nodes[tree->nnodes] = (struct sp__fnode){
		.frame = frame,
		.parent = parent,
		.child = FT_NONE,
		.next = FT_NONE,
		.depth = parent == FT_NONE ? 0 : tree->nodes[parent].depth + 1,
	};
	*idx = (uint32_t)tree->nnodes++;
	return 0;
}

static int add_stacks(struct sp__ftree *tree, struct sp__profile *prof,
		      const uint32_t *rep)
{
	struct sp__xmap map = { 0 };
	uint32_t cur, child, i, s;
	uint64_t key;
	int err = 0;

	for (s = 0; !err && s < prof->nstacks; s++) {
		const uint32_t *f = sp__profile_stack_frames(prof, s);
		uint64_t n = prof->stacks[s].samples;

		cur = 0;
		tree->nodes[0].total += n;
		for (i = 0; !err && i < prof->stacks[s].len; i++) {
			key = ((uint64_t)cur << 32) | rep[f[i]];
			child = sp__xmap_get(&map, key);
			if (child == FT_NONE) {
				err = new_node(tree, &prof->mem, cur, rep[f[i]],
					       &child);
				if (!err)
					err = sp__xmap_put(&map, &prof->mem,
							   key, child);
			}
			if (!err)
				tree->nodes[child].total += n;
			cur = child;
		}
	}
	sp__xmap_fini(&map, &prof->mem);
	return err;
}

static int cmp_node(const void *pa, const void *pb, void *ctx)
{
	void *const *c = ctx;
	const struct sp__fnode *nodes = c[0];
	const struct sp__profile *prof = c[1];
	const struct sp__fnode *a = &nodes[*(const uint32_t *)pa];
	const struct sp__fnode *b = &nodes[*(const uint32_t *)pb];
	int r;

	if (a->parent != b->parent)
		return a->parent < b->parent ? -1 : 1;
	r = strcmp(prof->frames[a->frame].name, prof->frames[b->frame].name);
	if (r)
		return r;
	return (a->frame > b->frame) - (a->frame < b->frame);
}

/* Links each node's children in name order. */
static int link_children(struct sp__ftree *tree, struct sp__profile *prof)
{
	size_t n = tree->nnodes - 1, i;
	uint32_t *order =
		sp__xmem_calloc(&prof->mem, n ? n : 1, sizeof(*order));
	void *ctx[2] = { tree->nodes, prof };
	struct sp__fnode *prev = NULL;

	if (!order)
		return -ENOMEM;
	for (i = 0; i < n; i++)
		order[i] = (uint32_t)(i + 1);
	qsort_r(order, n, sizeof(*order), cmp_node, ctx);
	for (i = 0; i < n; i++) {
		struct sp__fnode *node = &tree->nodes[order[i]];

		if (!prev || prev->parent != node->parent)
			tree->nodes[node->parent].child = order[i];
		else
			prev->next = order[i];
		prev = node;
	}
	sp__xmem_free(&prof->mem, order, (n ? n : 1) * sizeof(*order));
	return 0;
}

int sp__ftree_build(struct sp__ftree *tree, struct sp__profile *prof)
{
	size_t nrep = prof->nframes ? prof->nframes : 1;
	uint32_t *rep = sp__xmem_calloc(&prof->mem, nrep, sizeof(*rep));
	uint32_t root;
	int err = rep ? 0 : -ENOMEM;

	memset(tree, 0, sizeof(*tree));
	if (!err)
		err = name_reps(prof, rep);
	if (!err)
		err = new_node(tree, &prof->mem, FT_NONE, FT_NONE, &root);
	if (!err)
		err = add_stacks(tree, prof, rep);
	if (!err)
		err = link_children(tree, prof);
	sp__xmem_free(&prof->mem, rep, nrep * sizeof(*rep));
	if (err)
		sp__ftree_fini(tree, &prof->mem);
	return err;
}

void sp__ftree_fini(struct sp__ftree *tree, const struct sp__xmem *mem)
{
	sp__xmem_free(mem, tree->nodes, tree->cap * sizeof(*tree->nodes));
	memset(tree, 0, sizeof(*tree));
}
