/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * `latsplit dump` as an analysis sink: every record of a capture, one line
 * each, in the analysis's time order (perf script style), or JSON lines;
 * the header first, a count last (text).
 */
#ifndef LATSPLIT_OUT_DUMP_H
#define LATSPLIT_OUT_DUMP_H

#include <stdbool.h>
#include <stdio.h>

#include "analysis.h"

struct ls_dump {
	FILE *out;
	bool json, header, absolute;
	/* counted */
	__u64 base, events, drops;
};

struct ls_sink ls_dump_sink(struct ls_dump *d);

#endif
