// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * make bench: the floor of issue 29's throughput goals. An empty program on
 * each tracepoint a default recording attaches to (the raw syscall
 * tracepoints that follow socket I/O, the scheduler's, the TCP ones): what
 * the kernel charges the traced workload for running any program there,
 * before latsplit does any work. Raw tracepoints: the same dispatch as the
 * tp_btf programs record uses, and loadable on every kernel in scope.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>

char LICENSE[] SEC("license") = "Dual BSD/GPL";

#define EMPTY(tp)                                                                                \
	SEC("raw_tp/" #tp)                                                                       \
	int floor_##tp(void *ctx)                                                                \
	{                                                                                        \
		return 0;                                                                        \
	}

EMPTY(sys_enter)
EMPTY(sys_exit)
EMPTY(sched_switch)
EMPTY(sched_wakeup)
EMPTY(sched_wakeup_new)
EMPTY(sched_process_fork)
EMPTY(sched_process_exec)
EMPTY(sched_process_exit)
EMPTY(net_dev_start_xmit)
EMPTY(inet_sock_set_state)
EMPTY(tcp_retransmit_skb)
EMPTY(tcp_retransmit_synack)
EMPTY(tcp_probe)
EMPTY(tcp_send_reset)
EMPTY(tcp_receive_reset)
EMPTY(tcp_destroy_sock)
