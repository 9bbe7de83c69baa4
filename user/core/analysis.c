// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The analysis core's reading loop (see analysis.h).
 *
 * Times are the records' own (CLOCK_MONOTONIC), never the wall clock, so a
 * file and a live ring give the same result:
 * - a request the correlator emits waits until the newest record is
 *   GRACE_NS past its last mark (GPU records come in batches, ~100 ms late
 *   from CUPTI; engine `finished` may follow the response), OTLP_GRACE_NS
 *   in a capture that receives engine spans (an OpenTelemetry SDK's batch
 *   processor sends them every 5 s by default);
 * - waiting requests are attributed in batches, at most every BATCH_NS;
 * - the timeline keeps spans back to LOOKBACK_NS before the earliest instant
 *   a request not yet attributed may start at, but never more than KEEP_NS
 *   behind the newest record: a request longer than that is attributed with
 *   what is kept, and counted (clipped);
 * - a request delivered (the correlator says so before it is over) is
 *   attributed provisionally at the next batch, with what is known then,
 *   for the sinks that want it (live views).
 */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis.h"
#include "grow.h"

#define REORDER_WINDOW_NS 2000000000ull
#define LIVE_WINDOW_NS 500000000ull
#define GRACE_NS 2000000000ull
#define OTLP_GRACE_NS 8000000000ull
#define BATCH_NS 250000000ull
#define LOOKBACK_NS 1000000000ull
#define KEEP_NS 120000000000ull

static uint64_t grace(const struct ls_analysis *a)
{
	return a->hdr.sources & LS_SRC_OTLP_RECV ? OTLP_GRACE_NS : GRACE_NS;
}

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

static void served_add(struct ls_analysis *a, const struct ls_request *r);

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
	served_add(a, r);
	if (!a->pid0)
		a->pid0 = r->pid;
	a->pids_many |= r->pid != a->pid0; /* hops need two processes */
	ls_timeline_note_pid(a->tl, r->pid);
}

/* ---- the application's own queue (DESIGN §11, engines without patches) ----
 * A process that serves one request at a time (its requests' serving
 * windows [T_first, T_out] on different connections never overlap): a
 * request read while it served others waited in its queue until the last
 * of those ended before its own first byte. The rule cannot see a
 * multi-slot server's partial concurrency: a process seen serving two
 * connections at once is never given an application queue. */
#define SERVED_RING 4096
#define SERVED_SLACK_NS 10000000000ull /* the ring is in emission order, roughly by T_out */

static bool multi_slot(const struct ls_analysis *a, uint32_t pid)
{
	for (size_t i = 0; i < a->nmulti; i++)
		if (a->multi[i] == pid)
			return true;
	return false;
}

static void set_multi(struct ls_analysis *a, uint32_t pid)
{
	if (a->nmulti < 4096 && !multi_slot(a, pid)) {
		GROW(a->multi, a->nmulti, a->capmulti);
		a->multi[a->nmulti++] = pid;
	}
}

/* The newest k-th served window (k < the ring's fill). */
static const struct ls_served *served_at(const struct ls_analysis *a, size_t k)
{
	return &a->served[(a->nserved - 1 - k) % SERVED_RING];
}

static size_t served_fill(const struct ls_analysis *a)
{
	return a->nserved < SERVED_RING ? a->nserved : SERVED_RING;
}

/* Does r's serving window overlap another connection's of its process? */
static bool serves_at_once(const struct ls_analysis *a, const struct ls_request *r)
{
	for (size_t k = 0; k < served_fill(a); k++) {
		const struct ls_served *q = served_at(a, k);
		if (q->out + SERVED_SLACK_NS < r->t_first)
			break;
		if (q->pid == r->pid && q->conn != r->conn_id && q->first < r->t_out && r->t_first < q->out)
			return true;
	}
	return false;
}

static void served_add(struct ls_analysis *a, const struct ls_request *r)
{
	if (!r->t_first || r->t_out <= r->t_first)
		return;
	if (!a->served && !(a->served = calloc(SERVED_RING, sizeof(*a->served))))
		return;
	if (!multi_slot(a, r->pid) && serves_at_once(a, r))
		set_multi(a, r->pid);
	a->served[a->nserved++ % SERVED_RING] =
		(struct ls_served){r->pid, r->conn_id, r->t_first, r->t_out};
}

/* When r's process's slot freed for it: the end of the last other
 * connection's serving window between r's read and its first byte; 0 when
 * an engine source exists, the process serves several at once, or none
 * was served in between. */
