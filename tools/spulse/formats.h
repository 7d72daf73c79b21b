/* SPDX-License-Identifier: MIT */
/* spulse: the names of the export formats, shared with bench_export. */
#ifndef SPULSE_FORMATS_H
#define SPULSE_FORMATS_H

/*
 * `spulse export --format NAME` and bench/bench_export name the formats
 * of enum sp_export_format the same way; one table keeps them from
 * drifting apart. Only the public <stackpulse.h> is needed, so the bench
 * can compile formats.c without the rest of the CLI.
 */
#include <stddef.h>

#include <stackpulse.h>

/*
 * spulse_export_format_at returns the name of the @i-th format and sets
 * *@format to it, or returns NULL once @i is past the last format.
 */
const char *spulse_export_format_at(size_t i, enum sp_export_format *format);

/*
 * spulse_export_format_parse sets *@format to the format called @name;
 * returns 0, or -1 for a NULL or unknown name (*@format is untouched).
 */
int spulse_export_format_parse(const char *name, enum sp_export_format *format);

#endif /* SPULSE_FORMATS_H */
