// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Attribution: the partition rules of DESIGN.md §6, and nothing else.
 *
 * [T_start, T_end] is cut at the marks, made monotonic (a mark earlier than
 * the one before it is moved up to it; every mark is clipped to T_end):
 *   (before it)       network.connect: the first request on a new connection
 *                     also holds its handshake [T_syn, T_est], a duration
 *                     added to the total; the client's own pause between
 *                     T_est and its first byte (connect_idle_ns) is not
 *   [T_start, T_in]   network.upload
 *   [T_in, T_read]    queueing.socket
 *   [T_read, T_sched] queueing.engine
 *   [T_sched, T_out]  the served window, classified instant by instant
 *   [T_out, T_end]    network.drain
 * Inside [T_in, T_out], instants when the app slept in a write to this
 * socket are network.send_blocked first. The rest of the served window goes,
 * in this precedence, to: compute.kernel, compute.comm (a kernel of the
 * engine group on a GPU), transfer.h2d, transfer.d2h, transfer.other (a copy
 * or memset in flight), host (an engine thread on a CPU), queueing.cpu (an
 * engine thread runnable, waiting for a CPU), else other. Each instant lands
 * in exactly one part, so the parts sum to the total. The TTFT split applies
 * the same cuts to [T_start, T_first].
 *
 * Batching: GPU work of the group counts for every request whose window it
 * overlaps (the latency view: the request waited for the whole step).
 *
 * T_sched: the engine's `scheduled` event when the request joins one
 * (engine: events); else inferred from the GPU timeline (engine: inferred):
 * streaming, where the step that produced the first token began; not
 * streaming, the next step boundary after T_read (see timeline.h); else
 * absent, and the served window starts at T_read (queueing.engine null).
 * Missing sources make their parts null: no GPU records, no compute or
 * transfer claimed; no scheduler events, no host or queueing.cpu.
 */
#include <math.h>
#include <string.h>

#include "attribute.h"

static const char *const comp_names[LS_C_N] = {"network", "queueing", "transfer",
					       "compute", "host",     "other"};
static const char *const sub_names[LS_S_N] = {
	"network.connect", "network.upload", "network.send_blocked", "network.wire", "network.drain",
	"queueing.socket", "queueing.engine",      "queueing.cpu",   "compute.kernel",
	"compute.comm",    "transfer.h2d",         "transfer.d2h",   "transfer.other",
	"network.proxy",   "queueing.app",
};

/* The one sub-part -> component map (report, flame and verdict ask here). */
static const int sub_comp[LS_S_N] = {
	[LS_S_NET_CONNECT] = LS_C_NETWORK,
	[LS_S_NET_UPLOAD] = LS_C_NETWORK,       [LS_S_NET_SEND_BLOCKED] = LS_C_NETWORK,
	[LS_S_NET_WIRE] = LS_C_NETWORK,         [LS_S_NET_DRAIN] = LS_C_NETWORK,
	[LS_S_Q_SOCKET] = LS_C_QUEUEING,
	[LS_S_Q_ENGINE] = LS_C_QUEUEING,        [LS_S_Q_CPU] = LS_C_QUEUEING,
	[LS_S_COMPUTE_KERNEL] = LS_C_COMPUTE,   [LS_S_COMPUTE_COMM] = LS_C_COMPUTE,
	[LS_S_TRANSFER_H2D] = LS_C_TRANSFER,    [LS_S_TRANSFER_D2H] = LS_C_TRANSFER,
	[LS_S_TRANSFER_OTHER] = LS_C_TRANSFER,
	[LS_S_NET_PROXY] = LS_C_NETWORK,
	[LS_S_Q_APP] = LS_C_QUEUEING,
};

bool ls_sub_optional(int s)
{
	return s == LS_S_NET_PROXY || s == LS_S_Q_APP;
}

int ls_sub_comp(int s)
{
	return s >= 0 && s < LS_S_N ? sub_comp[s] : -1;
}

