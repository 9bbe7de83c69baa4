// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Profiling domain: cpu-clock perf_event samples with user and kernel stack
 * ids, for tracked processes (or everything with sample_all).
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include "common.bpf.h"
#include "python.bpf.h"
#include "ustack.bpf.h"
#include "ehstack.bpf.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

const volatile bool sample_all = false;

SEC("perf_event")
int do_sample(struct bpf_perf_event_data *ctx)
{
	__u32 tgid = bpf_get_current_pid_tgid() >> 32;
	struct ls_ev_sample *e;

	if (!sample_all && !tgid_tracked(tgid))
		return 0;
	if (tgid == self_tgid)
		return 0;
	e = reserve(sizeof(*e));
	if (!e)
		return 0;
	fill_hdr(&e->h, LS_EV_SAMPLE, sizeof(*e));
	const struct ls_eh_proc *eh = tgid ? eh_covers(tgid) : NULL;

	e->ustack = !tgid ? -1 : eh ? eh_stack(tgid, eh) : stack_id(ctx, BPF_F_USER_STACK);
	e->kstack = stack_id(ctx, 0);
	bpf_get_current_comm(e->comm, sizeof(e->comm));
	struct ls_hdr h = e->h;
	submit(e);
	if (tgid) {
		ustack_emit(&h, LS_PY_SAMPLE);
		py_emit(&h, LS_PY_SAMPLE);
	}
	return 0;
}
