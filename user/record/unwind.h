/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * record --call-graph dwarf: user stacks unwound with each mapping's CFI
 * (.eh_frame / .debug_frame) by elfutils libdwfl, from the registers and the
 * stack window BPF copied (LS_EV_USTACK_RAW), as perf does offline. Here it
 * is done while recording, while the process and its mappings are there,
 * and only the addresses reach the capture (LS_REC_USTACK).
 */
#ifndef LATSPLIT_RECORD_UNWIND_H
#define LATSPLIT_RECORD_UNWIND_H

#include "latsplit/events.h"

struct ls_unwinder;

struct ls_unwind_stats {
	unsigned long long stacks, frames;
	unsigned long long stopped[4]; /* by LS_UNWIND_* */
	unsigned long long ns;         /* spent unwinding */
};

struct ls_unwinder *ls_unwind_new(void);
void ls_unwind_free(struct ls_unwinder *u);
/* Unwinds e into ips (leaf first); returns how many, status set. */
int ls_unwind(struct ls_unwinder *u, const struct ls_ev_ustack_raw *e, __u64 *ips, int max,
	      __u32 *status);
const struct ls_unwind_stats *ls_unwind_stats(const struct ls_unwinder *u);

#endif
