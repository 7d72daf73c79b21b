/* SPDX-License-Identifier: MIT */
/* spulse: whether a stream may get terminal escape codes (progress, colour). */

/*
 * Escape codes (cursor movement, clearing, bold) go only to a terminal
 * that understands them: the stream is a TTY and TERM is set and not
 * "dumb" (Emacs shell buffers, some CI log viewers and serial consoles
 * set TERM=dumb and print the codes as garbage). Colour also honours
 * NO_COLOR (https://no-color.org: any value, even empty, turns it off).
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "spulse.h"

bool spulse_term_escapes(int fd)
{
	const char *term = getenv("TERM");

	return isatty(fd) == 1 && term && *term && strcmp(term, "dumb") != 0;
}

bool spulse_term_color(int fd)
{
	return spulse_term_escapes(fd) && !getenv("NO_COLOR");
}
