// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Request correlator (see requests.h). Per connection it keeps two HTTP
 * parsers (what the app read, what it wrote), the arrival frontier of
 * request bytes, the ACK progress of response bytes, srtt samples and
 * retransmits; marks are computed when the connection ends.
 *
 * Rules, applied in finish_conn():
 * - T_start: first request on a connection: ESTABLISHED - srtt (the SYN
 *   arrived about one round trip before the handshake completed); later
 *   requests, and every request of a connection adopted mid-flight (no
 *   handshake seen): arrival of their first byte.
 * - Adopted connections (conn_adopt): stream offsets are anchored at the
 *   socket's read/write positions when met; both parsers skip to the next
 *   whole start line. A request with bytes that arrived before that, or a
 *   response whose request was never read, is partial: no split.
 * - Every socket I/O carries the sequence number of its first byte; bytes
 *   between it and the parser's position were moved unseen (a read in flight
 *   when the capture began, a dropped record) and are fed as a gap.
 * - T_in: when the last request byte was in order in the receive queue
 *   (tcp_probe at segment arrival; bytes that came with the handshake's ACK
 *   count as arrived at ESTABLISHED).
 * - T_read / T_first / T_out: exit of the read that consumed the last request
 *   byte / of the write carrying the first SSE token (non-streaming: the first
 *   body byte) / of the write carrying the last response byte.
 * - T_end: the first ACK covering the last response byte.
 * - Retransmits: a data retransmit belongs to the request whose response
 *   bytes it carried; one past every response (FIN) to the last request; a
 *   SYN-ACK retransmit to the first. So per-request counts add up to the
 *   connection's, and the capture's to TcpRetransSegs.
 */
#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grow.h"

#include "h2.h"
#include "http.h"
#include "idmap.h"
#include "requests.h"
#include "sockio.h"


struct point {
	uint64_t ts;
	uint64_t off; /* stream offset reached at ts */
};

struct points {
	struct point *v;
	size_t n, cap;
};

struct srtt_sample {
	uint64_t ts;
	uint32_t us;
};

/* A transmission of stream bytes [b, e) (tcp_xmit), with why it may have
 * waited (see hold_cause). */
struct xmit {
	uint64_t ts, b, e;
	bool small_nagle; /* shorter than a segment, TCP_NODELAY off */
	bool rwnd;        /* the peer's window could not take it all */
};

struct retrans {
	uint64_t ts;
	uint32_t seq;
	uint32_t segs;
	bool synack;
};

struct conn {
	uint64_t id;
	uint32_t pid;
	bool have_tuple;
	struct ls_tuple tuple;
	bool have_seq;
	bool adopted;       /* met mid-flight: no handshake seen */
	size_t tx_inflight; /* adopted: the response in flight when met (index + 1) */
	bool tx_synced;     /* a response head has been seen */
	uint64_t pre_bytes; /* adopted: request bytes already queued when met */
	uint64_t est_ts;
	uint64_t synack0; /* first SYN-ACK, known when one was retransmitted */
	uint32_t est_srtt;
	uint32_t irs1, iss1; /* first sequence numbers of each direction's data */

	uint64_t frontier; /* request bytes in order, relative to irs1 */
	struct {
		uint64_t b, e;
	} ooo[16];
	int nooo;
	struct points arrivals, acks;
	uint64_t acked;

	struct srtt_sample *srtt;
	size_t nsrtt, capsrtt;
	uint32_t srtt_floor; /* the smallest srtt seen: the RTT without queueing */
	struct xmit *xm;
	size_t nxm, capxm;
	struct retrans *rtx;
	size_t nrtx, caprtx;

	struct ls_http_parser *rx, *tx;
	struct ls_h2 *h2rx, *h2tx; /* instead of rx and tx on an HTTP/2 connection */
	struct ls_request **reqs;
	size_t nreqs, capreqs;
	size_t rx_cur;    /* request being read (index + 1; 0 none) */
	size_t next_resp; /* index of the request the next response answers */
	size_t tx_cur;    /* request whose response is being written (index + 1) */
	size_t tx_unparsed; /* request whose response lost sync: later bytes are its (index + 1) */
	size_t rx_unparsed; /* request that lost sync: later bytes read are its (index + 1) */

	/* the I/O syscall being fed to a parser (io: only inside feed_call) */
	const struct ls_ev_sock_io *io;
	uint64_t io_ts;
	uint32_t io_tid;
	uint64_t io_blocked;
	bool io_blocked_taken;

	bool opaque, reset, peer_eof, http;
	bool upstream; /* the tracked process sent the first request: it is the client here */
	size_t up_slot; /* upstream: its place in the corr's ring (nup then), 0 none */
	uint8_t h2_probes; /* met mid-flight: payloads tested for whole HTTP/2 frames */
	bool unix_sk; /* an AF_UNIX stream (LS_ADOPT_UNIX): ends at its close */
	/* TLS: the parsers read the plaintext of SSL_read/SSL_write; request
	 * offsets are plaintext offsets, mapped to the wire's (ciphertext
	 * stream offsets, what TCP's points use) by anchors, per direction:
	 * plaintext up to `pt` had gone through ciphertext up to `ct`
	 * (UINT64_MAX: written, its ciphertext not yet) */
	/* HTTP/2: the connection's flow-control window for what the process
	 * sends, and since when it was spent (0: not) */
	int64_t fc_conn;
	uint64_t fc_conn_since;
	bool tls;
	struct tls_anchor {
		uint64_t pt, ct;
	} *anch[2];
	size_t nanch[2], capanch[2];
	uint64_t pt_pos[2], ct_pos[2]; /* each stream's offset reached */
	uint64_t ct_out_ts;            /* the last ciphertext write's exit, and thread */
	uint32_t ct_out_tid;
	bool emitted_any; /* a request of it has left early (emit_answered) */
	uint64_t resets;
	struct ls_corr *corr;
};

struct synack {
	struct ls_tuple t;
	struct retrans r;
};

#define UPSTREAM_ENDS 1024
#define UPSTREAM_FW 8
#define LAST_READS 65536

struct ls_corr {
	/* open connections by conn_id: ids come from the file, and a crafted
	 * one must not size an array */
	struct ls_idmap conns;
	struct synack *synacks;
	size_t nsynacks, capsynacks;
	uint64_t next_req_id;
	void (*emit)(void *ctx, const struct ls_request *r);
	void (*delivered)(void *ctx, const struct ls_request *r);
	void *ctx;
	struct ls_corr_stats st;
	/* the newest upstream connections' tuples and processes (a ring):
	 * a server's request on the other end of one came from that process
	 * (a traced proxy, DESIGN §11), also after the connection is gone */
	struct upstream_end {
		struct ls_tuple t;
		uint32_t pid;
		/* its responses passed on: when, and to which served connection
		 * (the proxy's client's) */
		struct {
			uint64_t ts, conn;
		} fw[UPSTREAM_FW];
		uint32_t nfw;
		bool fresh; /* a request went out on it since the newest entry */
	} up[UPSTREAM_ENDS];
	size_t nup;
	/* each thread's last read on an upstream connection: thread id ->
	 * struct last_read (bounded: LAST_READS threads) */
	struct ls_idmap last_rd;
};

struct last_read {
	size_t slot; /* the upstream connection's place in the ring (up_slot), 0 none */
	uint64_t ts;
};

static void note_upstream(struct conn *cn);

void ls_addr_str(const __u8 addr[16], __u16 port, char *buf, size_t len)
{
	static const __u8 v4mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
	char ip[INET6_ADDRSTRLEN];

	if (!memcmp(addr, v4mapped, 12)) {
		inet_ntop(AF_INET, addr + 12, ip, sizeof(ip));
		snprintf(buf, len, "%s:%u", ip, port);
	} else {
		inet_ntop(AF_INET6, addr, ip, sizeof(ip));
		snprintf(buf, len, "[%s]:%u", ip, port);
	}
}

void ls_request_release(struct ls_request *r)
{
	free(r->blocked);
	free(r->tok);
	ls_request_detach(r);
}

void ls_request_detach(struct ls_request *r)
{
	r->blocked = NULL;
	r->nblocked = r->capblocked = 0;
	r->tok = NULL;
	r->ntok = r->captok = 0;
}

const char *ls_hold_name(int h)
{
	static const char *const names[LS_HOLD_N] = {"nagle", "cwnd", "rwnd", "retrans"};
	return h >= 0 && h < LS_HOLD_N ? names[h] : "?";
}

/* The app slept `ns` inside a write that returned at `end`. */
static void add_blocked(struct ls_request *r, uint64_t end, uint64_t ns, bool before_first)
{
	if (!ns)
		return;
	r->send_blocked_ns += ns;
	if (before_first)
		r->send_blocked_ttft_ns += ns;
	GROW(r->blocked, r->nblocked, r->capblocked);
	r->blocked[r->nblocked][0] = end > ns ? end - ns : 0;
	r->blocked[r->nblocked][1] = end;
	r->nblocked++;
}

const char *ls_outcome_name(enum ls_outcome o)
{
	static const char *const names[] = {"ok",    "unacked",    "no_response", "aborted",
					    "reset", "incomplete", "partial",     "unparsed"};
	return o < LS_REQ_NOUTCOMES ? names[o] : "?";
}

struct ls_corr *ls_corr_new(void (*emit)(void *ctx, const struct ls_request *r), void *ctx)
{
	struct ls_corr *c = calloc(1, sizeof(*c));

	if (c) {
		c->emit = emit;
		c->ctx = ctx;
	}
	return c;
}

void ls_corr_on_delivered(struct ls_corr *c, void (*delivered)(void *ctx, const struct ls_request *r))
{
	c->delivered = delivered;
}

const struct ls_corr_stats *ls_corr_stats(const struct ls_corr *c)
{
	return &c->st;
}

/* 64-bit offset of a 32-bit sequence number, near `ref`. */
static uint64_t unwrap(uint32_t seq, uint32_t base, uint64_t ref)
{
	uint32_t rel = seq - base;
	int64_t d = (int32_t)(rel - (uint32_t)ref);
	int64_t r = (int64_t)ref + d;

	return r < 0 ? 0 : (uint64_t)r;
}

static void push_point(struct points *p, uint64_t ts, uint64_t off)
{
	GROW(p->v, p->n, p->cap);
	p->v[p->n++] = (struct point){ts, off};
}

