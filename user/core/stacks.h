/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * A capture's stacks, symbols, CPU samples and blocked spans (with the stack
 * each thread blocked in), gathered as a record consumer in the one reading
 * loop, then sorted and paired; and a stack as named frames. Flame graphs
 * and the Perfetto timeline read them from here.
 */
#ifndef LATSPLIT_CORE_STACKS_H
#define LATSPLIT_CORE_STACKS_H

#include <stdbool.h>
#include <stddef.h>
#include "latsplit/events.h"
#include "idmap.h"
#include "symbolize.h"

struct ls_stk {
	__s32 id;
	__u32 n;
	const __u64 *ips;
};

struct ls_symrec {
	__u32 pid;
	__u64 ip;
	const char *name;
};

/* Keys of a sample's, block's or launch's Python frames or unwound user
 * stack in ls_stack_data.pykeys: [first, first + n). */
struct ls_keys {
	__u32 first, n;
};

/* A CPU sample, as the graphs need it. */
struct ls_sample {
	__u64 ts;
	__u32 pid;
	__s32 ustack, kstack;
	char comm[LS_COMM_LEN + 1];
	__u32 tid;
	struct ls_keys py;  /* its Python frames, innermost first */
	struct ls_keys nat; /* its DWARF-unwound user stack, leaf first */
};

/* A thread leaving the CPU with stacks (out) or getting it (in), for
 * pairing each block with the thread's next switch-in. */
struct ls_switch_ev {
	__u64 ts;
	__u32 tid;
	bool in;
	size_t block; /* out: its entry in the blocks being built */
};

/* A thread blocked from ts (a switch-out with stacks) to end (its next
 * switch-in; 0 while open). */
struct ls_block {
	__u32 tid, pid;
	__u64 ts, end;
	__s32 ustack, kstack;
	char comm[LS_COMM_LEN + 1];
	struct ls_keys py, nat; /* as ls_sample's */
};

/* A GPU launch (gpu_launch): its thread's stack when it launched, by
 * correlation id. */
struct ls_launch {
	__u64 ts;
	__u32 pid, tid, corr;
	__s32 ustack;
	struct ls_keys py, nat; /* as ls_sample's */
};

/* An executable mapping of a CPython interpreter (python3.N, libpython3.N):
 * native frames in it stand where the Python frames go. */
struct ls_interp_map {
	__u32 pid;
	__u64 start, end;
};

/* Everything the stack graphs need, copied out of the reader's frames. */
struct ls_stack_data {
	struct ls_stk *stacks;
	size_t nstacks, capstacks;
	struct ls_symrec *syms;
	size_t nsyms, capsyms;
	struct ls_sample *samples; /* CPU samples, in time order */
	size_t nsamples, capsamples;
	struct ls_launch *launches; /* GPU launches, in capture order */
	size_t nlaunches, caplaunches;
	struct ls_block *blocked; /* closed blocked spans with their stacks, by start */
	size_t nblocked, capblocked;
	__u64 *maxend; /* maxend[i]: the latest end among blocked[0..i] (non-decreasing) */
	/* Python frames (LS_PY_KEY addresses) and DWARF-unwound user stacks
	 * of samples and blocks; once finished, a sample or block with either
	 * has its ustack replaced by a merged stack (the unwound stack, else
	 * the frame-pointer one; with Python frames, its native frames below
	 * the interpreter, then Python's) */
	__u64 *pykeys;
	size_t npykeys, cappykeys;
	struct ls_interp_map *interp;
	size_t ninterp, capinterp;
	__u64 py_unmatched; /* Python or unwound stacks whose sample or switch was not found */
	/* blocks whose kernel stack was to come when they ended
	 * (LS_STACK_LATER) and did not: shorter than record's
	 * --offcpu-kernel-min-us, so user frames only */
	__u64 kstack_short;
	/* user addresses the capture has no symbol for (recorded with
	 * --no-symbolize, or elsewhere): resolved here from its mapping
	 * records, by build-id; NULL without mappings */
	struct ls_symbolizer *offline;
};

/* Stacks, symbols, samples and switches of a capture, gathered as a record
 * consumer (one reading loop serves flame and the analysis core alike),
 * then sorted and paired by ls_stack_loader_finish. debug_dir (NULL: the
 * default) is for symbolizing from mapping records what has no symbol. */
struct ls_stack_loader {
	struct ls_stack_data d;
	struct ls_switch_ev *sw;
	size_t nsw, capsw;
	__u64 stack_errors;
	const char *debug_dir;
	/* (tid, sample or block) -> index + 1 of its latest: a Python stack
	 * follows its record on the same CPU, other CPUs' records between */
	struct ls_idmap last;
};

/* The record consumer (ctx: struct ls_stack_loader). */
void ls_stack_loader_add(void *ctx, const struct ls_hdr *rec);
/* Sorts and pairs what was gathered into out (which then owns it). */
void ls_stack_loader_finish(struct ls_stack_loader *l, struct ls_stack_data *out);
void ls_stack_data_free(struct ls_stack_data *d);
const struct ls_stk *ls_stack_of(const struct ls_stack_data *d, __s32 id);
const char *ls_stack_sym(const struct ls_stack_data *d, __u32 pid, __u64 ip, char *buf, size_t len);
/* BPF and tracing plumbing frames on top of a kernel stack. */
bool ls_tracing_frame(const char *name);
/* "comm (pid)", user frames outermost first, then kernel frames, into fr
 * (names: storage); returns how many. */
int ls_stack_frames(const struct ls_stack_data *d, __u32 pid, const char *comm, __s32 ustack,
		    __s32 kstack, char names[][128], const char **fr, int max);

#endif