const char *ls_comp_name(int c)
{
	return c >= 0 && c < LS_C_N ? comp_names[c] : "?";
}

const char *ls_sub_name(int s)
{
	return s >= 0 && s < LS_S_N ? sub_names[s] : "?";
}

/* Classes of the instant-by-instant partition, in precedence order. */
enum cls {
	K_BLOCKED, K_KERNEL, K_COMM, K_H2D, K_D2H, K_XO, K_ONCPU, K_RUNNABLE, K_BASE, K_N,
};

static const int cls_sub[K_N] = {
	[K_BLOCKED] = LS_S_NET_SEND_BLOCKED, [K_KERNEL] = LS_S_COMPUTE_KERNEL,
	[K_COMM] = LS_S_COMPUTE_COMM,        [K_H2D] = LS_S_TRANSFER_H2D,
	[K_D2H] = LS_S_TRANSFER_D2H,         [K_XO] = LS_S_TRANSFER_OTHER,
	[K_ONCPU] = -1,                      [K_RUNNABLE] = LS_S_Q_CPU,
	[K_BASE] = -1,
};

struct cursor {
	const struct ls_span *v;
	size_t n, i;
};

/* Adds to out[k] the time of [a, b) whose highest active class is k; where
 * none of the layers is active, K_BASE. Layers absent: NULL. With emit,
 * the instants of class k are also added as spans to emit[k] when set. */
static void partition(uint64_t a, uint64_t b, const struct ls_spans *layers[K_BASE],
		      uint64_t out[K_N], struct ls_spans *const *emit)
{
	struct cursor c[K_BASE];
	uint64_t t = a;

	if (b <= a)
		return;
	for (int k = 0; k < K_BASE; k++) {
		c[k].v = layers[k] ? layers[k]->v : NULL;
		c[k].n = layers[k] ? layers[k]->n : 0;
		c[k].i = layers[k] ? ls_spans_seek(layers[k], a) : 0;
	}
	while (t < b) {
		uint64_t next = b;
		int best = K_BASE;

		for (int k = 0; k < K_BASE; k++) {
			while (c[k].i < c[k].n && c[k].v[c[k].i].e <= t)
				c[k].i++;
			if (c[k].i == c[k].n)
				continue;
			const struct ls_span *s = &c[k].v[c[k].i];
			if (s->b <= t) {
				if (k < best)
					best = k;
				if (s->e < next)
					next = s->e;
			} else if (s->b < next) {
				next = s->b;
			}
		}
		out[best] += next - t;
		if (emit && emit[best])
			ls_spans_add(emit[best], t, next);
		t = next;
	}
}

/* The marks, monotonic and clipped to T_end. */
struct marks {
	uint64_t start, in, read, queued, sched, out, end;
};

static uint64_t clampu(uint64_t v, uint64_t lo, uint64_t hi)
{
	return v < lo ? lo : v > hi ? hi : v;
}

/* The marks of a window ending at `end` (T_end, or T_first for the TTFT
 * split; `out` is then the end too), each clipped between its neighbours. */
static void set_marks(const struct ls_request *r, uint64_t end, uint64_t out, uint64_t sched_mark,
		      uint64_t queued_mark, struct marks *m)
{
	m->end = end > r->t_start ? end : r->t_start;
	m->start = r->t_start;
	m->in = clampu(r->t_in ? r->t_in : r->t_start, m->start, m->end);
	m->read = clampu(r->t_read, m->in, m->end);
	m->sched = clampu(sched_mark ? sched_mark : m->read, m->read, m->end);
	m->queued = clampu(queued_mark ? queued_mark : m->read, m->read, m->sched);
	m->out = clampu(out, m->sched, m->end);
}

/* The split of [m.start, m.end] (end = T_end or T_first). */
static void split_window(const struct marks *m, const struct ls_spans *layers[K_BASE],
			 bool have_sched_mark, uint64_t sub[LS_S_N], uint64_t *host, uint64_t *other,
			 struct ls_spans *const *emit)
{
	uint64_t k[K_N];
	const struct ls_spans *only_blocked[K_BASE] = {layers[K_BLOCKED]};

