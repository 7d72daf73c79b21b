/* SPDX-License-Identifier: MIT */
/* Opening files that recorded data names: never blocks, regular files only, bounded. */
#ifndef SP_IMAGE_FILE_OPEN_H
#define SP_IMAGE_FILE_OPEN_H

#include <stdint.h>
#include <sys/stat.h>

/*
 * A spool names files the reader then opens: module paths, the debug
 * files found from them (build-id, .gnu_debuglink), perf maps, jitdump
 * files. Whoever controls a target process controls those names (and
 * what is at them), so every such open goes through this one helper
 * (file_open.c):
 *
 *   O_NONBLOCK | O_NOCTTY   a FIFO or a terminal cannot block open(2)
 *   S_ISREG                 devices, FIFOs, sockets, directories: -EINVAL
 *   @max_size               larger files: -EFBIG (0: no bound)
 *   SP__FILE_NOFOLLOW       the last component must not be a symbolic link
 *                           (-ELOOP): where the original refuses links,
 *                           perf maps and jitdump files in world-writable
 *                           directories; module and debug paths follow
 *                           links as the original does (build-id
 *                           directories are links)
 *
 * Bytes are then read with read(2)/pread(2) or mapped by libelf; the
 * descriptor keeps O_NONBLOCK, which regular files ignore.
 */

/* The largest ELF file (module, debug file) the symbolizer opens. */
#define SP__IMAGE_FILE_MAX (8ull << 30)

#define SP__FILE_NOFOLLOW 0x1u

/*
 * Opens @path read-only as described above and fills @st from fstat.
 * Returns the descriptor (close-on-exec) or -errno / -EINVAL / -EFBIG /
 * -ELOOP.
 */
int sp__file_open_data(const char *path, uint32_t flags, uint64_t max_size,
		       struct stat *st);

#endif /* SP_IMAGE_FILE_OPEN_H */
