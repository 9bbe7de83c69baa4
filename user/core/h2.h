/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Incremental HTTP/2 frame reader, one per direction of a connection (the
 * HTTP/1.1 parser's sibling, see http.h: fed the same way, known bytes then
 * unknown ones, split anywhere). Header blocks (HEADERS and CONTINUATION,
 * PUSH_PROMISE) are decoded with libnghttp2's HPACK inflater; a block whose
 * bytes the capture did not hold leaves the inflater's table unknown, so the
 * reader loses sync for the rest of the connection and says so. DATA needs
 * only its frame header: its payload may be unknown.
 *
 * The correlator counts tokens: a DATA frame with payload on a stream whose
 * response is a stream, gRPC (application/grpc: one length-prefixed message
 * per frame, as gRPC servers write them) or SSE (text/event-stream), except a
 * frame that is "data: [DONE]", which the reader tells apart.
 */
#ifndef LATSPLIT_USER_H2_H
#define LATSPLIT_USER_H2_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "http.h"

#define LS_H2_PREFACE "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
#define LS_H2_PREFACE_LEN 24

struct ls_h2_headers {
	bool unknown;         /* met mid-flight: no HPACK state, no field known */
	struct ls_http_msg m; /* method, path, status, x_request_id, traceparent, sse */
	bool grpc;            /* content-type application/grpc* */
	int grpc_status;      /* -1: no grpc-status field */
};

/* Callbacks may read p->pos (just past the frame), p->frame_begin and
 * p->len (the frame's payload length). */
struct ls_h2_cb {
	void (*headers)(void *ctx, uint32_t stream, const struct ls_h2_headers *h, bool end_stream);
	/* len: payload bytes less padding; done_marker: it is "data: [DONE]" */
	void (*data)(void *ctx, uint32_t stream, uint32_t len, bool done_marker, bool end_stream);
	void (*reset)(void *ctx, uint32_t stream);
	/* WINDOW_UPDATE: the sender of the other direction may send `inc`
	 * more bytes on the stream (0: the connection) */
	void (*window)(void *ctx, uint32_t stream, uint32_t inc);
	/* an event-stream response's "data:" line began in the current DATA
	 * frame (done: it is "data: [DONE]"); told before that frame's data
	 * callback, which may read p->data_unknown */
	void (*event)(void *ctx, uint32_t stream, bool done);
	void (*lost)(void *ctx, const char *why);
};

struct ls_h2 {
	const struct ls_h2_cb *cb;
	void *ctx;
	struct ls_h2 *peer; /* the other direction: its SETTINGS size our table */
	bool lost;
	bool midflight; /* met mid-flight: header blocks are not decoded */
	size_t preface_left; /* the client's direction starts with the preface */
	uint8_t fh[9];
	size_t fh_len;
	uint32_t len, left, stream;
	uint32_t max_frame; /* the largest frame the peer accepts (its SETTINGS) */
	/* the peer's SETTINGS this direction has not acknowledged yet: they
	 * bind this direction's sender (its encoder, its frames) once it does
	 * (0: a setting not in them) */
	struct {
		uint32_t table, frame, window; /* window: + 1, 0 not in them */
	} pend[8];
	/* each new stream's flow-control window for what this direction
	 * sends (the peer's SETTINGS_INITIAL_WINDOW_SIZE; 65535 at first);
	 * a DATA frame's whole length (`len`, padding too) counts against it */
	uint32_t init_window;
	/* event-stream responses open in this direction (their HEADERS said
	 * text/event-stream): where each one's line scan is, across frames */
	struct ls_h2_sse {
		uint32_t stream;
		uint8_t matched; /* bytes of "data:" matched at a line start */
		bool mid_line, in_data;
	} sse[32];
	int nsse;
	bool data_sse;     /* the current DATA frame is on a scanned event stream */
	bool data_unknown; /* ... and has bytes not captured: its events are not all told */
	uint8_t data_pad;  /* the current DATA frame's pad length */
	int npend;
	uint8_t type, flags;
	/* the part of the payload the reader needs */
	uint8_t *buf;
	size_t need, got, cap;
	bool unknown; /* some needed byte was not captured */
	/* a header block spread over CONTINUATION frames */
	uint8_t *blk;
	size_t blk_len, blk_cap;
	uint32_t blk_stream;
	bool blk_open, blk_end_stream, blk_push;
	void *inflater; /* nghttp2_hd_inflater */
	uint64_t pos, frame_begin;
	uint64_t frames, lost_count;
	/* scrubbing (ls_h2_scrub): the piece being rewritten, whether this
	 * frame's header block was redacted in place, or is starred whole */
	uint8_t *scrub;
	bool keep_data; /* --capture-bodies: DATA payloads are kept */
	bool block_scrubbed, star_payload, keep_marker;
	uint64_t secrets; /* header values redacted */
};

/* client_side: this direction carries the client's bytes (the preface). */
int ls_h2_init(struct ls_h2 *p, bool client_side, const struct ls_h2_cb *cb, void *ctx);
void ls_h2_free(struct ls_h2 *p);
void ls_h2_feed(struct ls_h2 *p, const uint8_t *data, size_t known, size_t total);
/*
 * The recorder's side (DESIGN.md §5: no credential and no body reaches a
 * capture): reads the frames of data like ls_h2_feed (the headers callback
 * included) and rewrites data in place, lengths kept, so that a reader of
 * the result sees the same frames and the same header fields, except:
 *  - DATA payloads become '*' (the pad length and a leading "data: [DONE]"
 *    stay), but on an event-stream response, whose "data:" line starts
 *    (and "[DONE]"), line ends and other lines stay, as on HTTP/1.1;
 *  - the values of credential headers (redact.h) become '*', or '&' when
 *    Huffman-coded (one 8-bit code per byte: the block still decodes);
 *  - a header frame not whole in one piece must be read whole before any
 *    of it leaves: when the piece's bytes are all known and the frame (or a
 *    frame header) is cut by its end, scrubbing stops before that frame and
 *    returns how many bytes it took; the caller holds the rest and scrubs it
 *    joined to the next piece of the direction. A header frame cut by the
 *    capture (bytes not kept) cannot be read: it and everything after it on
 *    the connection become '*' (the report loses sync there, and says so).
 * After a loss, every later byte becomes '*'. Returns the bytes taken
 * (total, but for a held tail).
 */
size_t ls_h2_scrub(struct ls_h2 *p, uint8_t *data, size_t known, size_t total);
/* The caller gave up on a held tail (starred it): the reader stops. */
void ls_h2_lose(struct ls_h2 *p, const char *why);
/* A connection met mid-flight (its table state unknown): frames are read,
 * header blocks are told with h->unknown set and never decoded (scrubbing:
 * starred whole, credentials cannot be found in them). */
void ls_h2_midflight(struct ls_h2 *p);
/* Are the n bytes of one read or write (all captured: known == total)
 * whole HTTP/2 frames, one or more, ending with the payload? How a
 * connection met mid-flight is known to speak HTTP/2. */
bool ls_h2_whole_frames(const uint8_t *s, size_t known, size_t total);
/* Do the n known bytes begin a connection's HTTP/2: the client preface
 * (client: the bytes a server read), or the server's, a SETTINGS frame
 * (what a server such as gRPC's writes before it reads anything)? */
bool ls_h2_starts(const uint8_t *s, size_t n, bool client);

#endif
