// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * HTTP parser: every example gives the same callbacks whole, split at every
 * byte boundary, and byte by byte; pipelining, chunked with extensions and
 * trailers, SSE with multi-line events and comments, interim and bodiless
 * responses, oversized heads, garbage, and unknown (uncaptured) stretches.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <math.h>
#include <string.h>

#include "http.h"
#include "trust.h"

struct log {
	char s[8192];
	size_t n;
	bool pos; /* append each callback's stream offset */
	struct ls_http_parser *p;
};

static void add(struct log *l, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int k = vsnprintf(l->s + l->n, sizeof(l->s) - l->n, fmt, ap);
	va_end(ap);
	if (k > 0)
		l->n += k;
}

static void at(struct log *l)
{
	if (l->pos)
		add(l, "@%llu|", (unsigned long long)l->p->pos);
}

static void on_begin(void *ctx)
{
	struct log *l = ctx;
	add(l, "S|@%llu|", (unsigned long long)l->p->msg_begin);
}

static void on_head(void *ctx, const struct ls_http_msg *m)
{
	at(ctx);
	if (m->status)
		add(ctx, "H%d%s%s%s|", m->status, m->sse ? " sse" : "", m->chunked ? " chunked" : "",
		    m->close ? " close" : "");
	else
		add(ctx, "H%s %s%s%s%s%s%s%s|", m->method, m->path, m->x_request_id[0] ? " rid=" : "",
		    m->x_request_id, m->traceparent[0] ? " tp=" : "", m->traceparent,
		    m->forwarded_for[0] ? " xff=" : "", m->forwarded_for);
}
static void on_body(void *ctx) { add(ctx, "B|"); at(ctx); }
static void on_event(void *ctx, bool done) { add(ctx, done ? "D|" : "E|"); at(ctx); }
static void on_end(void *ctx) { add(ctx, "END|"); at(ctx); }
static void on_lost(void *ctx, const char *why) { add(ctx, "LOST(%s)|", why); }

/* Without begin: the expected strings below stay short. */
static const struct ls_http_cb cb = {.head = on_head, .body_start = on_body, .event = on_event,
				     .end = on_end, .lost = on_lost};
static const struct ls_http_cb cb_pos = {.begin = on_begin, .head = on_head, .body_start = on_body,
					 .event = on_event, .end = on_end, .lost = on_lost};

/* Feeds `s` in pieces cut at the offsets in cuts[] (ascending). */
static void run_mode(enum ls_http_kind kind, const char *s, size_t len, const size_t *cuts,
		     int ncuts, struct log *out, bool eof, bool pos)
{
	struct ls_http_parser *p = malloc(sizeof(*p));
	size_t at = 0;

	memset(out, 0, sizeof(*out));
	out->pos = pos;
	out->p = p;
	ls_http_init(p, kind, pos ? &cb_pos : &cb, out);
	for (int i = 0; i <= ncuts; i++) {
		size_t end = i < ncuts ? cuts[i] : len;
		ls_http_feed(p, (const uint8_t *)s + at, end - at, end - at);
		at = end;
	}
	if (eof && ls_http_eof(p))
		add(out, "INCOMPLETE|");
	free(p);
}

static void run(enum ls_http_kind kind, const char *s, size_t len, const size_t *cuts, int ncuts,
		struct log *out, bool eof)
{
	run_mode(kind, s, len, cuts, ncuts, out, eof, false);
}

/* Whole vs every two-way split vs byte-by-byte: identical logs. */
static void check_splits(enum ls_http_kind kind, const char *s, const char *want, bool eof)
{
	size_t len = strlen(s);
	static struct log whole, ref, part;

	run(kind, s, len, NULL, 0, &whole, eof);
	assert_string_equal(whole.s, want);
	/* with stream offsets: identical however the stream is split */
	run_mode(kind, s, len, NULL, 0, &ref, eof, true);
	for (size_t cut = 1; cut < len; cut++) {
		run_mode(kind, s, len, &cut, 1, &part, eof, true);
		if (strcmp(part.s, ref.s))
			fail_msg("split at %zu: got %s want %s", cut, part.s, ref.s);
	}
	size_t *cuts = malloc(len * sizeof(size_t));
	for (size_t i = 1; i < len; i++)
		cuts[i - 1] = i;
	run_mode(kind, s, len, cuts, (int)len - 1, &part, eof, true);
	assert_string_equal(part.s, ref.s);
	free(cuts);
}

