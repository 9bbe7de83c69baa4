// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Scheduler domain: context switches, wakeups and the process lifecycle of
 * tracked processes. Children of tracked processes are tracked from their
 * fork on, decided here in the kernel so no early event is missed.
 * Each tracepoint has a tp_btf and a raw_tp program over one handler; user
 * space autoloads one of the two after probing.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_tracing.h>
#include "common.bpf.h"
#include "python.bpf.h"
#include "ustack.bpf.h"
#include "ehstack.bpf.h"
#include "core_fixes.bpf.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

/* record --offcpu-kernel-min-us: a blocking switch-out's kernel stack is
 * taken when the block ends (the thread's saved stack, before it runs
 * again) and only when it lasted that long; 0: at every blocking switch-out.
 * Unwinding the kernel stack was the larger half of what a blocking
 * switch's stacks cost on the switch-heavy bench (~0.9 of ~1.7 us), and
 * most blocks under load are short. */
const volatile __u64 kstack_min_ns = 0;

/* 0: blocks that ended before the minimum (user stack only), 1: their ns,
 * 2: blocks whose kernel stack was taken at their end */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 3);
	__type(key, __u32);
	__type(value, __u64);
} kstack_stats SEC(".maps");

static __always_inline void kstack_count(__u32 k, __u64 v)
{
	__u64 *c = bpf_map_lookup_elem(&kstack_stats, &k);

	if (c)
		*c += v;
}

/* next, switched in at `now`, ends its block (its storage s says when it
 * began): its kernel stack when the block was long enough, in a record
 * stamped before the switch's own. True when it took the stack (the
 * switch's record is then stamped after it, not at `now`). */
static __always_inline bool block_ended(struct task_struct *next, struct io_inflight *s,
					__u32 tgid, __u32 tid, __u64 now)
{
	__u64 out = s->kblock_ts;
	struct ls_ev_block_kstack *e;
	__s32 kid;

	s->kblock_ts = 0;
	if (now - out < kstack_min_ns) {
		kstack_count(0, 1);
		kstack_count(1, now - out);
		return false;
	}
	kid = eh_task_kstack(next); /* a new stack's record goes first */
	kstack_count(2, 1);
	e = reserve(sizeof(*e));
	if (!e)
		return true;
	fill_hdr(&e->h, LS_EV_BLOCK_KSTACK, sizeof(*e));
	e->h.pid = tgid;
	e->h.tid = tid;
	e->block_ts = out;
	e->kstack = kid;
	e->pad = 0;
	submit(e);
	return true;
}

/* A task's comm into dst (16 bytes): two loads through a BTF pointer (the
 * kernel keeps it NUL-padded), else a string probe read. */
static __always_inline void comm_into(char (*dst)[16], struct task_struct *t, bool btf)
{
	_Static_assert(sizeof(t->comm) == sizeof(*dst), "comm is TASK_COMM_LEN bytes");
	if (btf)
		__builtin_memcpy(*dst, t->comm, sizeof(*dst));
	else
		BPF_CORE_READ_STR_INTO(dst, t, comm);
}

/* btf: prev and next are BTF pointers (tp_btf), which the kernel-stack
 * deferral needs (bpf_get_task_stack); the raw_tp program takes kernel
 * stacks at switch-out as before. */
static __always_inline int handle_switch(void *ctx, struct task_struct *prev,
					 struct task_struct *next, bool btf)
{
	__u32 prev_tgid = KREAD(btf, prev, tgid);
	__u32 next_tgid = KREAD(btf, next, tgid);
	struct ls_ev_sched_switch *e;

	bool prev_tracked = tgid_tracked(prev_tgid), next_tracked = tgid_tracked(next_tgid);
	bool defer = btf && kstack_min_ns && want_stacks;
	/* prev's storage when it blocks, next's when it comes back: one lookup
	 * each serves the write it may be in, its deferred kernel stack and its
	 * folded wakeup. Reached through BTF pointers only (tp_btf): the raw_tp
	 * program neither measures time asleep in writes (the loader says so),
	 * defers kernel stacks nor folds wakeups. */
	struct io_inflight *ps = NULL, *ns = NULL;
	bool late = false; /* the switch's record stamped after a kernel stack's */
	__s64 state;
	__u64 now;