/* When the stream first reached beyond offset `off` (0 if never). */
static uint64_t time_past(const struct points *p, uint64_t off)
{
	size_t lo = 0, hi = p->n;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (p->v[mid].off > off)
			hi = mid;
		else
			lo = mid + 1;
	}
	return lo < p->n ? p->v[lo].ts : 0;
}

/* TLS offsets. The wire offset by which plaintext [0, x) had gone through
 * (a request's end: its last byte is at wire_end - 1); UINT64_MAX when its
 * ciphertext is not known yet. Any other connection's offsets are the
 * wire's. */
static uint64_t wire_end(const struct conn *cn, int d, uint64_t x)
{
	size_t lo = 0, hi;

	if (!cn->tls || !x)
		return x;
	hi = cn->nanch[d];
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (cn->anch[d][mid].pt >= x)
			hi = mid;
		else
			lo = mid + 1;
	}
	return lo < cn->nanch[d] ? cn->anch[d][lo].ct : UINT64_MAX;
}

/* The wire offset where the ciphertext of plaintext byte b began: the end
 * of what went through before it (a request's first byte); but no later
 * than the last ciphertext byte of the call that moved b (OpenSSL reads
 * ahead: the call before b may have read b's record already). */
static uint64_t wire_begin(const struct conn *cn, int d, uint64_t b)
{
	size_t lo = 0, hi;
	uint64_t w, end;

	if (!cn->tls)
		return b;
	hi = cn->nanch[d];
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (cn->anch[d][mid].pt <= b)
			lo = mid + 1;
		else
			hi = mid;
	}
	w = lo && cn->anch[d][lo - 1].ct != UINT64_MAX ? cn->anch[d][lo - 1].ct : 0;
	end = wire_end(cn, d, b + 1);
	return end && end != UINT64_MAX && w >= end ? end - 1 : w;
}

/* Time of the first wire point beyond the last byte of plaintext [.., x). */
static uint64_t time_past_end(const struct conn *cn, const struct points *p, int d, uint64_t x)
{
	uint64_t w = wire_end(cn, d, x);

	return w && w != UINT64_MAX ? time_past(p, w - 1) : 0;
}

static struct conn *conn_get(struct ls_corr *c, uint64_t id)
{
	struct conn *cn;

	if (!id)
		return NULL;
	if ((cn = ls_idmap_get(&c->conns, id)))
		return cn;
	cn = calloc(1, sizeof(*cn));
	if (!cn || ls_idmap_put(&c->conns, id, cn))
		abort();
	cn->id = id;
	cn->corr = c;
	c->st.conns++;
	return cn;
}

static struct ls_request *new_request(struct conn *cn)
{
	struct ls_request *r = calloc(1, sizeof(*r));

	if (!r)
		abort();
	r->id = ++cn->corr->next_req_id;
	r->conn_id = cn->id;
	r->pid = cn->pid;
	r->first_on_conn = cn->nreqs == 0 && !cn->adopted;
	r->grpc_status = -1;
	GROW(cn->reqs, cn->nreqs, cn->capreqs);
	cn->reqs[cn->nreqs++] = r;
	cn->http = true;
	return r;
}

/* ---- parser callbacks: what the app read ---- */

static void rx_begin(void *ctx)
{
	struct conn *cn = ctx;
	struct ls_request *r = new_request(cn);

	r->in_begin = cn->rx->msg_begin;
	cn->rx_cur = cn->nreqs;
	cn->rx_unparsed = 0;
}

static void rx_head(void *ctx, const struct ls_http_msg *m)
{
	struct conn *cn = ctx;
	struct ls_request *r = cn->rx_cur ? cn->reqs[cn->rx_cur - 1] : NULL;

	if (!r)
		return;
	snprintf(r->method, sizeof(r->method), "%s", m->method);
	snprintf(r->path, sizeof(r->path), "%s", m->path);
	snprintf(r->x_request_id, sizeof(r->x_request_id), "%s", m->x_request_id);
	snprintf(r->traceparent, sizeof(r->traceparent), "%s", m->traceparent);
	snprintf(r->forwarded_for, sizeof(r->forwarded_for), "%s", m->forwarded_for);
	if (!strcmp(m->method, "HEAD") && cn->tx)
		ls_http_expect_head(cn->tx);
}

static void rx_end(void *ctx)
{
	struct conn *cn = ctx;
	struct ls_request *r = cn->rx_cur ? cn->reqs[cn->rx_cur - 1] : NULL;

	if (!r)
		return;
	r->in_end = cn->rx->pos;
	r->t_read = cn->io_ts;
	cn->rx_cur = 0;
}

/* The parser lost sync inside request r's message: r is unparsed, with
 * why, and the call that lacked the bytes when the capture cut it. */
static void mark_unparsed(struct conn *cn, struct ls_request *r, const char *why)
{
	const struct ls_ev_sock_io *e = cn->io;
	size_t kept;

	if (!r || r->unparsed_why[0])
		return;
	if (e && (kept = ls_io_kept(e, e->h.size)) < e->bytes)
		snprintf(r->unparsed_why, sizeof(r->unparsed_why),
			 "payload not captured: %s moved %u bytes, %zu kept: %s",
			 ls_io_call_name(e->call), e->bytes, kept, why);
	else if (!e)
		snprintf(r->unparsed_why, sizeof(r->unparsed_why),
			 "bytes moved with no record (dropped or before the capture): %s", why);
	else
		snprintf(r->unparsed_why, sizeof(r->unparsed_why), "%s", why);
}

static void rx_lost(void *ctx, const char *why)
{
	struct conn *cn = ctx;

	cn->corr->st.http_sync_lost++;
	if (!cn->nreqs)
		cn->opaque = true;
	if (cn->rx_cur) {
		struct ls_request *r = cn->reqs[cn->rx_cur - 1];
		mark_unparsed(cn, r, why);
		r->in_end = cn->rx->pos; /* its bytes, as far as they were followed */
		r->t_read = cn->io_ts;
		cn->rx_unparsed = cn->rx_cur;
	}
	cn->rx_cur = 0;
}

/* ---- parser callbacks: what the app wrote ---- */

static struct ls_request *tx_req(struct conn *cn)
{
	return cn->tx_cur ? cn->reqs[cn->tx_cur - 1] : NULL;
}

static void tx_begin(void *ctx)
{
	struct conn *cn = ctx;
	struct ls_request *r;

	/* A response answers the oldest request without one; a response to a
	 * request read before the capture began gets a request of its own. */
	if (cn->next_resp < cn->nreqs) {
		r = cn->reqs[cn->next_resp];
	} else {
		r = new_request(cn);
		r->first_on_conn = false;
		r->partial = true;
	}
	for (size_t i = 0; i < cn->nreqs; i++)
		if (cn->reqs[i] == r)
			cn->tx_cur = i + 1, cn->next_resp = i + 1;
	cn->tx_inflight = 0;
	cn->tx_unparsed = 0;
	cn->tx_synced = true;
	r->out_begin = cn->tx->msg_begin;
	/* blocked time of the write that carries the head counts here */
	if (!cn->io_blocked_taken) {
		add_blocked(r, cn->io_ts, cn->io_blocked, true);
		cn->io_blocked_taken = true;
	}
}

static void tx_head(void *ctx, const struct ls_http_msg *m)
{
	struct ls_request *r = tx_req(ctx);

	if (!r)
		return;
	r->status = m->status;
	r->streaming = m->sse;
	if (!r->x_request_id[0])
		snprintf(r->x_request_id, sizeof(r->x_request_id), "%s", m->x_request_id);
}

static void tx_body_start(void *ctx)
{
	struct conn *cn = ctx;
	struct ls_request *r = tx_req(cn);

	if (r && !r->streaming && !r->t_first) {
		r->t_first = cn->io_ts;
		r->first_tid = cn->io_tid;
		r->first_end = cn->tx->pos + 1;
	}
}

/* A token written: its request's first-token marks, its write for the
 * wire delay, the largest gap. pos: the stream offset just past it. */
static void token_at(struct conn *cn, struct ls_request *r, uint64_t pos)
{
	if (!r->tokens && r->streaming) {
		r->t_first = cn->io_ts;
		r->first_tid = cn->io_tid;
		r->first_end = pos;
	}
	if (r->streaming) { /* for the wire delay of each token */
		GROW(r->tok, r->ntok, r->captok);
		r->tok[r->ntok][0] = cn->io_ts;
		r->tok[r->ntok][1] = pos;
		r->ntok++;
	}
	if (r->last_token_ts && cn->io_ts - r->last_token_ts > r->max_gap_ns) {
		r->max_gap_ns = cn->io_ts - r->last_token_ts;
		r->gap_b = r->last_token_ts;
		r->gap_e = cn->io_ts;
	}
	r->last_token_ts = cn->io_ts;
	r->tokens++;
}

static void tx_event(void *ctx, bool done)
{
	struct conn *cn = ctx;
	struct ls_request *r = tx_req(cn);

	if (r && !done)
		token_at(cn, r, cn->tx->pos);
}

static void tx_end(void *ctx)
{
	struct conn *cn = ctx;
	struct ls_request *r = tx_req(cn);

	if (!r)
		return;
	r->out_end = cn->tx->pos;
	r->t_out = cn->io_ts;
	if (!r->t_first)
		r->t_first = cn->io_ts;
	cn->tx_cur = 0;
}

static void tx_lost(void *ctx, const char *why)
{
	struct conn *cn = ctx;
	struct ls_request *r = tx_req(cn);

	cn->corr->st.http_sync_lost++;
	if (r) {
		mark_unparsed(cn, r, why);
		r->out_end = cn->tx->pos;
		r->t_out = cn->io_ts;
		cn->tx_unparsed = cn->tx_cur;
	}
	cn->tx_cur = 0;
}

static void tx_timings(void *ctx, const struct ls_http_timings *t)
{
	struct conn *cn = ctx;
	struct ls_request *r = tx_req(cn);

	if (r && t->has_timings) {
		r->has_timings = true;
		r->eng_prompt_ms = t->prompt_ms;
		r->eng_predicted_ms = t->predicted_ms;
	}
	if (r && t->has_usage) {
		r->usage_prompt = t->prompt_tokens;
		r->usage_completion = t->completion_tokens;
	}
}

