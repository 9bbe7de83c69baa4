// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The analysis core's reading loop (see analysis.h).
 *
 * Times are the records' own (CLOCK_MONOTONIC), never the wall clock, so a
 * file and a live ring give the same result:
 * - a request the correlator emits waits until the newest record is
 *   GRACE_NS past its last mark (GPU records come in batches, ~100 ms late
 *   from CUPTI; engine `finished` may follow the response);
 * - waiting requests are attributed in batches, at most every BATCH_NS;
 * - the timeline keeps spans back to LOOKBACK_NS before the earliest instant
 *   a request not yet attributed may start at, but never more than KEEP_NS
 *   behind the newest record: a request longer than that is attributed with
 *   what is kept, and counted (clipped).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis.h"
#include "grow.h"

#define REORDER_WINDOW_NS 2000000000ull
#define GRACE_NS 2000000000ull
#define BATCH_NS 250000000ull
#define LOOKBACK_NS 1000000000ull
#define KEEP_NS 120000000000ull

static void collect(void *ctx, const struct ls_request *r)
{
	struct ls_analysis *a = ctx;

	if (a->p0 && a->p0 * 2 >= a->np) { /* compact the FIFO */
		memmove(a->pend, a->pend + a->p0, (a->np - a->p0) * sizeof(*a->pend));
		a->np -= a->p0;
		a->p0 = 0;
	}
	GROW(a->pend, a->np, a->cappend);
	a->pend[a->np++] = *r;
	ls_timeline_note_pid(a->tl, r->pid);
}

int ls_analysis_begin(struct ls_analysis *a, bool track_all, const struct ls_consumer *consumers,
		      size_t nconsumers, const struct ls_request_sink *sinks, size_t nsinks,
		      char *err, size_t len)
{
	struct ls_reader *rd = a->rd; /* kept: ls_analysis_run opened it */

	memset(a, 0, sizeof(*a));
	a->rd = rd;
	a->consumers = consumers;
	a->nconsumers = nconsumers;
	a->sinks = sinks;
	a->nsinks = nsinks;
	a->ord = ls_order_new(REORDER_WINDOW_NS);
	a->corr = ls_corr_new(collect, a);
	a->tl = ls_timeline_new(track_all);
	if (!a->ord || !a->corr || !a->tl) {
		snprintf(err, len, "out of memory");
		ls_analysis_free(a);
		return -1;
	}
	return 0;
}

static uint64_t first_mark(const struct ls_request *r)
{
	const uint64_t m[] = {r->t_start, r->t_in, r->t_read, r->t_first, r->t_out, r->t_end};
	uint64_t t = 0;

	for (size_t i = 0; i < sizeof(m) / sizeof(m[0]); i++)
		if (m[i] && (!t || m[i] < t))
			t = m[i];
	return t;
}

static uint64_t last_mark(const struct ls_request *r)
{
	const uint64_t m[] = {r->t_start, r->t_in, r->t_read, r->t_first, r->t_out, r->t_end};
	uint64_t t = 0;

	for (size_t i = 0; i < sizeof(m) / sizeof(m[0]); i++)
		t = m[i] > t ? m[i] : t;
	return t;
}

/* Attributes the first k waiting requests and hands them to the sinks. */
static void attribute_batch(struct ls_analysis *a, size_t k)
{
	struct ls_request *b = a->pend + a->p0;
	struct ls_engine_join *join = calloc(k, sizeof(*join));

	if (!join)
		abort();
	ls_timeline_build(a->tl);
	ls_timeline_join(a->tl, b, k, join);
	for (size_t i = 0; i < k; i++) {
		struct ls_split s;
		uint64_t t0 = first_mark(&b[i]);

		ls_attribute(&b[i], a->tl, &join[i], &s);
		a->clipped += t0 && t0 < a->retired_to;
		ls_verdict_acc_add(&a->vacc, &b[i], &s, &join[i]);
		for (size_t j = 0; j < a->nsinks; j++)
			a->sinks[j].request(a->sinks[j].ctx, &b[i], &s, &join[i], a->tl);
		ls_request_release(&b[i]);
		a->n++;
	}
	a->p0 += k;
	free(join);
}