	if (!prev_tracked && !next_tracked)
		return 0;
	now = bpf_ktime_get_ns(); /* one clock read for all below */
	state = task_state(prev, btf);
	if (btf && next_tracked) {
		ns = bpf_task_storage_get(&io_inflight, next, 0, 0);
		if (ns && defer && ns->kblock_ts)
			late = block_ended(next, ns, next_tgid, KREAD(btf, next, pid), now);
	}
	/* Time asleep inside a socket write: the send buffer was full. */
	if (btf && prev_tracked && state != 0) {
		/* a kernel stack to take later needs somewhere to wait */
		ps = bpf_task_storage_get(&io_inflight, prev, 0,
					  defer ? BPF_LOCAL_STORAGE_GET_F_CREATE : 0);
		if (want_io && ps && ps->ts_enter && ps->dir == LS_IO_OUT)
			ps->off_start = now;
		if (ps) /* a wakeup while it ran ends no block: the next one counts */
			ps->woken_ts = 0;
	}
	if (want_io && ns && ns->ts_enter && ns->off_start) {
		ns->blocked_ns += now - ns->off_start;
		ns->off_start = 0;
	}
	e = reserve(sizeof(*e));
	if (!e)
		return 0;
	fill_hdr_at(&e->h, LS_EV_SCHED_SWITCH, sizeof(*e), late ? bpf_ktime_get_ns() : now);
	e->h.pid = prev_tgid;
	e->h.tid = KREAD(btf, prev, pid);
	e->next_pid = next_tgid;
	e->next_tid = KREAD(btf, next, pid);
	e->prev_state = state;
	e->prev_ustack = e->prev_kstack = -1;
	/* next's wakeup rides here (handle_wakeup); none: the fields stay as
	 * reserve zeroed them */
	if (ns && ns->woken_ts) {
		if (ns->woken_ts <= e->h.ts) {
			e->next_woken_dt = e->h.ts - ns->woken_ts;
			e->waker_pid = ns->waker_pid;
			e->waker_tid = ns->waker_tid;
		}
		ns->woken_ts = 0;
	}
	/* prev is still current: its stacks say why it blocked */
	if (want_stacks && prev_tracked && state != 0) {
		const struct ls_eh_proc *eh = eh_covers(prev_tgid);

		e->prev_ustack = eh ? eh_stack(prev_tgid, eh) : stack_id(ctx, BPF_F_USER_STACK);
		if (defer && ps) {
			e->prev_kstack = LS_STACK_LATER;
			ps->kblock_ts = e->h.ts;
		} else { /* not deferred, or no memory for the thread's storage: now */
			e->prev_kstack = stack_id(ctx, 0);
		}
	}
	e->prev_prio = KREAD(btf, prev, prio);
	e->next_prio = KREAD(btf, next, prio);
	comm_into(&e->prev_comm, prev, btf);
	comm_into(&e->next_comm, next, btf);
	struct ls_hdr h = e->h;
	bool py = want_stacks && prev_tracked && state != 0;
	submit(e);
	if (py) { /* prev is still current: its Python frames say why it blocked */
		ustack_emit(&h, LS_PY_BLOCK);
		py_emit(&h, LS_PY_BLOCK);
	}
	return 0;
}

/* A tracked task woken. Through a BTF pointer (tp_btf) a wakeup is not a
 * record of its own: the first since the task last blocked waits in its
 * storage for the switch that runs it, whose record carries it (ABI 7: one
 * record, not two, ~2.6 per request on the switch-heavy bench). Its own
 * record as before: raw_tp, a new task's first wakeup, no storage. */
static __always_inline int handle_wakeup(struct task_struct *p, __u16 type, bool btf)
{
	__u32 tgid = KREAD(btf, p, tgid);
	struct ls_ev_sched_wakeup *e;
	__u64 id;

	if (!tgid_tracked(tgid))
		return 0;
	id = bpf_get_current_pid_tgid();
	if (btf && type == LS_EV_SCHED_WAKEUP) {
		struct io_inflight *s = bpf_task_storage_get(&io_inflight, p, 0,
							     BPF_LOCAL_STORAGE_GET_F_CREATE);
		if (s) {
			if (!s->woken_ts) {
				s->waker_pid = id >> 32;
				s->waker_tid = (__u32)id;
				s->woken_ts = bpf_ktime_get_ns();
			}
			return 0;
		}
	}
	e = reserve(sizeof(*e));
	if (!e)
		return 0;
	fill_hdr(&e->h, type, sizeof(*e));
	e->waker_pid = id >> 32;
	e->waker_tid = (__u32)id;
	e->h.pid = tgid;
	e->h.tid = KREAD(btf, p, pid);
	e->target_cpu = KREAD(btf, p, wake_cpu);
	e->prio = KREAD(btf, p, prio);
	comm_into(&e->comm, p, btf);
	submit(e);
	return 0;
}

static __always_inline int handle_fork(struct task_struct *parent, struct task_struct *child)
{
	__u32 ptgid = BPF_CORE_READ(parent, tgid);
	__u32 ctgid = BPF_CORE_READ(child, tgid);
	struct ls_ev_proc_fork *e;

	if (!tgid_tracked(ptgid) && !tgid_tracked(ctgid))
		return 0;
	if (!track_all && ctgid != ptgid)
		tgid_track(ctgid);
	if (ctgid != ptgid) { /* a forked interpreter: the same state, same places */
		const struct ls_py_proc *pp = bpf_map_lookup_elem(&py_procs, &ptgid);
		if (pp) {
			struct ls_py_proc c = *pp;
			bpf_map_update_elem(&py_procs, &ctgid, &c, BPF_ANY);
		}
	}
	e = reserve(sizeof(*e));
	if (!e)
		return 0;
	fill_hdr(&e->h, LS_EV_PROC_FORK, sizeof(*e));
	e->h.pid = ptgid;
	e->h.tid = BPF_CORE_READ(parent, pid);
	e->child_pid = ctgid;
	e->child_tid = BPF_CORE_READ(child, pid);
	BPF_CORE_READ_STR_INTO(&e->comm, child, comm);
	submit(e);
	return 0;
}

