/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The one rule for opening a file a traced process names (its mappings,
 * its interpreter, its libraries): what that process itself sees, never the
 * host's file of the same name, and never anything but a regular file. A
 * traced process is hostile input: its mount namespace can put a FIFO, a
 * device or a symlink out of its root where its maps say a library was.
 */
#ifndef LATSPLIT_USER_PROCFILE_H
#define LATSPLIT_USER_PROCFILE_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

/* A read-only fd of `path` as process pid sees it, or -1 (errno set):
 * when [start, end) is the mapping it came from, /proc/PID/map_files (the
 * very inode mapped, even if replaced or unlinked since); else `path`
 * resolved inside /proc/PID/root (openat2 RESOLVE_IN_ROOT: its absolute
 * symlinks stay in its root). Opened O_NONBLOCK (a FIFO cannot block the
 * recorder), and kept only if a regular file (EINVAL otherwise). */
int ls_proc_open(pid_t pid, const char *path, uint64_t start, uint64_t end);

/* Is pid in our mount namespace (so its paths name our files)? False when
 * it cannot be told (process gone). */
bool ls_proc_same_mnt(pid_t pid);

#endif
