/* SPDX-License-Identifier: MIT */
/* The CFI table builder on libdw, as the new builder's oracle. */
#ifndef SP_TESTS_CFI_ORACLE_H
#define SP_TESTS_CFI_ORACLE_H

#include <libelf.h>

#include "mem.h"
#include "unwind_internal.h"

/* src/unwind/cfi_build.c's sp__cfi_table_build as of commit 421804b. */
int cfi_oracle_build(const struct sp__mem *mem, Elf *elf,
		     struct sp__cfi_table **out);

#endif /* SP_TESTS_CFI_ORACLE_H */