static __always_inline int handle_exec(struct task_struct *p, __u32 old_tid,
				       struct linux_binprm *bprm)
{
	__u32 tgid = BPF_CORE_READ(p, tgid);
	struct ls_ev_proc_exec *e;
	const char *filename;

	if (!tgid_tracked(tgid))
		return 0;
	bpf_map_delete_elem(&py_procs, &tgid); /* a new image: user space looks again */
	e = reserve(sizeof(*e));
	if (!e)
		return 0;
	fill_hdr(&e->h, LS_EV_PROC_EXEC, sizeof(*e));
	e->old_tid = old_tid;
	BPF_CORE_READ_STR_INTO(&e->comm, p, comm);
	filename = BPF_CORE_READ(bprm, filename);
	bpf_probe_read_kernel_str(&e->filename, sizeof(e->filename), filename);
	submit(e);
	return 0;
}

static __always_inline int handle_exit(struct task_struct *p)
{
	__u32 tgid = BPF_CORE_READ(p, tgid);
	struct ls_ev_proc_exit *e;
	int live;

	if (!tgid_tracked(tgid))
		return 0;
	/* signal->live is decremented before the tracepoint fires. */
	live = BPF_CORE_READ(p, signal, live.counter);
	if (live == 0 && !track_all)
		tgid_untrack(tgid);
	if (live == 0)
		bpf_map_delete_elem(&py_procs, &tgid);
	e = reserve(sizeof(*e));
	if (!e)
		return 0;
	fill_hdr(&e->h, LS_EV_PROC_EXIT, sizeof(*e));
	e->exit_code = BPF_CORE_READ(p, exit_code);
	e->group_dead = live == 0;
	BPF_CORE_READ_STR_INTO(&e->comm, p, comm);
	submit(e);
	return 0;
}

SEC("tp_btf/sched_switch")
int BPF_PROG(sched_switch_btf, bool preempt, struct task_struct *prev, struct task_struct *next)
{
	return handle_switch(ctx, prev, next, true);
}

SEC("raw_tp/sched_switch")
int BPF_PROG(sched_switch_raw, bool preempt, struct task_struct *prev, struct task_struct *next)
{
	return handle_switch(ctx, prev, next, false);
}

SEC("tp_btf/sched_wakeup")
int BPF_PROG(sched_wakeup_btf, struct task_struct *p)
{
	return handle_wakeup(p, LS_EV_SCHED_WAKEUP, true);
}

SEC("raw_tp/sched_wakeup")
int BPF_PROG(sched_wakeup_raw, struct task_struct *p)
{
	return handle_wakeup(p, LS_EV_SCHED_WAKEUP, false);
}

SEC("tp_btf/sched_wakeup_new")
int BPF_PROG(sched_wakeup_new_btf, struct task_struct *p)
{
	return handle_wakeup(p, LS_EV_SCHED_WAKEUP_NEW, true);
}

SEC("raw_tp/sched_wakeup_new")
int BPF_PROG(sched_wakeup_new_raw, struct task_struct *p)
{
	return handle_wakeup(p, LS_EV_SCHED_WAKEUP_NEW, false);
}

SEC("tp_btf/sched_process_fork")
int BPF_PROG(sched_process_fork_btf, struct task_struct *parent, struct task_struct *child)
{
	return handle_fork(parent, child);
}

SEC("raw_tp/sched_process_fork")
int BPF_PROG(sched_process_fork_raw, struct task_struct *parent, struct task_struct *child)
{
	return handle_fork(parent, child);
}

SEC("tp_btf/sched_process_exec")
int BPF_PROG(sched_process_exec_btf, struct task_struct *p, pid_t old_pid, struct linux_binprm *bprm)
{
	return handle_exec(p, old_pid, bprm);
}

SEC("raw_tp/sched_process_exec")
int BPF_PROG(sched_process_exec_raw, struct task_struct *p, pid_t old_pid, struct linux_binprm *bprm)
{
	return handle_exec(p, old_pid, bprm);
}

SEC("tp_btf/sched_process_exit")
int BPF_PROG(sched_process_exit_btf, struct task_struct *p)
{
	return handle_exit(p);
}

SEC("raw_tp/sched_process_exit")
int BPF_PROG(sched_process_exit_raw, struct task_struct *p)
{
	return handle_exit(p);
}
