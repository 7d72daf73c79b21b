/* SPDX-License-Identifier: MIT */
/* Formatting front end of the per-object log hook (R8). */
#ifndef SP_BASE_LOGGING_H
#define SP_BASE_LOGGING_H

#include <stackpulse/log.h>

/*
 * Formats a message (at most 255 bytes, truncated) and hands it to
 * @logger when it is non-NULL and @level is enabled. No logger, no output.
 */
void sp__log(const struct sp_logger *logger, enum sp_log_level level,
	     const char *fmt, ...) __attribute__((format(printf, 3, 4)));

#endif /* SP_BASE_LOGGING_H */
