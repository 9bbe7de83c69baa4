// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Socket I/O payload pieces (user/core/sockio.c): a prefix record, a record
 * whose iovecs were cut (a piece table after the payload), and hostile
 * tables from a crafted file, which must fall back to "nothing known"
 * without reading outside the record. Then the correlator on a uvloop-style
 * stream: each chunk written as one writev of size line, data and CRLF,
 * the last one with the terminating 0-chunk, the data iovec cut by the
 * capture: every token counted, the response complete. And a response whose
 * framing the capture did not keep is "unparsed", with the reason, never
 * "aborted".
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "requests.h"
#include "sockio.h"

struct rec {
	_Alignas(8) unsigned char buf[sizeof(struct ls_ev_sock_io) + 2048];
};

/* A record of a vectored call: iov[i] bytes moved, keep[i] of each kept
 * (keep[i] < len[i] makes a hole unless it is the last kept piece). */
static struct ls_ev_sock_io *vrec(struct rec *r, const char *const *iov, const size_t *keep, int n)
{
	struct ls_ev_sock_io *e = (void *)r->buf;
	unsigned char *d = (unsigned char *)(e + 1);
	struct ls_io_seg seg[LS_IO_MAX_SEGS];
	size_t cap = 0, off = 0;
	bool cut = false, holes = false;

	memset(r->buf, 0, sizeof(r->buf));
	e->h.type = LS_EV_SOCK_IO;
	for (int i = 0; i < n; i++) {
		size_t len = strlen(iov[i]);
		memcpy(d + cap, iov[i], keep[i]);
		seg[i] = (struct ls_io_seg){(uint32_t)off, (uint32_t)keep[i]};
		holes |= cut && keep[i];
		cut = keep[i] < len;
		cap += keep[i];
		off += len;
	}
	e->bytes = off;
	e->cap_len = cap;
	cap = (cap + 7) & ~7ul;
	if (holes) {
		e->nseg = n;
		memcpy(d + cap, seg, n * sizeof(seg[0]));
	}
	e->h.size = sizeof(*e) + cap + (holes ? n * sizeof(seg[0]) : 0);
	return e;
}

static void test_prefix(void **state)
{
	struct rec r;
	const char *iov[] = {"abc", "defg"};
	const size_t keep[] = {3, 2};
	struct ls_io_piece p[LS_IO_MAX_PIECES];
	struct ls_ev_sock_io *e = vrec(&r, iov, keep, 2);

	(void)state;
	assert_int_equal(e->nseg, 0);
	assert_int_equal(ls_io_pieces(e, e->h.size, p), 1);
	assert_int_equal(p[0].known, 5);
	assert_int_equal(p[0].total, 7);
	assert_memory_equal(p[0].data, "abcde", 5);
	assert_int_equal(ls_io_kept(e, e->h.size), 5);
}

static void test_holes(void **state)
{
	struct rec r;
	const char *iov[] = {"a4\r\n", "data: 0123456789\n\n", "\r\n0\r\n\r\n"};
	const size_t keep[] = {4, 6, 7};
	struct ls_io_piece p[LS_IO_MAX_PIECES];
	struct ls_ev_sock_io *e = vrec(&r, iov, keep, 3);

	(void)state;
	assert_int_equal(e->nseg, 3);
	assert_int_equal(ls_io_pieces(e, e->h.size, p), 3);
	assert_int_equal(p[0].known, 4);
	assert_int_equal(p[0].total, 4);
	assert_int_equal(p[1].known, 6);
	assert_int_equal(p[1].total, 18);
	assert_memory_equal(p[1].data, "data: ", 6);
	assert_int_equal(p[2].known, 7);
	assert_int_equal(p[2].total, 7);
	assert_memory_equal(p[2].data, "\r\n0\r\n\r\n", 7);
}

/* Every crafted table: one piece, nothing known, every byte counted. */
static void assert_unknown(struct ls_ev_sock_io *e, size_t size)
{
	struct ls_io_piece p[LS_IO_MAX_PIECES];

	assert_int_equal(ls_io_pieces(e, size, p), 1);
	assert_int_equal(p[0].known, 0);
	assert_int_equal(p[0].total, e->bytes);
}

