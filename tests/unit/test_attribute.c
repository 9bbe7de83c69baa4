// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Attribution on hand-built event streams: each precedence rule, batching,
 * send-blocked over everything, engine join and preemption, T_sched
 * inference, missing sources as null, aborted requests, and a property test:
 * over random streams every request's components sum exactly to its total
 * and its TTFT components to its TTFT.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attribute.h"
#include "verdict.h"
#include "latsplit/engine.h"
#include "timeline.h"

#define MS 1000000ull

/* Device work [b, e) that thread tid of process 100 launched. */
static void gpu_by(struct ls_timeline *tl, uint32_t tid, uint32_t kind, uint32_t copy, uint64_t b,
		   uint64_t e)
{
	struct ls_ev_gpu g = {0};

	g.h.type = LS_EV_GPU;
	g.h.size = sizeof(g);
	g.h.ts = e;
	g.h.pid = 100;
	g.h.tid = tid;
	g.kind = kind;
	g.copy_kind = copy;
	g.source = LS_GPU_SRC_SIMULATED;
	g.start_ns = b;
	g.end_ns = e;
	ls_timeline_add(tl, &g.h);
}

static void gpu(struct ls_timeline *tl, uint32_t kind, uint32_t copy, uint64_t b, uint64_t e)
{
	gpu_by(tl, 0, kind, copy, b, e);
}

/* Thread tid of process 100 woken at ts (its own sched_wakeup record). */
static void wakeup(struct ls_timeline *tl, uint32_t tid, uint64_t ts)
{
	struct ls_ev_sched_wakeup wk = {0};

	wk.h.type = LS_EV_SCHED_WAKEUP;
	wk.h.size = sizeof(wk);
	wk.h.ts = ts;
	wk.h.pid = 100;
	wk.h.tid = tid;
	ls_timeline_add(tl, &wk.h);
}

/* Thread tid of process 100 runs [b, e); runnable from w (0: no wakeup). */
static void cpu(struct ls_timeline *tl, uint32_t tid, uint64_t w, uint64_t b, uint64_t e)
{
	struct ls_ev_sched_switch in = {0}, out = {0};

	if (w)
		wakeup(tl, tid, w);
	in.h.type = out.h.type = LS_EV_SCHED_SWITCH;
	in.h.size = out.h.size = sizeof(in);
	in.h.ts = b;
	in.h.pid = 999; /* some other process was running */
	in.h.tid = 999;
	in.prev_state = 1;
	in.next_pid = 100;
	in.next_tid = tid;
	ls_timeline_add(tl, &in.h);
	out.h.ts = e;
	out.h.pid = 100;
	out.h.tid = tid;
	out.prev_state = 1; /* went to sleep */
	ls_timeline_add(tl, &out.h);
}

static void engine_ev(struct ls_timeline *tl, uint64_t ts, uint64_t id, uint32_t kind,
		      uint32_t arg, const char *xrid)
{
	struct ls_ev_engine e = {0};

	e.h.type = LS_EV_ENGINE;
	e.h.size = sizeof(e);
	e.h.ts = ts;
	e.h.pid = 100;
	e.req_id = id;
	e.kind = kind;
	e.arg = arg;
	snprintf(e.x_request_id, sizeof(e.x_request_id), "%s", xrid ? xrid : "");
	ls_timeline_add(tl, &e.h);
}

static struct ls_timeline *group_timeline(void)
{
	struct ls_timeline *tl = ls_timeline_new(false);
	struct ls_rec_proc_info pi = {0};

	pi.h.type = LS_REC_PROC_INFO;
	pi.h.size = sizeof(pi);
	pi.h.pid = 100;
	ls_timeline_add(tl, &pi.h);
	return tl;
}

static struct ls_request req(uint64_t start, uint64_t in, uint64_t read, uint64_t first,
			     uint64_t out, uint64_t end)
{
	struct ls_request r;

	memset(&r, 0, sizeof(r));
	r.pid = 100;
	r.t_start = start;
	r.t_in = in;
	r.t_read = read;
	r.t_first = first;
	r.t_out = out;
	r.t_end = end;
	r.tokens = 2;
	r.streaming = true;
	return r;
}

static uint64_t comp_sum(const uint64_t *c)
{
	uint64_t s = 0;
	for (int i = 0; i < LS_C_N; i++)
		s += c[i] == LS_NULL ? 0 : c[i];
	return s;
}

/* Every instant is in exactly one part: the non-null sub-parts, host and
 * other always add up to the window, whatever sources are missing. */
static uint64_t parts_sum(const uint64_t *sub, const uint64_t *comp)
{
	uint64_t s = 0;
	for (int i = 0; i < LS_S_N; i++)
		s += sub[i] == LS_NULL ? 0 : sub[i];
	s += comp[LS_C_HOST] == LS_NULL ? 0 : comp[LS_C_HOST];
	return s + comp[LS_C_OTHER];
}

/* Every span the timeline tells, in telling order. */
struct told {
	struct {
		int kind;
		uint32_t tid;
		uint64_t b, e;
	} v[4096];
	size_t n;
};

static void told_span(void *ctx, enum ls_span_kind kind, uint32_t tgid, uint32_t tid, uint64_t b,
		      uint64_t e, const struct ls_hdr *rec)
{
	struct told *t = ctx;

	(void)tgid;
	(void)rec;
	if (t->n < sizeof(t->v) / sizeof(t->v[0])) {
		t->v[t->n].kind = kind;
		t->v[t->n].tid = tid;
		t->v[t->n].b = b;
		t->v[t->n].e = e;
		t->n++;
	}
}