static uint64_t app_slot(const struct ls_analysis *a, const struct ls_request *r,
			 const struct ls_engine_join *j)
{
	uint64_t slot = 0;

	if ((j->joined && j->t_sched) || !a->served || !r->t_read || r->t_first <= r->t_read ||
	    ls_timeline_has_gpu(a->tl) || multi_slot(a, r->pid))
		return 0;
	if (r->t_out > r->t_first && serves_at_once(a, r))
		return 0;
	for (size_t k = 0; k < served_fill(a); k++) {
		const struct ls_served *q = served_at(a, k);
		if (q->out + SERVED_SLACK_NS < r->t_read)
			break;
		if (q->pid == r->pid && q->conn != r->conn_id && q->out > r->t_read && q->out < r->t_first &&
		    q->out > slot)
			slot = q->out;
	}
	return slot;
}

static bool hop_id(const struct ls_request *o, const struct ls_request *i);

/* An inner hop delivered after its proxy's request was over: that request
 * waits out its grace period. */
static bool outer_waiting(const struct ls_analysis *a, const struct ls_request *r)
{
	for (size_t j = a->p0; a->pids_many && j < a->np; j++) {
		const struct ls_request *o = &a->pend[j];
		if (o->pid != r->pid && o->t_read && o->t_read <= r->t_read &&
		    (hop_id(o, r) ||
		     (r->peer_pid == o->pid && (!r->peer_conn || r->peer_conn == o->conn_id))))
			return true;
	}
	return false;
}

