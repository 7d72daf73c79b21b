/* SPDX-License-Identifier: MIT */
/* Placeholder: being written. */
#include "format_internal.h"
