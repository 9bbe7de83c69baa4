// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Feature probes for `latsplit check`: one trivial program per attach type.
 * User space enables one at a time, attaches it, triggers it and reads its
 * hit counter, so "ok" means the program loaded, attached and ran.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/usdt.bpf.h>
#include "latsplit/probe.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";


__u64 hits[P_MAX] = {};

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 4096);
} probe_rb SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_STACK_TRACE);
	__uint(max_entries, 16);
	__uint(key_size, sizeof(__u32));
	__uint(value_size, 127 * sizeof(__u64));
} probe_stacks SEC(".maps");

static __always_inline int hit(int i)
{
	__sync_fetch_and_add(&hits[i], 1);
	return 0;
}

SEC("tracepoint/sched/sched_switch")
int probe_tracepoint(void *ctx)
{
	/* Also proves ring-buffer reserve/submit works. */
	__u64 *slot = bpf_ringbuf_reserve(&probe_rb, sizeof(__u64), 0);

	if (slot) {
		*slot = 1;
		bpf_ringbuf_submit(slot, 0);
	}
	return hit(P_TRACEPOINT);
}

SEC("raw_tp/sched_switch")
int probe_raw_tp(void *ctx)
{
	return hit(P_RAW_TP);
}

SEC("tp_btf/sched_switch")
int BPF_PROG(probe_tp_btf, bool preempt, struct task_struct *prev, struct task_struct *next)
{
	return hit(P_TP_BTF);
}

SEC("kprobe/tcp_sendmsg")
int BPF_KPROBE(probe_kprobe)
{
	return hit(P_KPROBE);
}

SEC("fentry/tcp_sendmsg")
int BPF_PROG(probe_fentry)
{
	return hit(P_FENTRY);
}

SEC("perf_event")
int probe_perf(struct bpf_perf_event_data *ctx)
{
	if (bpf_get_stackid(ctx, &probe_stacks, BPF_F_USER_STACK) >= 0)
		hit(P_PERF);
	return 0;
}

SEC("uprobe")
int BPF_KPROBE(probe_uprobe)
{
	return hit(P_UPROBE);
}

SEC("usdt")
int BPF_USDT(probe_usdt, long arg)
{
	if (arg == 42)
		hit(P_USDT);
	return 0;
}
