/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * CPython frames of the current thread, walked from the interpreter's own
 * state (as py-spy and the OpenTelemetry profiler do), for a process user
 * space found an interpreter in and filled py_procs for: runtime ->
 * interpreters.head -> threads (the one whose native_thread_id is this
 * thread) -> cframe -> current_frame (3.13+: current_frame) -> previous...
 * Each frame gives its code object and last instruction; names and lines are read by user space at the
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

/* A walk's record, and where it stands beside it: in a map, not on the
 * stack, so that the verifier reads the count back as an unknown and checks
 * py_walk_step once, not once per count of frames (as ehstack.bpf.h). */
struct py_state {
	struct ls_ev_pystack e;
	__u64 fr;
	__u32 n;
};

/* LS_SLOTS per CPU, claimed for a walk (slot_claim): a launch's walk (a
 * uprobe: preemptible, interruptible) can have a sample's or a switch's
 * walk come in between on its CPU. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, LS_SLOTS);
	__type(key, __u32);
	__type(value, struct py_state);
} py_scratch SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} py_busy SEC(".maps");

/* Python threads per interpreter searched for the current one */
#define PY_MAX_THREADS 128

static __always_inline __u64 py_read(__u64 addr)
{
	__u64 v = 0;

	if (bpf_probe_read_user(&v, sizeof(v), (const void *)addr))
		return 0;
	return v;
}

/* Loops go through bpf_loop: the verifier checks each body once, not once
 * per iteration (thread lists and frame chains are long). */
struct py_find {
	const struct ls_py_proc *pp;
	__u64 t, found;
	__u32 tid;
};

static long py_find_step(__u32 i, void *arg)
{
	struct py_find *f = arg;

	if (!f->t)
		return 1;
	if ((__u32)py_read(f->t + f->pp->ts_tid) == f->tid) {
		f->found = f->t;
		return 1;
	}
	f->t = py_read(f->t + f->pp->ts_next);
	return 0;
}

/* tid: the thread as the host numbers it (the cache's key); ns_tid: as its
 * interpreter does (its pid namespace's) */
static __always_inline __u64 py_tstate(const struct ls_py_proc *pp, __u32 tid, __u32 ns_tid)
{
	__u64 *cached = bpf_map_lookup_elem(&py_tstates, &tid);
	struct py_find f = {.pp = pp, .tid = ns_tid};

	if (cached && *cached && (__u32)py_read(*cached + pp->ts_tid) == ns_tid)
		return *cached;
	f.t = py_read(py_read(pp->runtime + pp->interp_head) + pp->threads_head);
	bpf_loop(PY_MAX_THREADS, py_find_step, &f, 0);
	if (f.found)
		bpf_map_update_elem(&py_tstates, &tid, &f.found, BPF_ANY);
	return f.found;
}

struct py_walk {
	const struct ls_py_proc *pp;
	struct py_state *st;
};

static long py_walk_step(__u32 i, void *arg)
{
	const struct py_walk *walk = arg;
	const struct ls_py_proc *pp = walk->pp;
	struct py_state *w = walk->st;
	__u64 fr = w->fr, code, instr, first, lasti;

	if (!fr || w->n >= LS_PY_MAX_FRAMES)
		return 1;
	/* 3.14+ keeps the executable as a tagged reference: objects are
	 * 8-aligned, so the low bits are the tag (a plain pointer's are 0) */
	code = py_read(fr + pp->fr_code) & ~7ull;
	if (!code)
		return 1;
	w->fr = py_read(fr + pp->fr_prev);
	/* an entry frame (3.12+: the C stack's shim, executable None) names
	 * no Python code: skipped */
	if (pp->code_type && py_read(code + pp->ob_type) != pp->code_type)
		return 0;
	instr = py_read(fr + pp->fr_instr);
	first = code + pp->co_code;
	lasti = instr > first ? (instr - first) / 2 : 0;
	struct ls_py_frame *f = &w->e.f[w->n & (LS_PY_MAX_FRAMES - 1)];
	f->code = code;
	f->lasti = lasti < 0xfffd ? (__u32)lasti : 0xfffd;
	f->pad = 0;
	w->n++;
	return 0;
}

/* The walk and its record (st: a claimed scratch slot). */
static __always_inline void py_walk_emit(const struct ls_py_proc *pp, struct py_state *st,
					 const struct ls_hdr *like, __u32 kind)
{
	__u32 tid = like->tid, ns_tid = tid;
	struct ls_ev_pystack *e = &st->e;
	struct py_walk w = {.pp = pp, .st = st};
	__u64 size, t;

	if (pp->ns_ino) { /* a container's: the thread's id in its namespace */
		struct bpf_pidns_info ns = {};
		if ((__u32)bpf_get_current_pid_tgid() != tid ||
		    bpf_get_ns_current_pid_tgid(pp->ns_dev, pp->ns_ino, &ns, sizeof(ns)))
			return;
		ns_tid = ns.pid;
	}
	t = py_tstate(pp, tid, ns_tid);
	if (!t)
		return;
	st->fr = py_read(t + pp->ts_cframe);
	if (!(pp->flags & LS_PY_NO_CFRAME))
		st->fr = py_read(st->fr + pp->cf_frame);
	st->n = 0;
	/* entry frames are skipped, so a few more steps than frames kept */
	bpf_loop(LS_PY_MAX_FRAMES + LS_PY_MAX_FRAMES / 2, py_walk_step, &w, 0);
	__u32 n = st->n;
	asm volatile("" : "+r"(n)); /* the bound below is on this register */
	if (!n || n > LS_PY_MAX_FRAMES)
		return;
	e->h = *like;
	e->h.type = LS_EV_PYSTACK;
	e->kind = kind;
	e->n = n;
	e->truncated = st->fr != 0;
	e->pad = 0;
	size = offsetof(struct ls_ev_pystack, f) + (__u64)n * sizeof(struct ls_py_frame);
	asm volatile("" : "+r"(size));
	if (size > sizeof(*e))
		return;
	e->h.size = (__u16)size;
	if (bpf_ringbuf_output(&events, e, size, wakeup_flags()))
		count_drop();
}

/* Emits the current thread's Python frames after `like` (same ts, pid,
 * tid), when its process is a known interpreter and the thread runs Python. */
static __always_inline void py_emit(const struct ls_hdr *like, __u32 kind)
{
	__u32 tgid = like->pid, zero = 0, slot = 0;
	const struct ls_py_proc *pp = bpf_map_lookup_elem(&py_procs, &tgid);
	__u32 *busy;
	struct py_state *st;

	if (!pp)
		return;
	busy = bpf_map_lookup_elem(&py_busy, &zero);
	st = slot_claim(&py_scratch, busy, &slot);
	if (!st)
		return;
	py_walk_emit(pp, st, like, kind);
	slot_release(busy, slot);
}

#endif
