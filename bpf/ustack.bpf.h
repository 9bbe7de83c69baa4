/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * record --call-graph dwarf: the current thread's user registers and the
 * first ustack_bytes of its user stack, copied as perf --call-graph dwarf
 * does, for user space to unwind with each mapping's CFI (code built
 * without frame pointers: Debian's libc, CPython, most libraries). Page by
 * page from sp, stopping where the stack's mapping ends. Included by the
 * objects that take user stacks.
 */
#ifndef LATSPLIT_USTACK_BPF_H
#define LATSPLIT_USTACK_BPF_H

#include "common.bpf.h"

const volatile __u32 ustack_bytes = 0; /* 0: off */

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct ls_ev_ustack_raw);
} ustack_scratch SEC(".maps");

static __always_inline void ustack_emit(const struct ls_hdr *like, __u32 kind)
{
	struct ls_ev_ustack_raw *e;
	struct pt_regs *regs;
	__u32 zero = 0, len = 0;
	__u64 sp, size;

	if (!ustack_bytes)
		return;
	e = bpf_map_lookup_elem(&ustack_scratch, &zero);
	if (!e)
		return;
	regs = (struct pt_regs *)bpf_task_pt_regs(bpf_get_current_task_btf());
	e->ip = BPF_CORE_READ(regs, ip);
	sp = e->sp = BPF_CORE_READ(regs, sp);
	e->bp = BPF_CORE_READ(regs, bp);
	if (!e->ip || e->ip >> 47 || !sp || sp >> 47)
		return; /* a kernel thread */
	for (int i = 0; i < LS_USTACK_MAX / 4096 + 1; i++) {
		__u64 chunk = i ? 4096 : 4096 - (sp & 4095), left = ustack_bytes - len, at = len;

		if (chunk > left)
			chunk = left;
		asm volatile("" : "+r"(chunk), "+r"(at)); /* the bounds below are on these */
		if (!chunk || chunk > 4096 || at > LS_USTACK_MAX - 4096)
			break;
		if (bpf_probe_read_user(&e->data[at], chunk, (const void *)(sp + at)))
			break;
		len = (__u32)(at + chunk);
	}
	/* the record is padded to 8 bytes after the copy: zeros there, not the
	 * last stack this CPU's scratch held */
#if __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "the mask below keeps the low-addressed bytes only on little-endian"
#endif
	if (len & 7) {
		__u64 *last = (void *)&e->data[len & (LS_USTACK_MAX - 8)];

		*last &= (1ull << 8 * (len & 7)) - 1; /* little-endian: keeps the copied bytes */
	}
	e->h = *like;
	e->h.type = LS_EV_USTACK_RAW;
	e->kind = kind;
	e->len = len;
	size = offsetof(struct ls_ev_ustack_raw, data) + (((__u64)len + 7) & ~7ull);
	asm volatile("" : "+r"(size)); /* the bound below is on this register */
	if (size > sizeof(*e))
		return;
	e->h.size = (__u16)size;
	if (bpf_ringbuf_output(&events, e, size, wakeup_flags()))
		count_drop();
}

#endif
