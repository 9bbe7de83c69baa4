// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Writes a small synthetic capture whose flame graphs are known exactly, for
 * tests/integration/test_flame_synthetic.sh. Engine process 100 ("eng"),
 * thread 101; one streaming request "req-1" on connection 1. Times in ms
 * after 1 s:
 *   1      the request is read (thread 101)
 *   1.1    the engine's arrived event: [1, 1.1] is the front-end window, where
 *          no source shows thread 101 (other); engine queueing is [1.1, 2]
 *   2      the engine schedules it; thread 101 goes on CPU
 *   2.5    thread 101 launches a GPU kernel from launch_fn
 *   3-5    the kernel
 *   4      CPU sample in gpu_wait_fn (compute time: not host)
 *   6, 7   CPU samples in host_fn_a, host_fn_b (host time)
 *   8-12   thread 101 blocked in wait_fn (nothing else runs: other)
 *   12.5   response head and first token; 13 second token; 14 the end
 *   14.2   the client has acked the whole response (T_end)
 *   14.5   thread 101 blocks again (no stacks)
 * So in the served window [2, 14]: host 1 + 3 + 2 = 6 ms over two samples
 * taken at host instants (3 ms each), compute 2 ms, other 4 ms, all of it
 * overlapping wait_fn's blocked span; with the front end's 0.1 ms, other is
 * 4.1 ms, spread over the one blocked stack that overlaps other instants.
 * Usage: flame-capture FILE [--mapping PATH | --huge-nips]
 * With --huge-nips, each stack record claims 0x20000001 addresses (it holds
 * one): a crafted count (hostile-host finding 7).
 * With --mapping, no symbol records: one mapping record of process 100 names
 * PATH as the file behind every address, so flame opens it to symbolize (a
 * hostile capture can name a FIFO or a device there).
 */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "capture.h"
#include "latsplit/engine.h"

#define MS 1000000ull
#define B 1000000000ull

static struct ls_writer *w;
static size_t tx, rx; /* response bytes written, request bytes read */

static void hdr(struct ls_hdr *h, __u16 type, __u16 size, __u64 ts, __u32 tid)
{
	h->type = type;
	h->size = size;
	h->ts = ts;
	h->pid = tid >= 100 && tid < 200 ? 100 : tid;
	h->tid = tid;
}

static void io(__u64 ts, __u16 dir, const char *data)
{
	_Alignas(8) unsigned char buf[sizeof(struct ls_ev_sock_io) + 512];
	struct ls_ev_sock_io *e = (void *)buf;
	size_t n = strlen(data);

	memset(e, 0, sizeof(*e));
	hdr(&e->h, LS_EV_SOCK_IO, sizeof(*e) + n, ts, 101);
	e->conn_id = 1;
	e->ts_enter = ts - 10000;
	e->bytes = n;
	e->dir = dir;
	e->call = dir ? LS_IO_SENDTO : LS_IO_RECVFROM;
	e->cap_len = n;
	e->seq = dir == LS_IO_OUT ? 5000 + tx : 1000 + rx; /* the anchors of main's tcp_state */
	memcpy(e + 1, data, n);
	ls_writer_append(w, &e->h);
	if (dir == LS_IO_OUT)
		tx += n;
	else
		rx += n;
}

/* The request's bytes arriving (seq) or the response's being acked (ack). */
static void probe(__u64 ts, __u32 seq, __u32 len, __u32 ack)
{
	struct ls_ev_tcp_probe p = {0};

	hdr(&p.h, LS_EV_TCP_PROBE, sizeof(p), ts, 0);
	p.h.pid = 0;
	p.conn_id = 1;
	p.seq = seq;
	p.data_len = len;
	p.ack_seq = ack;
	p.flags = 0x10;
	p.srtt_us = 200;
	ls_writer_append(w, &p.h);
}

static void sw(__u64 ts, __u32 prev, __u32 next, __s64 state, __s32 ustack)
{
	struct ls_ev_sched_switch e = {0};

	hdr(&e.h, LS_EV_SCHED_SWITCH, sizeof(e), ts, prev);
	e.next_tid = next;
	e.next_pid = next >= 100 && next < 200 ? 100 : next;
	e.prev_state = state;
	e.prev_ustack = ustack;
	e.prev_kstack = -1;
	memcpy(e.prev_comm, prev == 101 ? "eng" : "other", prev == 101 ? 4 : 6);
	memcpy(e.next_comm, next == 101 ? "eng" : "other", next == 101 ? 4 : 6);
	ls_writer_append(w, &e.h);
}

static void sample(__u64 ts, __s32 ustack)
{
	struct ls_ev_sample e = {0};

	hdr(&e.h, LS_EV_SAMPLE, sizeof(e), ts, 101);
	e.ustack = ustack;
	e.kstack = -1;
	memcpy(e.comm, "eng", 4);
	ls_writer_append(w, &e.h);
}

static void engine(__u64 ts, __u32 kind)
{
	struct ls_ev_engine e = {0};

	hdr(&e.h, LS_EV_ENGINE, sizeof(e), ts, 101);
	e.req_id = 1;
	e.kind = kind;
	e.arg = 1;
	memcpy(e.x_request_id, "req-1", 6);
	ls_writer_append(w, &e.h);
}

