/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * What /proc says about processes: process-table records, the process tree,
 * and which processes listen on which TCP ports (in their own netns).
 */
#ifndef LATSPLIT_USER_PROC_H
#define LATSPLIT_USER_PROC_H

#include <stddef.h>
#include <sys/types.h>
#include "latsplit/events.h"

#define LS_PROC_INFO_MAX (sizeof(struct ls_rec_proc_info) + 1024)

/* Fills a LS_REC_PROC_INFO record for pid into buf (LS_PROC_INFO_MAX bytes).
 * Returns its size, or negative errno when the process is gone. */
int ls_proc_info(pid_t pid, __u64 ts, void *buf);
#define LS_PROC_NS_MAX (sizeof(struct ls_rec_proc_ns) + 1032)
/* Fills a LS_REC_PROC_NS record for pid into buf (LS_PROC_NS_MAX bytes):
 * its pid in its own namespace, its cgroup path (cut at 1 KiB), whether it
 * lives in namespaces other than the recorder's. Its size, or -errno. */
int ls_proc_ns(pid_t pid, __u64 ts, void *buf);
/* Every pid in /proc; *n set. Caller frees. */
pid_t *ls_proc_list(size_t *n);
/* ppid of pid, or -1. */
pid_t ls_proc_ppid(pid_t pid);
/* Local ports of TCP listening sockets owned by pid; up to max. */
int ls_proc_listen_ports(pid_t pid, __u16 *ports, int max);
/* Files pid maps that probes attach to: libssl (TLS), the engine-event
 * library or CUPTI shim (engine USDT), libcuda. Each with a path this
 * process can attach through: the mapped path when it is the same file
 * here, else the mapping itself (/proc/PID/map_files/..., a container's
 * file, never through its symlinks), checked to be that inode and a
 * regular file. Up to max; returns how many. */
enum { LS_PROC_LIB_SSL, LS_PROC_LIB_ENGINE, LS_PROC_LIB_CUDA };
struct ls_proc_lib {
	int kind;
	char path[4096];  /* to attach through */
	char shown[4096]; /* as the process maps it */
};
int ls_proc_probe_libs(pid_t pid, struct ls_proc_lib *out, int max);
/* True when pid is alive. */
int ls_proc_alive(pid_t pid);
/* The process holding the TCP socket from local port lport to remote port
 * rport (this network namespace's), 0 when none is found. */
pid_t ls_proc_tcp_owner(__u16 lport, __u16 rport);

#endif