static const struct ls_http_cb rx_cb = {
	.begin = rx_begin, .head = rx_head, .end = rx_end, .lost = rx_lost};
static const struct ls_http_cb tx_cb = {.begin = tx_begin,
					.head = tx_head,
					.body_start = tx_body_start,
					.event = tx_event,
					.end = tx_end,
					.lost = tx_lost,
					.timings = tx_timings};

/* ---- HTTP/2: each stream is a request ---- */

const char *ls_protocol_name(enum ls_protocol p)
{
	static const char *const names[] = {"http/1.1", "h2c", "grpc", "h2"};

	return (unsigned)p < sizeof(names) / sizeof(names[0]) ? names[p] : "?";
}

/* The request of stream id (the open one: ids are never reused). */
static struct ls_request *h2_stream(struct conn *cn, uint32_t stream)
{
	for (size_t i = cn->nreqs; i-- > 0;)
		if (cn->reqs[i]->stream == stream)
			return cn->reqs[i];
	return NULL;
}

static void h2_rx_headers(void *ctx, uint32_t stream, const struct ls_h2_headers *h, bool end)
{
	struct conn *cn = ctx;
	struct ls_request *r = h2_stream(cn, stream);

	if (!r) { /* a new stream: a new request */
		r = new_request(cn);
		r->stream = stream;
		r->protocol = LS_PROTO_H2C;
		r->partial = h->unknown; /* met mid-flight: its head cannot be read */
		r->in_begin = cn->h2rx->frame_begin;
		cn->next_resp = cn->nreqs;
		snprintf(r->method, sizeof(r->method), "%s", h->m.method);
		snprintf(r->path, sizeof(r->path), "%s", h->m.path);
		snprintf(r->x_request_id, sizeof(r->x_request_id), "%s", h->m.x_request_id);
		snprintf(r->traceparent, sizeof(r->traceparent), "%s", h->m.traceparent);
		snprintf(r->forwarded_for, sizeof(r->forwarded_for), "%s", h->m.forwarded_for);
		if (h->grpc)
			r->protocol = LS_PROTO_GRPC;
	}
	r->in_end = cn->h2rx->pos;
	r->h2_bytes_in += cn->h2rx->pos - cn->h2rx->frame_begin;
	if (end)
		r->t_read = cn->io_ts;
}

static void h2_rx_data(void *ctx, uint32_t stream, uint32_t len, bool done_marker, bool end)
{
	struct conn *cn = ctx;
	struct ls_request *r = h2_stream(cn, stream);

	(void)len, (void)done_marker;
	if (!r || r->t_read)
		return;
	r->in_end = cn->h2rx->pos;
	r->h2_bytes_in += cn->h2rx->pos - cn->h2rx->frame_begin;
	if (end)
		r->t_read = cn->io_ts;
}

static void h2_tx_headers(void *ctx, uint32_t stream, const struct ls_h2_headers *h, bool end)
{
	struct conn *cn = ctx;
	struct ls_request *r = h2_stream(cn, stream);

	if (!r && h->unknown && stream) { /* a stream begun before the capture */
		r = new_request(cn);
		r->stream = stream;
		r->protocol = LS_PROTO_H2C;
		r->partial = true;
		cn->next_resp = cn->nreqs;
	}
	if (!r || r->stream_over)
		return;
	if (h->unknown) { /* a head or trailers: what they said is not known */
		if (!r->out_begin)
			r->out_begin = cn->h2tx->frame_begin;
	} else if (!r->status) { /* the response head */
		r->status = h->m.status;
		r->streaming = h->m.sse || h->grpc;
		r->out_begin = cn->h2tx->frame_begin;
		if (!cn->io_blocked_taken) {
			add_blocked(r, cn->io_ts, cn->io_blocked, true);
			cn->io_blocked_taken = true;
		}
	}
	if (h->grpc_status >= 0)
		r->grpc_status = h->grpc_status;
	r->h2_bytes_out += cn->h2tx->pos - cn->h2tx->frame_begin;
	r->out_end = cn->h2tx->pos;
	r->t_out = cn->io_ts;
	if (end) {
		r->stream_over = true;
		if (!r->t_first)
			r->t_first = cn->io_ts;
	}
}

static void fc_spend(struct conn *cn, struct ls_request *r, uint32_t len);

/* Sets the marks tx_event and tx_end set on HTTP/1.1, for one stream. */
static void h2_tx_data(void *ctx, uint32_t stream, uint32_t len, bool done_marker, bool end)
{
	struct conn *cn = ctx;
	struct ls_request *r = h2_stream(cn, stream);

	if (!r || r->stream_over)
		return;
	r->h2_bytes_out += cn->h2tx->pos - cn->h2tx->frame_begin;
	r->out_end = cn->h2tx->pos;
	r->t_out = cn->io_ts;
	if (len && !r->streaming && !r->t_first) {
		r->t_first = cn->io_ts;
		r->first_tid = cn->io_tid;
		r->first_end = cn->h2tx->frame_begin + 10;
	}
	/* an event stream read whole: each "data:" event in the frame is a
	 * token (a proxy may put several in one frame); else each DATA frame
	 * with payload (gRPC: one message per frame) */
	if (r->streaming && cn->h2tx->data_sse && !cn->h2tx->data_unknown) {
		for (; r->sse_events; r->sse_events--)
			token_at(cn, r, cn->h2tx->pos);
	} else if (len && r->streaming && !done_marker) {
		token_at(cn, r, cn->h2tx->pos);
	}
	r->sse_events = 0;
	if (end) {
		r->stream_over = true;
		if (!r->t_first)
			r->t_first = cn->io_ts;
	}
	fc_spend(cn, r, cn->h2tx->len);
}

static void h2_tx_event(void *ctx, uint32_t stream, bool done)
{
	struct ls_request *r = h2_stream(ctx, stream);

	if (r && !done)
		r->sse_events++;
}

/* A DATA frame's length spent from the stream's and the connection's send
 * windows: one of them spent with the response not over, the stream can
 * send nothing until the client's WINDOW_UPDATE (RFC 9113 §6.9). */
static void fc_spend(struct conn *cn, struct ls_request *r, uint32_t len)
{
	if (cn->h2tx->midflight) /* windows met mid-flight are not known */
		return;
	if (!r->fc_init) {
		r->fc_window = cn->h2tx->init_window;
		r->fc_init = true;
	}
	r->fc_window -= len;
	cn->fc_conn -= len;
	if (r->stream_over)
		return;
	if (r->fc_window <= 0 && !r->fc_since)
		r->fc_since = cn->io_ts;
	if (cn->fc_conn <= 0 && !cn->fc_conn_since)
		cn->fc_conn_since = cn->io_ts;
}

/* The time a stream could send nothing, from its window spent to the read
 * of the WINDOW_UPDATE that reopened it: network.send_blocked (the client
 * did not take the bytes), as a write blocked on a full socket buffer. */
static void fc_reopen(struct conn *cn, struct ls_request *r, uint64_t since)
{
	if (since && !r->stream_over && cn->io_ts > since)
		add_blocked(r, cn->io_ts, cn->io_ts - since, !r->t_first);
}

static void h2_rx_window(void *ctx, uint32_t stream, uint32_t inc)
{
	struct conn *cn = ctx;
	struct ls_request *r;

	if (cn->h2tx->midflight)
		return;
	if (!stream) {
		cn->fc_conn += inc;
		if (cn->fc_conn > 0 && cn->fc_conn_since) {
			for (size_t i = 0; i < cn->nreqs; i++)
				if (cn->reqs[i]->status) /* its response begun: it had bytes to send */
					fc_reopen(cn, cn->reqs[i], cn->fc_conn_since);
			cn->fc_conn_since = 0;
		}
		return;
	}
	if (!(r = h2_stream(cn, stream)))
		return;
	if (!r->fc_init) {
		r->fc_window = cn->h2tx->init_window;
		r->fc_init = true;
	}
	r->fc_window += inc;
	if (r->fc_window > 0 && r->fc_since) {
		fc_reopen(cn, r, r->fc_since);
		r->fc_since = 0;
	}
}

/* RST_STREAM from either side: the stream is over, not answered. */
static void h2_reset(void *ctx, uint32_t stream)
{
	struct ls_request *r = h2_stream(ctx, stream);

	if (r && !r->stream_over)
		r->stream_over = r->stream_reset = true;
}

/* HPACK state lost: every open stream is unparsed, and so are later ones. */
static void h2_lost(void *ctx, const char *why)
{
	struct conn *cn = ctx;

	cn->corr->st.http_sync_lost++;
	if (!cn->nreqs)
		cn->opaque = true;
	for (size_t i = 0; i < cn->nreqs; i++)
		if (!cn->reqs[i]->stream_over) {
			mark_unparsed(cn, cn->reqs[i], why);
			cn->reqs[i]->stream_over = true;
		}
}

static const struct ls_h2_cb h2_rx_cb = {
	.headers = h2_rx_headers, .data = h2_rx_data, .reset = h2_reset, .window = h2_rx_window,
	.lost = h2_lost};
static const struct ls_h2_cb h2_tx_cb = {
	.headers = h2_tx_headers, .data = h2_tx_data, .reset = h2_reset, .event = h2_tx_event,
	.lost = h2_lost};

/* ---- records ---- */

static void on_state(struct ls_corr *c, const struct ls_ev_tcp_state *e)
{
	struct conn *cn = conn_get(c, e->conn_id);

	if (!cn)
		return;
	cn->tuple = e->t;
	cn->have_tuple = true;
	note_upstream(cn);
	if (e->newstate == 1 /* ESTABLISHED */ && !cn->have_seq) {
		cn->have_seq = true;
		cn->est_ts = e->h.ts;
		cn->est_srtt = e->srtt_us;
		cn->irs1 = e->rcv_nxt;
		cn->iss1 = e->snd_nxt;
		cn->acked = 0;
		/* SYN-ACK retransmits seen before this connection existed */
		for (size_t i = 0; i < c->nsynacks; i++) {
			struct synack *s = &c->synacks[i];
			if (s->t.sport != e->t.sport || s->t.dport != e->t.dport ||
			    memcmp(s->t.daddr, e->t.daddr, 16))
				continue;
			GROW(cn->rtx, cn->nrtx, cn->caprtx);
			cn->rtx[cn->nrtx++] = s->r;
			uint64_t first = s->r.seq ? s->r.ts - (uint64_t)s->r.seq * 1000 : 0;
			if (first && (!cn->synack0 || first < cn->synack0))
				cn->synack0 = first;
			c->synacks[i--] = c->synacks[--c->nsynacks];
		}
	} else if (cn->have_seq) {
		/* After the app closes, ACKs are processed outside the
		 * established path and tcp_probe is silent; the state change
		 * that an ACK causes (FIN_WAIT1 -> FIN_WAIT2, LAST_ACK -> CLOSE)
		 * carries snd_una, and our FIN follows every data byte. */
		uint64_t a = unwrap(e->snd_una, cn->iss1, cn->acked);
		if (a > cn->acked) {
			cn->acked = a;
			push_point(&cn->acks, e->h.ts, a);
		}
	}
}