static void test_request_simple(void **state)
{
	(void)state;
	check_splits(LS_HTTP_REQUEST, "GET /health HTTP/1.1\r\nHost: x\r\n\r\n", "HGET /health|END|",
		     false);
	check_splits(LS_HTTP_REQUEST,
		     "POST /v1/completions HTTP/1.1\r\nContent-Length: 5\r\nX-Request-Id: abc-1\r\n"
		     "traceparent: 00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01\r\n\r\nhello",
		     "HPOST /v1/completions rid=abc-1 tp=00-0af7651916cd43dd8448eb211c80319c-"
		     "b7ad6b7169203331-01|B|END|",
		     false);
	/* a proxy's X-Forwarded-For: its first address is the client (the
	 * first such header counts) */
	check_splits(LS_HTTP_REQUEST,
		     "GET /a HTTP/1.1\r\nX-Forwarded-For:  10.1.2.3 , 10.0.0.9\r\n"
		     "x-forwarded-for: 10.9.9.9\r\n\r\n",
		     "HGET /a xff=10.1.2.3|END|", false);
}

static void test_pipelining(void **state)
{
	(void)state;
	check_splits(LS_HTTP_REQUEST,
		     "POST /a HTTP/1.1\r\nContent-Length: 3\r\n\r\nabcGET /b HTTP/1.1\r\n\r\n"
		     "POST /c HTTP/1.1\r\ncontent-length: 0\r\n\r\n",
		     "HPOST /a|B|END|HGET /b|END|HPOST /c|END|", false);
	check_splits(LS_HTTP_RESPONSE,
		     "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nokHTTP/1.1 404 Not Found\r\n"
		     "Content-Length: 0\r\n\r\n",
		     "H200|B|END|H404|END|", false);
}

static void test_offsets(void **state)
{
	struct log l;
	const char *s = "POST /a HTTP/1.1\r\nContent-Length: 3\r\n\r\nabc\r\nGET /b HTTP/1.1\r\n\r\n";

	(void)state;
	run_mode(LS_HTTP_REQUEST, s, strlen(s), NULL, 0, &l, false, true);
	/* head 0..39, body 39..42, stray CRLF, second message 44..63 */
	assert_string_equal(l.s, "S|@0|@39|HPOST /a|B|@39|END|@42|S|@44|@63|HGET /b|END|@63|");
}

static void test_chunked(void **state)
{
	(void)state;
	/* extensions and trailers */
	check_splits(LS_HTTP_REQUEST,
		     "POST /up HTTP/1.1\r\nTransfer-Encoding: gzip, chunked\r\n\r\n"
		     "4;name=val\r\nwiki\r\n5\r\npedia\r\nE\r\n in\r\n\r\nchunks.\r\n0;x=y\r\n"
		     "Expires: never\r\nX-Trailer: 1\r\n\r\nGET /next HTTP/1.1\r\n\r\n",
		     "HPOST /up|B|END|HGET /next|END|", false);
	check_splits(LS_HTTP_RESPONSE,
		     "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
		     "H200 chunked|B|END|", false);
}

static void test_sse(void **state)
{
	(void)state;
	/* multi-line events, comments, other fields, CRLF and LF line ends */
	check_splits(LS_HTTP_RESPONSE,
		     "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream; charset=utf-8\r\n"
		     "Transfer-Encoding: chunked\r\n\r\n"
		     "1f\r\n: keep-alive comment\n\ndata: a\n\n\r\n"
		     "F;ext=1\r\ndata:b\ndata: c\n\r\n"
		     "1\r\n\n\r\n"
		     "15\r\nevent: x\r\ndata: d\r\n\r\n\r\n"
		     "e\r\ndata: [DONE]\n\n\r\n0\r\n\r\n",
		     "H200 sse chunked|B|E|E|E|D|END|", false);
	/* SSE without framing: the body ends at close */
	check_splits(LS_HTTP_RESPONSE,
		     "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n"
		     "data: 1\n\ndata: 2\n\ndata: [DONE]\n\n",
		     "H200 sse close|B|E|E|D|END|", true);
}

