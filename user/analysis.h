/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * One pass over a capture that every analysis shares (report, flame): read
 * in time order, rebuild requests, build the engine-group timeline, join
 * engine events, attribute. Live mode will feed the same steps.
 */
#ifndef LATSPLIT_USER_ANALYSIS_H
#define LATSPLIT_USER_ANALYSIS_H

#include "attribute.h"
#include "capture.h"
#include "requests.h"
#include "timeline.h"

struct ls_analysis {
	struct ls_reader *rd;        /* open: header and loss accounting */
	struct ls_timeline *tl;
	struct ls_corr_stats cst;
	struct ls_request *v;        /* requests, with split[i] and join[i] */
	struct ls_split *split;
	struct ls_engine_join *join;
	size_t n, cap;
	__u64 drops, stack_errors, first_ts, last_ts;
};

/* 0, or -1 with a one-line reason in err. */
int ls_analysis_run(struct ls_analysis *a, const char *path, char *err, size_t len);
void ls_analysis_free(struct ls_analysis *a);

#endif
