// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Request correlator on hand-built records: connection ids read from a file
 * are untrusted (a crafted 0xF0000000 once sized an array by it and
 * aborted); connections met mid-flight (conn_adopt) start parsing at the next
 * whole start line, show the response in flight as partial, and feed bytes
 * that no record showed as a gap; connections the process opened as a
 * client are upstream, not split and not opaque; TLS plaintext is parsed
 * while its marks come from the ciphertext on the wire.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "requests.h"

struct seen {
	int n, partial, ok;
	char paths[8][256];
	uint32_t rtx[128];
	bool tls; /* the last request's */
	uint64_t bytes_in, bytes_out, t_in, t_end;
	uint64_t dlv[8], first_dlv[8]; /* each request's delivery marks */
	uint64_t t_ins[8], t_ttfts[8]; /* each request's arrival and first-byte marks */
};

static void on_req(void *ctx, const struct ls_request *r)
{
	struct seen *s = ctx;

	if (s->n < 8)
		snprintf(s->paths[s->n], sizeof(s->paths[0]), "%s", r->path);
	if (s->n < 128)
		s->rtx[s->n] = r->retransmits;
	if (s->n < 8) {
		s->dlv[s->n] = r->t_dlv;
		s->first_dlv[s->n] = r->t_first_dlv;
		s->t_ins[s->n] = r->t_in;
		s->t_ttfts[s->n] = r->t_first;
	}
	s->n++;
	s->partial += r->outcome == LS_REQ_PARTIAL;
	s->ok += r->outcome == LS_REQ_OK;
	s->tls = r->tls;
	s->bytes_in = r->bytes_in;
	s->bytes_out = r->bytes_out;
	s->t_in = r->t_in;
	s->t_end = r->t_end;
}

static uint64_t now = 1000000;

/* A socket I/O record (call: a syscall, or SSL_read/SSL_write's plaintext
 * with no sequence number), entered 500 ns before it returns. */
static uint32_t next_xmit; /* the next write's folded transmission (ABI 5), once */
/* the next read's folded arrival (ABI 6), once: ns before it, the ACK it carries */
static uint32_t next_arrive_dt, next_arrive_ack;

static void io_call(struct ls_corr *c, uint64_t conn, int dir, uint32_t seq, int call,
		    const char *data)
{
	_Alignas(8) unsigned char buf[sizeof(struct ls_ev_sock_io) + 512];
	struct ls_ev_sock_io *e = (void *)buf;
	size_t n = strlen(data);

	memset(buf, 0, sizeof(buf));
	e->h.type = LS_EV_SOCK_IO;
	e->h.size = sizeof(*e) + ((n + 7) & ~7ul);
	e->h.ts = now += 1000;
	e->h.pid = e->h.tid = 42;
	e->ts_enter = e->h.ts - 500;
	e->conn_id = conn;
	e->bytes = n;
	e->cap_len = n;
	e->dir = dir;
	e->call = call;
	e->seq = seq;
	e->xmit = next_xmit;
	next_xmit = 0;
	if (next_arrive_dt) { /* as probe() below would have said it */
		e->arrive_dt = next_arrive_dt;
		e->arrive_ack = next_arrive_ack;
		e->arrive_srtt_us = 100;
		e->arrive_len_flags = (uint32_t)n << 8 | 0x10;
		next_arrive_dt = 0;
	}
	memcpy(e + 1, data, n);
	ls_corr_add(c, &e->h);
}

static void io(struct ls_corr *c, uint64_t conn, int dir, uint32_t seq, const char *data)
{
	io_call(c, conn, dir, seq, dir == LS_IO_IN ? LS_IO_READ : LS_IO_WRITE, data);
}

static void destroy(struct ls_corr *c, uint64_t conn)
{
	struct ls_ev_tcp_destroy d = {.h = {.type = LS_EV_TCP_DESTROY, .size = sizeof(d)}};

	d.h.ts = now += 1000;
	d.conn_id = conn;
	ls_corr_add(c, &d.h);
}

