/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The request correlator: turns a time-ordered stream of records into HTTP
 * requests with the marks of DESIGN.md §6 that the network gives (T_start,
 * T_in, T_read, T_first, T_out, T_end) and the per-request network facts
 * (bytes, tokens, retransmits, srtt, resets). One per capture; `report` and
 * later `top` feed it the same way (live mode = offline mode from the ring).
 *
 * Mapping bytes to time: the app's reads and writes give stream offsets
 * (HTTP parser positions); TCP sequence anchors at ESTABLISHED turn those
 * into sequence numbers; tcp_probe gives, per incoming segment, when request
 * bytes became available in order and how far the peer has acknowledged
 * response bytes.
 */
#ifndef LATSPLIT_USER_REQUESTS_H
#define LATSPLIT_USER_REQUESTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include "latsplit/events.h"

enum ls_outcome {
	LS_REQ_OK,          /* response fully acknowledged */
	LS_REQ_UNACKED,     /* response written, its ACK not seen (capture or conn ended) */
	LS_REQ_NO_RESPONSE, /* request read, no response written */
	LS_REQ_ABORTED,     /* the client closed before the request or response completed */
	LS_REQ_RESET,       /* the connection was reset before completion */
	LS_REQ_INCOMPLETE,  /* the capture ended first */
	LS_REQ_PARTIAL,     /* began before the capture: part of it was never seen, no split */
	LS_REQ_UNPARSED,    /* the parser lacked bytes (or met non-HTTP) mid-message: no split;
			     * unparsed_why says which */
	LS_REQ_NOUTCOMES,
};

/* What carried the request: HTTP/1.1, or a stream of a cleartext HTTP/2
 * connection (prior knowledge), gRPC when its content-type says so. */
enum ls_protocol { LS_PROTO_HTTP1, LS_PROTO_H2C, LS_PROTO_GRPC, LS_PROTO_H2 /* over TLS */ };
const char *ls_protocol_name(enum ls_protocol p);

struct ls_request {
	uint64_t id;
	uint64_t conn_id;
	uint32_t pid;
	char method[16];
	char path[256];
	int status; /* 0: no response head */
	char x_request_id[80];
	char traceparent[80];
	char forwarded_for[64]; /* X-Forwarded-For's first address, as the request said */
	char client[64]; /* "ip:port" of the peer */
	uint32_t peer_pid; /* the peer is this tracked process's upstream connection (a proxy) */
	uint64_t peer_conn; /* and the connection it passed the response on to (0: unknown) */
	char server[64];
	enum ls_outcome outcome;
	bool first_on_conn;
	bool streaming;
	bool partial; /* its start was before the capture (see LS_REQ_PARTIAL) */
	bool transport_unix; /* on an AF_UNIX stream socket: no network parts */
	/* HTTP/2 flow control: what the stream may still send, and since when
	 * it could send nothing (its window or the connection's spent) */
	uint32_t sse_events; /* "data:" events begun in the DATA frame being read */
	int64_t fc_window;
	bool fc_init;
	uint64_t fc_since;
	bool tls;            /* its bytes read as plaintext through the process's libssl */
	bool delivered_told; /* the correlator's `delivered` saw it */
	char unparsed_why[192]; /* set: LS_REQ_UNPARSED, and why */
	enum ls_protocol protocol;
	uint32_t stream;  /* HTTP/2 stream id; 0 on HTTP/1.1 */
	int grpc_status;  /* gRPC: the trailers' grpc-status; -1 none */
	bool stream_over;  /* HTTP/2: END_STREAM or RST_STREAM seen (internal) */
	bool stream_reset; /* HTTP/2: RST_STREAM from either side (internal) */
	uint64_t h2_bytes_in, h2_bytes_out; /* HTTP/2: its frames' bytes (internal) */

	/* marks, CLOCK_MONOTONIC ns; 0 = not observed. t_end is T_ack, the
	 * ACK of the last byte; t_dlv and t_first_dlv (DESIGN.md §6) need
	 * transmission records (tcp_xmit) and are 0 without them. */
	uint64_t t_start, t_in, t_read, t_first, t_out, t_end;
	uint64_t t_first_dlv, t_dlv;
	/* the first request on a connection whose handshake was seen: the
	 * handshake [T_syn, T_est] (network.connect, inside the total) and the
	 * client's pause from T_est to its first byte (outside it); 0 else */
	uint64_t connect_ns, connect_idle_ns;

	uint64_t bytes_in, bytes_out;
	uint32_t tokens;
	/* the engine's own timings in the response (llama.cpp): prompt
	 * processing and generation, ms (NAN: that one not given) */
	bool has_timings;
	double eng_prompt_ms, eng_predicted_ms;
	/* the response's "usage" token counts, 0 when it gave none */
	uint32_t usage_prompt, usage_completion;
	uint32_t retransmits; /* segments (same unit as TcpRetransSegs) */
	uint32_t resets;
	uint32_t srtt_min_us, srtt_max_us, srtt_avg_us;
	uint64_t send_blocked_ns;
	uint64_t send_blocked_ttft_ns; /* the part before T_first */
	uint64_t max_gap_ns;           /* largest gap between token writes */

