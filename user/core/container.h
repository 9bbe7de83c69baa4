/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Which container a process runs in, from what record saw of it
 * (LS_REC_PROC_NS): a runtime's container id in its cgroup path (Docker,
 * containerd, CRI-O, Podman, Kubernetes pods), else the cgroup path of a
 * process in namespaces of its own, else none (the host's).
 */
#ifndef LATSPLIT_CORE_CONTAINER_H
#define LATSPLIT_CORE_CONTAINER_H

#include <stdbool.h>
#include <stdint.h>

struct ls_container {
	char runtime[24]; /* "docker", "containerd", "cri-o", "podman", "kubepods"; "" unknown */
	char id[65];      /* the runtime's container id (hex), "" when none was found */
	char name[80];    /* "docker 3f4e5d6c7b8a", else the cgroup path, else "pidns N" */
};

/* Names the container of a process with this cgroup path and namespace
 * flags (LS_NS_*; pidns: its pid namespace's inode). false: the host's. */
bool ls_container_name(const char *cgroup, uint32_t ns_flags, uint64_t pidns, struct ls_container *c);

#endif
