// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Output files named with -o (see output.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "output.h"

FILE *ls_out_open(const char *path, char *why, size_t len)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC, 0600);
	struct stat sb;
	FILE *f;

	if (fd < 0) {
		snprintf(why, len, "-o %s: %s; name a new or regular file", path,
			 errno == ELOOP ? "a symbolic link" : errno == ENXIO ? "a FIFO" : strerror(errno));
		return NULL;
	}
	if (fstat(fd, &sb) || !S_ISREG(sb.st_mode)) {
		snprintf(why, len, "-o %s: not a regular file; name a new or regular file", path);
		close(fd);
		return NULL;
	}
	if (ftruncate(fd, 0) || !(f = fdopen(fd, "w"))) {
		snprintf(why, len, "-o %s: %s", path, strerror(errno));
		close(fd);
		return NULL;
	}
	return f;
}