static int told_cmp(const void *a, const void *b)
{
	return memcmp(a, b, sizeof(((struct told *)0)->v[0]));
}

/* A wakeup folded into the switch that runs the woken thread (ABI 7) tells
 * the same spans as its own sched_wakeup record: three threads of process
 * 100 take turns on one CPU with the idle task, blocking, being woken (some
 * twice, some while still running) and preempted, in random order. */
static void test_wakeup_fold(void **state)
{
	static struct told own, folded;
	struct told *out[2] = {&own, &folded};

	(void)state;
	for (int fold = 0; fold < 2; fold++) {
		struct ls_timeline *tl = group_timeline();
		struct ls_span_sink sink = {told_span, out[fold]};
		uint64_t ts = 1000, kw[4] = {0}; /* the kernel's woken_ts (fold) */
		uint32_t cur = 0; /* 0: idle */
		bool asleep[4] = {false};
		unsigned seed = 7;

		memset(out[fold], 0, sizeof(*out[fold]));
		ls_timeline_set_span_sink(tl, &sink);
		/* 600 random steps, then every thread woken is run (a folded
		 * wakeup is told at its switch-in: at the end of a capture one
		 * whose thread never ran again is not) */
		for (int step = 0; step < 603; step++) {
			uint32_t t = 1 + (seed = seed * 1103515245u + 12345u) % 3;
			unsigned what = (seed >> 16) % 3;

			if (step >= 600) { /* the end: thread 1, 2, 3 run if they can */
				t = (uint32_t)(step - 599);
				what = 2;
			}

			ts += 1000 + (seed >> 8) % 5000;
			if (what == 0) { /* t woken: asleep, runnable or running */
				asleep[t] = false;
				if (!fold)
					wakeup(tl, t, ts);
				else if (!kw[t]) /* kept for the switch-in: the first since it blocked */
					kw[t] = ts;
				continue;
			}
			if (t == cur || asleep[t])
				continue; /* running already, or asleep: not switched in */
			struct ls_ev_sched_switch sw = {0};

			sw.h.type = LS_EV_SCHED_SWITCH;
			sw.h.size = sizeof(sw);
			sw.h.ts = ts;
			sw.h.pid = cur ? 100 : 0;
			sw.h.tid = cur;
			sw.prev_state = what == 1; /* 1: cur blocks, 2: it is preempted */
			sw.next_pid = 100;
			sw.next_tid = t;
			if (fold && kw[t]) {
				sw.next_woken_dt = ts - kw[t];
				kw[t] = 0;
			}
			ls_timeline_add(tl, &sw.h);
			if (cur && what == 1) {
				asleep[cur] = true;
				kw[cur] = 0; /* a wakeup while it ran ends no block */
			}
			cur = t;
		}
		ls_timeline_free(tl);
	}
	assert_true(own.n > 100);
	assert_int_equal(own.n, folded.n);
	qsort(own.v, own.n, sizeof(own.v[0]), told_cmp);
	qsort(folded.v, folded.n, sizeof(folded.v[0]), told_cmp);
	assert_memory_equal(own.v, folded.v, own.n * sizeof(own.v[0]));
}

static void test_precedence(void **state)
{
	struct ls_timeline *tl = group_timeline();
	struct ls_request r = req(0 * MS + 1, 1 * MS, 2 * MS, 12 * MS, 20 * MS, 21 * MS);
	struct ls_engine_join j;
	struct ls_split s;

	(void)state;
	engine_ev(tl, 2 * MS, 7, LS_ENG_ARRIVED, 0, "x");
	engine_ev(tl, 3 * MS, 7, LS_ENG_SCHEDULED, 4, NULL);
	/* served window [3, 20] ms */
	gpu(tl, LS_GPU_KERNEL, 0, 4 * MS, 8 * MS);          /* compute 4 */
	gpu(tl, LS_GPU_MEMCPY, LS_COPY_H2D, 6 * MS, 10 * MS); /* transfer: 8..10 = 2 */
	cpu(tl, 1, 9 * MS, 9 * MS, 12 * MS);                  /* host: 10..12 = 2 */
	cpu(tl, 2, 11 * MS, 14 * MS, 15 * MS);                /* runnable 12..14 = 2, host 14..15 = 1 */
	ls_timeline_finish(tl, &r, 1);
	strcpy(r.x_request_id, "x");
	ls_timeline_join(tl, &r, 1, &j);
	assert_true(j.joined);
	assert_int_equal(j.batch_size, 4);
	ls_attribute(&r, tl, &j, &s);
	assert_string_equal(s.engine_source, "events");
	assert_int_equal(s.sub[LS_S_NET_UPLOAD], 1 * MS - 1);
	assert_int_equal(s.sub[LS_S_Q_SOCKET], 1 * MS);
	assert_int_equal(s.sub[LS_S_Q_ENGINE], 1 * MS);
	assert_int_equal(s.sub[LS_S_COMPUTE_KERNEL], 4 * MS);
	assert_int_equal(s.sub[LS_S_TRANSFER_H2D], 2 * MS);
	assert_int_equal(s.comp[LS_C_HOST], 3 * MS);
	assert_int_equal(s.sub[LS_S_Q_CPU], 2 * MS);
	/* other: [3,4] and [15,20] */
	assert_int_equal(s.comp[LS_C_OTHER], 6 * MS);
	assert_int_equal(s.sub[LS_S_NET_DRAIN], 1 * MS);
	assert_int_equal(comp_sum(s.comp), s.total);
	assert_int_equal(s.total, 21 * MS - 1);
	/* TTFT window [0, 12]: compute 4, transfer 2, host 2, other 1 */
	assert_int_equal(s.ttft_sub[LS_S_COMPUTE_KERNEL], 4 * MS);
	assert_int_equal(s.ttft_comp[LS_C_HOST], 2 * MS);
	assert_int_equal(comp_sum(s.ttft_comp), s.ttft);
	/* where host and other lie: host [10,12] + [14,15]; other [3,4] + [15,20] */
	struct ls_spans host = {0}, other = {0};
	ls_attribute_spans(&r, tl, &j, false, &host, &other);
	assert_int_equal(host.n, 2);
	assert_int_equal(host.v[0].b, 10 * MS);
	assert_int_equal(host.v[0].e, 12 * MS);
	assert_int_equal(host.v[1].b, 14 * MS);
	assert_int_equal(host.v[1].e, 15 * MS);
	assert_int_equal(other.n, 2);
	assert_int_equal(other.v[0].b, 3 * MS);
	assert_int_equal(other.v[0].e, 4 * MS);
	assert_int_equal(other.v[1].b, 15 * MS);
	assert_int_equal(other.v[1].e, 20 * MS);
	ls_spans_free(&host);
	ls_spans_free(&other);
	/* TTFT: host [10,12] only */
	ls_attribute_spans(&r, tl, &j, true, &host, NULL);
	assert_int_equal(host.n, 1);
	assert_int_equal(host.v[0].e - host.v[0].b, s.ttft_comp[LS_C_HOST]);
	ls_spans_free(&host);
	ls_timeline_free(tl);
}