	memset(k, 0, sizeof(k));
	sub[LS_S_NET_UPLOAD] = m->in - m->start;
	/* socket and engine queueing, less any time blocked in a write */
	partition(m->in, m->read, only_blocked, k, NULL);
	sub[LS_S_Q_SOCKET] = k[K_BASE];
	k[K_BASE] = 0;
	if (have_sched_mark) {
		/* the front-end window [T_read, T_queued] (parsing, tokenising, the
		 * hand-off to the engine) instant by instant, like the served
		 * window; then the engine's own queue */
		partition(m->read, m->queued, layers, k, emit);
		uint64_t frontend_other = k[K_BASE];
		k[K_BASE] = 0;
		partition(m->queued, m->sched, only_blocked, k, NULL);
		sub[LS_S_Q_ENGINE] = k[K_BASE];
		k[K_BASE] = frontend_other;
	}
	partition(m->sched, m->out, layers, k, emit);
	for (int c = 0; c < K_BASE; c++)
		if (cls_sub[c] >= 0)
			sub[cls_sub[c]] = k[c];
	*host = k[K_ONCPU];
	*other = k[K_BASE];
	sub[LS_S_NET_DRAIN] = m->end - m->out;
}

/* Sum of observed parts: null only when both are (DESIGN §6, unobserved
 * parts: their time lies in whatever part the sources gave it). */
static uint64_t sum(uint64_t a, uint64_t b)
{
	if (a == LS_NULL)
		return b;
	return b == LS_NULL ? a : a + b;
}

/* Components from sub-parts; a component is null when all its parts are. */
static void components(const uint64_t sub[LS_S_N], uint64_t host, uint64_t other,
		       uint64_t comp[LS_C_N])
{
	for (int c = 0; c < LS_C_N; c++)
		comp[c] = LS_NULL;
	for (int k = 0; k < LS_S_N; k++)
		comp[sub_comp[k]] = sum(comp[sub_comp[k]], sub[k]);
	comp[LS_C_HOST] = host;
	comp[LS_C_OTHER] = other;
}

static const char *gap_cause(const struct ls_request *r, const struct ls_spans *layers[K_BASE],
			     bool gpu, bool sched)
{
	static const char *const names[K_N] = {
		[K_BLOCKED] = "network.send_blocked", [K_KERNEL] = "compute", [K_COMM] = "compute",
		[K_H2D] = "transfer",                 [K_D2H] = "transfer",   [K_XO] = "transfer",
		[K_ONCPU] = "host",                   [K_RUNNABLE] = "queueing.cpu", [K_BASE] = "other",
	};
	uint64_t k[K_N] = {0};
	int best = K_BASE;

	if (r->tokens < 2 || !r->gap_e)
		return NULL;
	partition(r->gap_b, r->gap_e, layers, k, NULL);
	k[K_KERNEL] += k[K_COMM];
	k[K_H2D] += k[K_D2H] + k[K_XO];
	k[K_COMM] = k[K_D2H] = k[K_XO] = 0;
	for (int c = 0; c < K_N; c++)
		if (k[c] > k[best])
			best = c;
	if (best == K_BASE && (!gpu || !sched))
		return "unobserved";
	return names[best];
}

/* The engine's own timings in its response (llama.cpp: prompt_ms, the
 * prompt's processing, then predicted_ms of generation): it began the
 * prompt prompt_ms before its first token, written at T_first when it
 * streams, else predicted_ms before the last write. 0 without timings or
 * when they do not fit in [T_read, T_first]. */
