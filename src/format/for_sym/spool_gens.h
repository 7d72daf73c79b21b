/* SPDX-License-Identifier: MIT */
/* format's door for sym: where in the frame stream a spool's records came. */
#ifndef SP_FORMAT_SPOOL_GENS_H
#define SP_FORMAT_SPOOL_GENS_H

#include <stddef.h>
#include <stdint.h>

#include <stackpulse/spool.h>

/*
 * src/format/for_sym/ holds what format offers the symbolizer beyond the
 * public API, and nothing else: sym's include path names this folder,
 * never src/format itself, so sym cannot reach format's internals
 * (format_internal.h, the decoder's store).
 *
 * The symbolizer splits a pid into process generations (src/sym/
 * sym_gens.c) by where records came in the frame stream, which the
 * public struct sp_python_record does not carry.
 */

/*
 * sp__spool_python_at gives, for each Python-runtime record of
 * sp_spool_python_records() (same order and count), the number of frame
 * records decoded before it: the generation it belongs to.
 * @at receives the array (borrowed, valid until the reader is closed or
 * decodes more), @count its length.
 * Returns 0, -EINVAL, or -EOPNOTSUPP when the spool keeps no Python
 * records (a Tail's, or one from sp_spool_new()).
 * Thread: the reader's. Allocates: no.
 */
int sp__spool_python_at(const struct sp_spool *spool, const uint32_t **at,
			size_t *count);

/*
 * sp__spool_retirements is the number of modules retired so far (tag 7
 * and 8 records): it grows when a Replay decodes a retirement, which
 * changes no count of the public API. 0 for NULL.
 */
uint64_t sp__spool_retirements(const struct sp_spool *spool);

#endif /* SP_FORMAT_SPOOL_GENS_H */
