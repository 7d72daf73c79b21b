/* SPDX-License-Identifier: MIT */
/* Workload: main -> wl_syscall_loop: read(/dev/zero) and getpid in a loop. */

/*
 * Nearly all CPU time is spent in the kernel (copying zeroes, syscall
 * entry), so samples taken with kernel callchains have kernel frames at
 * their leaf end and wl_syscall_loop -> main in their user part.
 */
#include <fcntl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "wl_common.h"

unsigned wl_syscall_loop(int fd, unsigned rounds);

static char buf[65536];
static volatile unsigned sink;

WL_NAMED unsigned wl_syscall_loop(int fd, unsigned rounds)
{
	unsigned i, acc = 0;

	for (i = 0; i < rounds; i++) {
		if (read(fd, buf, sizeof(buf)) > 0)
			acc += (unsigned char)buf[i % sizeof(buf)];
		/* The raw syscall: glibc may not enter the kernel for getpid. */
		acc += (unsigned)syscall(SYS_getpid);
	}
	return acc ^ sink;
}

int main(int argc, char **argv)
{
	double end = wl_now() + wl_duration(argc, argv);
	unsigned x = 0;
	int fd = open("/dev/zero", O_RDONLY | O_CLOEXEC);

	if (fd < 0) {
		perror("wl_syscalls: /dev/zero");
		return 1;
	}
	while (wl_now() < end)
		x += wl_syscall_loop(fd, 200);
	sink = x;
	close(fd);
	return wl_finish(0);
}