/* One kernel serving a batch is compute for every request it overlaps. */
static void test_batching(void **state)
{
	struct ls_timeline *tl = group_timeline();
	struct ls_request r[2] = {req(1, 1, 1 * MS, 5 * MS, 6 * MS, 6 * MS),
				  req(1, 1, 2 * MS, 5 * MS, 6 * MS, 6 * MS)};
	struct ls_split s[2];

	(void)state;
	gpu(tl, LS_GPU_KERNEL, 0, 3 * MS, 5 * MS);
	ls_timeline_finish(tl, r, 2);
	for (int i = 0; i < 2; i++) {
		ls_attribute(&r[i], tl, NULL, &s[i]);
		assert_int_equal(s[i].sub[LS_S_COMPUTE_KERNEL], 2 * MS);
		assert_int_equal(parts_sum(s[i].sub, s[i].comp), s[i].total);
	}
	ls_timeline_free(tl);
}

/* Time asleep in a write is network, even over a running kernel. */
static void test_send_blocked_first(void **state)
{
	struct ls_timeline *tl = group_timeline();
	struct ls_request r = req(1, 1, 1 * MS, 2 * MS, 10 * MS, 10 * MS);
	uint64_t blocked[1][2] = {{4 * MS, 7 * MS}};
	struct ls_split s;

	(void)state;
	r.blocked = blocked;
	r.nblocked = 1;
	gpu(tl, LS_GPU_KERNEL, 0, 1 * MS, 10 * MS);
	ls_timeline_finish(tl, &r, 1);
	ls_attribute(&r, tl, NULL, &s);
	assert_int_equal(s.sub[LS_S_NET_SEND_BLOCKED], 3 * MS);
	assert_int_equal(s.sub[LS_S_COMPUTE_KERNEL], 6 * MS);
	assert_int_equal(parts_sum(s.sub, s.comp), s.total);
	ls_timeline_free(tl);
}

/* The front-end window [T_read, T_queued] (DESIGN §6): classified instant by
 * instant like the served window, reported as frontend_ns; engine queueing
 * starts at the queued event. Fails on a split that calls it all queueing. */
static void test_frontend_window(void **state)
{
	struct ls_timeline *tl = group_timeline();
	struct ls_request r = req(1, 1 * MS, 2 * MS, 12 * MS, 20 * MS, 21 * MS);
	struct ls_engine_join j;
	struct ls_split s;

	(void)state;
	engine_ev(tl, 4 * MS, 7, LS_ENG_ARRIVED, 0, "fe");
	engine_ev(tl, 5 * MS, 7, LS_ENG_QUEUED, 100, NULL);
	engine_ev(tl, 8 * MS, 7, LS_ENG_SCHEDULED, 4, NULL);
	cpu(tl, 1, 2 * MS, 2 * MS, 4 * MS); /* the front end parses: host [2, 4] */
	ls_timeline_finish(tl, &r, 1);
	strcpy(r.x_request_id, "fe");
	ls_timeline_join(tl, &r, 1, &j);
	ls_attribute(&r, tl, &j, &s);
	assert_int_equal(s.t_queued, 5 * MS);       /* queued, not arrived */
	assert_int_equal(s.frontend, 3 * MS);       /* [2, 5] */
	assert_int_equal(s.sub[LS_S_Q_ENGINE], 3 * MS); /* [5, 8] */
	assert_int_equal(s.comp[LS_C_HOST], 2 * MS);    /* [2, 4] */
	assert_int_equal(s.comp[LS_C_OTHER], 1 * MS + 12 * MS); /* [4, 5] + [8, 20] */
	assert_int_equal(comp_sum(s.comp), s.total);
	assert_int_equal(comp_sum(s.ttft_comp), s.ttft);
	ls_timeline_free(tl);
}

