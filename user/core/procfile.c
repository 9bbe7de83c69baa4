// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Opening a traced process's files (see procfile.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "procfile.h"

/* Only regular files are kept. */
static int regular(int fd)
{
	struct stat st;

	if (fd < 0)
		return -1;
	if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
		close(fd);
		errno = EINVAL;
		return -1;
	}
	return fd;
}

int ls_proc_open(pid_t pid, const char *path, uint64_t start, uint64_t end)
{
	const int flags = O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY;
	char p[96];
	int root, fd;

	if (pid <= 0 || !path || path[0] != '/') {
		errno = EINVAL;
		return -1;
	}
	if (start && end > start) {
		snprintf(p, sizeof(p), "/proc/%d/map_files/%llx-%llx", (int)pid,
			 (unsigned long long)start, (unsigned long long)end);
		if ((fd = regular(open(p, flags))) >= 0)
			return fd;
	}
	snprintf(p, sizeof(p), "/proc/%d/root", (int)pid);
	if ((root = open(p, O_PATH | O_DIRECTORY | O_CLOEXEC)) < 0)
		return -1;
	struct open_how how = {.flags = flags, .resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS};
	fd = (int)syscall(SYS_openat2, root, path + 1, &how, sizeof(how));
	if (fd < 0 && errno == ENOSYS) /* before 5.6: at least no FIFO, no device */
		fd = openat(root, path + 1, flags | O_NOFOLLOW);
	close(root);
	return regular(fd);
}

bool ls_proc_same_mnt(pid_t pid)
{
	char p[64];
	struct stat ours, theirs;

	snprintf(p, sizeof(p), "/proc/%d/ns/mnt", (int)pid);
	return !stat("/proc/self/ns/mnt", &ours) && !stat(p, &theirs) && ours.st_ino == theirs.st_ino &&
	       ours.st_dev == theirs.st_dev;
}
