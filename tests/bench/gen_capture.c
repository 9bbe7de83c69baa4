// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Writes a synthetic capture shaped like a busy inference host, for timing
 * the correlator and attribution (`make bench`): C keep-alive connections,
 * R streaming requests in all (one in flight per connection, about 20 at a
 * time), each with its socket reads/writes (HTTP heads,
 * SSE events), TCP probes carrying data arrival and ACKs, scheduler switches
 * of 8 engine threads, a GPU step (H2D, kernel, D2H) every 2 ms and engine
 * events. Usage: gen-capture FILE REQUESTS
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "capture.h"
#include "order.h"
#include "latsplit/engine.h"

static struct ls_writer *w;
static unsigned long long nrec;

/* Records leave in time order, as from a recorder's ring buffer (a real
 * capture has ~1% of records older than one before them: the demo's 0.9%);
 * generated request by request they would be 94% out of order, and the
 * report bench would measure its reorder buffer on input no recorder makes. */
static struct ls_order *ord;

static void drain(bool all)
{
	const struct ls_hdr *h;

	while ((h = ls_order_pop(ord, all)))
		ls_writer_append(w, h);
}

static void put(void *rec)
{
	ls_order_push(ord, rec);
	drain(false);
	nrec++;
}

static void hdr(struct ls_hdr *h, __u16 type, __u16 size, __u64 ts, __u32 pid, __u32 tid)
{
	h->type = type;
	h->size = size;
	h->ts = ts;
	h->pid = pid;
	h->tid = tid;
}

static void io(__u64 ts, __u64 conn, __u16 dir, const char *data, __u32 bytes, __u32 seq)
{
	_Alignas(8) unsigned char buf[sizeof(struct ls_ev_sock_io) + 1024];
	struct ls_ev_sock_io *e = (void *)buf;
	size_t n = strlen(data);

	memset(e, 0, sizeof(*e));
	if (n > 1024)
		n = 1024;
	hdr(&e->h, LS_EV_SOCK_IO, sizeof(*e) + n, ts, 1000, 1000 + conn % 8);
	e->conn_id = conn;
	e->ts_enter = ts - 2000;
	e->bytes = bytes ? bytes : n;
	e->dir = dir;
	e->call = dir ? LS_IO_SENDTO : LS_IO_RECVFROM;
	e->cap_len = n;
	e->seq = seq;
	memcpy(e + 1, data, n);
	put(e);
}

static void probe(__u64 ts, __u64 conn, __u32 seq, __u32 len, __u32 ack)
{
	struct ls_ev_tcp_probe p = {0};

	hdr(&p.h, LS_EV_TCP_PROBE, sizeof(p), ts, 0, 0);
	p.conn_id = conn;
	p.seq = seq;
	p.data_len = len;
	p.ack_seq = ack;
	p.flags = 0x10;
	p.srtt_us = 200;
	put(&p);
}