static void on_adopt(struct ls_corr *c, const struct ls_ev_conn_adopt *e)
{
	struct conn *cn = conn_get(c, e->conn_id);

	if (!cn)
		return;
	if (e->via == LS_ADOPT_UNIX) { /* streams begin at this request; no TCP */
		if (!cn->rx)
			cn->unix_sk = true, c->st.conns_unix++;
		return;
	}
	cn->tuple = e->t;
	cn->have_tuple = true;
	if (cn->have_seq || cn->rx)
		return;
	c->st.conns_adopted++;
	cn->have_seq = true;
	/* Accepted: the streams start here. Else the app was mid-stream. */
	cn->adopted = e->via != LS_ADOPT_ACCEPT;
	cn->irs1 = e->copied_seq;
	cn->iss1 = e->write_seq;
	cn->acked = 0;
	GROW(cn->srtt, cn->nsrtt, cn->capsrtt);
	cn->srtt[cn->nsrtt++] = (struct srtt_sample){e->h.ts, e->srtt_us};
	/* No handshake seen: the kernel's minimum RTT is the path's (the srtt
	 * samples to come may each hold a delayed ACK's wait). */
	if (e->h.size >= sizeof(*e) && e->rtt_min_us &&
	    (!cn->srtt_floor || e->rtt_min_us < cn->srtt_floor))
		cn->srtt_floor = e->rtt_min_us;
	/* Bytes queued and not read yet arrived before this instant. */
	cn->pre_bytes = (uint32_t)(e->rcv_nxt - e->copied_seq);
	if (cn->pre_bytes > (1u << 30))
		cn->pre_bytes = 0;
	if (cn->pre_bytes) {
		cn->frontier = cn->pre_bytes;
		push_point(&cn->arrivals, e->h.ts, cn->frontier);
	}
}

/* Bytes [seq, seq + len) of the response stream handed to the device at ts. */
static void add_xmit(struct conn *cn, uint64_t ts, uint32_t seq, uint32_t len, bool small_nagle,
		     bool rwnd)
{
	uint64_t b;

	if (!cn->have_seq || !len)
		return;
	b = unwrap(seq, cn->iss1, cn->acked);
	GROW(cn->xm, cn->nxm, cn->capxm);
	cn->xm[cn->nxm++] = (struct xmit){
		.ts = ts, .b = b, .e = b + len, .small_nagle = small_nagle, .rwnd = rwnd};
}

static void on_xmit(struct conn *cn, const struct ls_ev_tcp_xmit *e)
{
	__u32 holds = ls_xmit_holds(e);

	add_xmit(cn, e->h.ts, e->seq, e->len, holds & LS_IO_XMIT_NAGLE, holds & LS_IO_XMIT_RWND);
}

/* A write that carries its own transmission (events.h, ABI 5): all its
 * bytes left in one segment inside the call. */
static void on_io_xmit(struct conn *cn, const struct ls_ev_sock_io *e)
{
	if (!(e->xmit & LS_IO_XMIT) || e->dir != LS_IO_OUT)
		return;
	add_xmit(cn, e->ts_enter + (e->xmit & LS_IO_XMIT_DT), e->seq, e->bytes,
		 e->xmit & LS_IO_XMIT_NAGLE, e->xmit & LS_IO_XMIT_RWND);
}

/* A segment arrived at ts (a tcp_probe, or a read's folded arrival): its
 * RTT sample, the ACK it carries and the bytes [seq, seq + data_len). */
static void on_arrival(struct conn *cn, uint64_t ts, uint32_t srtt_us, uint32_t flags,
		       uint32_t ack_seq, uint32_t seq, uint32_t data_len)
{
	GROW(cn->srtt, cn->nsrtt, cn->capsrtt);
	cn->srtt[cn->nsrtt++] = (struct srtt_sample){ts, srtt_us};
	if (srtt_us && (!cn->srtt_floor || srtt_us < cn->srtt_floor))
		cn->srtt_floor = srtt_us;
	if (!cn->have_seq)
		return;
	if (flags & 0x10) { /* ACK */
		uint64_t a = unwrap(ack_seq, cn->iss1, cn->acked);
		if (a > cn->acked) {
			cn->acked = a;
			push_point(&cn->acks, ts, a);
		}
	}
	if (!data_len)
		return;
	uint64_t b = unwrap(seq, cn->irs1, cn->frontier), end = b + data_len;

	/* Data that came with the handshake's ACK is processed before any
	 * tcp_probe fires: it was there at ESTABLISHED. */
	if (!cn->arrivals.n && b > cn->frontier && !cn->nooo && !cn->adopted) {
		cn->frontier = b;
		push_point(&cn->arrivals, cn->est_ts, b);
	}
	if (b <= cn->frontier && end > cn->frontier) {
		cn->frontier = end;
		for (bool merged = true; merged;) {
			merged = false;
			for (int i = 0; i < cn->nooo; i++) {
				if (cn->ooo[i].b <= cn->frontier) {
					if (cn->ooo[i].e > cn->frontier)
						cn->frontier = cn->ooo[i].e;
					cn->ooo[i--] = cn->ooo[--cn->nooo];
					merged = true;
				}
			}
		}
		push_point(&cn->arrivals, ts, cn->frontier);
	} else if (b > cn->frontier && cn->nooo < 16) {
		cn->ooo[cn->nooo].b = b;
		cn->ooo[cn->nooo].e = end;
		cn->nooo++;
	}
}

static void on_probe(struct conn *cn, const struct ls_ev_tcp_probe *e)
{
	on_arrival(cn, e->h.ts, e->srtt_us, e->flags, e->ack_seq, e->seq, e->data_len);
}

/* A read that carries its bytes' segment's arrival (events.h, ABI 6).
 * True when it did. */
static bool on_io_arrival(struct conn *cn, const struct ls_ev_sock_io *e)
{
	if (!e->arrive_dt || e->dir != LS_IO_IN || e->arrive_dt > e->h.ts)
		return false;
	on_arrival(cn, e->h.ts - e->arrive_dt, e->arrive_srtt_us, e->arrive_len_flags & 0xff,
		   e->arrive_ack, e->seq, e->arrive_len_flags >> 8);
	return true;
}

/* An HTTP/2 connection is known by its first payload: a preface; one met
 * mid-flight by a payload of whole frames, before any HTTP/1.1 message. */
static bool ensure_h2(struct conn *cn, const struct ls_ev_sock_io *e)
{
	struct ls_io_piece piece[LS_IO_MAX_PIECES];
	uint8_t whole[LS_IO_MAX_CAPTURE];
	bool midflight = false;
	size_t n;

	if (cn->h2rx)
		return true;
	if (cn->adopted && !cn->nreqs && !cn->tx_synced) {
		if (cn->h2_probes >= 16) /* as the recorder: it stops testing there */
			return false;
		cn->h2_probes++;
		n = ls_io_whole(e, e->h.size, whole, sizeof(whole));
		midflight = ls_h2_whole_frames(whole, n, n);
		if (!midflight)
			return false;
	} else if (cn->rx || cn->adopted || ls_io_pieces(e, e->h.size, piece) < 1 ||
		   !ls_h2_starts(piece[0].data, piece[0].known, e->dir == LS_IO_IN)) {
		return false;
	}
	if (cn->rx) { /* the HTTP/1.1 parsers were waiting for a message: no more */
		free(cn->rx), free(cn->tx);
		cn->rx = cn->tx = NULL;
	}
	cn->h2rx = malloc(sizeof(*cn->h2rx));
	cn->h2tx = malloc(sizeof(*cn->h2tx));
	if (!cn->h2rx || !cn->h2tx || ls_h2_init(cn->h2rx, true, &h2_rx_cb, cn) ||
	    ls_h2_init(cn->h2tx, false, &h2_tx_cb, cn))
		abort();
	cn->h2rx->peer = cn->h2tx;
	cn->h2tx->peer = cn->h2rx;
	cn->fc_conn = 65535; /* the connection's window, changed by WINDOW_UPDATE only */
	if (midflight) {
		ls_h2_midflight(cn->h2rx);
		ls_h2_midflight(cn->h2tx);
		cn->corr->st.conns_h2_midflight++;
	}
	cn->http = true;
	return true;
}

/* on_io for an HTTP/2 connection: frames of both directions. */
static void on_h2_io(struct conn *cn, const struct ls_ev_sock_io *e)
{
	struct ls_io_piece piece[LS_IO_MAX_PIECES];
	struct ls_h2 *p = e->dir == LS_IO_IN ? cn->h2rx : cn->h2tx;
	uint32_t base = e->dir == LS_IO_IN ? cn->irs1 : cn->iss1;
	int n;

	if (cn->have_seq && e->bytes && !cn->tls) { /* bytes moved with no record: a gap */
		int32_t gap = (int32_t)(e->seq - (base + (uint32_t)p->pos));
		if (gap > 0) {
			cn->corr->st.unseen_bytes += (uint32_t)gap;
			ls_h2_feed(p, NULL, 0, (uint32_t)gap);
		}
	}
	cn->pid = e->h.pid;
	cn->io_ts = e->h.ts;
	cn->io_tid = e->h.tid;
	if (e->dir == LS_IO_IN && !e->bytes) {
		cn->peer_eof = true;
		return;
	}
	cn->io_blocked = e->dir == LS_IO_OUT ? e->blocked_ns : 0;
	cn->io_blocked_taken = false;
	n = ls_io_pieces(e, e->h.size, piece);
	cn->io = e;
	for (int i = 0; i < n; i++)
		ls_h2_feed(p, piece[i].data, piece[i].known, piece[i].total);
	cn->io = NULL;
}

