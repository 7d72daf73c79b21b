/* SPDX-License-Identifier: MIT */
/* Exporters: self-contained interactive SVG flame graphs and icicles. */

/*
 * Layout (flamegraph.pl's geometry, 1200 px wide):
 *
 *   +--------------------------------------------------------+
 *   | Reset Zoom            TITLE                     Search | HEAD px
 *   |   frames: one row of ROW px per depth; the synthetic    |
 *   |   root "all" at the bottom (flame) or top (icicle)     |
 *   | details of the hovered frame               Matched: x% | FOOT px
 *   +--------------------------------------------------------+
 *
 * Widths are proportional to samples. A frame narrower than MIN_PX
 * (0.1 px: invisible at 100 % zoom) is dropped with its subtree, as
 * flamegraph.pl's --minwidth does; the boxes left keep exact positions,
 * since each one's x is the sum of all earlier siblings, drawn or not.
 * Colours encode the frame kind: native warm yellow/orange, kernel
 * orange/red, Python blue-green, JIT green, unknown tan, the
 * "<stack truncated>" marker gray with a dashed outline. Within a kind,
 * the shade is a hash of the name, so a function keeps its colour across
 * graphs.
 *
 * The output is streamed: the tree (svg_tree.c) is walked twice without
 * recursion, once to find the deepest drawn row (the picture's height)
 * and once to write one <g> per frame, with a per-depth array of x
 * offsets as the only walk state. Each <g> carries its sample range
 * (data-x, data-w, data-d) for the script in svg_script.h (hover details,
 * click to zoom, reset, regex search with the matched percentage).
 */
#include <errno.h>
#include <string.h>

#include "export_internal.h"
#include "svg_script.h"

#define SVG_WIDTH 1200
#define SVG_PAD 10
#define SVG_ROW 16
#define SVG_HEAD 40
#define SVG_FOOT 34
#define SVG_MIN_PX 0.1
#define SVG_CHAR_PX 7.2
#define SVG_NONE UINT32_MAX

struct svg_ctx {
	struct sp__profile *prof;
	struct sp__ftree *tree;
	struct sp__xout *out;
	bool icicle;
	uint32_t max_depth; /* deepest drawn row */
	double scale;	    /* px per sample */
	uint32_t height;
};

static void (*const no_emit)(struct svg_ctx *, uint32_t, uint64_t) = NULL;

/* Visits drawn nodes in preorder; @emit (may be NULL) gets node and x. */
static int walk(struct svg_ctx *c,
		void (*emit)(struct svg_ctx *, uint32_t, uint64_t))
{
	const struct sp__fnode *nodes = c->tree->nodes;
	size_t cap = (size_t)c->prof->max_depth + 2;
	uint64_t *xs = sp__xmem_calloc(&c->prof->mem, cap, sizeof(*xs));
	uint32_t n = 0, d;

	if (!xs)
		return -ENOMEM;
	for (;;) {
		d = nodes[n].depth;
		if (nodes[n].total * c->scale >= SVG_MIN_PX) {
			if (d > c->max_depth)
				c->max_depth = d;
			if (emit)
				emit(c, n, xs[d]);
			if (nodes[n].child != SVG_NONE) {
				xs[d + 1] = xs[d];
				n = nodes[n].child;
				continue;
			}
		}
		/* Next sibling, or climb until an ancestor has one. */
		while (n && nodes[n].next == SVG_NONE)
			n = nodes[n].parent;
		if (!n)
			break;
		d = nodes[n].depth;
		xs[d] += nodes[n].total;
		n = nodes[n].next;
	}
	sp__xmem_free(&c->prof->mem, xs, cap * sizeof(*xs));
	return 0;
}