static void test_untrusted_conn_ids(void **state)
{
	static const uint64_t ids[] = {0xF0000000ull, 0x30000000ull, UINT64_MAX, 1, 1ull << 40};
	struct seen s = {0};
	struct ls_corr *c = ls_corr_new(on_req, &s);

	(void)state;
	for (size_t i = 0; i < 5; i++) {
		io(c, ids[i], LS_IO_IN, 0, "GET /x HTTP/1.1\r\n\r\n");
		io(c, ids[i], LS_IO_OUT, 0, "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n");
	}
	destroy(c, 0x30000000ull);
	ls_corr_free(c);
	assert_int_equal(s.n, 5);
}

static void test_adopted_mid_stream(void **state)
{
	struct seen s = {0};
	struct ls_corr *c = ls_corr_new(on_req, &s);
	struct ls_ev_conn_adopt a = {.h = {.type = LS_EV_CONN_ADOPT, .size = sizeof(a)}};
	const char *req = "POST /v1/completions HTTP/1.1\r\nContent-Length: 2\r\n\r\n{}";
	const char *resp = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";
	uint32_t rx = 5000, tx = 9000;

	(void)state;
	a.h.ts = now;
	a.conn_id = 7;
	a.via = LS_ADOPT_TCP;
	a.copied_seq = a.rcv_nxt = rx;
	a.write_seq = a.snd_una = tx;
	ls_corr_add(c, &a.h);
	/* the tail of a streamed response in flight when the capture began */
	io(c, 7, LS_IO_OUT, tx, "e\r\ndata: [DONE]\n\n\r\n");
	tx += 19;
	io(c, 7, LS_IO_OUT, tx, "0\r\n\r\n");
	tx += 5;
	/* a whole request and response */
	io(c, 7, LS_IO_IN, rx, req);
	rx += strlen(req);
	io(c, 7, LS_IO_OUT, tx, resp);
	tx += strlen(resp);
	/* a request read by a syscall the capture missed: a gap, then the next */
	rx += strlen(req);
	io(c, 7, LS_IO_IN, rx, "GET /next HTTP/1.1\r\n\r\n");
	rx += strlen("GET /next HTTP/1.1\r\n\r\n");
	/* EOF: reading the FIN moved copied_seq one past the data; not a gap */
	io(c, 7, LS_IO_IN, rx + 1, "");
	assert_int_equal(ls_corr_stats(c)->unseen_bytes, strlen(req));
	destroy(c, 7);
	ls_corr_free(c);
	assert_int_equal(s.partial, 1);
	assert_int_equal(s.n, 3);
	assert_string_equal(s.paths[1], "/v1/completions");
	assert_string_equal(s.paths[2], "/next");
}

static void probe(struct ls_corr *c, uint64_t conn, uint32_t seq, uint32_t len, uint32_t ack)
{
	struct ls_ev_tcp_probe p = {.h = {.type = LS_EV_TCP_PROBE, .size = sizeof(p)}};

	p.h.ts = now += 1000;
	p.conn_id = conn;
	p.seq = seq;
	p.data_len = len;
	p.ack_seq = ack;
	p.flags = 0x10;
	p.srtt_us = 100;
	ls_corr_add(c, &p.h);
}

static void retrans(struct ls_corr *c, uint64_t conn, uint32_t seq)
{
	struct ls_ev_tcp_retrans x = {.h = {.type = LS_EV_TCP_RETRANS, .size = sizeof(x)}};

	x.h.ts = now += 1000;
	x.conn_id = conn;
	x.seq = seq;
	x.segs = 1;
	ls_corr_add(c, &x.h);
}

/* An established connection conn whose next bytes in are rx, out tx. */
static void establish(struct ls_corr *c, uint64_t conn, uint32_t rx, uint32_t tx)
{
	struct ls_ev_tcp_state st = {.h = {.type = LS_EV_TCP_STATE, .size = sizeof(st)}};

	st.h.ts = now;
	st.conn_id = conn;
	st.newstate = 1;
	st.rcv_nxt = rx;
	st.snd_nxt = tx;
	ls_corr_add(c, &st.h);
}

/* A keep-alive connection hands each request over once it is acknowledged
 * and the next one has begun, not when the connection ends: memory follows
 * what is open. Retransmits still go where the bytes say: a data
 * retransmit to the response that carried it, one past every response (our
 * FIN) to the last request, at the connection's end. */