int main(int argc, char **argv)
{
	struct ls_file_hdr fh;
	long nreq = argc > 2 ? atol(argv[2]) : 100000;
	const int conns = 64, tokens = 16;
	__u64 t = 1000000000ull;
	char ev[256], req[512];
	__u32 rx[64] = {0}, tx[64] = {0};

	if (argc < 3) {
		fprintf(stderr, "usage: gen-capture FILE REQUESTS\n");
		return 2;
	}
	unlink(argv[1]);
	ls_file_hdr_init(&fh, argc, argv);
	fh.sources = LS_SRC_SCHED | LS_SRC_PROC | LS_SRC_TCP_STATE | LS_SRC_TCP_PROBE | LS_SRC_SOCK_IO |
		     LS_SRC_ENGINE;
	ord = ls_order_new(100000000); /* a request spans ~25 ms */
	if (!ord || ls_writer_open(&w, argv[1], &fh, NULL)) {
		perror(argv[1]);
		return 1;
	}
	struct ls_rec_proc_info pi = {0};
	hdr(&pi.h, LS_REC_PROC_INFO, sizeof(pi), t, 1000, 1000);
	put(&pi);
	for (int c = 1; c <= conns; c++) {
		struct ls_ev_tcp_state st = {0};
		hdr(&st.h, LS_EV_TCP_STATE, sizeof(st), t, 1000, 1000);
		st.conn_id = c;
		st.newstate = 1;
		st.t.sport = 8000;
		st.t.dport = 40000 + c;
		st.t.saddr[10] = st.t.saddr[11] = st.t.daddr[10] = st.t.daddr[11] = 0xff;
		st.srtt_us = 200;
		st.rcv_nxt = 1000;
		st.snd_nxt = 5000;
		put(&st);
	}
	for (long r = 0; r < nreq; r++) {
		__u64 c = 1 + r % conns;
		int n = snprintf(req, sizeof(req),
				 "POST /v1/completions HTTP/1.1\r\nHost: x\r\nX-Request-Id: r%ld\r\n"
				 "Content-Length: 21\r\n\r\n{\"stream\": true, \"a\"}",
				 r);
		t += 50000;
		probe(t, c, 1000 + rx[c - 1], n, 5000 + tx[c - 1]);
		rx[c - 1] += n;
		io(t + 20000, c, LS_IO_IN, req, 0, 1000 + rx[c - 1] - n);
		struct ls_ev_engine e = {0};
		hdr(&e.h, LS_EV_ENGINE, sizeof(e), t + 25000, 1000, 1001);
		e.req_id = r;
		e.kind = LS_ENG_ARRIVED;
		snprintf(e.x_request_id, sizeof(e.x_request_id), "r%ld", r);
		put(&e);
		e.kind = LS_ENG_SCHEDULED;
		e.h.ts = t + 400000;
		e.arg = 8;
		put(&e);
		const char *head = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
				   "Transfer-Encoding: chunked\r\n\r\n";
		io(t + 30000, c, LS_IO_OUT, head, 0, 5000 + tx[c - 1]);
		tx[c - 1] += strlen(head);
		__u64 tt = t + 400000;
		for (int k = 0; k < tokens; k++) {
			struct ls_ev_gpu g = {0};
			hdr(&g.h, LS_EV_GPU, sizeof(g), tt + 1500000, 1000, 1001);
			g.kind = LS_GPU_KERNEL;
			g.source = LS_GPU_SRC_SIMULATED;
			g.start_ns = tt + 200000;
			g.end_ns = tt + 1500000;
			put(&g);
			struct ls_ev_sched_switch sw = {0};
			hdr(&sw.h, LS_EV_SCHED_SWITCH, sizeof(sw), tt + 1600000, 1000, 1001);
			sw.next_pid = 1000;
			sw.next_tid = 1002;
			sw.prev_state = 1;
			put(&sw);
			char data[128];
			int dl = snprintf(data, sizeof(data), "data: {\"choices\":[{\"text\":\"tok%d\"}]}\n\n", k);
			int m = snprintf(ev, sizeof(ev), "%x\r\n%s\r\n", dl, data);
			tt += 2000000;
			io(tt, c, LS_IO_OUT, ev, m, 5000 + tx[c - 1]);
			tx[c - 1] += m;
			probe(tt + 100000, c, 1000 + rx[c - 1], 0, 5000 + tx[c - 1]);
		}
		const char *end = "e\r\ndata: [DONE]\n\n\r\n0\r\n\r\n";
		io(tt + 10000, c, LS_IO_OUT, end, 0, 5000 + tx[c - 1]);
		tx[c - 1] += strlen(end);
		probe(tt + 150000, c, 1000 + rx[c - 1], 0, 5000 + tx[c - 1]);
		t += 550000; /* a new request every 600 us: ~20 in flight, one per connection */
	}
	drain(true);
	ls_order_free(ord);
	struct ls_writer_stats ws;
	ls_writer_close(w, NULL, &ws);
	printf("%llu records, %.1f MB on disk\n", nrec, ws.file_bytes / 1e6);
	return 0;
}