static void test_missing_sources_are_null(void **state)
{
	struct ls_request r = req(1, 1 * MS, 2 * MS, 3 * MS, 4 * MS, 5 * MS);
	struct ls_timeline *tl = ls_timeline_new(false);
	struct ls_split s;

	(void)state;
	ls_timeline_finish(tl, &r, 1);
	ls_attribute(&r, tl, NULL, &s);
	assert_int_equal(s.comp[LS_C_COMPUTE], LS_NULL);
	assert_int_equal(s.comp[LS_C_TRANSFER], LS_NULL);
	assert_int_equal(s.comp[LS_C_HOST], LS_NULL);
	assert_int_equal(s.sub[LS_S_Q_ENGINE], LS_NULL);
	assert_int_equal(s.sub[LS_S_Q_CPU], LS_NULL);
	/* a component is the sum of its observed parts (DESIGN §6) */
	assert_int_equal(s.comp[LS_C_QUEUEING], s.sub[LS_S_Q_SOCKET]);
	assert_int_equal(s.sub[LS_S_Q_SOCKET], 1 * MS);
	assert_int_not_equal(s.comp[LS_C_NETWORK], LS_NULL);
	assert_int_equal(comp_sum(s.comp), s.total);
	assert_true(s.unobserved & (1u << LS_S_Q_ENGINE));
	assert_true(s.unobserved & (1u << LS_S_COMPUTE_KERNEL));
	assert_true(s.unobserved & LS_UNOBSERVED_HOST);
	assert_false(s.unobserved & (1u << LS_S_Q_SOCKET));
	assert_string_equal(s.engine_source, "none");
	assert_string_equal(s.gpu_source, "none");

	/* the verdict over it: what no source observed is "-" and null, not 0 */
	struct ls_verdict_acc acc = {0};
	struct ls_verdict v;
	char *buf = NULL;
	size_t len = 0;
	FILE *m = open_memstream(&buf, &len);
	ls_verdict_acc_add(&acc, &r, &s, NULL);
	ls_verdict_from_acc(&acc, false, false, false, false, &v);
	assert_false(v.seen_comp[LS_C_COMPUTE]);
	assert_false(v.seen[LS_S_Q_ENGINE]);
	assert_true(v.seen[LS_S_Q_SOCKET]);
	ls_verdict_json(m, &v);
	ls_verdict_print(m, &v);
	fclose(m);
	assert_non_null(strstr(buf, "\"compute\":null"));
	assert_non_null(strstr(buf, "\"queueing.engine\":null"));
	assert_non_null(strstr(buf, "\"queueing.socket\":0."));
	assert_non_null(strstr(buf, "queueing.engine -, compute -, transfer -"));
	free(buf);
	ls_verdict_acc_free(&acc);
	ls_timeline_free(tl);
}

/* No engine events: T_sched is where the step that produced the first token
 * began, the end of the GPU busy period before it (not before T_read). */
static void test_inferred_sched(void **state)
{
	struct ls_timeline *tl = group_timeline();
	struct ls_request r = req(1, 1, 1 * MS, 9 * MS, 12 * MS, 12 * MS);
	struct ls_split s;

	(void)state;
	gpu(tl, LS_GPU_MEMCPY, LS_COPY_H2D, 2 * MS, 3 * MS); /* an earlier step */
	gpu(tl, LS_GPU_KERNEL, 0, 3 * MS, 4 * MS);
	gpu(tl, LS_GPU_MEMCPY, LS_COPY_H2D, 6 * MS, 7 * MS); /* the step before T_first */
	gpu(tl, LS_GPU_KERNEL, 0, 7 * MS, 8 * MS);
	gpu(tl, LS_GPU_KERNEL, 0, 10 * MS, 11 * MS); /* after T_first */
	ls_timeline_finish(tl, &r, 1);
	ls_attribute(&r, tl, NULL, &s);
	assert_string_equal(s.engine_source, "inferred");
	assert_int_equal(s.t_sched, 4 * MS);
	assert_int_equal(s.sub[LS_S_Q_ENGINE], 3 * MS);
	assert_int_equal(parts_sum(s.sub, s.comp), s.total);
	ls_timeline_free(tl);
}

/* The first token's writer (tid 7, runnable from w, on a CPU [b, 10 ms));
 * steps [2, 4] and [5, 8] ms, T_read 1, T_first 9: the step before T_first
 * is found, so T_sched is 4 ms. */
static void writer_case(uint64_t w, uint64_t b)
{
	struct ls_timeline *tl = group_timeline();
	struct ls_request r = req(1, 1, 1 * MS, 9 * MS, 12 * MS, 12 * MS);
	struct ls_split s;

	r.first_tid = 7;
	cpu(tl, 7, w, b, 10 * MS);
	gpu(tl, LS_GPU_KERNEL, 0, 2 * MS, 4 * MS);
	gpu(tl, LS_GPU_KERNEL, 0, 5 * MS, 8 * MS); /* the step before T_first */
	ls_timeline_finish(tl, &r, 1);
	ls_attribute(&r, tl, NULL, &s);
	assert_string_equal(s.engine_source, "inferred");
	assert_int_equal(s.t_sched, 4 * MS);
	assert_int_equal(parts_sum(s.sub, s.comp), s.total);
	ls_timeline_free(tl);
}