/* Every BATCH_NS of record time (and at the end): attribute the requests
 * whose grace period is over, then let go of what no later one needs. */
static void step(struct ls_analysis *a, bool end)
{
	uint64_t now = a->now, h;
	size_t k = 0;

	if (!end && now < a->next_batch)
		return;
	a->next_batch = now + BATCH_NS;
	while (a->p0 + k < a->np && (end || last_mark(&a->pend[a->p0 + k]) + GRACE_NS <= now))
		k++;
	if (k)
		attribute_batch(a, k);
	if (end)
		return;
	h = ls_corr_horizon(a->corr, now);
	for (size_t i = a->p0; i < a->np; i++) {
		uint64_t t = first_mark(&a->pend[i]);
		if (t && t < h)
			h = t;
	}
	ls_verdict_acc_sweep(&a->vacc, h);
	h = h > LOOKBACK_NS ? h - LOOKBACK_NS : 0;
	if (now > KEEP_NS && h < now - KEEP_NS)
		h = now - KEEP_NS;
	if (h > a->retired_to) {
		ls_timeline_retire(a->tl, h);
		a->retired_to = h;
	}
}

/* One record in time order, to every consumer. */
static void dispatch(struct ls_analysis *a, const struct ls_hdr *rec)
{
	if (rec->type == LS_REC_DROPS && rec->size >= sizeof(struct ls_rec_drops)) {
		a->drops = ((const struct ls_rec_drops *)rec)->total;
		a->stack_errors = ((const struct ls_rec_drops *)rec)->stack_errors;
	}
	if (rec->type == LS_EV_ENGINE && rec->size >= sizeof(struct ls_ev_engine) &&
	    ((const struct ls_ev_engine *)rec)->kind == LS_ENG_FINISHED)
		a->engine_finished++;
	if (rec->type < LS_EV_KERNEL_MAX) {
		if (!a->first_ts)
			a->first_ts = rec->ts;
		a->last_ts = rec->ts;
		if (rec->ts > a->now)
			a->now = rec->ts;
	}
	ls_corr_add(a->corr, rec);
	ls_timeline_add(a->tl, rec);
	for (size_t i = 0; i < a->nconsumers; i++)
		a->consumers[i].record(a->consumers[i].ctx, rec);
	step(a, false);
}

int ls_analysis_push(struct ls_analysis *a, const struct ls_hdr *rec)
{
	if (ls_order_push(a->ord, rec))
		return -1;
	while ((rec = ls_order_pop(a->ord, false)))
		dispatch(a, rec);
	return 0;
}

int ls_analysis_advance(struct ls_analysis *a, uint64_t now)
{
	const struct ls_hdr *rec;
	uint64_t t = now > REORDER_WINDOW_NS ? now - REORDER_WINDOW_NS : 0;

	if (!a->ord)
		return 0;
	ls_order_advance(a->ord, now);
	while ((rec = ls_order_pop(a->ord, false)))
		dispatch(a, rec);
	if (t > a->now)
		a->now = t;
	step(a, false);
	return 0;
}

size_t ls_analysis_in_flight(const struct ls_analysis *a)
{
	return a->corr ? ls_corr_open_requests(a->corr) : 0;
}

int ls_analysis_end(struct ls_analysis *a, char *err, size_t len)
{
	const struct ls_hdr *rec;

	(void)err;
	(void)len;
	while ((rec = ls_order_pop(a->ord, true)))
		dispatch(a, rec);
	ls_corr_finish(a->corr);
	a->cst = *ls_corr_stats(a->corr);
	ls_corr_free(a->corr);
	a->corr = NULL;
	ls_order_free(a->ord);
	a->ord = NULL;
	step(a, true);
	ls_timeline_close(a->tl);
	return 0;
}

int ls_analysis_run(struct ls_analysis *a, const char *path, const struct ls_consumer *consumers,
		    size_t nconsumers, const struct ls_request_sink *sinks, size_t nsinks,
		    char *err, size_t len)
{
	return ls_analysis_run_spans(a, path, consumers, nconsumers, sinks, nsinks, NULL, err, len);
}

