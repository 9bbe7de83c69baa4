/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Probes of what this kernel and process may do, shared by `check` and the
 * loader: privileges, BTF, tp_btf support, tracefs.
 */
#ifndef LATSPLIT_USER_PROBE_H
#define LATSPLIT_USER_PROBE_H

#include <stdbool.h>
#include <stddef.h>
#include <bpf/libbpf_version.h>
#include <linux/version.h>

/* Built with uprobe_multi links: a libbpf with
 * bpf_program__attach_uprobe_multi (>= 1.3; Debian 12's 1.1 has not) and
 * kernel headers naming the attach type (>= 6.6). */
#if (LIBBPF_MAJOR_VERSION > 1 || LIBBPF_MINOR_VERSION >= 3) &&                                  \
	LINUX_VERSION_CODE >= KERNEL_VERSION(6, 6, 0)
#define LS_HAVE_UPROBE_MULTI 1
#else
#define LS_HAVE_UPROBE_MULTI 0
#endif

struct btf;

/* NULL when there is no usable vmlinux BTF; owned by probe.c. */
const struct btf *ls_vmlinux_btf(void);
/* The kernel has tracepoint `name` (its btf_trace_<name> type exists). */
bool ls_btf_has_tracepoint(const char *name);
/* How many arguments the kernel's tracepoint `name` passes its programs
 * (its BTF prototype's), or -1 where its BTF does not say. */
int ls_btf_tracepoint_args(const char *name);
/* A tp_btf program can be loaded for tracepoint `name`; errno-style reason. */
int ls_probe_tp_btf(const char *name);
/* uprobe_multi links can be used: built with them (LS_HAVE_UPROBE_MULTI)
 * and this kernel takes one (>= 6.6; probed once). */
bool ls_uprobe_multi(void);
/* 0 when privileged enough for BPF tracing, else -EPERM with a reason. */
int ls_check_privileges(char *why, size_t len);
/* Makes sure tracefs is mounted (mounting it if we may). Path or NULL. */
const char *ls_tracefs(void);
/* Silences libbpf unless verbose. */
void ls_libbpf_verbose(bool verbose);

#endif
