/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * `latsplit check`'s probes: each data source proved by loading, attaching
 * and triggering a trivial program (bpf/probe.bpf.c), and the CUPTI shim's
 * library found.
 */
#ifndef LATSPLIT_RECORD_CAPCHECK_H
#define LATSPLIT_RECORD_CAPCHECK_H

#include <stdbool.h>

struct ls_check_result {
	const char *name;
	bool ok;
	bool required;
	char detail[320];
};

/* One source (enum in latsplit/probe.h), into res. */
void ls_check_program(int which, struct ls_check_result *res);
void ls_check_cupti(struct ls_check_result *res);

#endif