int ls_analysis_run_spans(struct ls_analysis *a, const char *path,
			  const struct ls_consumer *consumers, size_t nconsumers,
			  const struct ls_request_sink *sinks, size_t nsinks,
			  const struct ls_span_sink *spans, char *err, size_t len)
{
	const struct ls_hdr *rec;
	int more;

	memset(a, 0, sizeof(*a));
	if (ls_reader_open(&a->rd, path, err, len) < 0)
		return -1;
	if (ls_analysis_begin(a, ls_reader_header(a->rd)->track_all, consumers, nconsumers, sinks,
			      nsinks, err, len))
		goto fail;
	if (spans)
		ls_timeline_set_span_sink(a->tl, spans);
	while ((more = ls_reader_next(a->rd, &rec)) == 1)
		if (ls_analysis_push(a, rec))
			goto nomem;
	if (ls_analysis_end(a, err, len))
		goto fail;
	return 0;
nomem:
	snprintf(err, len, "out of memory");
fail: {
	char why[256];
	snprintf(why, sizeof(why), "%s", err);
	snprintf(err, len, "%s: %s", path, why);
	ls_analysis_free(a);
	return -1;
}
}

void ls_analysis_verdict(struct ls_analysis *a, bool ttft, struct ls_verdict *v)
{
	ls_verdict_from_acc(&a->vacc, ttft, ls_timeline_has_gpu(a->tl), ls_timeline_has_sched(a->tl),
			    ls_timeline_has_engine(a->tl), v);
}

bool ls_analysis_why_empty(const struct ls_analysis *a, uint32_t sources, char *buf, size_t len)
{
	const struct ls_corr_stats *cst = &a->cst;

	if (cst->requests > cst->requests_partial + cst->requests_unparsed)
		return false;
	if (!(sources & LS_SRC_SOCK_IO))
		snprintf(buf, len, "no socket I/O in this capture (syscall tracepoints unavailable): "
			 "requests cannot be reconstructed");
	else if (!cst->conns && a->engine_finished)
		snprintf(buf, len, "the engine's own events show %llu requests finished, but no "
			 "connection of a tracked process carried them (a unix socket, or a front end "
			 "not tracked: add its pid with -p or its port with --port)",
			 (unsigned long long)a->engine_finished);
	else if (!cst->conns)
		snprintf(buf, len, "no connection of a tracked process was seen: nothing was served "
			 "on a tracked port while recording (check -p/--port, or record during load)");
	else if (!cst->conns_http && cst->conns_opaque)
		snprintf(buf, len, "%llu connections carried no plaintext HTTP/1.1 (TLS, HTTP/2 or "
			 "another protocol): latsplit rebuilds plaintext HTTP/1.1 only",
			 (unsigned long long)cst->conns_opaque);
	else if (!cst->conns_http)
		snprintf(buf, len, "%llu connections seen, but no HTTP request was read on them by a "
			 "tracked process", (unsigned long long)cst->conns);
	else if (cst->requests_unparsed)
		snprintf(buf, len, "%llu requests seen, none parsed whole (%llu unparsed: %s)",
			 (unsigned long long)cst->requests, (unsigned long long)cst->requests_unparsed,
			 cst->unparsed_why);
	else if (cst->requests_partial)
		snprintf(buf, len, "every request seen began before the capture (partial, no split): "
			 "record longer, or while requests keep arriving");
	else
		snprintf(buf, len, "no HTTP request was completed on a tracked connection while recording");
	return true;
}

void ls_analysis_free(struct ls_analysis *a)
{
	for (size_t i = a->p0; i < a->np; i++)
		ls_request_release(&a->pend[i]);
	free(a->pend);
	ls_corr_free(a->corr);
	ls_order_free(a->ord);
	ls_timeline_free(a->tl);
	ls_verdict_acc_free(&a->vacc);
	ls_reader_close(a->rd);
	memset(a, 0, sizeof(*a));
}
