/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * CPython frames of the current thread, walked from the interpreter's own
 * state (as py-spy and the OpenTelemetry profiler do), for a process user
 * space found an interpreter in and filled py_procs for: runtime ->
 * interpreters.head -> threads (the one whose native_thread_id is this
 * thread) -> cframe -> current_frame -> previous... Each frame gives its code
 * object and last instruction; names and lines are read by user space at the
 * end of record, while the process lives. No frame pointers, no -X perf, no
 * restart. Included by the objects that take stacks (maps shared by name).
 */
#ifndef LATSPLIT_PYTHON_BPF_H
#define LATSPLIT_PYTHON_BPF_H

#include "common.bpf.h"

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, __u32); /* tgid */
	__type(value, struct ls_py_proc);
} py_procs SEC(".maps");

/* tid -> its PyThreadState, checked on every use (threads come and go) */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, __u32);
	__type(value, __u64);
} py_tstates SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct ls_ev_pystack);
} py_scratch SEC(".maps");

/* Python threads per interpreter searched for the current one */
#define PY_MAX_THREADS 128

static __always_inline __u64 py_read(__u64 addr)
{
	__u64 v = 0;

	if (bpf_probe_read_user(&v, sizeof(v), (const void *)addr))
		return 0;
	return v;
}

static __always_inline __u64 py_tstate(const struct ls_py_proc *pp, __u32 tid)
{
	__u64 *cached = bpf_map_lookup_elem(&py_tstates, &tid);
	__u64 t;

	if (cached && *cached && (__u32)py_read(*cached + pp->ts_tid) == tid)
		return *cached;
	t = py_read(py_read(pp->runtime + pp->interp_head) + pp->threads_head);
	for (int i = 0; i < PY_MAX_THREADS && t; i++) {
		if ((__u32)py_read(t + pp->ts_tid) == tid) {
			bpf_map_update_elem(&py_tstates, &tid, &t, BPF_ANY);
			return t;
		}
		t = py_read(t + pp->ts_next);
	}
	return 0;
}

/* Emits the current thread's Python frames after `like` (same ts, pid,
 * tid), when its process is a known interpreter and the thread runs Python. */
static __always_inline void py_emit(const struct ls_hdr *like, __u32 kind)
{
	__u32 tgid = like->pid, tid = like->tid, zero = 0, n = 0, size;
	const struct ls_py_proc *pp = bpf_map_lookup_elem(&py_procs, &tgid);
	struct ls_ev_pystack *e;
	__u64 t, fr;

	if (!pp)
		return;
	e = bpf_map_lookup_elem(&py_scratch, &zero);
	if (!e)
		return;
	t = py_tstate(pp, tid);
	if (!t)
		return;
	fr = py_read(py_read(t + pp->ts_cframe) + pp->cf_frame);
	for (int i = 0; i < LS_PY_MAX_FRAMES && fr; i++) {
		__u64 code = py_read(fr + pp->fr_code), instr = py_read(fr + pp->fr_instr);
		__u64 first = code + pp->co_code, lasti = instr > first ? (instr - first) / 2 : 0;

		if (!code)
			break;
		e->f[i].code = code;
		e->f[i].lasti = lasti < 0xfffd ? (__u32)lasti : 0xfffd;
		e->f[i].pad = 0;
		n = i + 1;
		fr = py_read(fr + pp->fr_prev);
	}
	if (!n)
		return;
	e->h = *like;
	e->h.type = LS_EV_PYSTACK;
	e->kind = kind;
	e->n = n;
	e->truncated = fr != 0;
	e->pad = 0;
	size = offsetof(struct ls_ev_pystack, f) + n * sizeof(struct ls_py_frame);
	if (size > sizeof(*e))
		size = sizeof(*e);
	e->h.size = size;
	if (bpf_ringbuf_output(&events, e, size, wakeup_flags()))
		count_drop();
}

#endif
