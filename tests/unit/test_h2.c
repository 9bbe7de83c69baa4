// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * HTTP/2 frame reader: header blocks encoded by libnghttp2's own deflater
 * (the other end's encoder, not ours) read back whole, split at every byte
 * and byte by byte; DATA with unknown payload; a header block the capture
 * lacks loses sync; scrubbing keeps every frame and field but credentials
 * (raw and Huffman-coded) and DATA payloads, and the result still decodes;
 * a connection met mid-flight is known by whole frames, its blocks unread.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <nghttp2/nghttp2.h>

#include "h2.h"

struct log {
	char s[4096];
	size_t n;
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

static void on_headers(void *ctx, uint32_t stream, const struct ls_h2_headers *h, bool end)
{
	add(ctx, "H%u %s %s %d x=%s grpc=%d gs=%d sse=%d%s|", stream, h->m.method, h->m.path,
	    h->m.status, h->m.x_request_id, h->grpc, h->grpc_status, h->m.sse, end ? " END" : "");
}

static void on_data(void *ctx, uint32_t stream, uint32_t len, bool done, bool end)
{
	add(ctx, "D%u %u%s%s|", stream, len, done ? " DONE" : "", end ? " END" : "");
}

static void on_reset(void *ctx, uint32_t stream)
{
	add(ctx, "R%u|", stream);
}

static void on_lost(void *ctx, const char *why)
{
	add(ctx, "LOST %s|", why);
}

static void on_window(void *ctx, uint32_t stream, uint32_t inc)
{
	add(ctx, "W%u+%u|", stream, inc);
}

static const struct ls_h2_cb cb = {.headers = on_headers, .data = on_data, .reset = on_reset,
				   .lost = on_lost, .window = on_window};

struct wire {
	uint8_t b[8192];
	size_t n;
};

static void frame(struct wire *w, uint8_t type, uint8_t flags, uint32_t stream, const void *p,
		  size_t len)
{
	uint8_t h[9] = {len >> 16, len >> 8, len, type, flags, stream >> 24, stream >> 16,
			stream >> 8, stream};
	memcpy(w->b + w->n, h, 9);
	memcpy(w->b + w->n + 9, p, len);
	w->n += 9 + len;
}

/* A header block from nghttp2's deflater (its choice of indexing and
 * Huffman), as a HEADERS frame. */
static void headers(struct wire *w, nghttp2_hd_deflater *d, uint32_t stream, bool end, size_t n,
		    const char *const *kv)
{
	nghttp2_nv nv[16];
	uint8_t blk[2048];

	for (size_t i = 0; i < n; i++)
		nv[i] = (nghttp2_nv){(uint8_t *)kv[2 * i], (uint8_t *)kv[2 * i + 1], strlen(kv[2 * i]),
				     strlen(kv[2 * i + 1]), NGHTTP2_NV_FLAG_NONE};
	ssize_t len = nghttp2_hd_deflate_hd(d, blk, sizeof(blk), nv, n);
	assert_true(len > 0);
	frame(w, 0x1, 0x4 | (end ? 0x1 : 0), stream, blk, (size_t)len);
}

static const char *const req1[] = {":method", "POST", ":path", "/llm.Generate/Stream",
				   ":scheme", "http", "content-type", "application/grpc",
				   "authorization", "Bearer sk-SECRETVALUE0001", "x-request-id", "r-1"};
static const char *const req3[] = {":method", "POST", ":path", "/v1/completions",
				   ":scheme", "http", "authorization", "Bearer sk-SECRETVALUE0001",
				   "x-request-id", "r-3"};
static const char *const resp[] = {":status", "200", "content-type", "application/grpc"};
static const char *const trailers[] = {"grpc-status", "0"};
static const char *const sse[] = {":status", "200", "content-type", "text/event-stream"};

/* Both directions of a connection: two gRPC-ish streams interleaved. */
static void build(struct wire *rx, struct wire *tx)
{
	nghttp2_hd_deflater *dr, *dt;
	static const uint8_t settings[] = {0, 1, 0, 0, 0x10, 0}; /* HEADER_TABLE_SIZE 4096 */

	assert_int_equal(nghttp2_hd_deflate_new(&dr, 4096), 0);
	assert_int_equal(nghttp2_hd_deflate_new(&dt, 4096), 0);
	memcpy(rx->b, LS_H2_PREFACE, LS_H2_PREFACE_LEN);
	rx->n = LS_H2_PREFACE_LEN;
	frame(rx, 0x4, 0, 0, settings, sizeof(settings));
	headers(rx, dr, 1, false, 6, req1);
	frame(rx, 0x0, 0x1, 1, "\0\0\0\0\3abc", 8);
	headers(rx, dr, 3, true, 5, req3);
	frame(tx, 0x4, 0, 0, settings, sizeof(settings));
	headers(tx, dt, 1, false, 2, resp);
	headers(tx, dt, 3, false, 2, sse);
	frame(tx, 0x0, 0, 1, "\0\0\0\0\5hello", 10);
	frame(tx, 0x0, 0x8, 3, "\2data: x\n\n\0\0", 12); /* padded */
	frame(tx, 0x0, 0, 3, "data: [DONE]\n\n", 14);
	frame(tx, 0x3, 0, 3, "\0\0\0\x8", 4);
	headers(tx, dt, 1, true, 1, trailers);
	nghttp2_hd_deflate_del(dr);
	nghttp2_hd_deflate_del(dt);
}

static const char *const want_rx =
	"H1 POST /llm.Generate/Stream 0 x=r-1 grpc=1 gs=-1 sse=0|D1 8 END|"
	"H3 POST /v1/completions 0 x=r-3 grpc=0 gs=-1 sse=0 END|";
static const char *const want_tx =
	"H1   200 x= grpc=1 gs=-1 sse=0|H3   200 x= grpc=0 gs=-1 sse=1|D1 10|D3 9|D3 14 DONE|R3|"
	"H1   0 x= grpc=0 gs=0 sse=0 END|";

/* Reads w fed in pieces of `step` bytes (0: whole). */
static void read_all(const struct wire *w, bool client, size_t step, struct log *l,
		     struct ls_h2 *peer)
{
	struct ls_h2 p;

	assert_int_equal(ls_h2_init(&p, client, &cb, l), 0);
	p.peer = peer ? peer : &p;
	for (size_t at = 0; at < w->n;) {
		size_t k = step && w->n - at > step ? step : w->n - at;
		ls_h2_feed(&p, w->b + at, k, k);
		at += k;
	}
	assert_int_equal(p.pos, w->n);
	ls_h2_free(&p);
}

static void test_split_anywhere(void **state)
{
	struct wire rx = {0}, tx = {0};

	(void)state;
	build(&rx, &tx);
	for (size_t step = 0; step < 40; step++) {
		struct log a = {0}, b = {0};
		read_all(&rx, true, step, &a, NULL);
		read_all(&tx, false, step, &b, NULL);
		assert_string_equal(a.s, want_rx);
		assert_string_equal(b.s, want_tx);
	}
	/* every split point into two pieces */
	for (size_t cut = 1; cut < rx.n; cut++) {
		struct log a = {0};
		struct ls_h2 p;
		ls_h2_init(&p, true, &cb, &a);
		ls_h2_feed(&p, rx.b, cut, cut);
		ls_h2_feed(&p, rx.b + cut, rx.n - cut, rx.n - cut);
		ls_h2_free(&p);
		assert_string_equal(a.s, want_rx);
	}
}

static void test_unknown_payloads(void **state)
{
	struct wire rx = {0}, tx = {0};
	struct log l = {0};
	struct ls_h2 p;
	nghttp2_hd_deflater *d;

	(void)state;
	build(&rx, &tx);
	/* a DATA frame whose payload was not captured: still a frame */
	assert_int_equal(nghttp2_hd_deflate_new(&d, 4096), 0);
	headers(&tx, d, 5, false, 2, resp);
	nghttp2_hd_deflate_del(d);
	ls_h2_init(&p, false, &cb, &l);
	ls_h2_feed(&p, tx.b, tx.n, tx.n);
	frame(&tx, 0x0, 0x1, 5, "\0\0\0\0\5hello", 10);
	ls_h2_feed(&p, tx.b + tx.n - 19, 9, 19);
	assert_non_null(strstr(l.s, "D5 10 END|"));
	assert_null(strstr(l.s, "LOST"));
	/* a frame header beyond the capture: sync lost, bytes still counted */
	ls_h2_feed(&p, NULL, 0, 30);
	assert_non_null(strstr(l.s, "LOST an HTTP/2 frame header was not captured|"));
	assert_int_equal(p.pos, tx.n + 30);
	ls_h2_free(&p);
	/* a header block beyond the capture: HPACK state lost */
	memset(&l, 0, sizeof(l));
	ls_h2_init(&p, true, &cb, &l);
	ls_h2_feed(&p, rx.b, LS_H2_PREFACE_LEN + 15 + 12, rx.n);
	assert_non_null(strstr(l.s, "LOST a header block was not captured (HPACK state lost)|"));
	ls_h2_free(&p);
	/* not HTTP/2 */
	assert_false(ls_h2_starts((const uint8_t *)"GET / HTTP/1.1\r\n\r\n", 18, true));
	assert_true(ls_h2_starts(rx.b, rx.n, true));
	assert_true(ls_h2_starts(tx.b, tx.n, false));
	assert_false(ls_h2_starts((const uint8_t *)"HTTP/1.1 200 OK\r\n", 17, false));
}

/* Met mid-flight: frames known by their shape, header blocks never read. */
static void test_midflight(void **state)
{
	struct wire rx = {0}, tx = {0};
	struct log l = {0};
	struct ls_h2 p;
	const size_t settings = 15; /* the server's SETTINGS frame */

	(void)state;
	build(&rx, &tx);
	assert_true(ls_h2_whole_frames(tx.b + settings, tx.n - settings, tx.n - settings));
	assert_false(ls_h2_whole_frames(tx.b + settings, tx.n - settings - 1, tx.n - settings - 1));
	assert_false(ls_h2_whole_frames(tx.b + settings, tx.n - settings - 1, tx.n - settings));
	assert_false(ls_h2_whole_frames((const uint8_t *)"HTTP/1.1 200 OK\r\n\r\n", 19, 19));
	ls_h2_init(&p, false, &cb, &l);
	ls_h2_midflight(&p);
	ls_h2_feed(&p, tx.b + settings, tx.n - settings, tx.n - settings);
	ls_h2_free(&p);
	assert_string_equal(l.s, "H1   0 x= grpc=0 gs=-1 sse=0|H3   0 x= grpc=0 gs=-1 sse=0|D1 10|D3 9|"
				 "D3 14 DONE|R3|H1   0 x= grpc=0 gs=-1 sse=0 END|");
}

static bool has(const struct wire *w, const char *s)
{
	return memmem(w->b, w->n, s, strlen(s)) != NULL;
}

/* Scrubs w in pieces of `step` as the recorder does: a header frame cut by
 * a piece's end is held and scrubbed joined to the next piece. Returns
 * whether the scrubber lost sync. */
static bool scrub_pieces(struct ls_h2 *s, struct wire *w, size_t step)
{
	uint8_t join[2 * 8192];
	size_t held = 0, held_at = 0; /* the held tail: its length, its offset in w */

	for (size_t at = 0; at < w->n;) {
		size_t k = step && w->n - at > step ? step : w->n - at, took;
		memcpy(join, w->b + held_at, held);
		memcpy(join + held, w->b + at, k);
		took = ls_h2_scrub(s, join, held + k, held + k);
		if (held && took < held + k) { /* cut again: given up */
			memset(join + took, '*', held + k - took);
			ls_h2_lose(s, "over more than two pieces");
			took = held + k;
		}
		memcpy(w->b + (held ? held_at : at), join, took);
		if (took < held + k) { /* hold the tail */
			held_at = at + took;
			held = held + k - took;
		} else {
			held = 0;
		}
		at += k;
	}
	if (held) { /* nothing came after it */
		memset(w->b + held_at, '*', held);
		ls_h2_lose(s, "the end");
	}
	return s->lost_count;
}

/* Scrubbed in pieces of `step`: credentials and payloads gone, the same
 * callbacks from the scrubbed bytes. */
static void scrub_and_read(size_t step)
{
	struct wire rx = {0}, tx = {0};
	struct ls_h2 s[2];
	struct log l = {0}, a = {0}, b = {0};
	bool lost;

	build(&rx, &tx);
	ls_h2_init(&s[0], true, &cb, &l);
	ls_h2_init(&s[1], false, &cb, &l);
	s[0].peer = &s[1], s[1].peer = &s[0];
	lost = scrub_pieces(&s[0], &rx, step) | scrub_pieces(&s[1], &tx, step);
	assert_false(has(&rx, "SECRETVALUE"));
	assert_false(has(&tx, "hello"));
	assert_false(has(&tx, "data: x"));
	if (!step || step >= 128) { /* every header frame within two pieces */
		assert_false(lost);
		assert_int_equal(s[0].secrets, 2);
		assert_true(has(&tx, "data: [DONE]"));
		read_all(&rx, true, 0, &a, NULL);
		read_all(&tx, false, 0, &b, NULL);
		assert_string_equal(a.s, want_rx);
		assert_string_equal(b.s, want_tx);
	}
	ls_h2_free(&s[0]);
	ls_h2_free(&s[1]);
}

static void test_scrub(void **state)
{
	(void)state;
	scrub_and_read(0);
	for (size_t step = 1; step < 300; step++)
		scrub_and_read(step);
}

static int huff_or_raw(uint8_t first)
{
	assert_true(first == '&' || first == '*');
	return first;
}

/* A Huffman-coded credential becomes '&'s: the block still decodes. */
static void test_scrub_huffman(void **state)
{
	struct wire rx = {0};
	nghttp2_hd_deflater *d;
	struct ls_h2 s, p;
	struct log l = {0}, a = {0};
	static const char *const kv[] = {":method", "GET", ":path", "/", "cookie",
					 "sessionabcdefghijklmnopqrstuvwxyz"};

	(void)state;
	assert_int_equal(nghttp2_hd_deflate_new(&d, 4096), 0);
	memcpy(rx.b, LS_H2_PREFACE, LS_H2_PREFACE_LEN);
	rx.n = LS_H2_PREFACE_LEN;
	headers(&rx, d, 1, true, 3, kv);
	headers(&rx, d, 3, true, 3, kv); /* the cookie again: from the table now */
	nghttp2_hd_deflate_del(d);
	ls_h2_init(&s, true, &cb, &l);
	s.peer = &s;
	ls_h2_scrub(&s, rx.b, rx.n, rx.n);
	assert_true(s.secrets >= 1);
	ls_h2_free(&s);
	/* the first block, read by nghttp2 itself: the value is '&'s */
	nghttp2_hd_inflater *inf;
	const uint8_t *blk = rx.b + LS_H2_PREFACE_LEN + 9;
	size_t len = (size_t)rx.b[LS_H2_PREFACE_LEN] << 16 | rx.b[LS_H2_PREFACE_LEN + 1] << 8 |
		     rx.b[LS_H2_PREFACE_LEN + 2];
	bool seen = false;
	assert_int_equal(nghttp2_hd_inflate_new(&inf), 0);
	for (;;) {
		nghttp2_nv nv;
		int flags = 0;
		ssize_t n = nghttp2_hd_inflate_hd2(inf, &nv, &flags, blk, len, 1);
		assert_true(n >= 0);
		blk += n, len -= (size_t)n;
		if ((flags & NGHTTP2_HD_INFLATE_EMIT) && nv.namelen == 6 && !memcmp(nv.name, "cookie", 6)) {
			seen = true;
			for (size_t i = 0; i < nv.valuelen; i++)
				assert_int_equal(nv.value[i], huff_or_raw(nv.value[0]));
		}
		if (flags & NGHTTP2_HD_INFLATE_FINAL)
			break;
	}
	nghttp2_hd_inflate_del(inf);
	assert_true(seen);
	ls_h2_init(&p, true, &cb, &a);
	p.peer = &p;
	ls_h2_feed(&p, rx.b, rx.n, rx.n);
	ls_h2_free(&p);
	assert_string_equal(a.s, "H1 GET / 0 x= grpc=0 gs=-1 sse=0 END|H3 GET / 0 x= grpc=0 gs=-1 sse=0 END|");
}

/* Flow control: WINDOW_UPDATE told with its increment (the reserved bit
 * dropped); the client's SETTINGS_INITIAL_WINDOW_SIZE binds the server's
 * streams from the server's ACK of it, not before. */
static void test_flow_control(void **state)
{
	static const uint8_t settings[] = {0, 4, 0, 0, 0x04, 0}; /* INITIAL_WINDOW_SIZE 1024 */
	struct wire rx = {0}, tx = {0};
	struct log l = {0};
	struct ls_h2 prx, ptx;

	(void)state;
	memcpy(rx.b, LS_H2_PREFACE, LS_H2_PREFACE_LEN);
	rx.n = LS_H2_PREFACE_LEN;
	frame(&rx, 0x4, 0, 0, settings, sizeof(settings));
	frame(&rx, 0x8, 0, 0, "\0\0\x10\0", 4);
	frame(&rx, 0x8, 0, 3, "\x80\0\0\x05", 4);
	frame(&tx, 0x4, 0, 0, "", 0);
	frame(&tx, 0x4, 0x1, 0, "", 0); /* the server's ACK of the client's SETTINGS */
	assert_int_equal(ls_h2_init(&prx, true, &cb, &l), 0);
	assert_int_equal(ls_h2_init(&ptx, false, &cb, &l), 0);
	prx.peer = &ptx, ptx.peer = &prx;
	ls_h2_feed(&prx, rx.b, rx.n, rx.n);
	assert_string_equal(l.s, "W0+4096|W3+5|");
	assert_int_equal(ptx.init_window, 65535);
	ls_h2_feed(&ptx, tx.b, tx.n, tx.n);
	assert_int_equal(ptx.init_window, 1024);
	ls_h2_free(&prx);
	ls_h2_free(&ptx);
}

static void on_event(void *ctx, uint32_t stream, bool done)
{
	add(ctx, "E%u%s|", stream, done ? " DONE" : "");
}

/* An event-stream response: each "data:" line is told as an event, also
 * several in one frame and one cut between frames, [DONE] apart; scrubbed,
 * data lines keep "data: " (and "[DONE]"), their text becomes '*'. */
static void test_sse_events(void **state)
{
	static const struct ls_h2_cb ecb = {.event = on_event};
	static const char *const ev[] = {":status", "200", "content-type", "text/event-stream"};
	struct wire tx = {0};
	struct log l = {0};
	struct ls_h2 p;
	nghttp2_hd_deflater *d;
	size_t body;

	(void)state;
	assert_int_equal(nghttp2_hd_deflate_new(&d, 4096), 0);
	headers(&tx, d, 5, false, 2, ev);
	body = tx.n;
	static const char f1[] = "data: one\n\ndata: two\n\nda", f2[] = "ta: three\n\n: note\n\n",
			  f3[] = "data: [DONE]\n\n";
	frame(&tx, 0x0, 0, 5, f1, sizeof(f1) - 1);
	frame(&tx, 0x0, 0, 5, f2, sizeof(f2) - 1);
	frame(&tx, 0x0, 0x1, 5, f3, sizeof(f3) - 1);
	nghttp2_hd_deflate_del(d);
	assert_int_equal(ls_h2_init(&p, false, &ecb, &l), 0);
	ls_h2_feed(&p, tx.b, tx.n, tx.n);
	ls_h2_free(&p);
	assert_string_equal(l.s, "E5|E5|E5|E5 DONE|");
	l.n = 0, l.s[0] = 0;
	assert_int_equal(ls_h2_init(&p, false, &ecb, &l), 0);
	ls_h2_scrub(&p, tx.b, tx.n, tx.n);
	ls_h2_free(&p);
	assert_string_equal(l.s, "E5|E5|E5|E5 DONE|");
	body += 9;
	assert_memory_equal(tx.b + body, "data: ***\n\ndata: ***\n\nda", sizeof(f1) - 1);
	body += sizeof(f1) - 1 + 9;
	assert_memory_equal(tx.b + body, "ta: *****\n\n: note\n\n", sizeof(f2) - 1);
	body += sizeof(f2) - 1 + 9;
	assert_memory_equal(tx.b + body, f3, sizeof(f3) - 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_split_anywhere),
		cmocka_unit_test(test_unknown_payloads),
		cmocka_unit_test(test_scrub),
		cmocka_unit_test(test_scrub_huffman),
		cmocka_unit_test(test_midflight),
		cmocka_unit_test(test_flow_control),
		cmocka_unit_test(test_sse_events),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