/* The writer never slept between T_read and T_first (it found the token
 * ready): its last wakeup is before the read and says nothing. */
static void test_inferred_sched_writer_awake(void **state)
{
	(void)state;
	writer_case(MS / 4, MS / 2);
}

/* The writer was woken just after the read (a lock's hand-over) and then
 * waited for a CPU until after the token was ready: that wake precedes
 * every step since the read, so it is not the token's, and the write marks
 * it. Fails with no T_sched at all. */
static void test_inferred_sched_writer_woken_early(void **state)
{
	(void)state;
	writer_case(1 * MS + MS / 2, 8 * MS + MS / 2);
}

/* Preemption is counted; T_sched is the first scheduling; a re-used engine
 * id after an arrival is a new request; the join by time needs no id. */
static void test_preemption_and_join(void **state)
{
	struct ls_timeline *tl = group_timeline();
	struct ls_request r[2] = {req(1, 1, 1 * MS, 6 * MS, 7 * MS, 7 * MS),
				  req(1, 1, 10 * MS, 12 * MS, 13 * MS, 13 * MS)};
	struct ls_engine_join j[2];

	(void)state;
	engine_ev(tl, 1 * MS, 5, LS_ENG_ARRIVED, 0, NULL);
	engine_ev(tl, 2 * MS, 5, LS_ENG_SCHEDULED, 2, NULL);
	engine_ev(tl, 3 * MS, 5, LS_ENG_PREEMPTED, 0, NULL);
	engine_ev(tl, 4 * MS, 5, LS_ENG_RESUMED, 0, NULL);
	engine_ev(tl, 6 * MS, 5, LS_ENG_FINISHED, 0, NULL);
	engine_ev(tl, 10 * MS, 5, LS_ENG_ARRIVED, 0, NULL);
	engine_ev(tl, 11 * MS, 5, LS_ENG_SCHEDULED, 1, NULL);
	ls_timeline_finish(tl, r, 2);
	ls_timeline_join(tl, r, 2, j);
	assert_true(j[0].joined && j[1].joined);
	assert_int_equal(j[0].t_sched, 2 * MS);
	assert_int_equal(j[0].preemptions, 1);
	assert_int_equal(j[1].t_sched, 11 * MS);
	assert_int_equal(j[1].preemptions, 0);
	ls_timeline_free(tl);
}

/* An engine's own span (record --otlp-receive) of a request that arrived
 * at `arr`, scheduled at arr + 1 ms, first token at arr + 2 ms; received at
 * `at` (after the request). pid 0: the sender was not found. */
static void span(struct ls_timeline *tl, uint64_t at, uint64_t arr, const char *id,
		 uint8_t trace0, uint32_t pid)
{
	struct ls_rec_engine_span e = {0};

	e.h.type = LS_REC_ENGINE_SPAN;
	e.h.size = sizeof(e);
	e.h.ts = at;
	e.h.pid = pid;
	e.t_arrived = e.t_queued = arr;
	e.t_sched = arr + 1 * MS;
	e.t_first = arr + 2 * MS;
	e.t_finish = arr + 3 * MS;
	e.trace_id[0] = trace0;
	snprintf(e.request_id, sizeof(e.request_id), "%s", id);
	ls_timeline_add(tl, &e.h);
}

/* Spans join by the X-Request-Id as a word of the engine's request id
 * ("lg-1" is not in "cmpl-lg-10-0"), by the traceparent's trace id, never
 * by time without the sender's pid; a request's own engine events win over
 * a span; spans received out of order are kept in order of arrival; one
 * that joined nothing is counted. */
static void test_span_join(void **state)
{
	struct ls_timeline *tl = group_timeline();
	struct ls_request r[5] = {req(1 * MS, 1 * MS, 2 * MS, 6 * MS, 8 * MS, 8 * MS),
				  req(1 * MS, 1 * MS, 2 * MS, 6 * MS, 8 * MS, 8 * MS),
				  req(1 * MS, 1 * MS, 3 * MS, 6 * MS, 8 * MS, 8 * MS),
				  req(1 * MS, 1 * MS, 3 * MS, 6 * MS, 8 * MS, 8 * MS),
				  req(20 * MS, 20 * MS, 21 * MS, 25 * MS, 26 * MS, 26 * MS)};
	struct ls_engine_join j[5];
	uint64_t got, unjoined;

	(void)state;
	snprintf(r[0].x_request_id, sizeof(r[0].x_request_id), "lg-1");
	snprintf(r[1].x_request_id, sizeof(r[1].x_request_id), "lg-10");
	snprintf(r[2].traceparent, sizeof(r[2].traceparent),
		 "00-ab000000000000000000000000000000-0000000000000001-01");
	snprintf(r[3].x_request_id, sizeof(r[3].x_request_id), "lg-3");
	engine_ev(tl, 3 * MS, 7, LS_ENG_ARRIVED, 0, "lg-3");
	engine_ev(tl, 4 * MS, 7, LS_ENG_SCHEDULED, 1, NULL);
	span(tl, 30 * MS, 2 * MS + 200, "cmpl-lg-10-0", 0, 0);
	span(tl, 30 * MS, 2 * MS + 100, "cmpl-lg-1-0", 0, 0);
	span(tl, 31 * MS, 3 * MS, "cmpl-9f3e", 0xab, 0);
	span(tl, 31 * MS, 3 * MS + 10, "cmpl-lg-3-0", 0, 0);
	span(tl, 32 * MS, 21 * MS, "cmpl-other", 0, 0); /* r[4]: no id, no trace, no pid */
	ls_timeline_finish(tl, r, 5);
	ls_timeline_join(tl, r, 5, j);
	assert_true(j[0].joined && j[0].otlp);
	assert_int_equal(j[0].t_arrived, 2 * MS + 100);
	assert_int_equal(j[0].t_sched, 3 * MS + 100);
	assert_true(j[1].joined && j[1].otlp);
	assert_int_equal(j[1].t_arrived, 2 * MS + 200);
	assert_true(j[2].joined && j[2].otlp);
	assert_int_equal(j[2].t_arrived, 3 * MS);
	assert_true(j[3].joined && !j[3].otlp); /* its events, not the span */
	assert_int_equal(j[3].t_sched, 4 * MS);
	assert_false(j[4].joined);
	ls_timeline_span_counts(tl, &got, &unjoined);
	assert_int_equal(got, 5);
	assert_int_equal(unjoined, 2); /* lg-3's span and the one without a key */
	ls_timeline_free(tl);

	/* with the sender's pid, a span without a key joins by process and time */
	tl = group_timeline();
	span(tl, 32 * MS, 21 * MS, "cmpl-other", 0, 100);
	ls_timeline_finish(tl, &r[4], 1);
	ls_timeline_join(tl, &r[4], 1, j);
	assert_true(j[0].joined && j[0].otlp);
	ls_timeline_free(tl);
}

