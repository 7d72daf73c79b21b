/* SPDX-License-Identifier: MIT */
/* System.map fallback for restricted kallsyms, with KASLR slide inference. */
#include <errno.h>
#include <stdio.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "ksyms_internal.h"
#include "logging.h"

/*
 * When /proc/kallsyms shows only zeros (kptr_restrict, or perf_event
 * paranoia for non-root readers) the running kernel's System.map still
 * names its symbols, but at link-time addresses. Under KASLR the runtime
 * text sits at link + slide, with the slide a multiple of 2 MiB. We do
 * not know it, so it is inferred from the sampled kernel PCs:
 *
 *   candidates: 0 (no KASLR, or the default base)
 *               align_down(lowest PC, 2 MiB) - _text
 *   score:      PCs that fall within SP_KSYM_SPAN (1 MiB) after some
 *               symbol of the map moved by the candidate, and the total
 *               of those distances;
 *   choice:     only candidates with >= 8 PCs requested and >= 8 matched
 *               count; most matches win, then the smallest total; with
 *               no qualifying candidate the map is used unmoved.
 *
 * The lowest PC is usually in early text (entry code, scheduler), so its
 * 2 MiB-aligned floor is the runtime _text for the usual kernels whose
 * _text is 2 MiB aligned. Distro packages often install a placeholder
 * System.map ("ffffffffffffffff B The real System.map is in ..."), which
 * yields no symbols: such a file is skipped like a missing one.
 */
#define SLIDE_ALIGN (2ull << 20)
#define SLIDE_MIN_PCS 8

static void score_slide(const struct sp__ksyms *map, const uint64_t *pcs,
			size_t npcs, uint64_t slide, size_t *matched,
			uint64_t *total)
{
	const struct sp__ksym *s;
	uint64_t q, d;
	size_t i;

	*matched = 0;
	*total = 0;
	for (i = 0; i < npcs; i++) {
		q = pcs[i] - slide; /* runtime -> link address */
		s = sp__ksyms_floor(map, q);
		if (!s)
			continue;
		d = q - s->addr;
		if (d >= SP_KSYM_SPAN)
			continue;
		(*matched)++;
		*total = *total > UINT64_MAX - d ? UINT64_MAX : *total + d;
	}
}

uint64_t sp__system_map_infer_slide(const struct sp__ksyms *map,
				    const uint64_t *pcs, size_t npcs)
{
	uint64_t cand[2], best = 0, best_total = UINT64_MAX, total;
	size_t ncand = 1, best_matched = 0, matched, i;

	if (npcs < SLIDE_MIN_PCS)
		return 0;
	cand[0] = 0;
	if (map->text) {
		cand[1] = (pcs[0] & ~(SLIDE_ALIGN - 1)) - map->text;
		ncand += cand[1] != 0;
	}
	for (i = 0; i < ncand; i++) {
		score_slide(map, pcs, npcs, cand[i], &matched, &total);
		if (matched < SLIDE_MIN_PCS)
			continue;
		if (matched > best_matched ||
		    (matched == best_matched && total < best_total)) {
			best = cand[i];
			best_matched = matched;
			best_total = total;
		}
	}
	return best;
}

/* Moves a freshly read map by the inferred slide, then keeps the PCs'. */
static int relocate(struct sp__ksyms *map, const uint64_t *pcs, size_t npcs,
		    uint64_t *slide)
{
	const struct sp__mem *mem = &map->mem;
	uint64_t *sorted = NULL;
	int err = 0;

	if (pcs && npcs) {
		sorted = sp__ksyms_sorted_pcs(mem, pcs, npcs);
		if (!sorted)
			return -ENOMEM;
	}
	*slide = sorted ? sp__system_map_infer_slide(map, sorted, npcs) : 0;
	sp__ksyms_shift(map, *slide);
	if (pcs)
		err = sp__ksyms_compact(map, sorted, sorted ? npcs : 0);
	sp__mem_free(mem, sorted, sorted ? npcs * sizeof(*sorted) : 0);
	return err;
}

static int finish_map(struct sp__ksyms *map, const uint64_t *pcs, size_t npcs,
		      uint64_t *slide, struct sp__ksyms **out)
{
	int err = relocate(map, pcs, npcs, slide);

	if (err < 0) {
		sp__ksyms_free(map);
		return err;
	}
	*out = map;
	return 0;
}

int sp__system_map_parse(const struct sp__mem *mem, const char *data,
			 size_t len, const uint64_t *pcs, size_t npcs,
			 uint64_t *slide, struct sp__ksyms **out)
{
	struct sp__ksyms *map;
	int err = sp__ksyms_parse(mem, data, len, NULL, 0, &map);

	if (err < 0)
		return err;
	return finish_map(map, pcs, npcs, slide, out);
}

int sp__system_map_load_path(const struct sp__mem *mem, const char *path,
			     const uint64_t *pcs, size_t npcs, uint64_t *slide,
			     struct sp__ksyms **out)
{
	struct sp__ksyms *map;
	int fd = sp__ksyms_open_file(path), err;

	if (fd < 0)
		return fd;
	err = sp__ksyms_read(mem, fd, NULL, 0, NULL, 0, &map);
	close(fd);
	if (err < 0)
		return err;
	return finish_map(map, pcs, npcs, slide, out);
}

static const char *const candidates[] = {
	"/boot/System.map-%s",
	"/usr/lib/debug/boot/System.map-%s",
	"/lib/modules/%s/build/System.map",
	"/usr/lib/modules/%s/build/System.map",
	"/lib/modules/%s/System.map",
	"/usr/lib/modules/%s/System.map",
};

/* Loads one candidate; -ENOENT when it is missing or has no symbols. */
static int try_candidate(const struct sp__mem *mem, const char *path,
			 const uint64_t *pcs, size_t npcs,
			 const struct sp_logger *logger, struct sp__ksyms **out)
{
	struct sp__ksyms *map;
	uint64_t slide;
	int err = sp__system_map_load_path(mem, path, pcs, npcs, &slide, &map);

	if (err == -ENOMEM)
		return err;
	if (err < 0)
		return -ENOENT;
	if (!sp__ksyms_is_usable(map)) {
		sp__ksyms_free(map);
		return -ENOENT;
	}
	sp__log(logger, SP_LOG_INFO, "kernel symbols: %s, KASLR slide 0x%llx",
		path, (unsigned long long)slide);
	*out = map;
	return 0;
}

int sp__system_map_load(const struct sp__mem *mem, const char *release,
			const uint64_t *pcs, size_t npcs,
			const struct sp_logger *logger, struct sp__ksyms **out)
{
	struct utsname uts;
	char path[512];
	size_t i;
	int err;

	if (!release) {
		if (uname(&uts) < 0)
			return -ENOENT;
		release = uts.release;
	}
	for (i = 0; i < sizeof(candidates) / sizeof(candidates[0]); i++) {
		err = snprintf(path, sizeof(path), candidates[i], release);
		if (err < 0 || (size_t)err >= sizeof(path))
			continue;
		err = try_candidate(mem, path, pcs, npcs, logger, out);
		if (err != -ENOENT)
			return err;
	}
	return -ENOENT;
}
