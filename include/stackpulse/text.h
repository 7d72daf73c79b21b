/* SPDX-License-Identifier: MIT */
/* stackpulse: terminal-safe text for names and paths from recorded data. */
#ifndef STACKPULSE_TEXT_H
#define STACKPULSE_TEXT_H

#include <stddef.h>
#include <stdint.h>

#include <stackpulse/api.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * Symbol names, module paths and perf-map names are bytes chosen by
 * whoever wrote the profiled program, its JIT or its files. Printed raw,
 * an ESC starts a terminal escape sequence (retitle the window, rewrite
 * the screen, on some terminals answer back into the input), a CR
 * overwrites the line being read, a BEL rings. sp_text_escape() is the
 * one place every text output of the library and of spulse goes through
 * (folded stacks, SVG titles and labels, report, top, dump).
 */

/** sp_text_escape flag: also escape every byte >= 0x80 (fixed-width tables). */
#define SP_TEXT_ASCII 0x1u
/** sp_text_escape flag: escape '"' as \" (text inside double quotes). */
#define SP_TEXT_QUOTED 0x2u
/**
 * sp_text_escape flag: escape '\' as \\, so that the output maps back to
 * exactly the input bytes.
 */
#define SP_TEXT_REVERSIBLE 0x4u

/**
 * sp_text_escape writes @text (@len bytes, NUL bytes included) to @emit as
 * text that a terminal shows and never acts on. These become \xNN, one
 * escape per byte: C0 controls (0x00-0x1f: ESC, BEL, CR, LF, TAB...) and
 * DEL (0x7f); the C1 controls U+0080-U+009F, encoded in UTF-8; every byte
 * that is not part of valid UTF-8 (among them the raw bytes 0x80-0x9f an
 * 8-bit terminal reads as C1 controls). Valid UTF-8 otherwise passes
 * unchanged; @flags (SP_TEXT_*) escape more.
 * @param emit called with consecutive pieces of the output, in order;
 *        a negative return stops the call and is returned.
 * @return 0, -EINVAL (NULL @emit, or NULL @text with @len > 0, or an
 *         unknown flag), or the first negative return of @emit.
 * Thread: any. Allocates: no. Blocks: no (unless @emit does).
 */
SP_API int sp_text_escape(const char *text, size_t len, uint32_t flags,
			  int (*emit)(void *ctx, const char *buf, size_t len),
			  void *ctx);

#ifdef __cplusplus
}
#endif

#endif /* STACKPULSE_TEXT_H */
