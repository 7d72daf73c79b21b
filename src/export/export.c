/* SPDX-License-Identifier: MIT */
/* Exporters: sp_export(), building the profile and dispatching by format. */

/*
 * Every format works from the same aggregated profile (profile.c), so the
 * outputs of one spool agree on per-stack counts. Each format is one
 * function declared in export_internal.h; formats not built in this
 * library return -EOPNOTSUPP. The sink is written and flushed, never
 * finished: the caller owns it.
 */
#include <errno.h>
#include <stddef.h>

#include "export_internal.h"

static int run_format(struct sp__profile *prof, enum sp_export_format format,
		      struct sp_sink *out)
{
	switch (format) {
	case SP_EXPORT_FOLDED:
		return sp__export_folded(prof, out);
	case SP_EXPORT_FLAMEGRAPH:
		return sp__export_svg(prof, out, false);
	case SP_EXPORT_ICICLE:
		return sp__export_svg(prof, out, true);
	case SP_EXPORT_SPEEDSCOPE:
		return sp__export_speedscope(prof, out);
	case SP_EXPORT_FIREFOX:
		return sp__export_firefox(prof, out);
	case SP_EXPORT_PPROF:
		return sp__export_pprof(prof, out);
	}
	return -EINVAL;
}

SP_API int sp_export(const char *path, enum sp_export_format format,
		     struct sp_sink *out, const struct sp_export_opts *opts)
{
	struct sp__profile prof;
	int err;

	if (!path || !out || (unsigned)format > SP_EXPORT_PPROF)
		return -EINVAL;
	err = sp__profile_build(&prof, path, opts);
	if (err)
		return err;
	err = run_format(&prof, format, out);
	if (!err)
		err = sp_sink_flush(out);
	sp__profile_fini(&prof);
	return err;
}
