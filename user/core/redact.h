/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * What a capture must not keep (DESIGN.md §5): credentials in HTTP header
 * values and on command lines. Redaction keeps lengths (values become '*'),
 * so stream offsets and the HTTP parser see the same bytes' count.
 */
#ifndef LATSPLIT_USER_REDACT_H
#define LATSPLIT_USER_REDACT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "http.h"

/* Values of Authorization, Proxy-Authorization, Cookie, Set-Cookie,
 * X-Api-Key and Api-Key header lines in buf (any line of it, case-
 * insensitive names) become '*'. *carry links consecutive buffers of one
 * stream: set on return when buf ended inside such a value, so the next
 * buffer's first line is redacted too. Returns how many values were
 * redacted. */
int ls_redact_http(uint8_t *buf, size_t n, bool *carry);
/* Is a header of this name (n bytes, any case) one of those? */
bool ls_secret_header(const char *name, size_t n);

/* Does a variable or flag name look like a credential? Its last segment
 * ends with KEY, TOKEN, SECRET or PASSWORD, or a segment is SECRET or
 * PASSWORD (any case; segments split at - _ .): see redact.c. */
bool ls_secret_name(const char *name, size_t n);

/* NUL-separated arguments (a /proc cmdline) in place: the values of
 * NAME=VALUE words and of --flag VALUE / --flag=VALUE whose name looks like
 * a credential become '*', also inside an argument holding a shell script.
 * Returns how many were redacted. */
int ls_redact_args(char *buf, size_t len);

#endif

/*
 * Bodies (prompts and completions are users' data): only what the HTTP
 * parser needs is kept; body content becomes '*', lengths kept. Per stream
 * direction a little state follows bodies across syscalls:
 *  - a head's Content-Length body is scrubbed to its end (the next pipelined
 *    head, if any, is kept);
 *  - in a text/event-stream response, every "data:" line keeps "data:" and a
 *    "[DONE]" marker (what counts tokens), the rest becomes '*'; chunk-size
 *    lines, blank lines and other fields are kept. Lines are followed across
 *    buffers and, in a chunked stream, across chunks (a proxy re-chunks an
 *    upstream's events where its reads ended; a server may write an event
 *    in pieces); the rest of a line whose start the capture lost is '*';
 *  - a chunked body (an NDJSON stream such as Ollama's, a chunked request,
 *    an event stream) keeps its chunk-size lines, the CRLF after each chunk
 *    and its trailer; the chunks' data becomes '*' (an event stream's: as
 *    above);
 *  - a response body with neither length nor chunks (it runs to the
 *    connection's end) becomes '*' to the end;
 *  - heads themselves are kept (minus credentials, ls_redact_http);
 *  - in either kind of body, a whole "timings" or "usage" object of numbers
 *    alone (llama.cpp's prompt_ms/predicted_ms, token counts: the engine's
 *    own keys and numbers, no text) is kept for the report.
 * Bytes beyond the captured prefix are never stored anyway. Framing is read
 * as the parser reads it (fuzz-http checks that scrubbed bytes parse the
 * same): a message starts where a parser in sync takes one (a plausible
 * start: a head whose first line goes on in the next buffer is gathered);
 * chunks when the last coding is chunked, else a length, else (responses)
 * the connection's end; 1xx responses are interim. Where framing is lost (a
 * head or chunk framing cut by the capture, a size line the parser refuses,
 * which is kept), every byte after is '*' until a buffer starts with a whole
 * start line, where the parser resynchronises.
 */
struct ls_body_state {
	uint64_t body_left; /* Content-Length bytes still to come */
	bool sse;           /* inside a text/event-stream response */
	uint8_t sse_line;   /* where in an event-stream line (redact.c, SL_*) */
	uint8_t sse_pre;    /* bytes of "data:" or of "[DONE]" matched so far */
	bool synced;        /* a message start was seen: before it (a connection
			     * met mid-flight), every byte is '*' (the parser
			     * skips them too) */
	uint8_t *head;      /* a head split across syscalls, gathered (or NULL) */
	size_t head_len;
	bool chunked;        /* in a chunked body, framed as the parser frames it */
	bool to_close;       /* in a response body that runs to the connection's end */
	uint8_t ck;          /* where in the chunk framing (redact.c, CK_*) */
	uint8_t ck_cr;       /* CRs seen after a chunk's data */
	uint16_t ck_len;     /* bytes of the size or trailer line so far */
	uint64_t chunk_left; /* the chunk's data still to come */
	char ck_line[LS_HTTP_CHUNK_LINE_MAX]; /* the size line */
};

/* One connection's two directions (0: requests, 1: responses). */
struct ls_body_conn {
	struct ls_body_state dir[2];
	uint32_t heads_pending; /* HEAD requests whose response has no body */
};

/* Scrubs n known bytes of one read or write (response: is_response) in
 * place; total is what the syscall moved (bytes past n are not captured).
 * Returns how many bytes became '*'. */
size_t ls_scrub_body(struct ls_body_conn *c, bool is_response, uint8_t *buf, size_t n,
		     size_t total);
/* Frees what a connection's state holds (a head being gathered). */
void ls_body_free(struct ls_body_conn *c);