static void test_interim_and_bodiless(void **state)
{
	struct ls_http_parser p;
	struct log l = {0};
	const char *r = "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n"
			"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";

	(void)state;
	check_splits(LS_HTTP_RESPONSE,
		     "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 204 No Content\r\n\r\n"
		     "HTTP/1.1 304 Not Modified\r\nContent-Length: 99\r\n\r\n",
		     "H204|END|H304|END|", false);
	/* the response to a HEAD request has a length but no body */
	ls_http_init(&p, LS_HTTP_RESPONSE, &cb, &l);
	ls_http_expect_head(&p);
	ls_http_feed(&p, (const uint8_t *)r, strlen(r), strlen(r));
	assert_string_equal(l.s, "H200|END|H200|B|END|");
}

static void test_http10_close(void **state)
{
	(void)state;
	check_splits(LS_HTTP_RESPONSE, "HTTP/1.0 200 OK\r\nServer: x\r\n\r\nbody bytes",
		     "H200 close|B|END|", true);
	/* cut short: reported incomplete */
	check_splits(LS_HTTP_REQUEST, "POST /x HTTP/1.1\r\nContent-Length: 10\r\n\r\nabc",
		     "HPOST /x|B|INCOMPLETE|", true);
}

static void test_garbage(void **state)
{
	struct log l;
	unsigned char junk[4096];
	unsigned seed = 3;

	(void)state;
	check_splits(LS_HTTP_REQUEST, "\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03",
		     "LOST(not HTTP)|", false);
	check_splits(LS_HTTP_REQUEST, "SSH-2.0-OpenSSH_9.2\r\n", "LOST(not HTTP)|", false);
	check_splits(LS_HTTP_RESPONSE, "HTTP/2 200\r\n\r\n", "LOST(not HTTP)|", false);
	check_splits(LS_HTTP_REQUEST, "GET /x HTTP/1.1\r\nContent-Length: 12x\r\n\r\n",
		     "LOST(not HTTP)|", false);
	for (int round = 0; round < 200; round++) {
		for (size_t i = 0; i < sizeof(junk); i++)
			junk[i] = rand_r(&seed);
		run(round & 1 ? LS_HTTP_RESPONSE : LS_HTTP_REQUEST, (const char *)junk, sizeof(junk),
		    NULL, 0, &l, true);
		assert_null(strstr(l.s, "END"));
	}
}

static void test_oversized_head(void **state)
{
	size_t n = LS_HTTP_MAX_HEAD + 100;
	char *big = malloc(n + 64);
	struct log l;

	(void)state;
	strcpy(big, "GET / HTTP/1.1\r\nX-Big: ");
	memset(big + strlen(big), 'a', n);
	strcpy(big + n, "\r\n\r\n");
	run(LS_HTTP_REQUEST, big, strlen(big), NULL, 0, &l, false);
	assert_string_equal(l.s, "LOST(head larger than 16 KiB)|");
	free(big);
}

/* Uncaptured stretches: body gaps are fine, framing gaps lose sync until
 * the next chunk of I/O that starts a message. */
