// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * GPU fallback domain: uprobes on libcuda for tracked processes that run
 * without the CUPTI shim. They see host-side intervals only:
 *   - synchronous copies (cuMemcpyHtoD/DtoH): the call returns when the copy
 *     is done, so the interval bounds the transfer: recorded as a memcpy;
 *   - cu{Stream,Ctx,Event}Synchronize: the thread waited for queued GPU work:
 *     recorded as a sync (attribution counts it as compute, see timeline.c);
 *   - launches and async copies (cuLaunchKernel[Ex], cuGraphLaunch,
 *     cuMemcpy*Async): enqueue time only, flagged LS_GPU_F_HOST_SIDE and
 *     never claimed as device time.
 * All labelled source "uprobe".
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include "common.bpf.h"
#include "latsplit/engine.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

struct cu_call {
	__u64 ts;
	__u64 bytes;
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__type(key, __u32);
	__type(value, struct cu_call);
} cu_calls SEC(".maps");

static __always_inline int cu_enter(__u64 bytes)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u32 tid = (__u32)id;
	struct cu_call c = {.ts = bpf_ktime_get_ns(), .bytes = bytes};

	if (!tgid_tracked(id >> 32))
		return 0;
	bpf_map_update_elem(&cu_calls, &tid, &c, BPF_ANY);
	return 0;
}

static __always_inline int cu_exit(__u32 kind, __u32 copy, __u32 flags, const char *name)
{
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	struct cu_call *c = bpf_map_lookup_elem(&cu_calls, &tid);
	struct ls_ev_gpu *e;

	if (!c)
		return 0;
	e = reserve(sizeof(*e));
	if (e) {
		__builtin_memset(&e->start_ns, 0, sizeof(*e) - sizeof(e->h));
		fill_hdr(&e->h, LS_EV_GPU, sizeof(*e));
		e->start_ns = c->ts;
		e->end_ns = e->h.ts;
		e->bytes = c->bytes;
		e->kind = kind;
		e->copy_kind = copy;
		e->source = LS_GPU_SRC_UPROBE;
		e->flags = flags;
		__builtin_memcpy(e->name, name, 16);
		submit(e);
	}
	bpf_map_delete_elem(&cu_calls, &tid);
	return 0;
}

#define CU_PROBE(fn, bytes_arg, kind, copy, flags)                                           \
	SEC("uprobe")                                                                        \
	int BPF_KPROBE(fn##_enter) { return cu_enter(bytes_arg); }                           \
	SEC("uretprobe")                                                                     \
	int BPF_KRETPROBE(fn##_exit) { return cu_exit(kind, copy, flags, #fn "\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0"); }

CU_PROBE(cuMemcpyHtoD, PT_REGS_PARM3(ctx), LS_GPU_MEMCPY, LS_COPY_H2D, 0)
CU_PROBE(cuMemcpyDtoH, PT_REGS_PARM3(ctx), LS_GPU_MEMCPY, LS_COPY_D2H, 0)
CU_PROBE(cuMemcpyHtoDAsync, PT_REGS_PARM3(ctx), LS_GPU_MEMCPY, LS_COPY_H2D, LS_GPU_F_HOST_SIDE)
CU_PROBE(cuMemcpyDtoHAsync, PT_REGS_PARM3(ctx), LS_GPU_MEMCPY, LS_COPY_D2H, LS_GPU_F_HOST_SIDE)
CU_PROBE(cuLaunchKernel, 0, LS_GPU_KERNEL, 0, LS_GPU_F_HOST_SIDE)
CU_PROBE(cuLaunchKernelEx, 0, LS_GPU_KERNEL, 0, LS_GPU_F_HOST_SIDE)
CU_PROBE(cuGraphLaunch, 0, LS_GPU_KERNEL, 0, LS_GPU_F_HOST_SIDE)
CU_PROBE(cuStreamSynchronize, 0, LS_GPU_SYNC, 0, 0)
CU_PROBE(cuCtxSynchronize, 0, LS_GPU_SYNC, 0, 0)
CU_PROBE(cuEventSynchronize, 0, LS_GPU_SYNC, 0, 0)
