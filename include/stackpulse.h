/* SPDX-License-Identifier: MIT */
/* stackpulse: umbrella header; include this one. */
#ifndef STACKPULSE_H
#define STACKPULSE_H

#include <stackpulse/alloc.h>
#include <stackpulse/api.h>
#include <stackpulse/error.h>
#include <stackpulse/export.h>
#include <stackpulse/launch.h>
#include <stackpulse/log.h>
#include <stackpulse/record_run.h>
#include <stackpulse/recorder.h>
#include <stackpulse/replay.h>
#include <stackpulse/sink.h>
#include <stackpulse/snapshot.h>
#include <stackpulse/spool.h>
#include <stackpulse/symbolizer.h>
#include <stackpulse/tail.h>
#include <stackpulse/text.h>
#include <stackpulse/unwind.h>
#include <stackpulse/version.h>
#include <stackpulse/writer.h>

#endif /* STACKPULSE_H */
