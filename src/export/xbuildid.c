/* SPDX-License-Identifier: MIT */
/* Exporters: the GNU build-id of a recorded module, read from its file at export time. */

/*
 * SPULSE3 module records carry no build-id (spec §5.1), but pprof
 * consumers (Pyroscope, Parca, pprof itself) match binaries and symbols
 * by it. The file may be gone or replaced since the recording, so it is
 * trusted only when device and inode match the record (when the record
 * has them), and the file is hostile input like any other: opened
 * O_NONBLOCK (a FIFO must not block us), only a regular file is read,
 * every read is a bounded pread, and at most NOTES_MAX bytes of at most
 * PHDRS_MAX program headers' PT_NOTE segments are scanned. 64-bit
 * little-endian ELF only (what this recorder records).
 */
#define _GNU_SOURCE
#include <elf.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "export_internal.h"

#define PHDRS_MAX 256
#define NOTES_MAX (64u << 10)

static bool read_at(int fd, void *buf, size_t len, uint64_t off)
{
	ssize_t n = pread(fd, buf, len, (off_t)off);

	return n >= 0 && (size_t)n == len;
}

static size_t align4(size_t v)
{
	return (v + 3) & ~(size_t)3;
}

/* Scans one PT_NOTE segment's bytes for NT_GNU_BUILD_ID. */
static size_t scan_notes(const unsigned char *p, size_t len, unsigned char *out,
			 size_t cap)
{
	size_t pos = 0;

	while (len - pos >= sizeof(Elf64_Nhdr)) {
		Elf64_Nhdr nh;
		size_t name_at, desc_at, next;

		memcpy(&nh, p + pos, sizeof(nh));
		name_at = pos + sizeof(nh);
		if (nh.n_namesz > len - name_at)
			return 0;
		desc_at = name_at + align4(nh.n_namesz);
		if (desc_at > len || nh.n_descsz > len - desc_at)
			return 0;
		if (nh.n_type == NT_GNU_BUILD_ID && nh.n_namesz == 4 &&
		    memcmp(p + name_at, "GNU", 4) == 0 && nh.n_descsz &&
		    nh.n_descsz <= cap) {
			memcpy(out, p + desc_at, nh.n_descsz);
			return nh.n_descsz;
		}
		next = desc_at + align4(nh.n_descsz);
		if (next <= pos || next > len)
			return 0;
		pos = next;
	}
	return 0;
}

static size_t elf_buildid(int fd, uint64_t size, unsigned char *out, size_t cap)
{
	unsigned char notes[NOTES_MAX];
	Elf64_Ehdr eh;
	Elf64_Phdr ph;
	size_t found = 0;
	unsigned i;

	if (!read_at(fd, &eh, sizeof(eh), 0) ||
	    memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0 ||
	    eh.e_ident[EI_CLASS] != ELFCLASS64 ||
	    eh.e_ident[EI_DATA] != ELFDATA2LSB ||
	    eh.e_phentsize != sizeof(ph) || eh.e_phnum > PHDRS_MAX)
		return 0;
	for (i = 0; i < eh.e_phnum && !found; i++) {
		if (!read_at(fd, &ph, sizeof(ph),
			     eh.e_phoff + (uint64_t)i * sizeof(ph)))
			return 0;
		if (ph.p_type != PT_NOTE || ph.p_filesz > sizeof(notes) ||
		    ph.p_offset > size || ph.p_filesz > size - ph.p_offset)
			continue;
		if (read_at(fd, notes, ph.p_filesz, ph.p_offset))
			found = scan_notes(notes, ph.p_filesz, out, cap);
	}
	return found;
}

size_t sp__xbuildid(const struct sp_module *mod, unsigned char *out, size_t cap)
{
	struct stat st;
	size_t n = 0;
	int fd;

	if (mod->is_kernel || !mod->path_len || mod->path[0] != '/' ||
	    memchr(mod->path, 0, mod->path_len))
		return 0;
	fd = open(mod->path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
	if (fd < 0)
		return 0;
	if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) &&
	    (!mod->inode || (uint64_t)st.st_ino == mod->inode) &&
	    (!mod->dev_major || (major(st.st_dev) == mod->dev_major &&
				 minor(st.st_dev) == mod->dev_minor)))
		n = elf_buildid(fd, (uint64_t)st.st_size, out, cap);
	close(fd);
	return n;
}