static void test_gaps(void **state)
{
	struct ls_http_parser p;
	struct log l = {0};
	const char *head = "POST /a HTTP/1.1\r\nContent-Length: 5000\r\n\r\n";
	const char *next = "GET /b HTTP/1.1\r\n\r\n";

	(void)state;
	ls_http_init(&p, LS_HTTP_REQUEST, &cb, &l);
	/* head known, 5000 body bytes of which 100 known */
	char buf[6000];
	memcpy(buf, head, strlen(head));
	memset(buf + strlen(head), 'x', 100);
	ls_http_feed(&p, (const uint8_t *)buf, strlen(head) + 100, strlen(head) + 5000);
	ls_http_feed(&p, (const uint8_t *)next, strlen(next), strlen(next));
	assert_string_equal(l.s, "HPOST /a|B|END|HGET /b|END|");

	/* a head cut by the capture limit: sync lost, regained at the next message */
	memset(&l, 0, sizeof(l));
	ls_http_init(&p, LS_HTTP_REQUEST, &cb, &l);
	ls_http_feed(&p, (const uint8_t *)head, 10, strlen(head) + 5000);
	ls_http_feed(&p, (const uint8_t *)"xxxx", 4, 4);
	ls_http_feed(&p, (const uint8_t *)next, strlen(next), strlen(next));
	assert_string_equal(l.s, "LOST(HTTP framing beyond the captured bytes (raise --capture-bytes))|"
				 "HGET /b|END|");

	/* SSE: events in known bytes count, unknown ones do not invent any */
	memset(&l, 0, sizeof(l));
	ls_http_init(&p, LS_HTTP_RESPONSE, &cb, &l);
	const char *r = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nContent-Length: 40\r\n\r\n";
	ls_http_feed(&p, (const uint8_t *)r, strlen(r), strlen(r));
	ls_http_feed(&p, (const uint8_t *)"data: 1\n\n", 9, 9);
	ls_http_feed(&p, (const uint8_t *)"data: 2\n\n", 3, 9);   /* cut mid-line */
	ls_http_feed(&p, (const uint8_t *)"\ndata: 3\n\n", 10, 10);
	ls_http_feed(&p, (const uint8_t *)"data: [DONE]\n\n", 12, 12);
	assert_string_equal(l.s, "H200 sse|B|E|E|END|");
}

/* SSE events larger than the capture: each write is one chunk holding one
 * event, of which only a prefix is known. Every event still counts once and
 * the stream stays in sync. */
static void test_sse_events_beyond_capture(void **state)
{
	struct ls_http_parser p;
	struct log l = {0};
	const char *h = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
			"Transfer-Encoding: chunked\r\n\r\n";
	char ev[3000], chunk[3100];

	(void)state;
	ls_http_init(&p, LS_HTTP_RESPONSE, &cb, &l);
	ls_http_feed(&p, (const uint8_t *)h, strlen(h), strlen(h));
	memset(ev, 'x', sizeof(ev));
	memcpy(ev, "data: {", 7);
	memcpy(ev + 2000, "}\n\n", 3);
	for (int i = 0; i < 3; i++) {
		int n = snprintf(chunk, sizeof(chunk), "%x\r\n", 2003);
		memcpy(chunk + n, ev, 2003);
		memcpy(chunk + n + 2003, "\r\n", 2);
		ls_http_feed(&p, (const uint8_t *)chunk, 100, n + 2005); /* 100 bytes known */
	}
	const char *end = "e\r\ndata: [DONE]\n\n\r\n0\r\n\r\n";
	ls_http_feed(&p, (const uint8_t *)end, strlen(end), strlen(end));
	assert_string_equal(l.s, "H200 sse chunked|B|E|E|E|D|END|");
}

/* Joining a stream mid-way (a connection adopted after it began): bodies
 * that look like message starts are skipped; only a whole request or status
 * line resynchronises. Fails on a parser that resyncs on "GET " alone. */
