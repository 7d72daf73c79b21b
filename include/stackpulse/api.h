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

/*
 * Sized structs: every options struct (and struct sp_pipeline_stats) starts
 * with `size_t size`, set to its sizeof. The library reads (or fills) the
 * fields that fit in @size. It refuses (-EINVAL) a size below sizeof(size_t)
 * or not a multiple of it (it would end inside a field) and, in options,
 * non-zero bytes past the fields it knows.
 */

#if defined(__GNUC__)
#define SP_API __attribute__((visibility("default")))
#else
#define SP_API
#endif

#endif /* STACKPULSE_API_H */
