/* SPDX-License-Identifier: MIT */
/* SPULSE3 §11 golden vectors as hex strings, shared by the format tests. */
#ifndef SP_TESTS_VECTORS_H
#define SP_TESTS_VECTORS_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#define VEC_H "53 50 55 4c 53 45 33 00 00 00 "

#define VEC_V1 "53 50 55 4c 53 45 33 00 00 00"
#define VEC_V1B "53 50 55 4c 53 45 33 00 80 80 f9 c0 c1 c4 82 03 e8 07"
#define VEC_V2                                                                 \
	"53 50 55 4c 53 45 33 00 7b 0a "                                       \
	"01 00 0e 80 20 80 40 80 02 01 08 01 00 00 06 2f 66 69 72 73 74 "      \
	"02 00 00 90 02 03 00 ff ff ff ff 0f 00 04 00 0e 0b 05 d0 0f 00 00"
#define VEC_V3_TAIL "02 01 01 90 60 03 01 00 01 05 a0 1f 00 01"
#define VEC_V3 VEC_V2 " " VEC_V3_TAIL
#define VEC_V4 "53 50 55 4c 53 45 33 00 00 00 03 00 ff ff ff ff 0f 00"
#define VEC_V4B "53 50 55 4c 53 45 33 00 00 00 02 01 01 80 20"
#define VEC_V5                                                                 \
	VEC_H "01 00 0e 80 80 80 02 80 a0 80 02 00 00 00 00 00 00 08 2f 62 "   \
	      "69 6e 2f 61 70 70 "                                             \
	      "01 01 01 80 80 80 88 f8 ff ff ff ff 01 80 80 84 88 f8 ff ff "   \
	      "ff ff 01 00 00 00 00 00 01 08 5b 6b 65 72 6e 65 6c 5d "         \
	      "06 f4 03 0e 01 02 00 05 00 03 00 ff ff ff ff 0f 00 "            \
	      "02 01 01 a3 82 80 02 03 01 00 01 "                              \
	      "02 02 03 90 80 80 88 f8 ff ff ff ff 01 03 02 01 02 "            \
	      "04 00 0e 07 05 d0 0f 00 02 08 00 07 0e "                        \
	      "02 03 01 a3 82 80 02 03 03 ff ff ff ff 0f 03 04 01 0e 08 "      \
	      "05 c7 01 01 03"
#define VEC_V6_ORIG                                                            \
	"53 50 55 4c 53 45 33 00 7b 0a 02 00 01 80 20 03 00 ff ff ff ff 0f "   \
	"00 04 00 0e 0b 05 d0 0f 00 00 02 01 01 80 40 03 01 ff ff ff ff 0f "   \
	"01 05 d0 0f 00 01"
#define VEC_V6                                                                 \
	"53 50 55 4c 53 45 33 00 7b 0a 02 00 01 80 20 03 00 ff ff ff ff 0f "   \
	"00 04 00 0e 0b 05 d0 0f 00 00 02 80 80 80 80 80 80 80 80 80 02 0f "   \
	"01 05 d0 0f 00 01"
#define VEC_V8 "53 50 55 4c 53 45 32 00 00 00"

/* Decodes a hex string (spaces ignored) into @out; returns the length. */
static inline size_t vec_hex(const char *hex, uint8_t *out, size_t cap)
{
	size_t n = 0;

	while (*hex) {
		char pair[3] = { 0, 0, 0 };

		if (*hex == ' ') {
			hex++;
			continue;
		}
		pair[0] = hex[0];
		pair[1] = hex[1];
		if (n < cap)
			out[n] = (uint8_t)strtoul(pair, NULL, 16);
		n++;
		hex += 2;
	}
	return n;
}

#endif /* SP_TESTS_VECTORS_H */