static uint64_t timings_sched(const struct ls_request *r)
{
	double before;
	uint64_t first, back;

	if (!r->has_timings || !isfinite(r->eng_prompt_ms) || r->eng_prompt_ms < 0 || !r->t_read ||
	    !r->t_first)
		return 0;
	first = r->t_first;
	if (!r->streaming) {
		if (!isfinite(r->eng_predicted_ms) || r->eng_predicted_ms < 0 || !r->t_out)
			return 0;
		back = (uint64_t)llround(r->eng_predicted_ms * 1e6);
		if (back > r->t_out - r->t_read)
			return 0;
		first = r->t_out - back;
	}
	before = r->eng_prompt_ms * 1e6;
	if (before > (double)(first - r->t_read))
		return r->t_read; /* it began as it read: no queue */
	return first - (uint64_t)llround(before);
}

/* The split; with emit, the instants of the served window (of the TTFT
 * window when emit_ttft) are also handed out by class. */
static void attribute(const struct ls_request *r, const struct ls_timeline *tl,
		      const struct ls_engine_join *join, struct ls_split *s,
		      struct ls_spans *const *emit, bool emit_ttft)
{
	struct ls_spans blocked = {0};
	const struct ls_spans *layers[K_BASE] = {0};
	bool gpu = tl && ls_timeline_has_gpu(tl), sched = tl && ls_timeline_has_sched(tl);
	uint64_t sched_mark = 0, queued_mark = 0, host, other;
	struct marks m, mf;

	for (int i = 0; i < LS_C_N; i++)
		s->comp[i] = s->ttft_comp[i] = LS_NULL;
	for (int i = 0; i < LS_S_N; i++)
		s->sub[i] = s->ttft_sub[i] = LS_NULL;
	s->total = s->ttft = LS_NULL;
	s->engine_source = "none";
	s->gpu_source = tl ? ls_timeline_gpu_source(tl) : "none";
	s->max_gap_cause = NULL;
	s->t_sched = s->t_queued = 0;
	s->frontend = LS_NULL;
	s->unobserved = 0;

	for (uint32_t i = 0; i < r->nblocked; i++)
		ls_spans_add(&blocked, r->blocked[i][0], r->blocked[i][1]);
	ls_spans_normalise(&blocked);
	layers[K_BLOCKED] = &blocked;
	if (gpu) {
		layers[K_KERNEL] = ls_timeline_layer(tl, LS_L_KERNEL);
		layers[K_COMM] = ls_timeline_layer(tl, LS_L_COMM);
		layers[K_H2D] = ls_timeline_layer(tl, LS_L_H2D);
		layers[K_D2H] = ls_timeline_layer(tl, LS_L_D2H);
		layers[K_XO] = ls_timeline_layer(tl, LS_L_XFER_OTHER);
	}
	if (sched) {
		layers[K_ONCPU] = ls_timeline_layer(tl, LS_L_ONCPU);
		layers[K_RUNNABLE] = ls_timeline_layer(tl, LS_L_RUNNABLE);
	}
	/* T_queued: the engine's queued event, else its arrived event (DESIGN
	 * §6); only with engine events, which also give T_sched */
	if (join && join->joined && join->t_sched)
		queued_mark = join->t_queued ? join->t_queued : join->t_arrived;
	if (join && join->joined && join->t_sched) {
		sched_mark = join->t_sched;
		s->engine_source = join->otlp ? "otlp" : "events";
	} else if ((sched_mark = timings_sched(r))) {
		s->engine_source = "timings";
	} else if (tl && r->t_first) {
		sched_mark = r->streaming ? ls_timeline_infer_sched(tl, r->t_read, r->t_first,
								    r->first_tid)
					  : ls_timeline_next_boundary(tl, r->t_read);
		if (sched_mark)
			s->engine_source = "inferred";
	}
	/* No engine source: a single-slot application's own queue, when the
	 * analysis found one (join->t_slot: when the slot freed for r) */
	bool app = false;
	if (!sched_mark && join && join->t_slot > r->t_read && r->t_first && join->t_slot < r->t_first) {
		sched_mark = join->t_slot;
		app = true;
	}
	s->max_gap_cause = gap_cause(r, layers, gpu, sched);

	/* A partial request began before the capture, an unparsed one lost its
	 * framing: the split of either is unknown. */
	bool whole = r->outcome != LS_REQ_PARTIAL && r->outcome != LS_REQ_UNPARSED;

