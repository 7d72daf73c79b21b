/* SPDX-License-Identifier: MIT */
/* spulse: long C++ and Rust names shortened for tables, whole tokens at a time. */
#ifndef SPULSE_ELIDE_H
#define SPULSE_ELIDE_H

#include <stddef.h>

/* Names longer than this are shortened in the text tables. */
#define SPULSE_NAME_WIDTH 96

/*
 * spulse_elide returns @name when it has at most @width bytes, else a
 * shortened copy in @buf (@cap bytes): template and lambda arguments,
 * then parameter lists, then leading path components become "...", never
 * part of a token (elide.c). A name that does not fit @buf is returned
 * as it is.
 */
const char *spulse_elide(const char *name, size_t width, char *buf, size_t cap);

#endif /* SPULSE_ELIDE_H */
