/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * What bpf/probe.bpf.c and `latsplit check` share: one hit counter per
 * attach type probed.
 */
#ifndef LATSPLIT_PROBE_H
#define LATSPLIT_PROBE_H

enum ls_probe_kind { P_TRACEPOINT, P_RAW_TP, P_TP_BTF, P_KPROBE, P_FENTRY, P_PERF, P_UPROBE, P_USDT, P_MAX };

#endif
