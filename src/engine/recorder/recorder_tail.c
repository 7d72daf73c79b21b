/* SPDX-License-Identifier: MIT */
/* What the Recorder hands out to readers: pending state and its one Tail. */

/*
 * A file spool may be read while it is written. Only the Tail created
 * here may discard consumed bytes (SP_READER_OWNS_FILE): the recorder
 * knows that nobody else reads the file it owns, and handing out a second
 * such Tail would let two readers punch holes under each other.
 */
#include <errno.h>

#include <stackpulse/tail.h>

#include "recorder_internal.h"
#include "spool_file.h"

bool sp_recorder_has_pending_events(const struct sp_recorder *rec)
{
	return rec && sp__pipeline_pending(rec->pipe);
}

int sp_recorder_tail(struct sp_recorder *rec, struct sp_tail **out)
{
	struct sp_reader_opts o = { .size = sizeof(o) };
	int err;

	if (!rec || !out)
		return -EINVAL;
	/* A caller's sink, or a device or FIFO: no file to reopen. */
	if (!rec->path || (rec->out && sp__spool_file_in_place(rec->out)))
		return -EOPNOTSUPP;
	if (rec->tail_taken)
		return -EBUSY;
	err = sp_recorder_flush(rec);
	if (err)
		return err;
	o.flags = SP_READER_OWNS_FILE;
	err = sp_tail_open(rec->path, &o, out);
	if (!err)
		rec->tail_taken = true;
	return err;
}
