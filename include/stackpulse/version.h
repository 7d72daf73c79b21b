/* SPDX-License-Identifier: MIT */
/* stackpulse: library version. */
#ifndef STACKPULSE_VERSION_H
#define STACKPULSE_VERSION_H

#include <stackpulse/api.h>

#ifdef __cplusplus
extern "C" {
#endif

#define SP_VERSION_MAJOR 0
#define SP_VERSION_MINOR 1
#define SP_VERSION_PATCH 0

/**
 * sp_version returns the library version as "MAJOR.MINOR.PATCH".
 *
 * @return a static NUL-terminated string.
 *
 * Thread: any. Allocates: no. Blocks: no. Signal-safe: yes.
 */
SP_API const char *sp_version(void);

#ifdef __cplusplus
}
#endif

#endif /* STACKPULSE_VERSION_H */
