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

#endif /* SP_BASE_UTF8_H */