int main(int argc, char **argv)
{
	static const char *const fn[] = {"",	    "host_fn_a",   "host_fn_b",
					 "wait_fn", "gpu_wait_fn", "launch_fn"};
	struct ls_file_hdr fh;

	const char *mapping = argc == 4 && !strcmp(argv[2], "--mapping") ? argv[3] : NULL;
	/* a hostile count: nips * 8 wraps in 32 bits to 8, the record's size */
	bool huge_nips = argc == 3 && !strcmp(argv[2], "--huge-nips");

	if (argc != 2 && !mapping && !huge_nips) {
		fprintf(stderr, "usage: flame-capture FILE [--mapping PATH | --huge-nips]\n");
		return 2;
	}
	unlink(argv[1]);
	ls_file_hdr_init(&fh, argc, argv);
	fh.sources = LS_SRC_SCHED | LS_SRC_PROC | LS_SRC_SOCK_IO | LS_SRC_ENGINE | LS_SRC_SAMPLES |
		     LS_SRC_OFFCPU;
	if (ls_writer_open(&w, argv[1], &fh, NULL)) {
		perror(argv[1]);
		return 1;
	}
	struct ls_rec_proc_info pi = {0};
	hdr(&pi.h, LS_REC_PROC_INFO, sizeof(pi), B, 100);
	memcpy(pi.comm, "eng", 4);
	ls_writer_append(w, &pi.h);

	struct ls_ev_tcp_state st = {0};
	hdr(&st.h, LS_EV_TCP_STATE, sizeof(st), B, 101);
	st.conn_id = 1;
	st.newstate = 1; /* ESTABLISHED */
	st.t.sport = 8000;
	st.t.dport = 40000;
	st.srtt_us = 200;
	st.rcv_nxt = 1000;
	st.snd_nxt = 5000;
	ls_writer_append(w, &st.h);

	const char *req = "POST /v1/completions HTTP/1.1\r\nHost: x\r\nX-Request-Id: req-1\r\n"
			  "Content-Length: 16\r\n\r\n{\"stream\": true}";
	probe(B + MS / 2, 1000, strlen(req), 5000);
	io(B + 1 * MS, LS_IO_IN, req);
	engine(B + 1 * MS + 100000, LS_ENG_ARRIVED);
	engine(B + 2 * MS, LS_ENG_SCHEDULED);
	sw(B + 2 * MS, 999, 101, 1, -1);

	struct ls_ev_gpu_launch l = {0}; /* the kernel's launch, from launch_fn */
	hdr(&l.h, LS_EV_GPU_LAUNCH, sizeof(l), B + 2 * MS + MS / 2, 101);
	l.correlation = 7;
	l.ustack = 5;
	ls_writer_append(w, &l.h);
	struct ls_ev_gpu g = {0};
	hdr(&g.h, LS_EV_GPU, sizeof(g), B + 5 * MS, 101);
	g.kind = LS_GPU_KERNEL;
	g.source = LS_GPU_SRC_SIMULATED;
	g.start_ns = B + 3 * MS;
	g.end_ns = B + 5 * MS;
	g.correlation = 7;
	memcpy(g.name, "gemm", 5);
	ls_writer_append(w, &g.h);

	sample(B + 4 * MS, 4);
	sample(B + 6 * MS, 1);
	sample(B + 7 * MS, 2);
	sw(B + 8 * MS, 101, 999, 1, 3);
	sw(B + 12 * MS, 999, 101, 1, -1);
	io(B + 12 * MS + MS / 2, LS_IO_OUT,
	   "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
	   "Transfer-Encoding: chunked\r\n\r\n");
	io(B + 12 * MS + MS / 2 + 1000, LS_IO_OUT, "11\r\ndata: {\"t\":\"a\"}\n\n\r\n");
	io(B + 13 * MS, LS_IO_OUT, "11\r\ndata: {\"t\":\"b\"}\n\n\r\n");
	io(B + 14 * MS, LS_IO_OUT, "e\r\ndata: [DONE]\n\n\r\n0\r\n\r\n");
	engine(B + 14 * MS, LS_ENG_FINISHED);
	probe(B + 14 * MS + MS / 5, 1000 + strlen(req), 0, 5000 + tx); /* all acked */
	sw(B + 14 * MS + MS / 2, 101, 999, 1, -1);

	/* the stack map and its symbols, as record writes them at the end */
	for (int id = 1; id <= 5; id++) {
		_Alignas(8) unsigned char buf[sizeof(struct ls_rec_stack) + 8];
		struct ls_rec_stack *s = (void *)buf;
		memset(s, 0, sizeof(*s));
		hdr(&s->h, LS_REC_STACK, sizeof(buf), B + 20 * MS, 0);
		s->id = id;
		s->nips = huge_nips ? 0x20000001u : 1;
		__u64 ip = 0x1000ull * id;
		memcpy(s + 1, &ip, 8);
		ls_writer_append(w, &s->h);

		if (mapping)
			continue;
		_Alignas(8) unsigned char ybuf[sizeof(struct ls_rec_sym) + 32];
		struct ls_rec_sym *y = (void *)ybuf;
		size_t nl = strlen(fn[id]) + 1;
		memset(y, 0, sizeof(*y));
		hdr(&y->h, LS_REC_SYM, sizeof(*y) + nl, B + 20 * MS, 100);
		y->ip = ip;
		y->name_len = nl;
		memcpy(y + 1, fn[id], nl);
		ls_writer_append(w, &y->h);
	}
	if (mapping) {
		_Alignas(8) unsigned char mbuf[sizeof(struct ls_rec_mapping) + 4096];
		struct ls_rec_mapping *m = (void *)mbuf;
		size_t n = strnlen(mapping, 4095) + 1;

		memset(m, 0, sizeof(*m));
		hdr(&m->h, LS_REC_MAPPING, sizeof(*m) + n, B + 20 * MS, 100);
		m->start = 0;
		m->end = 0x10000;
		m->path_len = n;
		memcpy(m + 1, mapping, n);
		ls_writer_append(w, &m->h);
	}
	struct ls_writer_stats ws;
	ls_writer_close(w, NULL, &ws);
	return 0;
}
