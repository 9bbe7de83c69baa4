/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The analysis core's one reading loop (DESIGN.md §2): records from a
 * source, put in time order, drive the request correlator, the engine-group
 * timeline and any number of record consumers (flame's stack data, ...);
 * at the end requests are joined to engine events and attributed. A source
 * is a capture file (ls_analysis_run) or anything that pushes records as
 * they come, in the order a ring buffer hands them over
 * (ls_analysis_begin/push/end): live mode is offline mode fed record by
 * record, and must give the same result.
 */
#ifndef LATSPLIT_USER_ANALYSIS_H
#define LATSPLIT_USER_ANALYSIS_H

#include "attribute.h"
#include "capture.h"
#include "order.h"
#include "requests.h"
#include "timeline.h"
#include "verdict.h"

/* Sees every record once, in time order (the pointer is valid during the
 * call only). */
struct ls_consumer {
	void (*record)(void *ctx, const struct ls_hdr *rec);
	void *ctx;
};

struct ls_analysis {
	struct ls_reader *rd;        /* ls_analysis_run: open, for header and loss accounting */
	struct ls_timeline *tl;
	struct ls_corr_stats cst;
	struct ls_request *v;        /* requests, with split[i] and join[i] */
	struct ls_split *split;
	struct ls_engine_join *join;
	size_t n, cap;
	__u64 drops, stack_errors, first_ts, last_ts;
	/* the reading loop's state */
	struct ls_order *ord;
	struct ls_corr *corr;
	const struct ls_consumer *consumers;
	size_t nconsumers;
};

/* Push mode. track_all: the capture header's (it defines the engine group).
 * 0, or -1 with a one-line reason in err. */
int ls_analysis_begin(struct ls_analysis *a, bool track_all, const struct ls_consumer *consumers,
		      size_t nconsumers, char *err, size_t len);
/* One record, in the order the source has it. 0 or -1 (out of memory). */
int ls_analysis_push(struct ls_analysis *a, const struct ls_hdr *rec);
/* No more records: drains the ordering window, joins and attributes. */
int ls_analysis_end(struct ls_analysis *a, char *err, size_t len);

/* The whole of a capture file. 0, or -1 with a one-line reason in err. */
int ls_analysis_run(struct ls_analysis *a, const char *path, const struct ls_consumer *consumers,
		    size_t nconsumers, char *err, size_t len);
/* The verdict over every request of a finished analysis. */
void ls_analysis_verdict(const struct ls_analysis *a, bool ttft, struct ls_verdict *v);
void ls_analysis_free(struct ls_analysis *a);

#endif
