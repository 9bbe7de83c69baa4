/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The analysis core's one reading loop (DESIGN.md §2): records from a
 * source, put in time order, drive the request correlator, the engine-group
 * timeline and any number of record consumers (flame's stack data, ...).
 * Each request, once over, waits a grace period for late records (GPU
 * timings flushed in batches, ACKs, engine events), is joined to its engine
 * request, attributed, and handed to the request sinks; then it is gone,
 * and the timeline forgets what no later request can ask for. Memory holds
 * per request in flight, not per request seen.
 *
 * A source is a capture file (ls_analysis_run) or anything that pushes
 * records as they come, in the order a ring buffer hands them over
 * (ls_analysis_begin/push/end): live mode is offline mode fed record by
 * record, and gives the same result.
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

/* Sees every request once, attributed, in the order requests end (their
 * last byte acknowledged, or their connection closed). The pointers are
 * valid during the call only; the timeline holds the request's window. */
struct ls_request_sink {
	void (*request)(void *ctx, const struct ls_request *r, const struct ls_split *s,
			const struct ls_engine_join *j, const struct ls_timeline *tl);
	void *ctx;
};

struct ls_analysis {
	struct ls_reader *rd;        /* ls_analysis_run: open, for header and loss accounting */
	struct ls_timeline *tl;
	struct ls_corr_stats cst;    /* at the end */
	size_t n;                    /* requests handed to the sinks */
	size_t clipped;              /* of them, longer than the timeline kept (see .c) */
	__u64 drops, stack_errors, first_ts, last_ts;
	struct ls_verdict_acc vacc;
	/* the reading loop's state */
	struct ls_order *ord;
	struct ls_corr *corr;
	const struct ls_consumer *consumers;
	size_t nconsumers;
	const struct ls_request_sink *sinks;
	size_t nsinks;
	struct ls_request *pend; /* over, waiting out the grace period (FIFO) */
	size_t p0, np, cappend;
	uint64_t now; /* the newest record's time */
	uint64_t next_batch, retired_to;
	uint64_t engine_finished; /* engine events: requests the engine says it finished */
};

/* Push mode. track_all: the capture header's (it defines the engine group).
 * 0, or -1 with a one-line reason in err. */
int ls_analysis_begin(struct ls_analysis *a, bool track_all, const struct ls_consumer *consumers,
		      size_t nconsumers, const struct ls_request_sink *sinks, size_t nsinks,
		      char *err, size_t len);
/* One record, in the order the source has it. 0 or -1 (out of memory). */
int ls_analysis_push(struct ls_analysis *a, const struct ls_hdr *rec);
/* A live source's clock (CLOCK_MONOTONIC now): records older than the
 * ordering window will not come, so what waits on them may go on when the
 * host is quiet. Never called on a file (it has no clock). */
int ls_analysis_advance(struct ls_analysis *a, uint64_t now);
/* Requests begun and not over yet (not counting those over and waiting
 * out the grace period). */
size_t ls_analysis_in_flight(const struct ls_analysis *a);
/* No more records: drains the ordering window and every request left. */
int ls_analysis_end(struct ls_analysis *a, char *err, size_t len);

/* The whole of a capture file. 0, or -1 with a one-line reason in err. */
int ls_analysis_run(struct ls_analysis *a, const char *path, const struct ls_consumer *consumers,
		    size_t nconsumers, const struct ls_request_sink *sinks, size_t nsinks,
		    char *err, size_t len);
/* The same, with the timeline's spans told to `spans` as they are seen. */
int ls_analysis_run_spans(struct ls_analysis *a, const char *path,
			  const struct ls_consumer *consumers, size_t nconsumers,
			  const struct ls_request_sink *sinks, size_t nsinks,
			  const struct ls_span_sink *spans, char *err, size_t len);
/* The verdict over every request of a finished analysis. */
void ls_analysis_verdict(struct ls_analysis *a, bool ttft, struct ls_verdict *v);
/* After the end: when no request could be split (none seen, or every one
 * partial or unparsed), the reason in one line, and true. sources: the
 * capture header's. */
bool ls_analysis_why_empty(const struct ls_analysis *a, uint32_t sources, char *buf, size_t len);
void ls_analysis_free(struct ls_analysis *a);

#endif
