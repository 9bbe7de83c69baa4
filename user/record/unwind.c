// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* DWARF unwinding of copied user stacks with libdwfl: see unwind.h. */
#include "unwind.h"

#include <elfutils/libdwfl.h>
#include <dwarf.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "../cli.h"

/* A process's modules as libdwfl knows them, reported from /proc/PID/maps
 * when first needed and again when an address falls outside them (a
 * library loaded since), at most once a second. */
struct proc_dwfl {
	__u32 pid;
	Dwfl *dwfl;
	__u64 reported_ns;
};

struct ls_unwinder {
	struct proc_dwfl *procs;
	size_t nprocs, capprocs;
	/* the stack being unwound, for the callbacks */
	const struct ls_ev_ustack_raw *cur;
	bool hit_end;
	__u64 *ips;
	int n, max;
	struct ls_unwind_stats st;
};

static char *debuginfo_path;
static const Dwfl_Callbacks proc_callbacks = {
	.find_elf = dwfl_linux_proc_find_elf,
	.find_debuginfo = dwfl_standard_find_debuginfo,
	.debuginfo_path = &debuginfo_path,
};

static pid_t next_thread(Dwfl *dwfl, void *arg, void **thread_argp)
{
	struct ls_unwinder *u = arg;

	(void)dwfl;
	if (*thread_argp)
		return 0;
	*thread_argp = arg;
	return (pid_t)u->cur->h.tid;
}

static bool get_thread(Dwfl *dwfl, pid_t tid, void *arg, void **thread_argp)
{
	(void)dwfl;
	(void)tid;
	*thread_argp = arg;
	return true;
}

/* Words of the copied window; anything else is beyond what was copied. */
static bool memory_read(Dwfl *dwfl, Dwarf_Addr addr, Dwarf_Word *result, void *arg)
{
	struct ls_unwinder *u = arg;
	const struct ls_ev_ustack_raw *e = u->cur;

	(void)dwfl;
	if (addr < e->sp || addr - e->sp + sizeof(*result) > e->len) {
		u->hit_end = true;
		return false;
	}
	memcpy(result, e->data + (addr - e->sp), sizeof(*result));
	return true;
}

static bool set_initial_registers(Dwfl_Thread *thread, void *arg)
{
	struct ls_unwinder *u = arg;
	/* x86-64 DWARF registers 6 and 7: rbp, rsp */
	Dwarf_Word regs[2] = {u->cur->bp, u->cur->sp};

	if (!dwfl_thread_state_registers(thread, 6, 2, regs))
		return false;
	dwfl_thread_state_register_pc(thread, u->cur->ip);
	return true;
}

static const Dwfl_Thread_Callbacks thread_callbacks = {
	.next_thread = next_thread,
	.get_thread = get_thread,
	.memory_read = memory_read,
	.set_initial_registers = set_initial_registers,
};

static int frame_cb(Dwfl_Frame *state, void *arg)
{
	struct ls_unwinder *u = arg;
	Dwarf_Addr pc;
	bool activation;

	if (!dwfl_frame_pc(state, &pc, &activation) || u->n >= u->max)
		return DWARF_CB_ABORT;
	u->ips[u->n++] = pc;
	return DWARF_CB_OK;
}

struct ls_unwinder *ls_unwind_new(void)
{
	return calloc(1, sizeof(struct ls_unwinder));
}

void ls_unwind_free(struct ls_unwinder *u)
{
	if (!u)
		return;
	for (size_t i = 0; i < u->nprocs; i++)
		if (u->procs[i].dwfl)
			dwfl_end(u->procs[i].dwfl);
	free(u->procs);
	free(u);
}

const struct ls_unwind_stats *ls_unwind_stats(const struct ls_unwinder *u)
{
	return &u->st;
}

static Dwfl *report(struct ls_unwinder *u, __u32 pid)
{
	Dwfl *d = dwfl_begin(&proc_callbacks);

	if (!d)
		return NULL;
	if (dwfl_linux_proc_report(d, (pid_t)pid) || dwfl_report_end(d, NULL, NULL) ||
	    !dwfl_attach_state(d, NULL, (pid_t)pid, &thread_callbacks, u)) {
		dwfl_end(d);
		return NULL;
	}
	return d;
}

static Dwfl *dwfl_of(struct ls_unwinder *u, __u32 pid, __u64 ip)
{
	struct proc_dwfl *p = NULL;
	__u64 now = ls_now_ns();

	for (size_t i = 0; i < u->nprocs && !p; i++)
		if (u->procs[i].pid == pid)
			p = &u->procs[i];
	if (!p) {
		if (u->nprocs == u->capprocs) {
			size_t cap = u->capprocs ? 2 * u->capprocs : 16;
			struct proc_dwfl *n = realloc(u->procs, cap * sizeof(*n));
			if (!n)
				return NULL;
			u->procs = n;
			u->capprocs = cap;
		}
		p = &u->procs[u->nprocs++];
		*p = (struct proc_dwfl){pid, report(u, pid), now};
		return p->dwfl;
	}
	if (p->dwfl && dwfl_addrmodule(p->dwfl, ip))
		return p->dwfl;
	if (now - p->reported_ns >= 1000000000ull) { /* a library loaded since? */
		Dwfl *d = report(u, pid);
		if (d) {
			if (p->dwfl)
				dwfl_end(p->dwfl);
			p->dwfl = d;
		}
		p->reported_ns = now;
	}
	return p->dwfl;
}

int ls_unwind(struct ls_unwinder *u, const struct ls_ev_ustack_raw *e, __u64 *ips, int max,
	      __u32 *status)
{
	__u64 t0 = ls_now_ns();
	Dwfl *d = dwfl_of(u, e->h.pid, e->ip);

	u->cur = e;
	u->hit_end = false;
	u->ips = ips;
	u->n = 0;
	u->max = max;
	if (!d) {
		*status = LS_UNWIND_ERROR;
	} else if (dwfl_getthread_frames(d, (pid_t)e->h.tid, frame_cb, u) == 0 || u->n >= max) {
		*status = LS_UNWIND_OK;
	} else {
		*status = u->hit_end ? LS_UNWIND_STACK_END : u->n ? LS_UNWIND_NO_CFI : LS_UNWIND_ERROR;
	}
	if (!u->n && max) { /* not even the pc: keep it, the sample still counts */
		ips[0] = e->ip;
		u->n = 1;
	}
	u->st.stacks++;
	u->st.frames += u->n;
	u->st.stopped[*status & 3]++;
	u->st.ns += ls_now_ns() - t0;
	return u->n;
}