static void test_hostile_tables(void **state)
{
	struct rec r;
	const char *iov[] = {"a4\r\n", "data: 0123456789\n\n", "\r\n0\r\n\r\n"};
	const size_t keep[] = {4, 6, 7};
	struct ls_ev_sock_io *e;
	struct ls_io_seg *seg;

	(void)state;
	e = vrec(&r, iov, keep, 3);
	e->nseg = LS_IO_MAX_SEGS + 1; /* more than any call has */
	assert_unknown(e, e->h.size);
	e = vrec(&r, iov, keep, 3);
	assert_unknown(e, e->h.size - 8); /* the table runs past the record */
	e = vrec(&r, iov, keep, 3);
	seg = (void *)((unsigned char *)(e + 1) + 24);
	seg[1].off = 0; /* goes backwards */
	assert_unknown(e, e->h.size);
	e = vrec(&r, iov, keep, 3);
	seg = (void *)((unsigned char *)(e + 1) + 24);
	seg[2].len = 4000; /* more than was kept */
	assert_unknown(e, e->h.size);
	e = vrec(&r, iov, keep, 3);
	seg = (void *)((unsigned char *)(e + 1) + 24);
	seg[2].off = 0xfffffff0u; /* past the bytes moved */
	assert_unknown(e, e->h.size);
	e = vrec(&r, iov, keep, 3);
	e->cap_len = 60000; /* more than the record holds */
	assert_unknown(e, e->h.size);
}

struct seen {
	int n;
	struct ls_request last;
};

static void on_req(void *ctx, const struct ls_request *r)
{
	struct seen *s = ctx;

	s->n++;
	s->last = *r;
	ls_request_release(&s->last); /* the emit callback owns its token and blocked lists */
}

static uint64_t now = 1000000;

static void add(struct ls_corr *c, struct ls_ev_sock_io *e, int dir, uint32_t seq)
{
	e->h.ts = now += 1000;
	e->h.pid = e->h.tid = 42;
	e->conn_id = 9;
	e->dir = dir;
	e->call = dir == LS_IO_OUT ? LS_IO_WRITEV : LS_IO_READ;
	e->seq = seq;
	ls_corr_add(c, &e->h);
}

static void finish(struct ls_corr *c)
{
	struct ls_ev_tcp_destroy d = {.h = {.type = LS_EV_TCP_DESTROY, .size = sizeof(d)}};

	d.h.ts = now += 1000;
	d.conn_id = 9;
	ls_corr_add(c, &d.h);
}

static uint32_t request(struct ls_corr *c)
{
	struct rec r;
	const char *req[] = {"POST /v1/completions HTTP/1.1\r\nContent-Length: 2\r\n\r\n{}"};
	const size_t keep[] = {strlen(req[0])};

	add(c, vrec(&r, req, keep, 1), LS_IO_IN, 0);
	return strlen(req[0]);
}

static const char head[] = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
			   "Transfer-Encoding: chunked\r\n\r\n";
static const char tok[] = "data: {\"choices\":[{\"text\":\" tok\"}]}\n\n";

static void test_uvloop_stream(void **state)
{
	struct seen s = {0};
	struct ls_corr *c = ls_corr_new(on_req, &s);
	struct rec r;
	char size[16];
	uint32_t tx = 0;

	(void)state;
	request(c);
	snprintf(size, sizeof(size), "%zx\r\n", strlen(tok));
	const char *first[] = {head, size, tok, "\r\n"};
	const size_t keep1[] = {strlen(head), strlen(size), strlen(tok), 2};
	struct ls_ev_sock_io *e = vrec(&r, first, keep1, 4);
	add(c, e, LS_IO_OUT, tx);
	tx += e->bytes;
	/* the last writev: a token, [DONE], the 0-chunk; each data iovec cut
	 * to 6 bytes as a small --capture-bytes would */
	const char *last[] = {size, tok, "\r\n", "e\r\n", "data: [DONE]\n\n", "\r\n", "0\r\n\r\n"};
	const size_t keep2[] = {strlen(size), 6, 2, 3, 14, 2, 5};
	e = vrec(&r, last, keep2, 7);
	assert_true(e->nseg > 0);
	add(c, e, LS_IO_OUT, tx);
	finish(c);
	ls_corr_free(c);
	assert_int_equal(s.n, 1);
	assert_int_equal(s.last.tokens, 2);
	assert_int_not_equal(s.last.outcome, LS_REQ_UNPARSED);
	assert_int_not_equal(s.last.outcome, LS_REQ_ABORTED);
	assert_int_equal(s.last.out_end, tx + e->bytes);
}