	/* The client's view (DESIGN.md §6): the total ends at delivery, the
	 * TTFT at the first token's delivery, when transmissions were seen;
	 * else at the ACK and at the write, as before. */
	uint64_t end = r->t_dlv ? r->t_dlv : r->t_end, first_end = r->t_first_dlv ? r->t_first_dlv : r->t_first;
	if (whole && r->t_start && r->t_end && r->t_read && r->t_out) {
		set_marks(r, end, r->t_out, sched_mark, queued_mark, &m);
		s->t_queued = queued_mark && sched_mark ? m.queued : 0;
		s->frontend = s->t_queued ? m.queued - m.read : LS_NULL;
		s->t_sched = sched_mark && !app ? m.sched : 0;
		split_window(&m, layers, sched_mark != 0, s->sub, &host, &other,
			     emit_ttft ? NULL : emit);
		if (app) /* [T_read, T_slot]: the app's queue, not an engine's */
			s->sub[LS_S_Q_APP] = s->sub[LS_S_Q_ENGINE], s->sub[LS_S_Q_ENGINE] = LS_NULL;
		s->sub[LS_S_NET_CONNECT] = r->connect_ns;
		s->total = r->connect_ns + (m.end - m.start);
		if (!r->t_in)
			s->sub[LS_S_NET_UPLOAD] = LS_NULL;
		if (r->transport_unix) /* no tracepoint says when its bytes were queued */
			s->sub[LS_S_Q_SOCKET] = LS_NULL;
		/* the first token's wire time is inside the served window here */
		s->sub[LS_S_NET_WIRE] = r->t_dlv ? 0 : LS_NULL;
		components(s->sub, host, other, s->comp);
	}
	if (whole && r->t_start && r->t_first && r->t_read) {
		set_marks(r, first_end, r->t_first, sched_mark, queued_mark, &mf);
		split_window(&mf, layers, sched_mark != 0, s->ttft_sub, &host, &other,
			     emit_ttft ? emit : NULL);
		if (app)
			s->ttft_sub[LS_S_Q_APP] = s->ttft_sub[LS_S_Q_ENGINE],
			s->ttft_sub[LS_S_Q_ENGINE] = LS_NULL;
		s->ttft_sub[LS_S_NET_CONNECT] = r->connect_ns;
		s->ttft = r->connect_ns + (mf.end - mf.start);
		if (!r->t_in)
			s->ttft_sub[LS_S_NET_UPLOAD] = LS_NULL;
		if (r->transport_unix)
			s->ttft_sub[LS_S_Q_SOCKET] = LS_NULL;
		/* [T_first, T_first_dlv]: the first token on the wire */
		s->ttft_sub[LS_S_NET_WIRE] = r->t_first_dlv ? s->ttft_sub[LS_S_NET_DRAIN] : LS_NULL;
		s->ttft_sub[LS_S_NET_DRAIN] = r->t_first_dlv ? 0 : s->ttft_sub[LS_S_NET_DRAIN];
		components(s->ttft_sub, host, other, s->ttft_comp);
	}
	/* What the capture cannot tell stays null, and is named. */
	for (int pass = 0; pass < 2; pass++) {
		uint64_t *sub = pass ? s->ttft_sub : s->sub, *comp = pass ? s->ttft_comp : s->comp;
		uint32_t unobserved = 0;
		if (sub[LS_S_NET_DRAIN] == LS_NULL)
			continue; /* window not computed */
		if (!gpu)
			for (int k = LS_S_COMPUTE_KERNEL; k <= LS_S_TRANSFER_OTHER; k++)
				sub[k] = LS_NULL;
		if (!sched) {
			sub[LS_S_Q_CPU] = LS_NULL;
			comp[LS_C_HOST] = LS_NULL;
			unobserved |= LS_UNOBSERVED_HOST;
		}
		if (!sched_mark || app)
			sub[LS_S_Q_ENGINE] = LS_NULL;
		/* network.wire without transmission records: the window simply
		 * ends at the write; no time went elsewhere */
		for (int k = 0; k < LS_S_N; k++)
			if (sub[k] == LS_NULL && k != LS_S_NET_WIRE && !ls_sub_optional(k))
				unobserved |= 1u << k;
		components(sub, comp[LS_C_HOST], comp[LS_C_OTHER], comp);
		if (!pass)
			s->unobserved = unobserved;
	}
	ls_spans_free(&blocked);
}

