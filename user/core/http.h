/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Incremental HTTP/1.1 parser, one per direction of a connection. It is fed
 * the bytes a process read or wrote, in order, split anywhere, and reports
 * message heads, body start, SSE events (text/event-stream: each "data:"
 * event is a token, "data: [DONE]" ends) and message ends through callbacks.
 *
 * Only a prefix of each syscall's payload may be known (the capture keeps
 * --capture-bytes of it): feed() takes the known bytes and the total. Body
 * bytes need no content; bytes that carry framing (heads, chunk sizes) do.
 * When framing falls in an unknown stretch the parser loses sync, says so,
 * and resynchronises at the next chunk that starts a message. Anything that
 * is not HTTP turns the stream opaque: bytes are still counted, and no
 * message is ever invented.
 */
#ifndef LATSPLIT_USER_HTTP_H
#define LATSPLIT_USER_HTTP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define LS_HTTP_MAX_HEAD 16384

enum ls_http_kind { LS_HTTP_REQUEST, LS_HTTP_RESPONSE };

/* Bytes a chunk-size or trailer line may hold before the parser gives up
 * on it. */
#define LS_HTTP_CHUNK_LINE_MAX 128

struct ls_http_msg {
	char method[16];
	char path[256];
	int status; /* responses */
	char x_request_id[80];
	char traceparent[80];
	char forwarded_for[64]; /* X-Forwarded-For's first address: the client a proxy served */
	bool chunked;
	bool sse;
	bool close;      /* Connection: close (or HTTP/1.0 without keep-alive) */
	bool has_length;
	uint64_t content_length;
	size_t head_bytes;
};

/* An engine's own numbers in a response body: llama.cpp's "timings"
 * (prompt_ms, the prompt's processing; predicted_ms, the generation after
 * it; their token counts) and OpenAI's "usage" token counts. NAN / 0 when
 * not given. */
struct ls_http_timings {
	bool has_timings, has_usage;
	double prompt_ms, predicted_ms;
	uint32_t prompt_n, predicted_n;
	uint32_t prompt_tokens, completion_tokens; /* usage */
};

/*
 * Callbacks may read p->pos, the stream offset (bytes fed so far, known or
 * not) where the event happened: head and end: just past the head / the
 * message; body_start: the first body byte; event: just past the line that
 * completed it. begin fires once the first 8 bytes look like HTTP; the
 * message started at p->msg_begin.
 */
struct ls_http_cb {
	void (*begin)(void *ctx);
	void (*head)(void *ctx, const struct ls_http_msg *m);
	void (*body_start)(void *ctx);
	void (*event)(void *ctx, bool done); /* an SSE event; done: [DONE] */
	void (*end)(void *ctx);              /* the message is complete */
	void (*lost)(void *ctx, const char *why); /* sync lost or not HTTP */
	/* a "timings" or "usage" object of numbers in the body (whole in one
	 * write) */
	void (*timings)(void *ctx, const struct ls_http_timings *t);
};

enum ls_http_state {
	LS_HTTP_ST_START, LS_HTTP_ST_HEAD, LS_HTTP_ST_BODY_LEN, LS_HTTP_ST_BODY_EOF,
	LS_HTTP_ST_CHUNK_SIZE, LS_HTTP_ST_CHUNK_DATA, LS_HTTP_ST_CHUNK_CRLF, LS_HTTP_ST_TRAILER,
	LS_HTTP_ST_LOST, LS_HTTP_ST_OPAQUE,
};

struct ls_http_parser {
	enum ls_http_kind kind;
	enum ls_http_state st;
	const struct ls_http_cb *cb;
	void *ctx;
	char head[LS_HTTP_MAX_HEAD];
	size_t head_len;
	char line[LS_HTTP_CHUNK_LINE_MAX]; /* chunk-size or trailer line */
	size_t line_len;
	uint64_t remaining;
	bool body_started;
	bool sse;
	bool next_no_body; /* the request was HEAD: its response has no body */
	int pending_head_requests;
	/* SSE line scanner */
	char sse_line[16];
	size_t sse_line_len;
	bool sse_line_unknown;
	bool sse_has_data, sse_done;
	uint64_t pos; /* stream offset, see struct ls_http_cb */
	uint64_t msg_begin;
	/* statistics */
	uint64_t messages, bytes, lost_count;
};

void ls_http_init(struct ls_http_parser *p, enum ls_http_kind kind, const struct ls_http_cb *cb,
		  void *ctx);
/* `known` bytes of data, then total - known bytes of unknown content. */
void ls_http_feed(struct ls_http_parser *p, const uint8_t *data, size_t known, size_t total);
/* The stream ended: completes a body read until close. Returns true when a
 * message was left incomplete. */
bool ls_http_eof(struct ls_http_parser *p);
/* The stream is joined mid-way (a connection met after it began, or bytes
 * that were never seen): skip to the next I/O that starts with a whole
 * request or status line. Not counted as a loss. */
void ls_http_resync(struct ls_http_parser *p);
/* Do the n known bytes begin with a whole request line (or status line)? */
bool ls_http_starts_message(enum ls_http_kind kind, const uint8_t *s, size_t n);
/* Could `s` (n known bytes) be the beginning of a message (a method and a
 * space, "HTTP/1.", or a prefix of either)? What a parser that is in sync
 * takes for a head's start. */
bool ls_http_may_start(enum ls_http_kind kind, const uint8_t *s, size_t n);
/* The size a chunk-size line gives (line: its n bytes before the LF; a CR
 * at its end is dropped; extensions after ';' ignored). false: not one. */
bool ls_http_chunk_size(const char *line, size_t n, uint64_t *size);
/* The first address of an X-Forwarded-For value (v, n bytes: "client,
 * proxy1, ..."), trimmed, into dst. */
void ls_http_first_forwarded(char *dst, size_t cap, const char *v, size_t n);
/* The same from a Forwarded header (RFC 7239): its first element's for=
 * node, unquoted, without brackets or port ("" when it has none). */
void ls_http_first_forwarded_for(char *dst, size_t cap, const char *v, size_t n);
/* Length of a flat JSON object of numbers at b ({"name":number,...}, names
 * of [a-z0-9_]: an engine's own keys, never text), 0 when b does not start
 * with a whole one. */
size_t ls_http_numbers_object(const uint8_t *b, size_t n);
/* Where key ("\"name\":") first stands before an object of numbers in b,
 * and the length of both (*len); NULL when nowhere. */
const uint8_t *ls_http_numbers_under(const uint8_t *b, size_t n, const char *key, size_t *len);
/* The first "timings" and "usage" objects of numbers in b into t; false
 * when neither is there. */
bool ls_http_find_timings(const uint8_t *b, size_t n, struct ls_http_timings *t);
/* Tells a response parser that one more request was a HEAD (no body). */
void ls_http_expect_head(struct ls_http_parser *p);
bool ls_http_in_message(const struct ls_http_parser *p);

#endif
