// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Engine domain: the USDT probes of include/latsplit/engine.h (request
 * lifecycle and GPU activity records), in liblatsplit-engine.so or in any
 * binary that includes the header. Only tracked processes are recorded.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/usdt.bpf.h>
#include "common.bpf.h"
#include "python.bpf.h"
#include "ustack.bpf.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

static __always_inline int engine_event(__u64 req_id, __u32 kind, __u32 arg, const char *xrid)
{
	struct ls_ev_engine *e;

	if (!tgid_tracked(bpf_get_current_pid_tgid() >> 32))
		return 0;
	e = reserve(sizeof(*e));
	if (!e)
		return 0;
	fill_hdr(&e->h, LS_EV_ENGINE, sizeof(*e));
	e->req_id = req_id;
	e->kind = kind;
	e->arg = arg;
	if (xrid)
		bpf_probe_read_user_str(e->x_request_id, sizeof(e->x_request_id), xrid);
	submit(e);
	return 0;
}

SEC("usdt")
int BPF_USDT(request_arrived, __u64 id, const char *xrid)
{
	return engine_event(id, LS_ENG_ARRIVED, 0, xrid);
}

SEC("usdt")
int BPF_USDT(request_queued, __u64 id, __u32 prompt_tokens)
{
	return engine_event(id, LS_ENG_QUEUED, prompt_tokens, NULL);
}

SEC("usdt")
int BPF_USDT(request_scheduled, __u64 id, __u32 batch)
{
	return engine_event(id, LS_ENG_SCHEDULED, batch, NULL);
}

SEC("usdt")
int BPF_USDT(first_token, __u64 id)
{
	return engine_event(id, LS_ENG_FIRST_TOKEN, 0, NULL);
}

SEC("usdt")
int BPF_USDT(request_preempted, __u64 id)
{
	return engine_event(id, LS_ENG_PREEMPTED, 0, NULL);
}

SEC("usdt")
int BPF_USDT(request_resumed, __u64 id)
{
	return engine_event(id, LS_ENG_RESUMED, 0, NULL);
}

SEC("usdt")
int BPF_USDT(request_finished, __u64 id, __u32 status)
{
	return engine_event(id, LS_ENG_FINISHED, status, NULL);
}

/* Where the process's event ring is: the recorder reads the events there. */
SEC("usdt")
int BPF_USDT(event_ring, __u64 addr, __u64 head)
{
	struct ls_ev_engine_ring *e;

	if (!tgid_tracked(bpf_get_current_pid_tgid() >> 32))
		return 0;
	e = reserve(sizeof(*e));
	if (!e)
		return 0;
	fill_hdr(&e->h, LS_EV_ENGINE_RING, sizeof(*e));
	e->addr = addr;
	e->head = head;
	submit(e);
	return 0;
}

/* struct ls_gpu_record (engine.h) has the layout of ls_ev_gpu after the
 * header: copy it whole. */
SEC("usdt")
int BPF_USDT(gpu_activity, const void *rec)
{
	struct ls_ev_gpu *e;

	if (!tgid_tracked(bpf_get_current_pid_tgid() >> 32))
		return 0;
	e = reserve(sizeof(*e));
	if (!e)
		return 0;
	fill_hdr(&e->h, LS_EV_GPU, sizeof(*e));
	if (bpf_probe_read_user(&e->start_ns, sizeof(*e) - sizeof(e->h), rec)) {
		bpf_ringbuf_discard(e, 0);
		return 0;
	}
	e->name[sizeof(e->name) - 1] = '\0';
	submit(e);
	return 0;
}

SEC("usdt")
int BPF_USDT(gpu_launch, __u32 correlation)
{
	struct ls_ev_gpu_launch *e;

	if (!tgid_tracked(bpf_get_current_pid_tgid() >> 32))
		return 0;
	e = reserve(sizeof(*e));
	if (!e)
		return 0;
	fill_hdr(&e->h, LS_EV_GPU_LAUNCH, sizeof(*e));
	e->correlation = correlation;
	/* the CPU code path that launched the kernel, for GPU flame graphs */
	e->ustack = want_stacks ? stack_id(ctx, BPF_F_USER_STACK) : -1;
	struct ls_hdr h = e->h;
	submit(e);
	if (want_stacks) {
		ustack_emit(&h, LS_PY_LAUNCH);
		py_emit(&h, LS_PY_LAUNCH);
	}
	return 0;
}

SEC("usdt")
int BPF_USDT(gpu_stats, __u64 records, __u64 bad_time, __u64 dropped, __u64 refused)
{
	struct ls_ev_gpu_stats *e;

	if (!tgid_tracked(bpf_get_current_pid_tgid() >> 32))
		return 0;
	e = reserve(sizeof(*e));
	if (!e)
		return 0;
	fill_hdr(&e->h, LS_EV_GPU_STATS, sizeof(*e));
	e->records = records;
	e->bad_time = bad_time;
	e->cupti_dropped = dropped;
	e->refused_buffers = refused;
	submit(e);
	return 0;
}
