/* SPDX-License-Identifier: MIT */
/* stackpulse: the one table of library error codes and sp_strerror(). */
#ifndef STACKPULSE_ERROR_H
#define STACKPULSE_ERROR_H

#include <stackpulse/api.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * Every fallible call returns an int: >= 0 on success, < 0 on failure.
 * Operating-system failures pass through as negated errno values (-ENOMEM,
 * -EINVAL, -EPERM, -EOPNOTSUPP, ...). Failures that only this library can
 * report use the codes below, which live far below any errno value. The
 * numbers never change once released; new codes are appended.
 *
 * X(name, value, message)
 */
#define SP_ERRORS(X)                                                           \
	X(SP_ECORRUPT, -4000, "corrupt spool data")                            \
	X(SP_ETRUNCATED, -4001, "record cut off at the end of the input")      \
	X(SP_EIDSPACE, -4002, "spool id space exhausted")                      \
	X(SP_EDELTA, -4003, "sample timestamp delta out of range")             \
	X(SP_ESHRANK, -4004, "spool file shrank while being read")             \
	X(SP_EZSTD, -4005, "zstd compression or decompression failed")         \
	X(SP_EFREQ, -4006, "sample rate above the kernel's limit")             \
	X(SP_ETARGETGONE, -4007, "target process is gone")                     \
	X(SP_ENOCFI, -4008, "no call frame information for this address")

enum sp_error {
#define SP_ERROR_ENUM(name, value, msg) name = (value),
	SP_ERRORS(SP_ERROR_ENUM)
#undef SP_ERROR_ENUM
};

/**
 * sp_strerror returns a static, human-readable description of an error code.
 *
 * @param err a value returned by a stackpulse call: a negated errno or an
 *            SP_E* code. Zero and positive values give "success".
 * @return a NUL-terminated string that is never NULL. Unknown codes give
 *         "unknown error".
 *
 * Thread: any. Allocates: no. Blocks: no. Signal-safe: yes.
 */
SP_API const char *sp_strerror(int err);

#ifdef __cplusplus
}
#endif

#endif /* STACKPULSE_ERROR_H */