static void ensure_parsers(struct conn *cn)
{
	if (cn->rx)
		return;
	cn->rx = malloc(sizeof(*cn->rx));
	cn->tx = malloc(sizeof(*cn->tx));
	if (!cn->rx || !cn->tx)
		abort();
	ls_http_init(cn->rx, LS_HTTP_REQUEST, &rx_cb, cn);
	ls_http_init(cn->tx, LS_HTTP_RESPONSE, &tx_cb, cn);
	if (cn->adopted) {
		ls_http_resync(cn->rx);
		ls_http_resync(cn->tx);
	}
}

/* Bytes of this direction moved before e without a record: fed as a gap,
 * so stream offsets stay sequence offsets. */
static void feed_unseen(struct conn *cn, struct ls_http_parser *p, uint32_t base,
			const struct ls_ev_sock_io *e)
{
	int32_t gap;

	/* EOF: reading the FIN advanced copied_seq by its own sequence number;
	 * plaintext has no sequence numbers */
	if (!cn->have_seq || !e->bytes || cn->tls)
		return;
	gap = (int32_t)(e->seq - (base + (uint32_t)p->pos));
	if (gap <= 0)
		return;
	cn->corr->st.unseen_bytes += (uint32_t)gap;
	if (ls_http_in_message(p) || p->st == LS_HTTP_ST_START)
		ls_http_feed(p, NULL, 0, (uint32_t)gap);
	else
		p->pos += (uint32_t)gap; /* already skipping to the next start line */
}

/* An adopted connection was mid-response when met: that response's request
 * is shown as partial (its bytes and last write), never split. */
static void note_inflight_response(struct conn *cn, const struct ls_ev_sock_io *e)
{
	struct ls_request *r;

	if (!cn->tx_inflight) {
		if (cn->next_resp < cn->nreqs)
			return; /* pipelined requests already read: cannot tell whose */
		r = new_request(cn);
		r->partial = true;
		cn->tx_inflight = cn->nreqs;
		cn->next_resp = cn->nreqs;
	}
	r = cn->reqs[cn->tx_inflight - 1];
	r->t_out = e->h.ts;
	r->out_end += e->bytes;
}

/* The call's bytes, piece by piece, into p. cn->io names the call only
 * while it is fed: an unparsed request's reason reads it. */
static void feed_call(struct conn *cn, struct ls_http_parser *p, const struct ls_ev_sock_io *e)
{
	struct ls_io_piece piece[LS_IO_MAX_PIECES];
	int n = ls_io_pieces(e, e->h.size, piece);

	cn->io = e;
	for (int i = 0; i < n; i++)
		ls_http_feed(p, piece[i].data, piece[i].known, piece[i].total);
	cn->io = NULL;
}

/* An upstream connection's tuple, once both are known. */
static void note_upstream(struct conn *cn)
{
	struct ls_corr *c = cn->corr;

	if (!cn->upstream || !cn->have_tuple || cn->up_slot)
		return;
	c->up[c->nup % UPSTREAM_ENDS] = (struct upstream_end){.t = cn->tuple, .pid = cn->pid};
	cn->up_slot = ++c->nup;
}

/* An upstream connection's I/O: a request written on it starts a new
 * response; a response read, per thread: the served connection the thread
 * writes to next is where the proxy passes it on (its client's). */
static void note_upstream_io(struct conn *cn, const struct ls_ev_sock_io *e)
{
	struct ls_corr *c = cn->corr;
	struct last_read *l;

	if (!cn->up_slot || c->nup - cn->up_slot >= UPSTREAM_ENDS || !e->bytes)
		return;
	if (e->dir == LS_IO_OUT) { /* a request forwarded: its response is a new one */
		c->up[(cn->up_slot - 1) % UPSTREAM_ENDS].fresh = true;
		return;
	}
	if (!e->h.tid)
		return;
	if (!(l = ls_idmap_get(&c->last_rd, e->h.tid))) {
		if (c->last_rd.n >= LAST_READS || !(l = calloc(1, sizeof(*l))))
			return; /* a hop then pairs by time alone */
		if (ls_idmap_put(&c->last_rd, e->h.tid, l)) {
			free(l);
			return;
		}
	}
	l->slot = cn->up_slot;
	l->ts = e->h.ts;
}

/* A write on a served connection right after (within a second) the same
 * thread read a response on an upstream one: that response goes to this
 * connection's client. */
static void note_forward(struct conn *cn, const struct ls_ev_sock_io *e)
{
	struct ls_corr *c = cn->corr;
	struct last_read *l;
	struct upstream_end *u;

	if (!c->last_rd.n) /* no thread read a response upstream: every I/O of a plain server */
		return;
	if (!e->h.tid || e->dir != LS_IO_OUT || !e->bytes || !(l = ls_idmap_get(&c->last_rd, e->h.tid)) ||
	    !l->slot || c->nup - l->slot >= UPSTREAM_ENDS || l->ts > e->h.ts ||
	    e->h.ts - l->ts > 1000000000ull)
		return;
	u = &c->up[(l->slot - 1) % UPSTREAM_ENDS];
	l->slot = 0; /* taken: the thread's next write is not this one's */
	if (!u->fresh && u->nfw && u->fw[(u->nfw - 1) % UPSTREAM_FW].conn == cn->id)
		return; /* more of the same response */
	u->fresh = false;
	u->fw[u->nfw % UPSTREAM_FW].ts = e->h.ts;
	u->fw[u->nfw % UPSTREAM_FW].conn = cn->id;
	u->nfw++;
}

/* When a server's connection's other end is a tracked process's upstream
 * connection: that process, and the connection it passed r's response on
 * to (0 when unknown). */
static void peer_proxy(const struct ls_corr *c, const struct ls_tuple *t, struct ls_request *r)
{
	size_t n = c->nup < UPSTREAM_ENDS ? c->nup : UPSTREAM_ENDS;

	for (size_t k = 0; k < n; k++) { /* the newest first: ports are reused */
		const struct upstream_end *u = &c->up[(c->nup - 1 - k) % UPSTREAM_ENDS];
		uint64_t best = UINT64_MAX;
		if (u->t.sport != t->dport || u->t.dport != t->sport ||
		    memcmp(u->t.saddr, t->daddr, 16) || memcmp(u->t.daddr, t->saddr, 16))
			continue;
		r->peer_pid = u->pid;
		/* the first response passed on after r was read */
		for (uint32_t f = 0; f < u->nfw && f < UPSTREAM_FW; f++)
			if (u->fw[f].ts >= r->t_read && u->fw[f].ts < best) {
				best = u->fw[f].ts;
				r->peer_conn = u->fw[f].conn;
			}
		return;
	}
}

/* A connection whose first payload is a request the tracked process wrote
 * (HTTP/1.1 or HTTP/2's preface): a proxy's hop to its upstream, or the
 * process's own client call. Its requests are not this process's to split. */
static bool is_upstream(struct conn *cn, const struct ls_ev_sock_io *e)
{
	struct ls_io_piece piece[LS_IO_MAX_PIECES];

	if (cn->upstream)
		return true;
	if (cn->rx || cn->h2rx || cn->adopted || e->dir != LS_IO_OUT ||
	    ls_io_pieces(e, e->h.size, piece) < 1)
		return false;
	cn->upstream = ls_http_starts_message(LS_HTTP_REQUEST, piece[0].data, piece[0].known) ||
		       ls_h2_starts(piece[0].data, piece[0].known, true);
	if (cn->upstream)
		cn->pid = e->h.pid;
	note_upstream(cn);
	return cn->upstream;
}

static bool is_plain(const struct ls_ev_sock_io *e)
{
	return e->call == LS_IO_SSL_READ || e->call == LS_IO_SSL_WRITE;
}

static void push_anchor(struct conn *cn, int d, uint64_t pt, uint64_t ct)
{
	GROW(cn->anch[d], cn->nanch[d], cn->capanch[d]);
	cn->anch[d][cn->nanch[d]++] = (struct tls_anchor){pt, ct};
}

/* Is this a TLS connection: plaintext came through libssl for it, or its
 * first bytes in are a TLS handshake record. */
static bool tls_detect(struct conn *cn, const struct ls_ev_sock_io *e)
{
	struct ls_io_piece piece[LS_IO_MAX_PIECES];

	if (cn->tls || is_plain(e)) {
		if (!cn->tls && (cn->rx || cn->h2rx)) { /* ciphertext went to the parsers */
			free(cn->rx), free(cn->tx);
			cn->rx = cn->tx = NULL;
		}
		return cn->tls = true;
	}
	if (cn->rx || cn->h2rx || e->dir != LS_IO_IN || ls_io_pieces(e, e->h.size, piece) < 1 ||
	    piece[0].known < 3)
		return false;
	return cn->tls = piece[0].data[0] == 0x16 && piece[0].data[1] == 3 && piece[0].data[2] <= 4;
}

/* A TLS connection's ciphertext: where each stream is on the wire (the
 * plaintext written before it went out in it), EOF, a blocked write. */
static void on_cipher(struct conn *cn, const struct ls_ev_sock_io *e)
{
	int d = e->dir == LS_IO_OUT;

	cn->pid = e->h.pid;
	if (!d && !e->bytes) {
		cn->peer_eof = true;
		if (cn->rx)
			ls_http_eof(cn->rx);
		return;
	}
	if (cn->have_seq)
		cn->ct_pos[d] = unwrap(e->seq + e->bytes, d ? cn->iss1 : cn->irs1, cn->ct_pos[d]);
	else
		cn->ct_pos[d] += e->bytes;
	if (!d)
		return;
	for (size_t i = cn->nanch[1]; i-- > 0 && cn->anch[1][i].ct == UINT64_MAX;)
		cn->anch[1][i].ct = cn->ct_pos[1];
	cn->ct_out_ts = e->h.ts;
	cn->ct_out_tid = e->h.tid;
	if (cn->tx_cur && e->blocked_ns) { /* a write of the response in progress */
		struct ls_request *r = cn->reqs[cn->tx_cur - 1];
		add_blocked(r, e->h.ts, e->blocked_ns, !r->t_first);
	}
}

