/* SPDX-License-Identifier: MIT */
/* stackpulse: the optional per-object log hook. */
#ifndef STACKPULSE_LOG_H
#define STACKPULSE_LOG_H

#include <stackpulse/api.h>

#ifdef __cplusplus
extern "C" {
#endif

enum sp_log_level {
	SP_LOG_ERROR = 0,
	SP_LOG_WARN = 1,
	SP_LOG_INFO = 2,
	SP_LOG_DEBUG = 3,
};

/**
 * struct sp_logger receives the library's diagnostics.
 *
 * The library never prints. When an options struct carries a logger, its
 * @log callback receives one NUL-terminated message per event (no trailing
 * newline); @ctx is passed back unchanged. Messages up to @max_level are
 * delivered (zero means SP_LOG_WARN and more severe).
 * The logger must outlive the object it was given to.
 */
struct sp_logger {
	void (*log)(void *ctx, enum sp_log_level level, const char *msg);
	void *ctx;
	enum sp_log_level max_level;
};

#ifdef __cplusplus
}
#endif

#endif /* STACKPULSE_LOG_H */
