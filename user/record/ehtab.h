/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * record --call-graph eh: unwind tables for the BPF walker (bpf/ehstack.bpf.h).
 * Each executable file a process maps gets its rows once (by device and
 * inode), from its .eh_frame as elfutils libdw reads it, appended to the
 * eh_rows map; each process gets its mappings (eh_procs) when the walker
 * first meets it, and again when it meets an address outside them.
 */
#ifndef LATSPLIT_RECORD_EHTAB_H
#define LATSPLIT_RECORD_EHTAB_H

#include <stddef.h>
#include <sys/types.h>
#include "latsplit/events.h"

/* rows the kernel holds by default: 16 MiB (libc ~28 k, CPython ~65 k),
 * and bucket entries (one per 256 bytes of code: ~4 rows each) */
#define LS_EH_ROWS_DEFAULT (1u << 21)
#define LS_EH_PAGES_DEFAULT (1u << 20)

struct ls_eh;

struct ls_eh_ops {
	/* rows [at, at + n) of eh_rows; 0, or a negative errno */
	int (*set_rows)(void *ctx, __u32 at, const struct ls_eh_row *rows, __u32 n);
	/* entries [at, at + n) of eh_pages; 0, or a negative errno */
	int (*set_pages)(void *ctx, __u32 at, const __u32 *pages, __u32 n);
	/* a process's mappings (NULL: forget it) */
	int (*set_proc)(void *ctx, __u32 pid, const struct ls_eh_proc *p);
	void *ctx;
};

struct ls_eh_stats {
	unsigned long long files, rows, no_table, rows_full, maps_over, procs_over, build_ns;
};

struct ls_eh *ls_eh_new(const struct ls_eh_ops *ops, __u32 max_rows, __u32 max_pages);
/* (Re)reads pid's mappings, builds the tables of files not seen yet, and
 * hands the walker its mappings (the vDSO's too). The number of mappings
 * with tables, -1 (process gone) or -2 (the walker's process map is full:
 * its stacks stay frame pointers). */
int ls_eh_scan(struct ls_eh *eh, pid_t pid);
/* The rows of one ELF file (an open fd), appended to *rows (grown with
 * realloc; out of memory aborts, as every GROW), for tests. The number
 * added, or -1 (no .eh_frame_hdr table it reads). */
long ls_eh_build(int fd, struct ls_eh_row **rows, size_t *nrows, size_t *cap);
/* pid's stacks met no table (at now_ns): ls_eh_scan, unless it was scanned
 * less than a second ago, or, while its scans find nothing new (JIT code
 * and anonymous mappings never have a table), twice as long as the last
 * wait, up to 32 s. */
void ls_eh_missed(struct ls_eh *eh, pid_t pid, __u64 now_ns);
const struct ls_eh_stats *ls_eh_stats(const struct ls_eh *eh);
void ls_eh_free(struct ls_eh *eh);

#endif