/* Plaintext about to be parsed: its anchor. Read, it came in the
 * ciphertext read so far; written, in the ciphertext the same thread wrote
 * inside the call (a socket BIO), else in the next one (a memory BIO). */
static void plain_anchor(struct conn *cn, const struct ls_ev_sock_io *e)
{
	int d = e->dir == LS_IO_OUT;
	bool inside = cn->ct_out_tid == e->h.tid && cn->ct_out_ts >= e->ts_enter;

	cn->pt_pos[d] += e->bytes;
	push_anchor(cn, d, cn->pt_pos[d], !d || inside ? cn->ct_pos[d] : UINT64_MAX);
}

static void on_io(struct conn *cn, const struct ls_ev_sock_io *e)
{
	struct ls_http_parser *p;

	if (tls_detect(cn, e)) {
		if (!is_plain(e)) {
			on_cipher(cn, e);
			return;
		}
		plain_anchor(cn, e);
	}
	if (is_upstream(cn, e)) {
		note_upstream_io(cn, e);
		return;
	}
	note_forward(cn, e);
	if (ensure_h2(cn, e)) {
		on_h2_io(cn, e);
		return;
	}
	ensure_parsers(cn);
	p = e->dir == LS_IO_IN ? cn->rx : cn->tx;
	feed_unseen(cn, p, e->dir == LS_IO_IN ? cn->irs1 : cn->iss1, e);
	cn->pid = e->h.pid;
	cn->io_ts = e->h.ts;
	cn->io_tid = e->h.tid;
	if (e->dir == LS_IO_IN) {
		if (!e->bytes) {
			cn->peer_eof = true;
			ls_http_eof(cn->rx);
			return;
		}
		feed_call(cn, p, e);
		if (cn->rx_unparsed && !cn->rx_cur) /* the rest of a request the parser lost */
			cn->reqs[cn->rx_unparsed - 1]->in_end = p->pos;
		return;
	}
	cn->io_blocked = e->blocked_ns;
	cn->io_blocked_taken = false;
	/* A write continuing a response: its blocked time is that response's. */
	if (cn->tx_cur && e->blocked_ns) {
		struct ls_request *r = cn->reqs[cn->tx_cur - 1];
		add_blocked(r, e->h.ts, e->blocked_ns, !r->t_first);
		cn->io_blocked_taken = true;
	}
	bool skipping = cn->adopted && !cn->tx_synced && cn->tx->st == LS_HTTP_ST_LOST;
	feed_call(cn, p, e);
	if (skipping && cn->tx->st == LS_HTTP_ST_LOST)
		note_inflight_response(cn, e);
	else if (cn->tx_unparsed && (cn->tx->st == LS_HTTP_ST_LOST || cn->tx->st == LS_HTTP_ST_OPAQUE)) {
		/* bytes of a response the parser lost: still its bytes and its last write */
		struct ls_request *r = cn->reqs[cn->tx_unparsed - 1];
		r->out_end = cn->tx->pos;
		r->t_out = e->h.ts;
	}
}

static void on_retrans(struct ls_corr *c, const struct ls_ev_tcp_retrans *e)
{
	struct retrans r = {e->h.ts, e->seq, e->segs, e->kind == LS_RETRANS_SYNACK};
	struct conn *cn = e->conn_id ? conn_get(c, e->conn_id) : NULL;

	if (cn) {
		GROW(cn->rtx, cn->nrtx, cn->caprtx);
		cn->rtx[cn->nrtx++] = r;
		return;
	}
	GROW(c->synacks, c->nsynacks, c->capsynacks);
	c->synacks[c->nsynacks++] = (struct synack){e->t, r};
}

/* ---- finishing a connection: marks, attribution, emission ---- */

static void srtt_stats(const struct conn *cn, struct ls_request *r)
{
	uint64_t lo = r->t_start, hi = r->t_end ? r->t_end : r->t_out, sum = 0;
	uint32_t n = 0, mn = UINT32_MAX, mx = 0, before = 0;

	for (size_t i = 0; i < cn->nsrtt; i++) {
		const struct srtt_sample *s = &cn->srtt[i];
		if (s->ts < lo) {
			before = s->us;
			continue;
		}
		if (hi && s->ts > hi)
			break;
		if (!s->us)
			continue;
		n++;
		sum += s->us;
		mn = s->us < mn ? s->us : mn;
		mx = s->us > mx ? s->us : mx;
	}
	if (!n && (before || cn->est_srtt)) { /* no sample inside: the last one before */
		n = 1;
		mn = mx = sum = before ? before : cn->est_srtt;
	}
	if (n) {
		r->srtt_min_us = mn;
		r->srtt_max_us = mx;
		r->srtt_avg_us = sum / n;
	}
}

static void attribute_retransmits(struct ls_corr *c, struct conn *cn)
{
	for (size_t i = 0; i < cn->nrtx; i++) {
		const struct retrans *x = &cn->rtx[i];
		struct ls_request *r = NULL;

		if (!cn->nreqs) {
			c->st.retrans_unattributed += x->segs;
			continue;
		}
		if (x->synack) {
			r = cn->reqs[0];
		} else if (cn->have_seq) {
			uint64_t off = unwrap(x->seq, cn->iss1, cn->acked);
			for (size_t k = 0; k < cn->nreqs && !r; k++)
				if (wire_end(cn, 1, cn->reqs[k]->out_end) > off)
					r = cn->reqs[k];
		} else {
			for (size_t k = 0; k < cn->nreqs && !r; k++)
				if (cn->reqs[k]->t_end >= x->ts || !cn->reqs[k]->t_end)
					r = cn->reqs[k];
		}
		if (!r)
			r = cn->reqs[cn->nreqs - 1];
		r->retransmits += x->segs;
	}
}

/* Delivery (DESIGN.md §6): TCP hands bytes over in order, so the client
 * could read byte `off` once every byte of the response up to it had
 * arrived: the last transmission of any byte in [from, off] (a loss
 * before it holds it back until the retransmission), plus half the
 * connection's smallest smoothed RTT (the path's one-way delay with the
 * least queueing), and never later than the ACK covering it (`ack`, 0:
 * none). Error: the one-way delay's deviation from half that RTT (path
 * asymmetry, queueing at that instant): at most the srtt spread, usually
 * well under a millisecond on a LAN; on loopback RTT/2 is microseconds.
 * first_tx, last_tx (optional): the first and last transmission of byte
 * `off` itself.
 * 0: no transmission record covers it. */