/* A request the client abandoned: no T_end, so no total; no crash. */
/* Not streaming: the first write follows the last token, so the request is
 * taken as scheduled at the next step boundary after T_read. */
static void test_inferred_sched_not_streaming(void **state)
{
	struct ls_timeline *tl = group_timeline();
	struct ls_request r = req(1, 1, 3 * MS, 20 * MS, 21 * MS, 21 * MS);
	struct ls_split s;

	(void)state;
	r.streaming = false;
	gpu(tl, LS_GPU_KERNEL, 0, 2 * MS, 5 * MS); /* T_read falls in this step */
	gpu(tl, LS_GPU_KERNEL, 0, 6 * MS, 19 * MS);
	ls_timeline_finish(tl, &r, 1);
	ls_attribute(&r, tl, NULL, &s);
	assert_string_equal(s.engine_source, "inferred");
	assert_int_equal(s.t_sched, 5 * MS);
	ls_timeline_free(tl);
}

/* Not streaming, the GPU idle at T_read: the request is admitted when the
 * thread driving the GPU next runs (asleep, then waiting for a CPU: the
 * engine's queue, as its own `scheduled` event would say), but never after
 * the next step began. Fails with T_sched left at T_read. */
static void test_inferred_sched_launcher_waits(void **state)
{
	struct ls_request r = req(1, 1, 3 * MS, 20 * MS, 21 * MS, 21 * MS);
	struct ls_split s;

	(void)state;
	r.streaming = false;
	for (int cap = 0; cap < 2; cap++) {
		struct ls_timeline *tl = group_timeline();
		cpu(tl, 7, 0, 1 * MS, 2 * MS);             /* the launcher's previous run */
		cpu(tl, 7, 3 * MS, 5 * MS, 5 * MS + 100);  /* woken by the submit, runs at 5 */
		gpu_by(tl, 7, LS_GPU_KERNEL, 0, 1 * MS, 2 * MS);
		/* the step that serves it; with cap, one that starts before 5 */
		gpu_by(tl, 7, LS_GPU_KERNEL, 0, cap ? 4 * MS : 6 * MS, 19 * MS);
		ls_timeline_finish(tl, &r, 1);
		ls_attribute(&r, tl, NULL, &s);
		assert_string_equal(s.engine_source, "inferred");
		assert_int_equal(s.t_sched, cap ? 4 * MS : 5 * MS);
		assert_int_equal(s.sub[LS_S_Q_ENGINE], s.t_sched - 3 * MS);
		assert_int_equal(parts_sum(s.sub, s.comp), s.total);
		ls_timeline_free(tl);
	}
}

static void test_aborted(void **state)
{
	struct ls_timeline *tl = group_timeline();
	struct ls_request r = req(1, 1 * MS, 0, 0, 0, 0);
	struct ls_split s;

	(void)state;
	ls_timeline_finish(tl, &r, 1);
	ls_attribute(&r, tl, NULL, &s);
	assert_int_equal(s.total, LS_NULL);
	assert_int_equal(s.ttft, LS_NULL);
	ls_timeline_free(tl);
}

/* Property: random streams with random sources missing, every request sums
 * exactly: parts, and the non-null components, to the total and TTFT. */
static uint64_t busy_seen[2][2];
static size_t nbusy_seen;

static void busy_span(void *ctx, enum ls_span_kind kind, uint32_t tgid, uint32_t tid, uint64_t b,
		      uint64_t e, const struct ls_hdr *rec)
{
	(void)ctx;
	(void)tid;
	(void)rec;
	if (kind == LS_SPAN_GPU_BUSY && tgid == 0 && nbusy_seen < 2) {
		busy_seen[nbusy_seen][0] = b;
		busy_seen[nbusy_seen++][1] = e;
	}
}