/* r's time blocked writing to its client inside [b, e] */
static uint64_t blocked_within(const struct ls_request *r, uint64_t b, uint64_t e)
{
	uint64_t t = 0;

	for (uint32_t k = 0; k < r->nblocked; k++) {
		uint64_t x = r->blocked[k][0] > b ? r->blocked[k][0] : b;
		uint64_t y = r->blocked[k][1] < e ? r->blocked[k][1] : e;
		t += y > x ? y - x : 0;
	}
	return t;
}

/* Takes up to *excess from *v (a known part), less what it took. */
static void take(uint64_t *v, uint64_t *excess)
{
	uint64_t t;

	if (*v == LS_NULL || !*excess)
		return;
	t = *v < *excess ? *v : *excess;
	*v -= t;
	*excess -= t;
}

/* The outer hop's parts outside the proxy's window (before its read,
 * after its write): they stay the outer's. */
static const int outer_keeps[] = {LS_S_NET_CONNECT, LS_S_NET_UPLOAD, LS_S_Q_SOCKET, LS_S_NET_WIRE,
				  LS_S_NET_DRAIN};

/* One window (the total's or the TTFT's) of a joined record: whole is the
 * outer's, split into osub; the inner hop's isub/icomp sum to itotal;
 * blocked: the outer's writes to its client blocked that long after the
 * inner hop's end. */
static void hop_window(uint64_t whole, uint64_t osub[LS_S_N], uint64_t ocomp[LS_C_N],
		       const uint64_t isub[LS_S_N], const uint64_t icomp[LS_C_N], uint64_t itotal,
		       uint64_t blocked)
{
	uint64_t m[LS_S_N], host = icomp[LS_C_HOST], other = icomp[LS_C_OTHER], kept = 0;

	memcpy(m, isub, sizeof(m));
	for (size_t k = 0; k < sizeof(outer_keeps) / sizeof(outer_keeps[0]); k++)
		if (osub[outer_keeps[k]] != LS_NULL)
			kept += osub[outer_keeps[k]];
	uint64_t middle = whole > kept ? whole - kept : 0; /* [outer T_read, T_out] */
	if (middle >= itotal) {
		uint64_t rest = middle - itotal, sb = blocked < rest ? blocked : rest;
		m[LS_S_NET_SEND_BLOCKED] = sum(m[LS_S_NET_SEND_BLOCKED], sb);
		m[LS_S_NET_PROXY] = rest - sb;
	} else {
		/* the inner hop's estimates (delivery at half an RTT) ran past
		 * the proxy's own marks: the excess comes off its network ends
		 * first, never off the outer's */
		uint64_t excess = itotal - middle;
		static const int order[] = {LS_S_NET_DRAIN, LS_S_NET_WIRE, LS_S_NET_UPLOAD, LS_S_Q_SOCKET,
					    LS_S_NET_CONNECT};
		for (size_t k = 0; k < sizeof(order) / sizeof(order[0]); k++)
			take(&m[order[k]], &excess);
		take(&other, &excess);
		take(&host, &excess);
		for (int k = 0; k < LS_S_N && excess; k++)
			take(&m[k], &excess);
		m[LS_S_NET_PROXY] = 0;
	}
	for (size_t k = 0; k < sizeof(outer_keeps) / sizeof(outer_keeps[0]); k++)
		m[outer_keeps[k]] = sum(m[outer_keeps[k]], osub[outer_keeps[k]]);
	memcpy(osub, m, sizeof(m));
	components(osub, host, other, ocomp);
}