static void test_unparsed_not_aborted(void **state)
{
	struct seen s = {0};
	struct ls_corr *c = ls_corr_new(on_req, &s);
	struct rec r;
	char size[16];

	(void)state;
	request(c);
	snprintf(size, sizeof(size), "%zx\r\n", strlen(tok));
	/* the capture kept only the head and part of the size line: the
	 * framing after it is unknown */
	const char *w[] = {head, size, tok, "\r\n", "0\r\n\r\n"};
	const size_t keep[] = {strlen(head), 1, 0, 0, 0};
	struct ls_ev_sock_io *e = vrec(&r, w, keep, 5);
	add(c, e, LS_IO_OUT, 0);
	finish(c);
	ls_corr_free(c);
	assert_int_equal(s.n, 1);
	assert_int_equal(s.last.outcome, LS_REQ_UNPARSED);
	assert_string_equal(ls_outcome_name(s.last.outcome), "unparsed");
	assert_non_null(strstr(s.last.unparsed_why, "payload not captured: writev moved"));
	assert_int_equal(s.last.bytes_out, e->bytes);
}

/* Keep-alive: whole responses, then one the parser lost whose bytes go on
 * after the earlier requests left (each acked as it goes: they leave early,
 * and the lost one's index shifts), then a whole one: every request out
 * once, in order, the third unparsed with the bytes that followed it. */
struct outs {
	int n;
	enum ls_outcome o[8];
};

static void on_out(void *ctx, const struct ls_request *r)
{
	struct outs *s = ctx;
	struct ls_request copy = *r;

	if (s->n < 8)
		s->o[s->n] = r->outcome;
	s->n++;
	ls_request_release(&copy);
}


static void test_unparsed_keepalive(void **state)
{
	struct outs s = {0};
	struct ls_corr *c = ls_corr_new(on_out, &s);
	struct ls_ev_tcp_state st = {.h = {.type = LS_EV_TCP_STATE, .size = sizeof(st)}};
	struct rec r;
	uint32_t rx = 1000, tx = 5000;
	const char *req[] = {"GET /k HTTP/1.1\r\n\r\n"};
	const size_t rkeep[] = {strlen(req[0])};
	const char *ok[] = {"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"};
	const size_t okeep[] = {strlen(ok[0])};
	char size[16];

	(void)state;
	st.h.ts = now;
	st.conn_id = 9;
	st.newstate = 1;
	st.rcv_nxt = rx;
	st.snd_nxt = tx;
	ls_corr_add(c, &st.h);
	snprintf(size, sizeof(size), "%zx\r\n", strlen(tok));
	for (int i = 0; i < 4; i++) {
		struct ls_ev_sock_io *e = vrec(&r, req, rkeep, 1);
		add(c, e, LS_IO_IN, rx);
		rx += e->bytes;
		if (i == 2) { /* chunked, its framing not kept */
			const char *w[] = {head, size, tok, "\r\n", "0\r\n\r\n"};
			const size_t keep[] = {strlen(head), 1, 0, 0, 0};
			e = vrec(&r, w, keep, 5);
		} else {
			e = vrec(&r, ok, okeep, 1);
		}
		add(c, e, LS_IO_OUT, tx);
		tx += e->bytes;
		struct ls_ev_tcp_probe p = {.h = {.type = LS_EV_TCP_PROBE, .size = sizeof(p)}};
		p.h.ts = now += 1000;
		p.conn_id = 9;
		p.seq = rx;
		p.ack_seq = tx;
		p.flags = 0x10;
		ls_corr_add(c, &p.h);
		if (i == 2) { /* more of the lost response, once the earlier ones left */
			const char *more[] = {tok};
			const size_t none[] = {0};
			e = vrec(&r, more, none, 1);
			add(c, e, LS_IO_OUT, tx);
			tx += e->bytes;
		}
	}
	finish(c);
	ls_corr_free(c);
	assert_int_equal(s.n, 4);
	assert_int_equal(s.o[2], LS_REQ_UNPARSED);
	for (int i = 0; i < 4; i++)
		if (i != 2)
			assert_int_equal(s.o[i], LS_REQ_OK);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_prefix),
		cmocka_unit_test(test_holes),
		cmocka_unit_test(test_hostile_tables),
		cmocka_unit_test(test_uvloop_stream),
		cmocka_unit_test(test_unparsed_not_aborted),
		cmocka_unit_test(test_unparsed_keepalive),
	};
	return cmocka_run_group_tests_name("sockio", tests, NULL, NULL);
}