/* A proxy's request joined to the request it forwarded (DESIGN §11): the
 * outer's upload, socket wait and drain stay, the inner hop's split fills
 * its window, the rest of the proxy's window is network.proxy except where
 * the proxy's writes to its client blocked; sums stay exact, also when the
 * inner hop's estimates run past the proxy's marks. Fails on a join that
 * double counts or drops either hop's time. */
static void test_hop_join(void **state)
{
	struct ls_timeline *tl = group_timeline();
	struct ls_request o = req(1, 1 * MS, 2 * MS, 30 * MS, 50 * MS, 52 * MS);
	struct ls_request i = req(3 * MS, 3 * MS + 100000, 3 * MS + 200000, 20 * MS, 40 * MS,
				  40 * MS + 100000);
	uint64_t blocked[1][2] = {{45 * MS, 48 * MS}};
	struct ls_split so, si;

	(void)state;
	o.pid = 200;
	o.blocked = blocked;
	o.nblocked = 1;
	gpu(tl, LS_GPU_KERNEL, 0, 5 * MS, 40 * MS);
	struct ls_request both[2] = {i, o};
	ls_timeline_finish(tl, both, 2);
	ls_attribute(&o, tl, NULL, &so);
	ls_attribute(&i, tl, NULL, &si);
	assert_int_equal(so.sub[LS_S_NET_PROXY], LS_NULL); /* one hop: absent */
	uint64_t total = so.total, ttft = so.ttft;
	ls_split_hop(&so, &o, &i, &si);
	assert_int_equal(so.total, total);
	assert_int_equal(so.ttft, ttft);
	assert_int_equal(parts_sum(so.sub, so.comp), so.total);
	assert_int_equal(comp_sum(so.comp), so.total);
	assert_int_equal(parts_sum(so.ttft_sub, so.ttft_comp), so.ttft);
	assert_int_equal(so.sub[LS_S_NET_UPLOAD], 1 * MS - 1 + 100000);
	assert_int_equal(so.sub[LS_S_COMPUTE_KERNEL], si.sub[LS_S_COMPUTE_KERNEL]);
	assert_int_equal(so.sub[LS_S_COMPUTE_KERNEL], 35 * MS);
	/* [40.1, 50] ms in the proxy: 3 ms of it blocked writing to the client */
	assert_int_equal(so.sub[LS_S_NET_SEND_BLOCKED], 3 * MS);
	assert_int_equal(so.sub[LS_S_NET_PROXY], 7 * MS + 900000); /* 48 - 37.1 - 3 */
	/* TTFT: [2, 3] ms forwarding, [20, 30] ms the proxy held the token */
	assert_int_equal(so.ttft_sub[LS_S_NET_PROXY], 1 * MS + 10 * MS);
	assert_int_equal(so.ttft_sub[LS_S_COMPUTE_KERNEL], 15 * MS);

	/* the inner hop's end estimated past the proxy's last write */
	struct ls_request i2 = req(3 * MS, 3 * MS, 3 * MS, 20 * MS, 49 * MS, 52 * MS);
	ls_attribute(&o, tl, NULL, &so);
	ls_attribute(&i2, tl, NULL, &si);
	ls_split_hop(&so, &o, &i2, &si);
	assert_int_equal(so.sub[LS_S_NET_PROXY], 0);
	assert_int_equal(parts_sum(so.sub, so.comp), so.total);
	assert_int_equal(comp_sum(so.comp), so.total);
	ls_timeline_free(tl);
}

/* A single-slot application's queue (no engine source): [T_read, T_slot]
 * is queueing.app, the engine's queue stays null, sums stay exact; a slot
 * mark outside (T_read, T_first) or an engine source is ignored. */
static void test_app_queue(void **state)
{
	struct ls_request r = req(1, 1 * MS, 2 * MS, 30 * MS, 40 * MS, 41 * MS);
	struct ls_engine_join j = {.t_slot = 22 * MS};
	struct ls_split s;

	(void)state;
	ls_attribute(&r, NULL, &j, &s);
	assert_int_equal(s.sub[LS_S_Q_APP], 20 * MS);
	assert_int_equal(s.ttft_sub[LS_S_Q_APP], 20 * MS);
	assert_int_equal(s.sub[LS_S_Q_ENGINE], LS_NULL);
	assert_string_equal(s.engine_source, "none");
	assert_int_equal(s.t_sched, 0);
	assert_int_equal(s.comp[LS_C_QUEUEING], s.sub[LS_S_Q_SOCKET] + 20 * MS);
	assert_int_equal(parts_sum(s.sub, s.comp), s.total);
	assert_int_equal(comp_sum(s.comp), s.total);
	assert_int_equal(parts_sum(s.ttft_sub, s.ttft_comp), s.ttft);
	assert_false(s.unobserved & (1u << LS_S_Q_APP));
	j.t_slot = 35 * MS; /* after the first byte: not a queue wait */
	ls_attribute(&r, NULL, &j, &s);
	assert_int_equal(s.sub[LS_S_Q_APP], LS_NULL);
	assert_false(s.unobserved & (1u << LS_S_Q_APP)); /* optional: never "unobserved" */
	j = (struct ls_engine_join){.joined = true, .t_sched = 25 * MS, .t_slot = 22 * MS};
	ls_attribute(&r, NULL, &j, &s);
	assert_int_equal(s.sub[LS_S_Q_APP], LS_NULL); /* engine events win */
	assert_int_equal(s.sub[LS_S_Q_ENGINE], 23 * MS);
}

/* Device busy time is the union of its work (two streams overlapping count
 * once), and its periods are told to the sinks: the report's figure, the
 * timeline's counter and the page's strip are one. */