void ls_split_hop(struct ls_split *s, const struct ls_request *o, const struct ls_request *i,
		  const struct ls_split *is)
{
	uint32_t keep = 0;

	if (s->total == LS_NULL || is->total == LS_NULL)
		return;
	for (size_t k = 0; k < sizeof(outer_keeps) / sizeof(outer_keeps[0]); k++)
		keep |= 1u << outer_keeps[k];
	uint64_t iend = ls_request_end(i), ifirst = i->t_first_dlv ? i->t_first_dlv : i->t_first;
	hop_window(s->total, s->sub, s->comp, is->sub, is->comp, is->total,
		   blocked_within(o, iend, o->t_out));
	if (s->ttft != LS_NULL && is->ttft != LS_NULL)
		hop_window(s->ttft, s->ttft_sub, s->ttft_comp, is->ttft_sub, is->ttft_comp, is->ttft,
			   blocked_within(o, ifirst, o->t_first));
	else
		s->ttft_sub[LS_S_NET_PROXY] = LS_NULL;
	s->unobserved = is->unobserved | (s->unobserved & keep);
	s->t_sched = is->t_sched;
	s->t_queued = is->t_queued;
	s->frontend = is->frontend;
	s->engine_source = is->engine_source;
	s->gpu_source = is->gpu_source;
	s->max_gap_cause = is->max_gap_cause ? is->max_gap_cause : s->max_gap_cause;
}

void ls_attribute(const struct ls_request *r, const struct ls_timeline *tl,
		  const struct ls_engine_join *join, struct ls_split *s)
{
	attribute(r, tl, join, s, NULL, false);
}

void ls_attribute_spans(const struct ls_request *r, const struct ls_timeline *tl,
			const struct ls_engine_join *join, bool ttft, struct ls_spans *host,
			struct ls_spans *other)
{
	struct ls_spans *emit[K_N] = {0};
	struct ls_split s;

	emit[K_ONCPU] = host;
	emit[K_BASE] = other;
	attribute(r, tl, join, &s, emit, ttft);
	if (host)
		ls_spans_normalise(host);
	if (other)
		ls_spans_normalise(other);
}

uint64_t ls_request_end(const struct ls_request *r)
{
	return r->t_dlv ? r->t_dlv : r->t_end ? r->t_end : r->t_out;
}

void ls_phases_of(const struct ls_request *r, const struct ls_split *s, struct ls_phases *p)
{
	uint64_t in = r->t_in ? r->t_in : r->t_start, rd = r->t_read ? r->t_read : in;
	uint64_t q = s->t_queued ? s->t_queued : rd, sc = s->t_sched ? s->t_sched : q;
	uint64_t at[LS_PH_N + 1] = {r->t_start, in, rd, q, sc, r->t_out, ls_request_end(r)};

	p->start = r->t_start;
	p->end = at[LS_PH_N];
	p->connect = r->connect_ns;
	/* instants out of order (a mark missing, clocks of different records)
	 * are held at the one before, and none passes the end: the phases
	 * never overlap, and tile [start, end] when both are known */
	for (int k = 1; k < LS_PH_N; k++) {
		if (at[k] < at[k - 1])
			at[k] = at[k - 1];
		if (p->end && at[k] > p->end)
			at[k] = p->end;
	}
	for (int k = 0; k < LS_PH_N; k++) {
		p->b[k] = at[k];
		p->e[k] = at[k + 1];
	}
}

uint64_t ls_phase_len(const struct ls_phases *p, int k)
{
	return p->b[k] && p->e[k] > p->b[k] ? p->e[k] - p->b[k] : 0;
}

const char *ls_phase_name(int k)
{
	static const char *const names[LS_PH_N] = {"network.upload",  "queueing.socket",
						   "frontend",        "queueing.engine",
						   "served",          "network.drain"};
	return k >= 0 && k < LS_PH_N ? names[k] : "?";
}
