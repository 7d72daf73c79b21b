/* SPDX-License-Identifier: MIT */
/* spulse: what `record` and live `top` say when the kernel refuses them. */
#ifndef SPULSE_REC_ERRORS_H
#define SPULSE_REC_ERRORS_H

#include <stdbool.h>
#include <stdint.h>

/*
 * Errors that tell the user what to do: name the value, the limit and
 * the fix (a sysctl, a capability, -F max) instead of a bare strerror.
 * Each prints on stderr prefixed "spulse CMD: ".
 */

/* A small integer sysctl under /proc/sys; -1 when it cannot be read. */
long spulse_read_sysctl(const char *path);

/*
 * spulse_check_rate returns -1 when @hz (SP_RATE_MAX or 0 pass) is within
 * kernel.perf_event_max_sample_rate, else prints "rate N Hz is above the
 * kernel's maximum M (...); use -F max" and returns SPULSE_EXIT_USAGE.
 */
int spulse_check_rate(const char *cmd, uint32_t hz);

/*
 * spulse_check_pid returns -1 when @pid exists (maybe another user's),
 * else prints "no process N" and returns SPULSE_EXIT_DATA.
 */
int spulse_check_pid(const char *cmd, int32_t pid);

/* Whether @err is the kernel's EPERM/EACCES. */
bool spulse_is_permission(int err);

/*
 * spulse_permission_hint explains an EPERM/EACCES of perf_event_open or
 * of an attach: root / CAP_PERFMON, ptrace rights for another user's
 * process, and the current kernel.perf_event_paranoid with what it
 * allows (@system: -a needs it <= 0).
 */
void spulse_permission_hint(const char *cmd, bool system);

#endif /* SPULSE_REC_ERRORS_H */
