/* SPDX-License-Identifier: MIT */
/* Encoding jitdump header, code-load and close records. */
#include <elf.h>
#include <errno.h>
#include <string.h>

#include "jitdump.h"
#include "jitdump_write.h"

#define NAME_MAX_LEN 4096

/* Appends @len bytes; the vector holds bytes (elem 1). */
static int put(struct sp__vec *out, const struct sp__mem *mem, const void *p,
	       size_t len)
{
	if (sp__vec_reserve(out, mem, len))
		return -ENOMEM;
	if (len)
		memcpy((char *)out->data + out->len, p, len);
	out->len += len;
	return 0;
}

static void w32(uint8_t *p, uint32_t v)
{
	memcpy(p, &v, sizeof(v));
}

static void w64(uint8_t *p, uint64_t v)
{
	memcpy(p, &v, sizeof(v));
}

static void prefix(uint8_t *p, uint32_t id, uint32_t size, uint64_t timestamp)
{
	w32(p, id);
	w32(p + 4, size);
	w64(p + 8, timestamp);
}

int sp__jitdump_put_header(struct sp__vec *out, const struct sp__mem *mem,
			   uint32_t pid, uint64_t timestamp)
{
	uint8_t h[SP__JITDUMP_HEADER_SIZE] = { 0 };

	w32(h, SP__JITDUMP_MAGIC);
	w32(h + 4, SP__JITDUMP_VERSION);
	w32(h + 8, SP__JITDUMP_HEADER_SIZE);
	w32(h + 12, SP__JIT_MACHINE);
	w32(h + 20, pid);
	w64(h + 24, timestamp);
	return put(out, mem, h, sizeof(h));
}

int sp__jitdump_put_load(struct sp__vec *out, const struct sp__mem *mem,
			 uint64_t timestamp, uint32_t pid, uint32_t tid,
			 uint64_t addr, const void *code, size_t code_len,
			 uint64_t code_index, const char *name)
{
	size_t name_len = strnlen(name, NAME_MAX_LEN);
	uint8_t f[SP__JITDUMP_PREFIX_SIZE + 40];
	size_t size = sizeof(f) + name_len + 1 + code_len;
	size_t start = out->len;

	if (code_len > SP__JITDUMP_RECORD_MAX || size > SP__JITDUMP_RECORD_MAX)
		return -EINVAL;
	prefix(f, SP__JITDUMP_CODE_LOAD, (uint32_t)size, timestamp);
	w32(f + 16, pid);
	w32(f + 20, tid);
	w64(f + 24, addr);
	w64(f + 32, addr);
	w64(f + 40, code_len);
	w64(f + 48, code_index);
	if (put(out, mem, f, sizeof(f)) || put(out, mem, name, name_len) ||
	    put(out, mem, "", 1) || put(out, mem, code, code_len)) {
		out->len = start;
		return -ENOMEM;
	}
	return 0;
}

int sp__jitdump_put_close(struct sp__vec *out, const struct sp__mem *mem,
			  uint64_t timestamp)
{
	uint8_t f[SP__JITDUMP_PREFIX_SIZE];

	prefix(f, SP__JITDUMP_CODE_CLOSE, sizeof(f), timestamp);
	return put(out, mem, f, sizeof(f));
}
