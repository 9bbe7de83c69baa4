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
#include "cpuwork.h"
#include "verdict.h"

/* One request as the sinks see it. The pointers are valid during the call
 * only; the timeline holds the request's window. final: false for a
 * provisional split, made when the request's delivery is known (to sinks
 * that asked for it), true for the final one after the grace period. */
struct ls_request_view {
	const struct ls_request *r;
	const struct ls_split *s;
	const struct ls_engine_join *j;
	const struct ls_timeline *tl;
	const struct ls_phases *ph;
	uint64_t now; /* the analysis's clock: the newest record's time */
	bool final;
	/* a proxy's request joined to its inner hop (DESIGN §11): r is the
	 * client's (outer) request, inner the one the proxy forwarded to the
	 * traced engine; s and j are the joined record's. NULL: one hop. */
	const struct ls_request *inner;
};

/* An inner hop's request, attributed, waiting for its proxy's request. */
struct ls_hop {
	uint64_t outer_id;
	struct ls_request r; /* detached: marks only */
	struct ls_split s;
	struct ls_engine_join j;
};

struct ls_analysis;

/* A sink (every command is a set of them, in the spirit of perf's
 * perf_tool): each callback may be NULL, and returns 0 or a negative errno;
 * the first failure stops the analysis, which then fails with
 * "NAME: reason". Called in this order: begin (the capture's header), then
 * record (every record once, in time order) and span (what the timeline
 * sees, as it sees it) and request (in the order requests end), then end
 * (the summary and verdict are the analysis's: ls_analysis_verdict,
 * ls_analysis_why_empty). */
struct ls_sink {
	const char *name;
	int (*begin)(void *ctx, const struct ls_file_hdr *h);
	int (*record)(void *ctx, const struct ls_hdr *rec);
	int (*span)(void *ctx, enum ls_span_kind kind, uint32_t tgid, uint32_t tid, uint64_t b,
		    uint64_t e, const struct ls_hdr *rec);
	int (*request)(void *ctx, const struct ls_request_view *v);
	int (*end)(void *ctx, struct ls_analysis *a);
	/* the reason of a failure in words, when the errno does not say it */
	const char *(*error)(void *ctx);
	void *ctx;
	bool provisional; /* also wants provisional requests */
};

struct ls_analysis {
	struct ls_reader *rd;        /* ls_analysis_run: open, for header and loss accounting */
	struct ls_file_hdr hdr;      /* the capture's header (begin's) */
	struct ls_timeline *tl;
	struct ls_corr_stats cst;    /* at the end */
	size_t n;                    /* requests handed to the sinks */
	size_t clipped;              /* of them, longer than the timeline kept (see .c) */
	__u64 drops, stack_errors, first_ts, last_ts;
	__u64 probe_skips, probe_skips_top_n; /* runs the kernel skipped (LS_REC_PROBE_SKIPS) */
	char probe_skips_top[32];
	__u64 late; /* records later than the ordering window (released anyway) */
	struct ls_verdict_acc vacc;
	struct ls_cpuwork cpuwork; /* the group's samples in ggml/BLAS frames */
	/* the reading loop's state */
	struct ls_order *ord;
	struct ls_corr *corr;
	const struct ls_sink *sinks;
	size_t nsinks;
	bool provisional, spans;      /* some sink wants them */
	int failed;                   /* a sink's error (negative errno), 0 */
	char why[256];                /* "NAME: reason" */
	struct ls_request *pend; /* over, waiting out the grace period (FIFO) */
	size_t p0, np, cappend;
	struct ls_request *prov; /* delivered, waiting for the next batch (copies) */
	size_t nprov, capprov;
	struct ls_span_sink span_sink; /* the timeline's, to the sinks' span */
	uint64_t window_ns;            /* the ordering window, when not the file's */
	uint64_t now; /* the newest record's time */
	uint64_t next_batch, retired_to;
	uint64_t engine_finished; /* engine events: requests the engine says it finished */
	struct ls_hop *hops; /* inner hops waiting for their outer request */
	size_t nhops, caphops;
	uint64_t hops_joined; /* client requests that crossed a traced proxy */
	uint32_t pid0;        /* the first request's process */
	bool pids_many;       /* requests of more than one process were seen */
	/* the application-queue rule (DESIGN §11): the newest complete
	 * requests' serving windows [T_first, T_out] (a ring), and the
	 * processes seen serving two connections at once (never single-slot) */
	struct ls_served {
		uint32_t pid;
		uint64_t conn, first, out;
	} *served;
	size_t nserved;
	uint32_t *multi;
	size_t nmulti, capmulti;
};

/* Push mode. h: the capture's header (track_all defines the engine group;
 * sinks' begin sees it). 0, or -1 with a one-line reason in err. */
int ls_analysis_begin(struct ls_analysis *a, const struct ls_file_hdr *h,
		      const struct ls_sink *sinks, size_t nsinks, char *err, size_t len);
/* A live source: records are ordered over a shorter window (a ring hands
 * them over nearly in order; what comes later is released anyway, and
 * counted), so requests reach the sinks sooner. After begin. */
void ls_analysis_live(struct ls_analysis *a);
/* One record, in the order the source has it. 0, or -1 (out of memory, or
 * a sink failed: ls_analysis_error). */
int ls_analysis_push(struct ls_analysis *a, const struct ls_hdr *rec);
/* A file's reader knows it (ls_reader_floor): no record to come is older
 * than floor. Records older go on at once, not a window later: the order
 * is the same, and the reorder buffer holds only what is out of order. */
void ls_analysis_floor(struct ls_analysis *a, uint64_t floor);
/* A live source's clock (CLOCK_MONOTONIC now): records older than the
 * ordering window will not come, so what waits on them may go on when the
 * host is quiet. Never called on a file (it has no clock). */
int ls_analysis_advance(struct ls_analysis *a, uint64_t now);
/* Requests begun and not over yet (not counting those over and waiting
 * out the grace period). */
size_t ls_analysis_in_flight(const struct ls_analysis *a);
/* No more records: drains the ordering window and every request left,
 * then every sink's end. 0, or -1 with the reason in err. */
int ls_analysis_end(struct ls_analysis *a, char *err, size_t len);
/* Why push or advance failed. */
const char *ls_analysis_error(const struct ls_analysis *a);

/* The whole of a capture file, through the sinks. 0, or -1 with a one-line
 * reason in err. */
int ls_analysis_run(struct ls_analysis *a, const char *path, const struct ls_sink *sinks,
		    size_t nsinks, char *err, size_t len);
/* The verdict over every request of a finished analysis. */
void ls_analysis_verdict(struct ls_analysis *a, bool ttft, struct ls_verdict *v);
/* After the end: when no request could be split (none seen, or every one
 * partial or unparsed), the reason in one line, and true. sources: the
 * capture header's. */
bool ls_analysis_why_empty(const struct ls_analysis *a, uint32_t sources, char *buf, size_t len);
void ls_analysis_free(struct ls_analysis *a);

#endif