static void color(struct sp__xout *out, const struct sp__xframe *f)
{
	static const uint8_t base[][6] = {
		/* r lo, r span, g lo, g span, b lo, b span */
		[SP__XKIND_NATIVE] = { 225, 30, 140, 90, 30, 60 },
		[SP__XKIND_KERNEL] = { 210, 45, 60, 60, 0, 40 },
		[SP__XKIND_PYTHON] = { 50, 60, 165, 60, 165, 60 },
		[SP__XKIND_JIT] = { 50, 60, 200, 55, 50, 60 },
		[SP__XKIND_TRUNCATED] = { 170, 0, 170, 0, 170, 0 },
		[SP__XKIND_UNKNOWN] = { 195, 10, 180, 10, 160, 10 },
	};
	const uint8_t *b = base[f ? f->kind : SP__XKIND_NATIVE];
	uint64_t h = f ? sp__xhash(f->name, strlen(f->name), 7) : 0;
	int i;

	sp__xout_str(out, "rgb(");
	for (i = 0; i < 3; i++, h >>= 16) {
		if (i)
			sp__xout_char(out, ',');
		sp__xout_u64(out,
			     b[2 * i] + (h & 0xffff) * b[2 * i + 1] / 0x10000);
	}
	sp__xout_char(out, ')');
}

/* Writes the first @max code points of @s (invalid bytes count as one). */
static void label(struct sp__xout *out, const char *s, size_t max)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t len = strlen(s), cps = 0, n, i;
	char buf[1024];

	for (i = 0; i < len && cps < max && i + 4 < sizeof(buf); cps++) {
		n = sp__utf8_seq(p + i, len - i);
		i += n ? n : 1;
	}
	if (i == len) {
		sp__xout_xml(out, s);
		return;
	}
	/* Cut at a code point boundary and mark the cut. */
	for (i = 0, cps = 0; cps + 2 < max && i < sizeof(buf) - 8; cps++) {
		n = sp__utf8_seq(p + i, len - i);
		i += n ? n : 1;
	}
	memcpy(buf, s, i);
	buf[i] = '\0';
	sp__xout_xml(out, buf);
	sp__xout_str(out, "..");
}

static void node_title(struct svg_ctx *c, const struct sp__fnode *node,
		       const struct sp__xframe *f)
{
	uint64_t total = c->tree->nodes[0].total;

	sp__xout_str(c->out, "<title>");
	sp__xout_xml(c->out, f ? f->name : "all");
	sp__xout_str(c->out, " (");
	sp__xout_u64(c->out, node->total);
	sp__xout_str(c->out, node->total == 1 ? " sample, " : " samples, ");
	sp__xout_fixed(c->out, total ? 100.0 * node->total / total : 0, 2);
	sp__xout_char(c->out, '%');
	if (f) {
		sp__xout_str(c->out, ", ");
		sp__xout_str(c->out, sp__xkind_name(f->kind));
	}
	sp__xout_str(c->out, ")</title>");
}

static void emit_node(struct svg_ctx *c, uint32_t idx, uint64_t x)
{
	const struct sp__fnode *node = &c->tree->nodes[idx];
	const struct sp__xframe *f = idx ? &c->prof->frames[node->frame] : NULL;
	double px = SVG_PAD + x * c->scale, w = node->total * c->scale;
	uint32_t y = c->icicle ?
			     SVG_HEAD + node->depth * SVG_ROW :
			     c->height - SVG_FOOT - (node->depth + 1) * SVG_ROW;
	double chars = (w - 6) / SVG_CHAR_PX;
	struct sp__xout *out = c->out;

	sp__xout_str(out, f && f->kind == SP__XKIND_TRUNCATED ?
				  "<g class=\"f t\" data-x=\"" :
				  "<g class=\"f\" data-x=\"");
	sp__xout_u64(out, x);
	sp__xout_str(out, "\" data-w=\"");
	sp__xout_u64(out, node->total);
	sp__xout_str(out, "\" data-d=\"");
	sp__xout_u64(out, node->depth);
	sp__xout_str(out, "\">");
	node_title(c, node, f);
	sp__xout_str(out, "<rect x=\"");
	sp__xout_fixed(out, px, 2);
	sp__xout_str(out, "\" y=\"");
	sp__xout_u64(out, y);
	sp__xout_str(out, "\" width=\"");
	sp__xout_fixed(out, w, 2);
	sp__xout_str(out, "\" height=\"15\" rx=\"2\" fill=\"");
	color(out, f);
	sp__xout_str(out, "\"/><text x=\"");
	sp__xout_fixed(out, px + 3, 2);
	sp__xout_str(out, "\" y=\"");
	sp__xout_u64(out, y + 11);
	sp__xout_str(out, "\">");
	if (chars >= 3)
		label(out, f ? f->name : "all", (size_t)chars);
	sp__xout_str(out, "</text></g>\n");
}

