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
 *   what is kept, and counted (clipped);
 * - a request delivered (the correlator says so before it is over) is
 *   attributed provisionally at the next batch, with what is known then,
 *   for the sinks that want it (live views).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis.h"
#include "grow.h"

#define REORDER_WINDOW_NS 2000000000ull
#define LIVE_WINDOW_NS 500000000ull
#define GRACE_NS 2000000000ull
#define BATCH_NS 250000000ull
#define LOOKBACK_NS 1000000000ull
#define KEEP_NS 120000000000ull

/* A sink's error stops the analysis: the first is kept. */
static void sink_rc(struct ls_analysis *a, const struct ls_sink *k, int rc)
{
	if (rc >= 0 || a->failed)
		return;
	const char *why = k->error ? k->error(k->ctx) : NULL;

	a->failed = rc;
	if (why)
		snprintf(a->why, sizeof(a->why), "%s", why);
	else
		snprintf(a->why, sizeof(a->why), "%s: %s", k->name ? k->name : "output", strerror(-rc));
}

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

/* A delivered request: a copy of its own (the correlator's goes on). */
static void collect_delivered(void *ctx, const struct ls_request *r)
{
	struct ls_analysis *a = ctx;
	struct ls_request *c;

	GROW(a->prov, a->nprov, a->capprov);
	c = &a->prov[a->nprov];
	*c = *r;
	ls_request_detach(c);
	if (r->ntok && (c->tok = malloc(r->ntok * sizeof(*r->tok)))) {
		memcpy(c->tok, r->tok, r->ntok * sizeof(*r->tok));
		c->ntok = c->captok = r->ntok;
	}
	if (r->nblocked && (c->blocked = malloc(r->nblocked * sizeof(*r->blocked)))) {
		memcpy(c->blocked, r->blocked, r->nblocked * sizeof(*r->blocked));
		c->nblocked = c->capblocked = r->nblocked;
	}
	a->nprov++;
}

static void span_fanout(void *ctx, enum ls_span_kind kind, uint32_t tgid, uint32_t tid, uint64_t b,
		       uint64_t e, const struct ls_hdr *rec)
{
	struct ls_analysis *a = ctx;

	for (size_t i = 0; i < a->nsinks && !a->failed; i++)
		if (a->sinks[i].span)
			sink_rc(a, &a->sinks[i],
				a->sinks[i].span(a->sinks[i].ctx, kind, tgid, tid, b, e, rec));
}

int ls_analysis_begin(struct ls_analysis *a, const struct ls_file_hdr *h,
		      const struct ls_sink *sinks, size_t nsinks, char *err, size_t len)
{
	struct ls_reader *rd = a->rd; /* kept: ls_analysis_run opened it */

	memset(a, 0, sizeof(*a));
	a->rd = rd;
	a->hdr = *h;
	a->sinks = sinks;
	a->nsinks = nsinks;
	a->ord = ls_order_new(REORDER_WINDOW_NS);
	a->corr = ls_corr_new(collect, a);
	a->tl = ls_timeline_new(h->track_all);
	if (!a->ord || !a->corr || !a->tl) {
		snprintf(err, len, "out of memory");
		ls_analysis_free(a);
		return -1;
	}
	for (size_t i = 0; i < nsinks; i++) {
		a->provisional |= sinks[i].provisional && sinks[i].request;
		a->spans |= sinks[i].span != NULL;
	}
	if (a->provisional)
		ls_corr_on_delivered(a->corr, collect_delivered);
	if (a->spans) {
		a->span_sink = (struct ls_span_sink){span_fanout, a};
		ls_timeline_set_span_sink(a->tl, &a->span_sink);
	}
	for (size_t i = 0; i < nsinks && !a->failed; i++)
		if (sinks[i].begin)
			sink_rc(a, &sinks[i], sinks[i].begin(sinks[i].ctx, h));
	if (a->failed) {
		snprintf(err, len, "%s", a->why);
		ls_analysis_free(a);
		return -1;
	}
	return 0;
}

void ls_analysis_live(struct ls_analysis *a)
{
	struct ls_order *o = ls_order_new(LIVE_WINDOW_NS);

	if (o) {
		ls_order_free(a->ord);
		a->ord = o;
		a->window_ns = LIVE_WINDOW_NS;
	}
}