static void test_keepalive_emits_as_it_goes(void **state)
{
	struct seen s = {0};
	struct ls_corr *c = ls_corr_new(on_req, &s);
	const char *req = "GET /k HTTP/1.1\r\n\r\n";
	const char *resp = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";
	uint32_t rx = 1000, tx = 5000, n = 100;
	uint64_t t_last = 0;

	(void)state;
	establish(c, 3, rx, tx);
	for (uint32_t i = 0; i < n; i++) {
		probe(c, 3, rx, strlen(req), tx);
		t_last = now;
		io(c, 3, LS_IO_IN, rx, req);
		rx += strlen(req);
		io(c, 3, LS_IO_OUT, tx, resp);
		if (i == 1)
			retrans(c, 3, tx); /* the second response, sent again */
		tx += strlen(resp);
		probe(c, 3, rx, 0, tx);
		/* every request but this one is out */
		assert_int_equal(s.n, (int)i);
	}
	/* nothing older than the last request's start is kept for it */
	assert_true(ls_corr_horizon(c, now) >= t_last);
	retrans(c, 3, tx); /* our FIN */
	destroy(c, 3);
	ls_corr_free(c);
	assert_int_equal(s.n, (int)n);
	assert_int_equal(s.ok, (int)n);
	assert_int_equal(s.rtx[0], 0);
	assert_int_equal(s.rtx[1], 1);
	assert_int_equal(s.rtx[2], 0);
	assert_int_equal(s.rtx[n - 1], 1);
}

/* A connection on which the tracked process wrote the first request (a
 * proxy's upstream, HTTP/1.1 or HTTP/2) is upstream: counted, not split, not
 * opaque; a server's connection beside it is split as ever. */
static void test_upstream_connections(void **state)
{
	struct seen s = {0};
	struct ls_corr *c = ls_corr_new(on_req, &s);
	const struct ls_corr_stats *st = ls_corr_stats(c);

	(void)state;
	io(c, 7, LS_IO_OUT, 0, "POST /v1/completions HTTP/1.1\r\nContent-Length: 0\r\n\r\n");
	io(c, 7, LS_IO_IN, 0, "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n");
	io(c, 8, LS_IO_OUT, 0, "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n");
	io(c, 9, LS_IO_IN, 0, "GET /x HTTP/1.1\r\n\r\n");
	io(c, 9, LS_IO_OUT, 0, "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n");
	ls_corr_finish(c);
	assert_int_equal(st->conns_upstream, 2);
	assert_int_equal(st->conns_opaque, 0);
	assert_int_equal(st->conns_http, 1);
	assert_int_equal(s.n, 1);
	assert_string_equal(s.paths[0], "/x");
	ls_corr_free(c);
}

/* Plaintext through libssl (SSL_read/SSL_write records) on a TLS
 * connection: parsed as HTTP, while the marks come from the ciphertext's
 * TCP points: the request was in when its ciphertext arrived, the response
 * written when its SSL_write's ciphertext went out (a memory BIO: the write
 * after the call), delivered when that ciphertext was acknowledged. Bytes
 * are the plaintext message's; the ciphertext is never parsed. */
static void test_tls_plaintext_on_wire_marks(void **state)
{
	struct seen s = {0};
	struct ls_corr *c = ls_corr_new(on_req, &s);
	const char *req = "GET /t HTTP/1.1\r\n\r\n";
	const char *resp = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";
	char hello[301], fin[201], server[401], rec[151];
	uint32_t rx = 1000, tx = 5000;
	uint64_t t_arr, t_ack;

	(void)state;
	memset(hello, 'h', 300), hello[300] = 0;
	memcpy(hello, "\x16\x03\x01", 3);
	memset(fin, 'f', 200), fin[200] = 0;
	memset(server, 's', 400), server[400] = 0;
	memset(rec, 'r', 150), rec[150] = 0;
	establish(c, 4, rx, tx);
	probe(c, 4, rx, 300, tx);
	io(c, 4, LS_IO_IN, rx, hello);
	io(c, 4, LS_IO_OUT, tx, server);
	probe(c, 4, rx + 300, 200, tx + 400);
	t_arr = now;
	io(c, 4, LS_IO_IN, rx + 300, fin);
	io_call(c, 4, LS_IO_IN, 0, LS_IO_SSL_READ, req);
	io_call(c, 4, LS_IO_OUT, 0, LS_IO_SSL_WRITE, resp);
	io(c, 4, LS_IO_OUT, tx + 400, rec);
	probe(c, 4, rx + 500, 0, tx + 500); /* a part of it */
	probe(c, 4, rx + 500, 0, tx + 550);
	t_ack = now;
	destroy(c, 4);
	ls_corr_free(c);
	assert_int_equal(s.n, 1);
	assert_int_equal(s.ok, 1);
	assert_string_equal(s.paths[0], "/t");
	assert_true(s.tls);
	assert_int_equal(s.bytes_in, strlen(req));
	assert_int_equal(s.bytes_out, strlen(resp));
	assert_int_equal(s.t_in, t_arr);
	assert_int_equal(s.t_end, t_ack);
}