static void test_gpu_busy_union(void **state)
{
	struct ls_timeline *tl = ls_timeline_new(true);
	struct ls_span_sink sink = {busy_span, NULL};

	(void)state;
	nbusy_seen = 0;
	ls_timeline_set_span_sink(tl, &sink);
	gpu(tl, LS_GPU_KERNEL, 0, 1 * MS, 5 * MS);
	gpu(tl, LS_GPU_KERNEL, 0, 3 * MS, 7 * MS);  /* overlaps: 1..7 */
	gpu(tl, LS_GPU_MEMCPY, LS_COPY_H2D, 7 * MS, 8 * MS); /* touches: 1..8 */
	gpu(tl, LS_GPU_KERNEL, 0, 10 * MS, 12 * MS); /* a second period */
	ls_timeline_close(tl);
	assert_int_equal(ls_timeline_gpu_summary(tl)->dev_busy_ns[0], 9 * MS);
	assert_int_equal(nbusy_seen, 2);
	assert_int_equal(busy_seen[0][0], 1 * MS);
	assert_int_equal(busy_seen[0][1], 8 * MS);
	assert_int_equal(busy_seen[1][0], 10 * MS);
	assert_int_equal(busy_seen[1][1], 12 * MS);
	ls_timeline_free(tl);
}

static void test_property_sums(void **state)
{
	unsigned seed = 42;

	(void)state;
	for (int round = 0; round < 300; round++) {
		bool no_sched = rand_r(&seed) % 3 == 0, no_gpu = rand_r(&seed) % 3 == 0;
		struct ls_timeline *tl = no_sched ? ls_timeline_new(false) : group_timeline();
		struct ls_request r[8];
		struct ls_engine_join j[8];
		uint64_t blocked[8][4][2];
		int nr = 1 + rand_r(&seed) % 8;

		for (int i = 0; i < 40; i++) {
			uint64_t b = rand_r(&seed) % (100 * MS), len = rand_r(&seed) % (5 * MS);
			int what = rand_r(&seed) % 4;
			if (what < 2 && no_gpu)
				continue;
			if (what >= 2 && no_sched)
				continue;
			if (what == 0)
				gpu(tl, LS_GPU_KERNEL, 0, b, b + len);
			else if (what == 1)
				gpu(tl, LS_GPU_MEMCPY, rand_r(&seed) % 3, b, b + len);
			else
				cpu(tl, 1 + rand_r(&seed) % 4, rand_r(&seed) % 2 ? b : 0,
				    b + rand_r(&seed) % MS, b + MS + len);
		}
		for (int i = 0; i < nr; i++) {
			uint64_t m[6];
			for (int k = 0; k < 6; k++)
				m[k] = 1 + rand_r(&seed) % (100 * MS);
			/* marks in any order, some missing: the split must cope */
			r[i] = req(m[0], rand_r(&seed) % 4 ? m[1] : 0, m[2], m[3], m[4], m[5]);
			r[i].nblocked = rand_r(&seed) % 4;
			for (uint32_t k = 0; k < r[i].nblocked; k++) {
				blocked[i][k][0] = rand_r(&seed) % (100 * MS);
				blocked[i][k][1] = blocked[i][k][0] + rand_r(&seed) % (3 * MS);
			}
			r[i].blocked = blocked[i];
			if (rand_r(&seed) % 2)
				engine_ev(tl, m[2], i, LS_ENG_ARRIVED, 0, NULL);
			if (rand_r(&seed) % 2)
				engine_ev(tl, m[2] + rand_r(&seed) % (10 * MS), i, LS_ENG_SCHEDULED, 1,
					  NULL);
		}
		ls_timeline_finish(tl, r, nr);
		ls_timeline_join(tl, r, nr, j);
		for (int i = 0; i < nr; i++) {
			struct ls_split s;
			ls_attribute(&r[i], tl, &j[i], &s);
			if (s.total != LS_NULL) {
				assert_int_equal(parts_sum(s.sub, s.comp), s.total);
				assert_int_equal(comp_sum(s.comp), s.total);
			}
			if (s.ttft != LS_NULL) {
				assert_int_equal(parts_sum(s.ttft_sub, s.ttft_comp), s.ttft);
				assert_int_equal(comp_sum(s.ttft_comp), s.ttft);
			}
		}
		ls_timeline_free(tl);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_precedence),
		cmocka_unit_test(test_wakeup_fold),
		cmocka_unit_test(test_span_join),
		cmocka_unit_test(test_gpu_busy_union),
		cmocka_unit_test(test_batching),
		cmocka_unit_test(test_send_blocked_first),
		cmocka_unit_test(test_frontend_window),
		cmocka_unit_test(test_missing_sources_are_null),
		cmocka_unit_test(test_inferred_sched),
		cmocka_unit_test(test_inferred_sched_not_streaming),
		cmocka_unit_test(test_inferred_sched_launcher_waits),
		cmocka_unit_test(test_inferred_sched_writer_awake),
		cmocka_unit_test(test_inferred_sched_writer_woken_early),
		cmocka_unit_test(test_preemption_and_join),
		cmocka_unit_test(test_aborted),
		cmocka_unit_test(test_hop_join),
		cmocka_unit_test(test_app_queue),
		cmocka_unit_test(test_property_sums),
	};
	return cmocka_run_group_tests_name("attribute", tests, NULL, NULL);
}
