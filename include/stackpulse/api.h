/* SPDX-License-Identifier: MIT */
/* stackpulse: export macro and the fixed-width types every public header uses. */
#ifndef STACKPULSE_API_H
#define STACKPULSE_API_H

#include <stddef.h>
#include <stdint.h>

/*
 * The library is built with hidden visibility; only declarations marked
 * SP_API are exported from libstackpulse.so (and listed in its version map).
 */
#if defined(__GNUC__)
#define SP_API __attribute__((visibility("default")))
#else
#define SP_API
#endif

#endif /* STACKPULSE_API_H */