static void test_resync_mid_stream(void **state)
{
	struct ls_http_parser p;
	struct log l = {0};
	static const char *const body_pieces[] = {
		"GET me a summary of this text, please",   /* a prompt starting with a method */
		"POST /x is not a request line\n",         /* no HTTP version */
		"HTTP/1.1 is a protocol\n",                /* a response-looking body line */
		"}, \"stream\": true}",
	};
	const char *req = "POST /v1/completions HTTP/1.1\r\nContent-Length: 2\r\n\r\n{}";

	(void)state;
	ls_http_init(&p, LS_HTTP_REQUEST, &cb, &l);
	ls_http_resync(&p);
	for (size_t i = 0; i < sizeof(body_pieces) / sizeof(body_pieces[0]); i++)
		ls_http_feed(&p, (const uint8_t *)body_pieces[i], strlen(body_pieces[i]),
			     strlen(body_pieces[i]));
	assert_string_equal(l.s, "");
	ls_http_feed(&p, (const uint8_t *)req, strlen(req), strlen(req));
	assert_string_equal(l.s, "HPOST /v1/completions|B|END|");
	assert_int_equal(p.lost_count, 0);

	/* a response joined mid-SSE: chunks skipped, the next status line syncs */
	memset(&l, 0, sizeof(l));
	ls_http_init(&p, LS_HTTP_RESPONSE, &cb, &l);
	ls_http_resync(&p);
	const char *sse[] = {"1a\r\ndata: {\"text\": \"HTTP/1.1 \"}\n\n\r\n",
			     "HTTP/1.1 200", /* a start line cut before its end: not proof */
			     "0\r\n\r\n",
			     "HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nabc"};
	for (size_t i = 0; i < 4; i++)
		ls_http_feed(&p, (const uint8_t *)sse[i], strlen(sse[i]), strlen(sse[i]));
	assert_string_equal(l.s, "H200|B|END|");
	assert_true(ls_http_starts_message(LS_HTTP_REQUEST, (const uint8_t *)"GET / HTTP/1.1\r\n", 16));
	assert_false(ls_http_starts_message(LS_HTTP_REQUEST, (const uint8_t *)"GET a b HTTP/1.1\r\n", 18));
	/* hostile-host: a target with raw non-ASCII bytes, and a request line
	 * longer than the capture kept, are still request lines (refused, the
	 * head was starred and the request went opaque); a body that merely
	 * begins with a method is not */
	assert_true(ls_http_starts_message(LS_HTTP_REQUEST,
					   (const uint8_t *)"GET /caf\xc3\xa9 HTTP/1.1\r\n", 22));
	const char *cut = "POST /v1/completions?q=aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";
	assert_true(ls_http_starts_message(LS_HTTP_REQUEST, (const uint8_t *)cut, strlen(cut)));
	assert_false(ls_http_starts_message(LS_HTTP_REQUEST, (const uint8_t *)"GET the quick brown fox jumps over",
					    34));
	assert_false(ls_http_starts_message(LS_HTTP_REQUEST, (const uint8_t *)"GET /x", 6));
}

/* X-Forwarded-For and Forwarded (RFC 7239) name the client's address: the
 * first element, unquoted, without brackets or port; and it is believed
 * only from a unix socket's peer, a traced proxy, or a trusted network.
 * Fails on a parser that takes a later hop, keeps a port, or a trust test
 * that believes an untrusted peer. */