/* A delivered request: a copy of its own (the correlator's goes on). */
static void collect_delivered(void *ctx, const struct ls_request *r)
{
	struct ls_analysis *a = ctx;
	struct ls_request *c;

	if (ls_corr_open_hop(a->corr, r, false) || outer_waiting(a, r))
		return; /* an inner hop: its proxy's request is the client's record */
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

/* Hops (DESIGN §11). A proxy's request o and the request i it forwarded
 * to a traced server come from two processes, and i lies inside o: it
 * began after o did, after o was read (1 ms slack: T_start of a new
 * connection is estimated), and was over before o was (the same slack).
 * They are paired by X-Request-Id (or the traceparent's trace id), else by
 * the connection: i came in on o's process's upstream connection (the
 * proxy may set an id of its own, or none), see hop_by_conn. */
#define HOP_SLACK_NS 1000000ull

static bool hop_id(const struct ls_request *o, const struct ls_request *i)
{
	return (i->x_request_id[0] && !strcmp(o->x_request_id, i->x_request_id)) ||
	       (ls_trace_id(i) && ls_trace_id(o) && !strncmp(ls_trace_id(o), ls_trace_id(i), 32));
}

static bool hop_inside(const struct ls_request *o, const struct ls_request *i)
{
	uint64_t oend = ls_request_end(o), iend = ls_request_end(i);

	return o->pid != i->pid && o->t_read && i->t_start && o->t_start < i->t_start &&
	       o->t_read <= i->t_start + HOP_SLACK_NS && oend && iend && iend <= oend + HOP_SLACK_NS;
}

static struct ls_hop *hop_find(struct ls_analysis *a, uint64_t outer_id)
{
	for (size_t h = 0; h < a->nhops; h++)
		if (a->hops[h].outer_id == outer_id)
			return &a->hops[h];
	return NULL;
}

static void hop_drop(struct ls_analysis *a, struct ls_hop *h)
{
	*h = a->hops[--a->nhops];
}

static uint64_t absdiff(uint64_t a, uint64_t b)
{
	return a > b ? a - b : b - a;
}

/* The waiting requests indexed for pairing, so a batch costs O(n log n),
 * not O(k n): by X-Request-Id, by the traceparent's trace id (hashed:
 * every hit is checked whole), by connection, and by the proxy connection
 * an inner hop names (peer_conn). Entries sort by key, then pend order. */
enum { IX_ID, IX_TRACE, IX_CONN, IX_PEER, IX_N };
struct hop_ix {
	uint64_t key;
	size_t j; /* from p0 */
};
struct hop_index {
	struct hop_ix *v[IX_N];
	size_t n[IX_N];
};

static uint64_t fnv(const char *s, size_t n)
{
	uint64_t h = 1469598103934665603ull;

	for (size_t i = 0; i < n && s[i]; i++)
		h = (h ^ (uint8_t)s[i]) * 1099511628211ull;
	return h | 1; /* never 0: 0 is "no key" */
}

static uint64_t ix_key(const struct ls_request *r, int kind)
{
	switch (kind) {
	case IX_ID:
		return r->x_request_id[0] ? fnv(r->x_request_id, sizeof(r->x_request_id)) : 0;
	case IX_TRACE:
		return ls_trace_id(r) ? fnv(ls_trace_id(r), 32) : 0;
	case IX_CONN:
		return r->conn_id;
	default:
		return r->peer_conn;
	}
}

static int ix_cmp(const void *x, const void *y)
{
	const struct hop_ix *a = x, *b = y;

	if (a->key != b->key)
		return a->key < b->key ? -1 : 1;
	return (a->j > b->j) - (a->j < b->j);
}

static void index_build(const struct ls_analysis *a, struct hop_index *ix)
{
	size_t n = a->np - a->p0;

	for (int kind = 0; kind < IX_N; kind++) {
		ix->n[kind] = 0;
		if (!(ix->v[kind] = malloc((n ? n : 1) * sizeof(struct hop_ix))))
			abort();
		for (size_t j = 0; j < n; j++) {
			uint64_t key = ix_key(&a->pend[a->p0 + j], kind);
			if (key)
				ix->v[kind][ix->n[kind]++] = (struct hop_ix){key, j};
		}
		qsort(ix->v[kind], ix->n[kind], sizeof(struct hop_ix), ix_cmp);
	}
}

static void index_free(struct hop_index *ix)
{
	for (int kind = 0; kind < IX_N; kind++)
		free(ix->v[kind]);
}

/* The entries of key (none for key 0): [*lo, return). */
static size_t index_range(const struct hop_index *ix, int kind, uint64_t key, size_t *lo)
{
	const struct hop_ix *v = ix->v[kind];
	size_t l = 0, h = ix->n[kind];

	while (l < h) {
		size_t m = (l + h) / 2;
		if (v[m].key < key)
			l = m + 1;
		else
			h = m;
	}
	*lo = l;
	if (!key)
		return l;
	while (h < ix->n[kind] && v[h].key == key)
		h++;
	return h;
}

/* Pairing by the connection: among the requests of the process whose
 * upstream connection request i (of pend[p0]) came in on, on the
 * connection it passed i's response on to (when the capture tells), the
 * one whose read and end lie nearest i's start and end. */
static size_t hop_by_conn(struct ls_analysis *a, const struct hop_index *ix, size_t i,
			  const bool *taken)
{
	const struct ls_request *r = &a->pend[a->p0 + i];
	size_t best = SIZE_MAX, n = a->np - a->p0, lo = 0, hi = n;
	uint64_t best_d = UINT64_MAX, iend = ls_request_end(r);

	if (r->peer_conn) /* only that connection's requests */
		hi = index_range(ix, IX_CONN, r->peer_conn, &lo);
	for (size_t x = lo; x < hi; x++) {
		size_t j = r->peer_conn ? ix->v[IX_CONN][x].j : x;
		const struct ls_request *o = &a->pend[a->p0 + j];
		if (j == i || taken[j] || o->pid != r->peer_pid || !hop_inside(o, r) ||
		    hop_find(a, o->id))
			continue;
		uint64_t d = absdiff(o->t_read, r->t_start) + absdiff(ls_request_end(o), iend);
		if (d < best_d) {
			best_d = d;
			best = j;
		}
	}
	return best;
}

/* For each of the k requests from pend[p0], the pend index of the proxy's
 * request it is the inner hop of, or SIZE_MAX. */
static void hop_pairs(struct ls_analysis *a, const struct hop_index *ix, size_t k, size_t *outer)
{
	size_t n = a->np - a->p0;
	bool *taken = calloc(n ? n : 1, 1);

	if (!taken)
		abort();
	for (size_t i = 0; i < k; i++) {
		const struct ls_request *r = &a->pend[a->p0 + i], *o;
		size_t best = SIZE_MAX;
		outer[i] = SIZE_MAX;
		if (!a->pids_many || taken[i])
			continue; /* one process served every request: no hop */
		/* by id: the first in pend order, of either key's entries */
		for (int kind = IX_ID; kind <= IX_TRACE; kind++) {
			size_t lo, hi = index_range(ix, kind, ix_key(r, kind), &lo);
			for (size_t x = lo; x < hi && ix->v[kind][x].j < best; x++) {
				size_t j = ix->v[kind][x].j;
				if (j != i && !taken[j] && hop_id(o = &a->pend[a->p0 + j], r) &&
				    hop_inside(o, r) && !hop_find(a, o->id))
					best = j;
			}
		}
		if (best == SIZE_MAX && r->peer_pid)
			best = hop_by_conn(a, ix, i, taken);
		if (best != SIZE_MAX) {
			taken[best] = true;
			outer[i] = a->p0 + best;
		}
	}
	free(taken);
}

/* A proxy's request waits for its inner hop: the batch (the first k
 * waiting requests) ends before the first request that is the outer hop of
 * one waiting behind the batch (its grace not over: an ACK the proxy
 * delayed may end it after the proxy's own), or of one the correlator still
 * has open; at most HOP_HOLD_NS past its own grace. */
#define HOP_HOLD_NS 10000000000ull

static size_t hop_hold(struct ls_analysis *a, size_t k)
{
	struct hop_index ix;
	size_t n = a->np - a->p0, hold = k;
	bool behind = k < n; /* requests wait behind the batch */

	if (!a->pids_many)
		return k;
	if (behind)
		index_build(a, &ix);
	for (size_t i = 0; i < k && hold == k; i++) {
		const struct ls_request *o = &a->pend[a->p0 + i];
		if (last_mark(o) + grace(a) + HOP_HOLD_NS <= a->now)
			continue;
		if (ls_corr_open_hop(a->corr, o, true)) {
			hold = i;
			break;
		}
		if (!behind)
			continue;
		/* an inner hop behind the batch: same id, or it names o's
		 * connection (an inner hop that names none pairs by time) */
		for (int kind = IX_ID; kind <= IX_PEER && hold == k; kind++) {
			uint64_t key = kind == IX_PEER ? o->conn_id : ix_key(o, kind);
			size_t lo, hi;
			if (kind == IX_CONN)
				continue;
			hi = index_range(&ix, kind, key, &lo);
			for (size_t x = lo; x < hi; x++) {
				const struct ls_request *r = &a->pend[a->p0 + ix.v[kind][x].j];
				if (ix.v[kind][x].j >= k && hop_inside(o, r) &&
				    (kind == IX_PEER ? r->peer_pid == o->pid : hop_id(o, r))) {
					hold = i;
					break;
				}
			}
		}
	}
	if (behind)
		index_free(&ix);
	return hold;
}

/* Hands k attributed requests to the sinks (provisional ones only to
 * those that want them). outer: see hop_pairs, NULL for none: an inner
 * hop is attributed and kept for its proxy's request, which is told as
 * the client's one record. */
static void tell(struct ls_analysis *a, const struct ls_request *b, size_t k,
		 const struct ls_engine_join *join, const size_t *outer, bool final)
{
	for (size_t i = 0; outer && i < k; i++) {
		if (outer[i] == SIZE_MAX)
			continue;
		struct ls_hop h = {.outer_id = a->pend[outer[i]].id, .r = b[i], .j = join[i]};
		struct ls_hop *inner = hop_find(a, b[i].id); /* a chain of proxies */
		ls_request_detach(&h.r);
		h.j.t_slot = app_slot(a, &b[i], &join[i]);
		ls_attribute(&b[i], a->tl, &h.j, &h.s);
		if (inner) {
			ls_split_hop(&h.s, &b[i], &inner->r, &inner->s);
			h.j = inner->j;
			hop_drop(a, inner);
		}
		GROW(a->hops, a->nhops, a->caphops);
		a->hops[a->nhops++] = h;
	}
	for (size_t i = 0; i < k; i++) {
		struct ls_split s;
		struct ls_phases ph;
		struct ls_hop *hop = outer ? hop_find(a, b[i].id) : NULL;
		struct ls_engine_join jj = join[i];
		struct ls_request_view v = {&b[i], &s, &jj, a->tl, &ph, a->now, final, NULL};
		uint64_t t0 = first_mark(&b[i]);

		if (outer && outer[i] != SIZE_MAX)
			continue;
		jj.t_slot = app_slot(a, &b[i], &jj);
		ls_attribute(&b[i], a->tl, &jj, &s);
		if (hop) {
			ls_split_hop(&s, &b[i], &hop->r, &hop->s);
			v.j = &hop->j;
			v.inner = &hop->r;
			a->hops_joined++;
		}
		ls_phases_of(&b[i], &s, &ph);
		if (final) {
			a->clipped += t0 && t0 < a->retired_to;
			ls_verdict_acc_add(&a->vacc, &b[i], &s, v.j);
			a->n++;
		}
		for (size_t j = 0; j < a->nsinks && !a->failed; j++)
			if (a->sinks[j].request && (final || a->sinks[j].provisional))
				sink_rc(a, &a->sinks[j], a->sinks[j].request(a->sinks[j].ctx, &v));
		if (hop)
			hop_drop(a, hop);
	}
}

/* The engine's requests go to the hop that read them: the batch's proxy
 * requests (the outer hop of one here, or of one held) join last. */
static void join_hops_last(struct ls_analysis *a, struct ls_request *b, size_t k,
			   const size_t *outer, struct ls_engine_join *join)
{
	size_t *ix = malloc(k * sizeof(*ix)), n = 0;
	struct ls_request *tmp = malloc(k * sizeof(*tmp));
	struct ls_engine_join *jt = calloc(k, sizeof(*jt));
	bool *is_outer = calloc(k, 1);

	if (!ix || !tmp || !jt || !is_outer)
		abort();
	for (size_t i = 0; i < k; i++) {
		if (outer[i] != SIZE_MAX && outer[i] < a->p0 + k)
			is_outer[outer[i] - a->p0] = true;
		is_outer[i] |= hop_find(a, b[i].id) != NULL;
	}
	for (int pass = 0; pass < 2; pass++) {
		size_t from = n;
		for (size_t i = 0; i < k; i++)
			if (is_outer[i] == (pass == 1)) {
				ix[n] = i;
				tmp[n++] = b[i];
			}
		if (n > from)
			ls_timeline_join(a->tl, tmp + from, n - from, jt + from);
	}
	for (size_t x = 0; x < k; x++)
		join[ix[x]] = jt[x];
	free(is_outer);
	free(jt);
	free(tmp);
	free(ix);
}

/* Attributes the first k waiting requests and hands them to the sinks. */
static void attribute_batch(struct ls_analysis *a, size_t k)
{
	struct ls_request *b = a->pend + a->p0;
	struct ls_engine_join *join = calloc(k, sizeof(*join));
	size_t *outer = NULL;

	if (!join)
		abort();
	ls_timeline_build(a->tl);
	if (a->pids_many) { /* hops need two processes */
		struct hop_index ix;
		if (!(outer = malloc(k * sizeof(*outer))))
			abort();
		index_build(a, &ix);
		hop_pairs(a, &ix, k, outer);
		index_free(&ix);
		join_hops_last(a, b, k, outer, join);
	} else {
		ls_timeline_join(a->tl, b, k, join);
	}
	tell(a, b, k, join, outer, true);
	for (size_t i = 0; i < k; i++)
		ls_request_release(&b[i]);
	a->p0 += k;
	free(outer);
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
	tell(a, a->prov, a->nprov, join, NULL, false);
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
	while (a->p0 + k < a->np && (end || last_mark(&a->pend[a->p0 + k]) + grace(a) <= now))
		k++;
	if (!end)
		k = hop_hold(a, k);
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
	if (rec->type == LS_REC_PROBE_SKIPS && rec->size >= sizeof(struct ls_rec_probe_skips)) {
		const struct ls_rec_probe_skips *s = (const void *)rec;

		a->probe_skips = s->total;
		a->probe_skips_top_n = s->top_n;
		/* a program's name: [A-Za-z0-9_], anything else shown as '?' */
		for (size_t i = 0; i < sizeof(s->top) && i + 1 < sizeof(a->probe_skips_top); i++) {
			char c = s->top[i];

			a->probe_skips_top[i] = c;
			a->probe_skips_top[i + 1] = '\0';
			if (!c)
				break;
			if (!isalnum((unsigned char)c) && c != '_')
				a->probe_skips_top[i] = '?';
		}
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
	ls_cpuwork_add(&a->cpuwork, rec, a->tl);
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

void ls_analysis_floor(struct ls_analysis *a, uint64_t floor)
{
	if (a->ord)
		ls_order_floor(a->ord, floor);
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
	while ((more = ls_reader_next(a->rd, &rec)) == 1) {
		ls_analysis_floor(a, ls_reader_floor(a->rd));
		if (ls_analysis_push(a, rec)) {
			snprintf(err, len, "%s", ls_analysis_error(a));
			ls_analysis_free(a);
			return -1;
		}
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
	ls_timeline_span_counts(a->tl, &v->spans, &v->spans_unjoined);
	v->probe_skips = a->probe_skips;
	v->cpu_compute_share = ls_cpuwork_share(&a->cpuwork, v->cpu_compute_frame,
						sizeof(v->cpu_compute_frame));
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
	free(a->served);
	free(a->multi);
	for (size_t i = 0; i < a->nprov; i++)
		ls_request_release(&a->prov[i]);
	free(a->prov);
	free(a->hops);
	ls_corr_free(a->corr);
	ls_order_free(a->ord);
	ls_timeline_free(a->tl);
	ls_verdict_acc_free(&a->vacc);
	ls_cpuwork_free(&a->cpuwork);
	ls_reader_close(a->rd);
	memset(a, 0, sizeof(*a));
}
