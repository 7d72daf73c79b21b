/* SPDX-License-Identifier: MIT */
/* spulse: the names of the export formats, shared with bench_export. */

/*
 * The order is the order of `spulse export --help` and of the bench's
 * output lines; the names are what users type, so they never change.
 */
#include <string.h>

#include "formats.h"

static const struct {
	const char *name;
	enum sp_export_format format;
} formats[] = {
	{ "folded", SP_EXPORT_FOLDED },
	{ "flamegraph", SP_EXPORT_FLAMEGRAPH },
	{ "icicle", SP_EXPORT_ICICLE },
	{ "speedscope", SP_EXPORT_SPEEDSCOPE },
	{ "firefox", SP_EXPORT_FIREFOX },
	{ "pprof", SP_EXPORT_PPROF },
};

const char *spulse_export_format_at(size_t i, enum sp_export_format *format)
{
	if (i >= sizeof(formats) / sizeof(formats[0]))
		return NULL;
	*format = formats[i].format;
	return formats[i].name;
}

int spulse_export_format_parse(const char *name, enum sp_export_format *format)
{
	size_t i;

	for (i = 0; name && i < sizeof(formats) / sizeof(formats[0]); i++) {
		if (strcmp(name, formats[i].name) == 0) {
			*format = formats[i].format;
			return 0;
		}
	}
	return -1;
}