	/* Time asleep inside response writes, as [b, e] spans (owned: the
	 * emit callback takes them; ls_request_release frees). */
	uint64_t (*blocked)[2];
	uint32_t nblocked, capblocked;
	uint64_t gap_b, gap_e; /* the largest gap between token writes */
	uint32_t first_tid;    /* the thread that wrote the first token */
	/* token writes: when each returned, and the stream offset its bytes
	 * end at (owned; freed by ls_request_release) */
	uint64_t (*tok)[2];
	uint32_t ntok, captok;
	uint64_t first_end; /* stream offset just past the first token */
	/* wire delay per token, write to delivery estimate (with tcp_xmit) */
	bool have_wire;
	uint64_t wire_first_ns, wire_p50_ns, wire_max_ns;
	uint32_t holds[4]; /* tokens held: enum ls_hold */

	/* stream offsets (internal; kept for tests and debugging) */
	uint64_t in_begin, in_end, out_begin, out_end;
	uint64_t last_token_ts;
};

/* The 32 hex digits of the request's W3C traceparent trace id
 * (00-<trace id>-<parent>-<flags>), or NULL when it has none. */
static inline const char *ls_trace_id(const struct ls_request *r)
{
	return strlen(r->traceparent) >= 35 ? r->traceparent + 3 : NULL;
}

/* Why bytes written waited before their first transmission (or were sent
 * again): Nagle (a small segment held while data was unacknowledged and
 * TCP_NODELAY off), the congestion window, the receiver's window, a loss. */
enum ls_hold { LS_HOLD_NAGLE, LS_HOLD_CWND, LS_HOLD_RWND, LS_HOLD_RETRANS, LS_HOLD_N };
const char *ls_hold_name(int h);

struct ls_corr_stats {
	uint64_t conns, conns_http, conns_opaque;
	uint64_t conns_adopted; /* met mid-flight: established before the capture */
	uint64_t conns_unix;    /* AF_UNIX stream sockets that carried HTTP */
	uint64_t conns_h2_midflight; /* HTTP/2 met mid-flight: streams partial (no HPACK state) */
	uint64_t conns_upstream; /* the tracked process was the client (a proxy's upstream hop) */
	uint64_t requests, requests_partial;
	uint64_t http_sync_lost;
	uint64_t requests_unparsed; /* a message cut by sync loss (LS_REQ_UNPARSED) */
	char unparsed_why[192];     /* the first one's reason */
	uint64_t unseen_bytes; /* stream bytes the app moved that no record showed */
	uint64_t retrans_unattributed; /* on connections that carried no request */
};

struct ls_corr;

/* emit is called once per finished request (the pointer is valid only
 * during the call). */
struct ls_corr *ls_corr_new(void (*emit)(void *ctx, const struct ls_request *r), void *ctx);
/* Also tell `delivered` (same ctx) of each request once, as soon as its
 * response is whole and delivered (acknowledged; on a unix socket,
 * written), with its marks as known then: a provisional view, valid during
 * the call only, before the request is over and emitted. */
void ls_corr_on_delivered(struct ls_corr *c, void (*delivered)(void *ctx, const struct ls_request *r));
void ls_corr_add(struct ls_corr *c, const struct ls_hdr *rec);
/* The earliest instant a request not emitted yet may start at (now when
 * none can start earlier); trims per-connection history on the way. */
uint64_t ls_corr_horizon(struct ls_corr *c, uint64_t now);
/* Whether a request of another process, not over yet, carries r's
 * X-Request-Id (or, inner false, is on the proxy's connection r's peer_conn
 * names) and was read before r (inner false: r is the inner hop of a traced
 * proxy's request in flight, DESIGN §11, which alone will be told) or after
 * r (inner true: r is a proxy's request whose inner hop is open). */
bool ls_corr_open_hop(const struct ls_corr *c, const struct ls_request *r, bool inner);
/* Requests begun and not emitted yet. */
size_t ls_corr_open_requests(const struct ls_corr *c);
/* End of input: finishes every open connection. */
void ls_corr_finish(struct ls_corr *c);
const struct ls_corr_stats *ls_corr_stats(const struct ls_corr *c);
void ls_corr_free(struct ls_corr *c);

const char *ls_outcome_name(enum ls_outcome o);
/* "ip:port" ([ip]:port for IPv6) of a tuple address (IPv4-mapped shown as IPv4). */
void ls_addr_str(const __u8 addr[16], __u16 port, char *buf, size_t len);
void ls_request_release(struct ls_request *r);
/* Forgets what r owns, for a copy that must not free it. */
void ls_request_detach(struct ls_request *r);

#endif
