/* SPDX-License-Identifier: MIT */
/* stackpulse: exporting spools to folded stacks, flame graphs, speedscope, Firefox Profiler and pprof. */
#ifndef STACKPULSE_EXPORT_H
#define STACKPULSE_EXPORT_H

#include <stackpulse/alloc.h>
#include <stackpulse/api.h>
#include <stackpulse/log.h>
#include <stackpulse/sink.h>
#include <stackpulse/symbolizer.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * Exporters read a spool sequentially (Replay: bounded memory), symbolize
 * each distinct stack once, aggregate, and stream the result into a sink
 * (file, fd, memory or callback; see sink.h). They use only the public
 * API. Names may hold any bytes: every format passes them through
 * sp_text_escape() (control bytes and invalid UTF-8 become the text
 * \xNN, so no output carries bytes a terminal or viewer acts on), then
 * applies its own quoting (folded: ';' in a name becomes ':').
 */

enum sp_export_format {
	/** Brendan Gregg's collapsed stacks: root first, ';'-joined, count. */
	SP_EXPORT_FOLDED = 0,
	/** Self-contained interactive SVG flame graph. */
	SP_EXPORT_FLAMEGRAPH = 1,
	/** Same, drawn top-down (icicle). */
	SP_EXPORT_ICICLE = 2,
	/** speedscope JSON, one sampled profile per thread. */
	SP_EXPORT_SPEEDSCOPE = 3,
	/** Firefox Profiler processed format, gzip-compressed JSON. */
	SP_EXPORT_FIREFOX = 4,
	/** pprof profile.proto, gzip-compressed. */
	SP_EXPORT_PPROF = 5,
};

/* Flags of struct sp_export_opts. */
#define SP_EXPORT_NO_INLINE 0x1u     /* raw frames only, no inline expansion */
#define SP_EXPORT_ANNOTATE_PID 0x2u  /* folded: prefix "pid;" */
#define SP_EXPORT_ANNOTATE_TID 0x4u  /* folded: prefix "tid;" */
#define SP_EXPORT_ANNOTATE_KIND 0x8u /* folded: suffix _[k] _[p] _[j] */

/**
 * struct sp_export_opts configures sp_export(). Set @size to
 * sizeof(struct sp_export_opts); zero fields mean defaults.
 * @pid: only samples of this process (0 = all).
 * @title: SVG / profile title (default: the spool's file name).
 * @symbolizer: options for the symbolizer the exporter creates (NULL =
 *   defaults).
 */
struct sp_export_opts {
	size_t size;
	const struct sp_allocator *allocator;
	const struct sp_logger *logger;
	uint32_t flags;
	int32_t pid;
	const char *title;
	const struct sp_symbolizer_opts *symbolizer;
};

/**
 * sp_export writes the spool at @path in @format to @out.
 * @param out Borrowed: written and flushed, not freed or finished.
 * @return 0, -EINVAL (unknown format or option), SP_ECORRUPT and other
 *         reader errors, sink errors, -ENOMEM.
 * Thread: any. Allocates: yes. Blocks: yes.
 */
SP_API int sp_export(const char *path, enum sp_export_format format,
		     struct sp_sink *out, const struct sp_export_opts *opts);

#ifdef __cplusplus
}
#endif

#endif /* STACKPULSE_EXPORT_H */
