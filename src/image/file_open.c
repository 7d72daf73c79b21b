/* SPDX-License-Identifier: MIT */
/* The one way files named by recorded data are opened (see file_open.h). */
#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

#include "file_open.h"

/*
 * Why each flag: a module path of a target that replaced its mapped file
 * by a FIFO once blocked every symbolizing reader in open(2) forever,
 * and `spulse top` then ignored SIGTERM (issue 20). O_NONBLOCK makes the
 * open of a FIFO return at once; fstat then refuses it. The size bound
 * keeps a sparse file of a few terabytes from becoming a parse of as many
 * symbols.
 */
int sp__file_open_data(const char *path, uint32_t flags, uint64_t max_size,
		       struct stat *st)
{
	int oflags = O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY;
	int fd, err = 0;

	if (flags & SP__FILE_NOFOLLOW)
		oflags |= O_NOFOLLOW;
	fd = open(path, oflags);
	if (fd < 0)
		return -errno;
	if (fstat(fd, st) < 0)
		err = -errno;
	else if (!S_ISREG(st->st_mode))
		err = -EINVAL;
	else if (max_size && (uint64_t)st->st_size > max_size)
		err = -EFBIG;
	if (err) {
		close(fd);
		return err;
	}
	return fd;
}
