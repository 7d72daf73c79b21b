/* SPDX-License-Identifier: MIT */
/* Strict UTF-8 validation (Rust str::from_utf8 rules). */
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
 * Length (1..4) of the well-formed UTF-8 sequence at @s (@avail > 0 bytes
 * readable), or 0 when the bytes there are not one.
 */
size_t sp__utf8_seq_len(const uint8_t *s, size_t avail);

#endif /* SP_BASE_UTF8_H */