static uint64_t delivered(const struct conn *cn, uint64_t from, uint64_t off, uint64_t ack,
			  uint64_t *first_tx, uint64_t *last_tx, size_t *first_i)
{
	uint64_t last = 0, first = 0, self = 0;
	size_t fi = 0;

	for (size_t i = 0; i < cn->nxm; i++) {
		const struct xmit *x = &cn->xm[i];
		if (x->b > off || x->e <= from)
			continue;
		if (x->ts > last)
			last = x->ts;
		if (x->e <= off)
			continue;
		/* byte off itself; sent inside the write syscall: before the
		 * write's exit */
		if (!first || x->ts < first) {
			first = x->ts;
			fi = i;
		}
		if (x->ts > self)
			self = x->ts;
	}
	if (!last || !first)
		return 0;
	if (first_tx)
		*first_tx = first;
	if (last_tx)
		*last_tx = self;
	if (first_i)
		*first_i = fi;
	uint64_t d = last + (uint64_t)cn->srtt_floor * 500; /* half the RTT, us -> ns */
	return ack && ack < d ? (ack > last ? ack : last) : d;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

#define HOLD_NS 1000000ull /* a token that waited 1 ms or more to be sent */

/* T_first_dlv, T_dlv, and each token's wire delay (write to delivery) with
 * why it was held: a first transmission 1 ms or more after the write is a
 * hold, by Nagle when that segment was short with TCP_NODELAY off, else by
 * the receiver's window when it could not take the bytes, else by the
 * congestion window; a token sent again was held by a loss. */
static void delivery(struct conn *cn, struct ls_request *r)
{
	uint64_t *w;
	uint32_t n = 0;

	if (!cn->nxm)
		return;
	uint64_t from = wire_begin(cn, 1, r->out_begin);

	if (r->out_end && r->t_end)
		r->t_dlv = delivered(cn, from, wire_end(cn, 1, r->out_end) - 1, r->t_end, NULL, NULL, NULL);
	if (r->first_end && r->t_first) {
		uint64_t ack = time_past_end(cn, &cn->acks, 1, r->first_end);
		r->t_first_dlv = delivered(cn, from, wire_end(cn, 1, r->first_end) - 1, ack, NULL, NULL,
					   NULL);
		if (r->t_first_dlv && r->t_first_dlv < r->t_first)
			r->t_first_dlv = r->t_first; /* sent inside the write: delivered after its exit */
	}
	if (!r->ntok || !(w = malloc(r->ntok * sizeof(*w))))
		return;
	for (uint32_t i = 0; i < r->ntok; i++) {
		uint64_t ts = r->tok[i][0], off = wire_end(cn, 1, r->tok[i][1]), first = 0, last_tx = 0,
			 ack, d;
		size_t fi = 0;
		if (!off || off == UINT64_MAX)
			continue;
		ack = time_past(&cn->acks, off - 1);
		d = delivered(cn, from, off - 1, ack, &first, &last_tx, &fi);
		if (!d)
			continue;
		w[n++] = d > ts ? d - ts : 0;
		if (i == 0)
			r->wire_first_ns = w[n - 1];
		if (last_tx > first)
			r->holds[LS_HOLD_RETRANS]++;
		else if (first > ts && first - ts >= HOLD_NS)
			r->holds[cn->xm[fi].small_nagle ? LS_HOLD_NAGLE
				  : cn->xm[fi].rwnd     ? LS_HOLD_RWND
							: LS_HOLD_CWND]++;
	}
	if (n) {
		qsort(w, n, sizeof(*w), cmp_u64);
		r->have_wire = true;
		r->wire_p50_ns = w[n / 2];
		r->wire_max_ns = w[n - 1];
	}
	free(w);
}

static void finish_request(struct conn *cn, struct ls_request *r, bool capture_end)
{
	if (cn->have_seq) {
		if (r->in_end > r->in_begin)
			r->t_in = time_past_end(cn, &cn->arrivals, 0, r->in_end);
		if (r->in_end > r->in_begin)
			r->t_start = time_past(&cn->arrivals, wire_begin(cn, 0, r->in_begin));
		/* A new connection's first request also holds the handshake: it
		 * began with the first SYN-ACK, est - srtt when none was lost (a
		 * retransmitted one tells its own time), and ended at est. What
		 * the client did between est and its first byte is its own
		 * time, outside the total. */
		if (r->first_on_conn && cn->est_ts) {
			uint64_t syn = cn->est_ts - (uint64_t)cn->est_srtt * 1000;
			if (cn->synack0 && cn->synack0 < syn)
				syn = cn->synack0;
			if (!r->t_start || r->t_start < cn->est_ts)
				r->t_start = cn->est_ts; /* bytes that came with the handshake's ACK */
			r->connect_ns = cn->est_ts - syn;
			r->connect_idle_ns = r->t_start - cn->est_ts;
		}
		if (r->out_end && (!r->stream || r->stream_over))
			r->t_end = time_past_end(cn, &cn->acks, 1, r->out_end);
	}
	/* A unix socket: no wire. The request is whole on the host when the
	 * app's read returns it (when its bytes entered the socket's queue no
	 * tracepoint tells: queueing.socket is unobserved); a response byte is
	 * in the peer's queue when the write returns. */
	if (cn->unix_sk) {
		r->transport_unix = true;
		r->t_start = r->t_in = r->t_read;
		if (r->t_out && !r->unparsed_why[0]) /* the response's end was written */
			r->t_end = r->t_dlv = r->t_out;
		r->t_first_dlv = r->t_end ? r->t_first : 0;
		snprintf(r->client, sizeof(r->client), "unix");
		snprintf(r->server, sizeof(r->server), "unix");
	}
	r->tls = cn->tls;
	if (r->tls && r->protocol == LS_PROTO_H2C)
		r->protocol = LS_PROTO_H2;
	/* Without sequence anchors, the app's own read is the best start. */
	if (!r->t_start)
		r->t_start = r->t_in ? r->t_in : r->t_read;
	r->bytes_in = r->in_end > r->in_begin ? r->in_end - r->in_begin : 0;
	r->bytes_out = r->out_end > r->out_begin ? r->out_end - r->out_begin : 0;
	if (r->stream) { /* its own frames, not the streams' interleaved with it */
		r->bytes_in = r->h2_bytes_in;
		r->bytes_out = r->h2_bytes_out;
	}
	/* Adopted mid-flight: a request whose first bytes were queued before
	 * the capture met the connection began before it. */
	if (cn->adopted && r->in_end > r->in_begin && r->in_begin < cn->pre_bytes)
		r->partial = true;
	if (r->partial)
		r->outcome = LS_REQ_PARTIAL;
	else if (r->unparsed_why[0])
		r->outcome = LS_REQ_UNPARSED;
	else if (r->stream_reset) /* an HTTP/2 stream either side gave up */
		r->outcome = LS_REQ_ABORTED;
	else if (r->t_end)
		r->outcome = LS_REQ_OK;
	else if (cn->reset)
		r->outcome = LS_REQ_RESET;
	else if (capture_end)
		r->outcome = LS_REQ_INCOMPLETE;
	else if (r->out_end)
		r->outcome = LS_REQ_UNACKED;
	else if (cn->peer_eof || (r->in_end && r->out_begin))
		r->outcome = LS_REQ_ABORTED;
	else
		r->outcome = LS_REQ_NO_RESPONSE;
	if (r->outcome == LS_REQ_NO_RESPONSE && !r->in_end)
		r->outcome = LS_REQ_ABORTED;
	if (cn->have_tuple) {
		ls_addr_str(cn->tuple.daddr, cn->tuple.dport, r->client, sizeof(r->client));
		ls_addr_str(cn->tuple.saddr, cn->tuple.sport, r->server, sizeof(r->server));
		if (cn->corr->nup)
			peer_proxy(cn->corr, &cn->tuple, r);
	}
	r->resets = cn->resets;
	srtt_stats(cn, r);
	if (cn->have_seq)
		delivery(cn, r);
}

/* Drops transmissions of bytes before `upto` (no later response has them). */
static void trim_xmits(struct conn *cn, uint64_t upto)
{
	size_t k = 0;

	for (size_t i = 0; i < cn->nxm; i++)
		if (cn->xm[i].e > upto)
			cn->xm[k++] = cn->xm[i];
	cn->nxm = k;
}

/* Hands the first k requests of a connection over, and frees them. */
static void emit_requests(struct ls_corr *c, struct conn *cn, size_t k)
{
	for (size_t i = 0; i < k; i++) {
		c->st.requests++;
		c->st.requests_partial += cn->reqs[i]->partial;
		if (cn->reqs[i]->outcome == LS_REQ_UNPARSED && !c->st.requests_unparsed++)
			memcpy(c->st.unparsed_why, cn->reqs[i]->unparsed_why, sizeof(c->st.unparsed_why));
		if (c->emit)
			c->emit(c->ctx, cn->reqs[i]);
		else
			ls_request_release(cn->reqs[i]);
		free(cn->reqs[i]);
	}
}

/* Drops the TLS anchors no plaintext offset from `from` on needs (the
 * one before it stays: wire_begin reads it). */
static void trim_anchors(struct conn *cn, int d, uint64_t from)
{
	size_t k = 0;

	while (k + 1 < cn->nanch[d] && cn->anch[d][k + 1].pt <= from)
		k++;
	if (k) {
		memmove(cn->anch[d], cn->anch[d] + k, (cn->nanch[d] - k) * sizeof(**cn->anch));
		cn->nanch[d] -= k;
	}
}

/* Drops the points no later request can ask for: time_past(p, off) for off
 * >= `keep_above` never returns a point at or below it. */
static void trim_points(struct points *p, uint64_t keep_above)
{
	size_t k = 0;

	while (k < p->n && p->v[k].off <= keep_above)
		k++;
	if (k) {
		memmove(p->v, p->v + k, (p->n - k) * sizeof(*p->v));
		p->n -= k;
	}
}

/* The first k requests of a connection leave before it ends: marks, their
 * retransmits, emission; then the connection forgets what only they needed,
 * so memory holds per open request, not per request served. */
static void emit_first(struct ls_corr *c, struct conn *cn, size_t k)
{
	const struct ls_request *last = cn->reqs[k - 1];
	uint64_t out_end = last->out_end, in_end = last->in_end, t0;
	size_t keep = 0;

	/* HTTP/2 streams interleave: keep what a later stream's bytes need */
	for (size_t i = k; cn->h2rx && i < cn->nreqs; i++) {
		const struct ls_request *r = cn->reqs[i];
		if (r->in_begin < in_end)
			in_end = r->in_begin;
		if (r->out_begin && r->out_begin < out_end)
			out_end = r->out_begin;
	}

	for (size_t i = 0; i < k; i++)
		finish_request(cn, cn->reqs[i], false);
	t0 = cn->reqs[k - 1]->t_start;
	/* their retransmits: SYN-ACKs to the connection's first request, data
	 * to the response that carried it (all acknowledged, so all seen) */
	for (size_t i = 0; i < cn->nrtx; i++) {
		const struct retrans *x = &cn->rtx[i];
		struct ls_request *r = NULL;
		if (x->synack && !cn->emitted_any) {
			r = cn->reqs[0];
		} else if (!x->synack) {
			uint64_t off = unwrap(x->seq, cn->iss1, cn->acked);
			for (size_t j = 0; j < k && !r; j++)
				if (wire_end(cn, 1, cn->reqs[j]->out_end) > off)
					r = cn->reqs[j];
		}
		if (r)
			r->retransmits += x->segs;
		else
			cn->rtx[keep++] = *x;
	}
	cn->nrtx = keep;
	emit_requests(c, cn, k);
	cn->emitted_any = true;
	memmove(cn->reqs, cn->reqs + k, (cn->nreqs - k) * sizeof(*cn->reqs));
	cn->nreqs -= k;
	cn->rx_cur = cn->rx_cur ? cn->rx_cur - k : 0;
	cn->tx_cur = cn->tx_cur ? cn->tx_cur - k : 0;
	cn->tx_inflight = cn->tx_inflight ? cn->tx_inflight - k : 0;
	cn->tx_unparsed = cn->tx_unparsed > k ? cn->tx_unparsed - k : 0;
	cn->rx_unparsed = cn->rx_unparsed > k ? cn->rx_unparsed - k : 0;
	cn->next_resp -= k;
	/* later requests start after these: their bytes, ACKs and srtt
	 * samples come later (one sample before stays, srtt_stats' fallback) */
	if (cn->tls) { /* to the wire's offsets; anchors before them go */
		trim_anchors(cn, 0, in_end);
		trim_anchors(cn, 1, out_end);
		in_end = wire_begin(cn, 0, in_end);
		out_end = wire_begin(cn, 1, out_end);
	}
	trim_points(&cn->arrivals, in_end);
	trim_points(&cn->acks, out_end);
	trim_xmits(cn, out_end);
	size_t s = 0;
	while (s + 1 < cn->nsrtt && cn->srtt[s + 1].ts < t0)
		s++;
	if (s) {
		memmove(cn->srtt, cn->srtt + s, (cn->nsrtt - s) * sizeof(*cn->srtt));
		cn->nsrtt -= s;
	}
}

/* Emits the leading requests that are over: response written and
 * acknowledged, and a later request begun on the connection (so the last
 * one stays for what only the connection's end tells: retransmits past
 * every response, resets). Needs sequence anchors; without them requests
 * wait for the connection's end as before. */
/* Request k's response is whole and delivered: answered, written to its
 * end and acknowledged (a unix socket: written is delivered), and no
 * reader or writer still holds it. */
static bool delivered_whole(const struct conn *cn, size_t k)
{
	const struct ls_request *r = cn->reqs[k];

	if (cn->h2rx) /* a stream: over, and its last byte acknowledged */
		return r->stream_over && !r->unparsed_why[0] && !r->stream_reset && r->out_end &&
		       cn->acked >= wire_end(cn, 1, r->out_end);
	return k < cn->next_resp && k + 1 != cn->tx_cur && k + 1 != cn->tx_inflight &&
	       k + 1 != cn->tx_unparsed && k + 1 != cn->rx_unparsed && r->out_end && r->t_out &&
	       (cn->unix_sk || cn->acked >= wire_end(cn, 1, r->out_end));
}

/* Tells `delivered` of each request whose response is whole and
 * delivered, once: a copy finished as it would be now. */
static void tell_delivered(struct ls_corr *c, struct conn *cn)
{
	for (size_t k = 0; k < cn->nreqs && k < cn->next_resp; k++) {
		struct ls_request *r = cn->reqs[k], now;
		if (r->delivered_told || r->unparsed_why[0] || !delivered_whole(cn, k))
			continue;
		r->delivered_told = true;
		now = *r; /* shares tok and blocked, read only; never released */
		finish_request(cn, &now, false);
		c->delivered(c->ctx, &now);
	}
}

/* HTTP/2 stream k is over: delivered, or reset, or lost to the parser. */
static bool h2_over(const struct conn *cn, size_t k)
{
	const struct ls_request *r = cn->reqs[k];

	return r->stream_over && (r->stream_reset || r->unparsed_why[0] || delivered_whole(cn, k));
}

static void emit_answered(struct ls_corr *c, struct conn *cn)
{
	size_t k = 0;

	if (!cn->have_seq && !cn->unix_sk)
		return;
	if (c->delivered)
		tell_delivered(c, cn);
	while (k + 1 < cn->nreqs && k + 1 != cn->rx_cur &&
	       (cn->h2rx ? h2_over(cn, k) : delivered_whole(cn, k)))
		k++;
	if (k)
		emit_first(c, cn, k);
}

static void finish_conn(struct ls_corr *c, struct conn *cn, bool capture_end)
{
	if (cn->rx && cn->rx_cur)
		ls_http_eof(cn->rx);
	if (cn->tx)
		ls_http_eof(cn->tx);
	for (size_t i = 0; i < cn->nreqs; i++)
		finish_request(cn, cn->reqs[i], capture_end);
	attribute_retransmits(c, cn);
	if (cn->upstream)
		c->st.conns_upstream++;
	if (cn->http)
		c->st.conns_http++;
	if (cn->opaque)
		c->st.conns_opaque++;
	emit_requests(c, cn, cn->nreqs);
	free(cn->reqs);
	free(cn->arrivals.v);
	free(cn->acks.v);
	free(cn->xm);
	free(cn->srtt);
	free(cn->rtx);
	free(cn->rx);
	free(cn->tx);
	free(cn->anch[0]);
	free(cn->anch[1]);
	if (cn->h2rx) {
		ls_h2_free(cn->h2rx);
		ls_h2_free(cn->h2tx);
		free(cn->h2rx);
		free(cn->h2tx);
	}
	ls_idmap_remove(&c->conns, cn->id);
	free(cn);
}

void ls_corr_add(struct ls_corr *c, const struct ls_hdr *rec)
{
	struct conn *cn;

	switch (rec->type) {
	case LS_EV_TCP_STATE:
		on_state(c, (const void *)rec);
		if ((cn = ls_idmap_get(&c->conns, ((const struct ls_ev_tcp_state *)rec)->conn_id)))
			emit_answered(c, cn);
		break;
	case LS_EV_TCP_PROBE:
		cn = conn_get(c, ((const struct ls_ev_tcp_probe *)rec)->conn_id);
		if (cn) {
			on_probe(cn, (const void *)rec);
			emit_answered(c, cn);
		}
		break;
	case LS_EV_TCP_RETRANS:
		on_retrans(c, (const void *)rec);
		break;
	case LS_EV_TCP_RESET:
		cn = conn_get(c, ((const struct ls_ev_tcp_reset *)rec)->conn_id);
		if (cn) {
			cn->reset = true;
			cn->resets++;
		}
		break;
	case LS_EV_SOCK_ACCEPT: {
		const struct ls_ev_sock_accept *e = (const void *)rec;
		cn = conn_get(c, e->conn_id);
		if (cn && !cn->have_tuple) {
			cn->tuple = e->t;
			cn->have_tuple = true;
		}
		break;
	}
	case LS_EV_CONN_ADOPT:
		on_adopt(c, (const void *)rec);
		break;
	case LS_EV_TCP_XMIT:
		cn = conn_get(c, ((const struct ls_ev_tcp_xmit *)rec)->conn_id);
		if (cn)
			on_xmit(cn, (const void *)rec);
		break;
	case LS_EV_SOCK_IO:
		cn = conn_get(c, ((const struct ls_ev_sock_io *)rec)->conn_id);
		if (cn) {
			/* the arrival first, as its own tcp_probe record would have
			 * been read */
			if (on_io_arrival(cn, (const void *)rec))
				emit_answered(c, cn);
			on_io_xmit(cn, (const void *)rec);
			on_io(cn, (const void *)rec);
			emit_answered(c, cn);
		}
		break;
	case LS_EV_TCP_DESTROY:
		cn = conn_get(c, ((const struct ls_ev_tcp_destroy *)rec)->conn_id);
		if (cn)
			finish_conn(c, cn, false);
		break;
	case LS_EV_SOCK_CLOSE:
		cn = ls_idmap_get(&c->conns, ((const struct ls_ev_sock_close *)rec)->conn_id);
		if (cn && cn->unix_sk)
			finish_conn(c, cn, false);
		break;
	default:
		break;
	}
}

static uint64_t min_nz(uint64_t a, uint64_t b)
{
	return !b || (a && a < b) ? a : b;
}

/* The earliest instant a request not emitted yet may start at; meanwhile
 * drops per-connection history no such request can ask for. */
static uint64_t conn_horizon(struct conn *cn)
{
	uint64_t h = 0;

	if (cn->opaque && !cn->nreqs) {
		cn->arrivals.n = cn->acks.n = cn->nxm = 0; /* no request will ever read them */
	} else if (!cn->nreqs && cn->rx && !ls_http_in_message(cn->rx) && !cn->tls) {
		trim_points(&cn->arrivals, cn->rx->pos ? cn->rx->pos - 1 : 0);
		if (cn->tx && !ls_http_in_message(cn->tx)) {
			trim_points(&cn->acks, cn->tx->pos ? cn->tx->pos - 1 : 0);
			trim_xmits(cn, cn->tx->pos);
		}
	}
	if (cn->arrivals.n)
		h = cn->arrivals.v[0].ts;
	if (cn->have_seq && !cn->emitted_any && cn->est_ts && !cn->opaque)
		h = min_nz(min_nz(cn->est_ts - (uint64_t)cn->est_srtt * 1000, cn->synack0), h);
	for (size_t i = 0; i < cn->nreqs; i++) {
		const struct ls_request *r = cn->reqs[i];
		h = min_nz(min_nz(min_nz(r->t_start, r->t_in), min_nz(r->t_read, r->t_first)),
			   min_nz(h, r->t_out));
	}
	if (h) { /* srtt samples from before it, but the last one */
		size_t s = 0;
		while (s + 1 < cn->nsrtt && cn->srtt[s + 1].ts < h)
			s++;
		if (s) {
			memmove(cn->srtt, cn->srtt + s, (cn->nsrtt - s) * sizeof(*cn->srtt));
			cn->nsrtt -= s;
		}
	} else if (cn->nsrtt > 1) {
		cn->srtt[0] = cn->srtt[cn->nsrtt - 1];
		cn->nsrtt = 1;
	}
	return h;
}

size_t ls_corr_open_requests(const struct ls_corr *c)
{
	size_t n = 0;

	for (size_t i = 0; i < c->conns.cap; i++)
		if (c->conns.keys[i])
			n += ((const struct conn *)c->conns.vals[i])->nreqs;
	return n;
}

bool ls_corr_open_hop(const struct ls_corr *c, const struct ls_request *r, bool inner)
{
	if (!r->x_request_id[0] && (inner || !r->peer_conn))
		return false;
	for (size_t i = 0; i < c->conns.cap; i++) {
		const struct conn *cn = c->conns.vals[i];
		if (!c->conns.keys[i])
			continue;
		for (size_t k = 0; k < cn->nreqs; k++) {
			const struct ls_request *o = cn->reqs[k];
			/* the proxy reads first: the outer hop was read before the inner */
			if (o != r && o->pid != r->pid && o->t_read && r->t_read &&
			    (inner ? o->t_read > r->t_read : o->t_read < r->t_read) &&
			    ((r->x_request_id[0] && !strcmp(o->x_request_id, r->x_request_id)) ||
			     (!inner && cn->id == r->peer_conn && o->pid == r->peer_pid)))
				return true;
		}
	}
	return false;
}

uint64_t ls_corr_horizon(struct ls_corr *c, uint64_t now)
{
	uint64_t h = now;

	for (size_t i = 0; i < c->conns.cap; i++)
		if (c->conns.keys[i])
			h = min_nz(conn_horizon(c->conns.vals[i]), h);
	return h;
}

static int conn_id_cmp(const void *a, const void *b)
{
	uint64_t x = (*(struct conn *const *)a)->id, y = (*(struct conn *const *)b)->id;

	return (x > y) - (x < y);
}

void ls_corr_finish(struct ls_corr *c)
{
	/* in conn_id order, as they were opened */
	struct conn **left = malloc((c->conns.n ? c->conns.n : 1) * sizeof(*left));
	size_t n = 0;

	if (!left)
		abort();
	for (size_t i = 0; i < c->conns.cap; i++)
		if (c->conns.keys[i])
			left[n++] = c->conns.vals[i];
	qsort(left, n, sizeof(*left), conn_id_cmp);
	for (size_t i = 0; i < n; i++)
		finish_conn(c, left[i], true);
	free(left);
	for (size_t i = 0; i < c->nsynacks; i++)
		c->st.retrans_unattributed += c->synacks[i].r.segs;
	c->nsynacks = 0;
}

void ls_corr_free(struct ls_corr *c)
{
	if (!c)
		return;
	ls_corr_finish(c);
	ls_idmap_free(&c->conns);
	for (size_t i = 0; i < c->last_rd.cap; i++)
		if (c->last_rd.keys[i])
			free(c->last_rd.vals[i]);
	ls_idmap_free(&c->last_rd);
	free(c->synacks);
	free(c);
}