const char *ls_analysis_error(const struct ls_analysis *a)
{
	return a->failed ? a->why : "out of memory";
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

/* Hands k attributed requests to the sinks (provisional ones only to
 * those that want them). */
static void tell(struct ls_analysis *a, const struct ls_request *b, size_t k,
		 const struct ls_engine_join *join, bool final)
{
	for (size_t i = 0; i < k; i++) {
		struct ls_split s;
		struct ls_phases ph;
		struct ls_request_view v = {&b[i], &s, &join[i], a->tl, &ph, a->now, final};
		uint64_t t0 = first_mark(&b[i]);

		ls_attribute(&b[i], a->tl, &join[i], &s);
		ls_phases_of(&b[i], &s, &ph);
		if (final) {
			a->clipped += t0 && t0 < a->retired_to;
			ls_verdict_acc_add(&a->vacc, &b[i], &s, &join[i]);
			a->n++;
		}
		for (size_t j = 0; j < a->nsinks && !a->failed; j++)
			if (a->sinks[j].request && (final || a->sinks[j].provisional))
				sink_rc(a, &a->sinks[j], a->sinks[j].request(a->sinks[j].ctx, &v));
	}
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
	tell(a, b, k, join, true);
	for (size_t i = 0; i < k; i++)
		ls_request_release(&b[i]);
	a->p0 += k;
	free(join);
}

/* The delivered requests, provisionally (engine requests peeked, not
 * claimed: the final join decides). */
static void attribute_delivered(struct ls_analysis *a)
{
	struct ls_engine_join *join = calloc(a->nprov, sizeof(*join));

	if (!join)
		abort();
	ls_timeline_build(a->tl);
	ls_timeline_join_peek(a->tl, a->prov, a->nprov, join);
	tell(a, a->prov, a->nprov, join, false);
	for (size_t i = 0; i < a->nprov; i++)
		ls_request_release(&a->prov[i]);
	a->nprov = 0;
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
	if (a->nprov && !end)
		attribute_delivered(a);
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
	for (size_t i = 0; i < a->nsinks && !a->failed; i++)
		if (a->sinks[i].record)
			sink_rc(a, &a->sinks[i], a->sinks[i].record(a->sinks[i].ctx, rec));
	step(a, false);
}

int ls_analysis_push(struct ls_analysis *a, const struct ls_hdr *rec)
{
	if (a->failed || ls_order_push(a->ord, rec))
		return -1;
	while ((rec = ls_order_pop(a->ord, false)))
		dispatch(a, rec);
	return a->failed ? -1 : 0;
}

int ls_analysis_advance(struct ls_analysis *a, uint64_t now)
{
	const struct ls_hdr *rec;
	uint64_t w = a->window_ns ? a->window_ns : REORDER_WINDOW_NS;
	uint64_t t = now > w ? now - w : 0;

	if (!a->ord || a->failed)
		return a->failed ? -1 : 0;
	ls_order_advance(a->ord, now);
	while ((rec = ls_order_pop(a->ord, false)))
		dispatch(a, rec);
	if (t > a->now)
		a->now = t;
	step(a, false);
	return a->failed ? -1 : 0;
}

size_t ls_analysis_in_flight(const struct ls_analysis *a)
{
	return a->corr ? ls_corr_open_requests(a->corr) : 0;
}

int ls_analysis_end(struct ls_analysis *a, char *err, size_t len)
{
	const struct ls_hdr *rec;

	if (!a->failed) {
		while ((rec = ls_order_pop(a->ord, true)))
			dispatch(a, rec);
		ls_corr_finish(a->corr);
		a->cst = *ls_corr_stats(a->corr);
	}
	ls_corr_free(a->corr);
	a->corr = NULL;
	a->late = ls_order_late(a->ord);
	ls_order_free(a->ord);
	a->ord = NULL;
	if (a->nprov && !a->failed) /* told before their final splits */
		attribute_delivered(a);
	if (!a->failed)
		step(a, true);
	ls_timeline_close(a->tl);
	for (size_t i = 0; i < a->nsinks && !a->failed; i++)
		if (a->sinks[i].end)
			sink_rc(a, &a->sinks[i], a->sinks[i].end(a->sinks[i].ctx, a));
	if (a->failed) {
		snprintf(err, len, "%s", a->why);
		return -1;
	}
	return 0;
}

int ls_analysis_run(struct ls_analysis *a, const char *path, const struct ls_sink *sinks,
		    size_t nsinks, char *err, size_t len)
{
	const struct ls_hdr *rec;
	int more;

	memset(a, 0, sizeof(*a));
	if (ls_reader_open(&a->rd, path, err, len) < 0)
		return -1;
	if (ls_analysis_begin(a, ls_reader_header(a->rd), sinks, nsinks, err, len))
		goto fail;
	while ((more = ls_reader_next(a->rd, &rec)) == 1)
		if (ls_analysis_push(a, rec)) {
			snprintf(err, len, "%s", ls_analysis_error(a));
			ls_analysis_free(a);
			return -1;
		}
	if (ls_analysis_end(a, err, len)) {
		ls_analysis_free(a);
		return -1;
	}
	return 0;
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
	else if (!cst->conns_http && cst->conns_upstream && !cst->conns_opaque)
		snprintf(buf, len, "the tracked processes only sent requests (%llu upstream connections): "
			 "they are clients or proxies here; track the server's port (--port) or pid (-p)",
			 (unsigned long long)cst->conns_upstream);
	else if (!cst->conns_http && cst->conns_opaque)
		snprintf(buf, len, "%llu connections carried neither plaintext HTTP/1.1 nor cleartext "
			 "HTTP/2 (TLS or another protocol): latsplit rebuilds those only",
			 (unsigned long long)cst->conns_opaque);
	else if (!cst->conns_http)
		snprintf(buf, len, "%llu connections seen, but no HTTP request was read on them by a "
			 "tracked process", (unsigned long long)cst->conns);
	else if (cst->requests_unparsed)
		snprintf(buf, len, "%llu requests seen, none parsed whole (%llu unparsed: %s)",
			 (unsigned long long)cst->requests, (unsigned long long)cst->requests_unparsed,
			 cst->unparsed_why);
	else if (cst->requests_partial && cst->conns_h2_midflight)
		snprintf(buf, len, "every request seen was partial (no split): %llu HTTP/2 connections "
			 "were met mid-flight, so their header compression state is unknown: record "
			 "before clients connect", (unsigned long long)cst->conns_h2_midflight);
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
	for (size_t i = 0; i < a->nprov; i++)
		ls_request_release(&a->prov[i]);
	free(a->prov);
	ls_corr_free(a->corr);
	ls_order_free(a->ord);
	ls_timeline_free(a->tl);
	ls_verdict_acc_free(&a->vacc);
	ls_reader_close(a->rd);
	memset(a, 0, sizeof(*a));
}