static void test_forwarded(void **state)
{
	static const struct {
		const char *hdr, *want;
	} fw[] = {
		{"for=192.0.2.60;proto=http;by=203.0.113.43", "192.0.2.60"},
		{"For=\"[2001:db8:cafe::17]:4711\"", "2001:db8:cafe::17"},
		{"proto=https; for=198.51.100.17:8080, for=10.0.0.1", "198.51.100.17"},
		{"for=unknown", "unknown"},
		{"by=10.0.0.1, for=192.0.2.1", ""},
		{"xfor=1.2.3.4", ""},
		{"for=\"[2001:db8::1", ""},
	};
	char out[64];
	struct ls_trust t = {0};
	struct ls_request r;
	char err[160];

	(void)state;
	for (size_t i = 0; i < sizeof(fw) / sizeof(fw[0]); i++) {
		ls_http_first_forwarded_for(out, sizeof(out), fw[i].hdr, strlen(fw[i].hdr));
		assert_string_equal(out, fw[i].want);
	}
	ls_http_first_forwarded(out, sizeof(out), " 203.0.113.9 , 10.1.1.1", 23);
	assert_string_equal(out, "203.0.113.9");

	memset(&r, 0, sizeof(r));
	snprintf(r.forwarded_for, sizeof(r.forwarded_for), "203.0.113.9");
	snprintf(r.client, sizeof(r.client), "10.1.2.3:40000");
	assert_null(ls_trust_forwarded(NULL, &r));
	assert_int_equal(ls_trust_add(&t, "10.0.0.0/8", err, sizeof(err)), 0);
	assert_string_equal(ls_trust_forwarded(&t, &r), "203.0.113.9");
	snprintf(r.client, sizeof(r.client), "11.1.2.3:40000");
	assert_null(ls_trust_forwarded(&t, &r));
	snprintf(r.client, sizeof(r.client), "[2001:db8::5]:443");
	assert_null(ls_trust_forwarded(&t, &r));
	assert_int_equal(ls_trust_add(&t, "2001:db8::/33", err, sizeof(err)), 0);
	assert_string_equal(ls_trust_forwarded(&t, &r), "203.0.113.9");
	snprintf(r.client, sizeof(r.client), "[2001:db8:8000::5]:443");
	assert_null(ls_trust_forwarded(&t, &r));
	r.peer_pid = 42; /* a traced proxy's upstream connection */
	assert_string_equal(ls_trust_forwarded(&t, &r), "203.0.113.9");
	r.peer_pid = 0;
	r.transport_unix = true;
	assert_string_equal(ls_trust_forwarded(NULL, &r), "203.0.113.9");
	assert_int_equal(ls_trust_add(&t, "10.0.0.0/33", err, sizeof(err)), -1);
	assert_int_equal(ls_trust_add(&t, "10.0.0.0/", err, sizeof(err)), -1);
	assert_int_equal(ls_trust_add(&t, "bogus", err, sizeof(err)), -1);
	assert_non_null(strstr(err, "--trusted-proxy 'bogus'"));
}

/* llama.cpp's timings in a body: the numbers the report uses; an object
 * with text in it, or cut short, is none. */
static void test_timings(void **state)
{
	struct ls_http_timings t;
	const char *ok = "data: {\"x\":1,\"timings\":{\"prompt_n\":14,\"prompt_ms\":0.564,"
			 "\"prompt_per_token_ms\":0.040,\"predicted_n\":3,\"predicted_ms\":6.125},"
			 "\"usage\":{\"completion_tokens\":3,\"prompt_tokens\":14,\"total_tokens\":17}}";
	const char *text = "{\"timings\":{\"prompt_ms\":\"1\"}}", *cut = "{\"timings\":{\"prompt_ms\":1";
	const char *later = "{\"timings\":{\"a\":\"b\"},\"timings\":{\"prompt_ms\":2}}";

	(void)state;
	assert_true(ls_http_find_timings((const uint8_t *)ok, strlen(ok), &t));
	assert_true(t.prompt_ms == 0.564 && t.predicted_ms == 6.125);
	assert_int_equal(t.prompt_n, 14);
	assert_int_equal(t.predicted_n, 3);
	assert_true(t.has_timings && t.has_usage);
	assert_int_equal(t.prompt_tokens, 14);
	assert_int_equal(t.completion_tokens, 3);
	assert_false(ls_http_find_timings((const uint8_t *)text, strlen(text), &t));
	assert_false(ls_http_find_timings((const uint8_t *)cut, strlen(cut), &t));
	assert_true(ls_http_find_timings((const uint8_t *)later, strlen(later), &t));
	assert_true(t.prompt_ms == 2 && isnan(t.predicted_ms));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_request_simple),
		cmocka_unit_test(test_pipelining),
		cmocka_unit_test(test_offsets),
		cmocka_unit_test(test_chunked),
		cmocka_unit_test(test_sse),
		cmocka_unit_test(test_interim_and_bodiless),
		cmocka_unit_test(test_http10_close),
		cmocka_unit_test(test_garbage),
		cmocka_unit_test(test_oversized_head),
		cmocka_unit_test(test_gaps),
		cmocka_unit_test(test_sse_events_beyond_capture),
		cmocka_unit_test(test_resync_mid_stream),
		cmocka_unit_test(test_forwarded),
		cmocka_unit_test(test_timings),
	};
	return cmocka_run_group_tests_name("http", tests, NULL, NULL);
}
