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
/* Every pid in /proc; *n set. Caller frees. */
pid_t *ls_proc_list(size_t *n);
/* ppid of pid, or -1. */
pid_t ls_proc_ppid(pid_t pid);
/* Local ports of TCP listening sockets owned by pid; up to max. */
int ls_proc_listen_ports(pid_t pid, __u16 *ports, int max);
/* The libssl files pid maps (a basename beginning "libssl.so"), each as a
 * path this process can open: the mapped path when it is the same file
 * here, else through /proc/PID/root (a container's). Up to max; returns
 * how many. */
int ls_proc_libssl(pid_t pid, char (*paths)[4096], int max);
/* True when pid is alive. */
int ls_proc_alive(pid_t pid);

#endif
