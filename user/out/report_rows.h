/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * `report --csv` (a header, then one row per request) and `report --json`
 * (one record per request, DESIGN.md §6; then, when no request could be
 * split, {"type":"empty","reason"}; last, the verdict), as analysis sinks.
 */
#ifndef LATSPLIT_OUT_REPORT_ROWS_H
#define LATSPLIT_OUT_REPORT_ROWS_H

#include <stdbool.h>
#include <stdio.h>

#include "analysis.h"
#include "trust.h"

struct ls_sink ls_report_csv_sink(FILE *out);
struct ls_report_json {
	FILE *out;
	bool ttft; /* the verdict judges time to first token */
	const struct ls_trust *trust; /* whose X-Forwarded-For is believed (NULL: none) */
};
struct ls_sink ls_report_json_sink(struct ls_report_json *j);

#endif