/* Emit by exception: four keep-alive exchanges, each segment's arrival
 * and each write's one transmission as their own records (tcp_probe,
 * tcp_xmit) or carried by the read and the write that took their bytes
 * (ABI 6's arrive_*, ABI 5's xmit). Each request's ACK comes with the next
 * one's segment; the last one's is a bare ACK. */
static void exchange_run(struct seen *s, bool fold_xmit, bool fold_arrival)
{
	struct ls_corr *c = ls_corr_new(on_req, s);
	const char *req = "GET /f HTTP/1.1\r\n\r\n";
	const char *resp = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";
	uint32_t rx = 1000, tx = 5000;

	now = 1000000;
	establish(c, 4, rx, tx);
	for (int i = 0; i < 4; i++) {
		if (fold_arrival) { /* the probe's time passes; the read says it */
			now += 1000;
			next_arrive_dt = 1000;
			next_arrive_ack = tx;
		} else {
			probe(c, 4, rx, strlen(req), tx);
		}
		io(c, 4, LS_IO_IN, rx, req);
		rx += strlen(req);
		/* sent 200 ns into the write (entered 500 ns before it returns) */
		if (fold_xmit) {
			next_xmit = LS_IO_XMIT | 200;
		} else {
			struct ls_ev_tcp_xmit x = {.h = {.type = LS_EV_TCP_XMIT, .size = sizeof(x)}};
			x.h.ts = now + 1000 - 500 + 200;
			x.conn_id = 4;
			x.seq = tx;
			x.len = strlen(resp);
			x.snd_una = tx;
			x.snd_wnd = 65535;
			x.nodelay = 1;
			ls_corr_add(c, &x.h);
		}
		io(c, 4, LS_IO_OUT, tx, resp);
		tx += strlen(resp);
	}
	probe(c, 4, rx, 0, tx);
	destroy(c, 4);
	ls_corr_free(c);
}

/* Folded (b) or not (a): the same four requests, the same marks each, and
 * the marks were there at all. */
static void same_marks(bool xmit, bool arrival)
{
	struct seen a = {0}, b = {0};

	exchange_run(&a, false, false);
	exchange_run(&b, xmit, arrival);
	assert_int_equal(a.ok, 4);
	assert_int_equal(b.ok, 4);
	for (int i = 0; i < 4; i++) {
		assert_true(a.t_ins[i] != 0);
		assert_true(a.dlv[i] != 0);
		assert_int_equal(a.t_ins[i], b.t_ins[i]);
		assert_int_equal(a.t_ttfts[i], b.t_ttfts[i]);
		assert_int_equal(a.dlv[i], b.dlv[i]);
		assert_int_equal(a.first_dlv[i], b.first_dlv[i]);
	}
}

static void test_folded_xmit(void **state)
{
	(void)state;
	same_marks(true, false);
}

static void test_folded_arrival(void **state)
{
	(void)state;
	same_marks(false, true);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_untrusted_conn_ids),
		cmocka_unit_test(test_adopted_mid_stream),
		cmocka_unit_test(test_keepalive_emits_as_it_goes),
		cmocka_unit_test(test_upstream_connections),
		cmocka_unit_test(test_tls_plaintext_on_wire_marks),
		cmocka_unit_test(test_folded_xmit),
		cmocka_unit_test(test_folded_arrival),
	};
	return cmocka_run_group_tests_name("requests", tests, NULL, NULL);
}
