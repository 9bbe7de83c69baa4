// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Prints, from include/latsplit/events.h itself, where each record type has
 * bytes that must be zero in a capture unless written: string fields past
 * their NUL ("str TYPE OFFSET LEN") and variable-size records' padding after
 * the payload ("tail TYPE OFFSET_OF_LEN LEN_SIZE DATA_OFFSET"), and a table
 * of entries written after that padding ("segs TYPE OFFSET_OF_COUNT
 * COUNT_SIZE ENTRY_SIZE"). For
 * tests/integration/stale_bytes.py.
 */
#include <stddef.h>
#include <stdio.h>

#include "latsplit/events.h"

#define STR(type, st, f) \
	printf("str %d %zu %zu\n", type, offsetof(struct st, f), sizeof(((struct st *)0)->f))
#define TAIL(type, st, lenf, data_off)                                                      \
	printf("tail %d %zu %zu %zu\n", type, offsetof(struct st, lenf),                  \
	       sizeof(((struct st *)0)->lenf), (size_t)(data_off))

int main(void)
{
	STR(LS_EV_SCHED_SWITCH, ls_ev_sched_switch, prev_comm);
	STR(LS_EV_SCHED_SWITCH, ls_ev_sched_switch, next_comm);
	STR(LS_EV_SCHED_WAKEUP, ls_ev_sched_wakeup, comm);
	STR(LS_EV_SCHED_WAKEUP_NEW, ls_ev_sched_wakeup, comm);
	STR(LS_EV_PROC_FORK, ls_ev_proc_fork, comm);
	STR(LS_EV_PROC_EXEC, ls_ev_proc_exec, comm);
	STR(LS_EV_PROC_EXEC, ls_ev_proc_exec, filename);
	STR(LS_EV_PROC_EXIT, ls_ev_proc_exit, comm);
	STR(LS_EV_SAMPLE, ls_ev_sample, comm);
	STR(LS_EV_ENGINE, ls_ev_engine, x_request_id);
	STR(LS_EV_GPU, ls_ev_gpu, name);
	TAIL(LS_EV_SOCK_IO, ls_ev_sock_io, cap_len, sizeof(struct ls_ev_sock_io));
	/* and after the payload's padding, nseg piece-table entries */
	printf("segs %d %zu %zu %zu\n", LS_EV_SOCK_IO, offsetof(struct ls_ev_sock_io, nseg),
	       sizeof(((struct ls_ev_sock_io *)0)->nseg), sizeof(struct ls_io_seg));
	TAIL(LS_EV_USTACK_RAW, ls_ev_ustack_raw, len, offsetof(struct ls_ev_ustack_raw, data));
	return 0;
}
