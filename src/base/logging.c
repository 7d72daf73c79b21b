/* SPDX-License-Identifier: MIT */
/* Log hook front end. */
#include <stdarg.h>
#include <stdio.h>

#include "logging.h"

void sp__log(const struct sp_logger *logger, enum sp_log_level level,
	     const char *fmt, ...)
{
	enum sp_log_level max;
	char msg[256];
	va_list ap;

	if (!logger || !logger->log)
		return;
	max = logger->max_level ? logger->max_level : SP_LOG_WARN;
	if (level > max)
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	logger->log(logger->ctx, level, msg);
}
