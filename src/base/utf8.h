/* SPDX-License-Identifier: MIT */
/* Strict UTF-8 validation (Rust str::from_utf8 rules) and the path escape. */
#ifndef SP_BASE_UTF8_H
#define SP_BASE_UTF8_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * Returns true when @s[0..len) is well-formed UTF-8: shortest forms only,
 * no surrogates (U+D800..U+DFFF), nothing above U+10FFFF. NUL bytes are
 * valid. SPULSE3 §5.1 requires this of module paths.
 */
bool sp__utf8_valid(const uint8_t *s, size_t len);

/*
 * sp__utf8_seq_len returns the length (1..4) of the well-formed UTF-8
 * sequence at @s (@avail bytes readable, at least 1), or 0 if there is
 * none.
 */
size_t sp__utf8_seq_len(const uint8_t *s, size_t avail);

/*
 * The escape of module paths that are not UTF-8 (SPULSE3 §5.1 requires
 * UTF-8; Linux file names are any bytes but '/' and NUL), documented in
 * docs/spool-format.md:
 *
 *   a well-formed UTF-8 sequence   as it is
 *   a backslash                    "\\" (two backslashes)
 *   any other byte                 "\xNN", NN its value in lowercase hex
 *
 * It is applied only to paths that are not valid UTF-8, so every valid
 * path is written verbatim; the escaped form is valid UTF-8 and at most
 * four times as long. A reader cannot tell from the bytes alone whether a
 * path was escaped, so the symbolizer opens the path as written first and
 * the unescaped bytes only if that fails (both checked against the
 * module's device and inode).
 *
 * sp__utf8_escape writes the escaped @s[0..len) into @out (at most @cap
 * bytes) and returns its full length (> @cap means it was cut).
 * sp__utf8_unescape undoes it into @out (at most @cap bytes) and returns
 * the full decoded length, or SIZE_MAX when @s holds a backslash that
 * starts neither escape (then it was not written by sp__utf8_escape).
 */
size_t sp__utf8_escape(const uint8_t *s, size_t len, char *out, size_t cap);
size_t sp__utf8_unescape(const char *s, size_t len, uint8_t *out, size_t cap);

#endif /* SP_BASE_UTF8_H */
