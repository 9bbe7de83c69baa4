/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Probes of what this kernel and process may do, shared by `check` and the
 * loader: privileges, BTF, tp_btf support, tracefs.
 */
#ifndef LATSPLIT_USER_PROBE_H
#define LATSPLIT_USER_PROBE_H

#include <stdbool.h>
#include <stddef.h>

struct btf;

/* NULL when there is no usable vmlinux BTF; owned by probe.c. */
const struct btf *ls_vmlinux_btf(void);
/* The kernel has tracepoint `name` (its btf_trace_<name> type exists). */
bool ls_btf_has_tracepoint(const char *name);
/* A tp_btf program can be loaded for tracepoint `name`; errno-style reason. */
int ls_probe_tp_btf(const char *name);
/* 0 when privileged enough for BPF tracing, else -EPERM with a reason. */
int ls_check_privileges(char *why, size_t len);
/* Makes sure tracefs is mounted (mounting it if we may). Path or NULL. */
const char *ls_tracefs(void);
/* Silences libbpf unless verbose. */
void ls_libbpf_verbose(bool verbose);

#endif
