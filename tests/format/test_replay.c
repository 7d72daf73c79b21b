/* SPDX-License-Identifier: MIT */
/* Placeholder until this test is written: skips. */
#include "check.h"

int main(void)
{
	return T_EXIT_SKIP;
}