static void header(struct svg_ctx *c)
{
	struct sp__xout *out = c->out;
	size_t i;

	sp__xout_str(out, "<?xml version=\"1.0\" encoding=\"UTF-8\" "
			  "standalone=\"no\"?>\n<svg version=\"1.1\" "
			  "xmlns=\"http://www.w3.org/2000/svg\" width=\"");
	sp__xout_u64(out, SVG_WIDTH);
	sp__xout_str(out, "\" height=\"");
	sp__xout_u64(out, c->height);
	sp__xout_str(out, "\" viewBox=\"0 0 ");
	sp__xout_u64(out, SVG_WIDTH);
	sp__xout_char(out, ' ');
	sp__xout_u64(out, c->height);
	sp__xout_str(out, "\" data-total=\"");
	sp__xout_u64(out, c->tree->nodes[0].total);
	sp__xout_str(out, "\" data-pw=\"");
	sp__xout_u64(out, SVG_WIDTH - 2 * SVG_PAD);
	sp__xout_str(out, "\" data-pad=\"");
	sp__xout_u64(out, SVG_PAD);
	sp__xout_str(out, "\">\n" SP__SVG_STYLE);
	for (i = 0; i < sizeof(sp__svg_script) / sizeof(*sp__svg_script); i++)
		sp__xout_str(out, sp__svg_script[i]);
	sp__xout_str(out, "<rect x=\"0\" y=\"0\" width=\"100%\" "
			  "height=\"100%\" fill=\"rgb(250,250,245)\"/>\n"
			  "<text id=\"title\" x=\"600\" y=\"24\" "
			  "text-anchor=\"middle\">");
	sp__xout_xml(out, c->prof->title);
	sp__xout_str(out, c->icicle ? " (icicle)" : "");
	sp__xout_str(out, "</text>\n<text id=\"reset\" class=\"btn hidden\" "
			  "x=\"10\" y=\"24\">Reset Zoom</text>\n"
			  "<text id=\"search\" class=\"btn\" x=\"1190\" "
			  "y=\"24\" text-anchor=\"end\">Search</text>\n");
}

static void footer(struct svg_ctx *c)
{
	struct sp__xout *out = c->out;
	uint32_t y = c->height - 12;

	sp__xout_str(out, "</g>\n<text id=\"details\" x=\"10\" y=\"");
	sp__xout_u64(out, y);
	sp__xout_str(out, c->tree->nodes[0].total ? "\"> </text>\n" :
						    "\">No samples</text>\n");
	sp__xout_str(out, "<text id=\"matched\" x=\"1190\" y=\"");
	sp__xout_u64(out, y);
	sp__xout_str(out, "\" text-anchor=\"end\"> </text>\n</svg>\n");
}

int sp__export_svg(struct sp__profile *prof, struct sp_sink *sink, bool icicle)
{
	struct sp__ftree tree;
	struct sp__xout out;
	struct svg_ctx c = {
		.prof = prof, .tree = &tree, .out = &out, .icicle = icicle
	};
	int err = sp__ftree_build(&tree, prof);

	if (err)
		return err;
	err = sp__xout_init_sink(&out, &prof->mem, sink);
	if (err)
		goto out_tree;
	c.scale = tree.nodes[0].total ? (double)(SVG_WIDTH - 2 * SVG_PAD) /
						tree.nodes[0].total :
					0;
	err = walk(&c, no_emit);
	c.height = SVG_HEAD + SVG_FOOT + (c.max_depth + 1) * SVG_ROW;
	header(&c);
	sp__xout_str(&out, "<g id=\"frames\">\n");
	if (!err && tree.nodes[0].total)
		err = walk(&c, emit_node);
	footer(&c);
	if (err)
		sp__xout_finish(&out);
	else
		err = sp__xout_finish(&out);
out_tree:
	sp__ftree_fini(&tree, &prof->mem);
	return err;
}
