// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The Perfetto timeline's model (see trace_build.h).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "trace_build.h"
#include "grow.h"
#include "idmap.h"
#include "latsplit/engine.h"
#include "perfetto.h"
#include "stacks.h"

#define U_REQUESTS 1ull
#define U_GPU 2ull
#define U_INFLIGHT 10ull
#define U_RUNQ 12ull
#define U_RETRANS 13ull
#define U_BUSY 0x100ull /* + device */
#define U_REQ 0x1000000000ull
#define U_PROC 0x2000000000ull
#define U_THREAD 0x3000000000ull
#define U_STREAM 0x4000000000ull

struct tspan {
	uint64_t b, e;
	uint32_t tgid, tid;
	int kind;
	int32_t ustack, kstack; /* blocked: the stack it blocked in (-1: none) */
};

struct busy {
	uint32_t dev;
	uint64_t b, e;
};

struct tl_ctx {
	struct ls_pf *pf;
	unsigned long request, pid;
	double w0s, w1s; /* the window asked, seconds from the first event */
	uint64_t w0, w1; /* the window, absolute; 0: none */
	uint64_t base;   /* the capture's first event */
	struct ls_timeline *tl;
	/* buffered until the engine group is known */
	struct tspan *sp;
	size_t nsp, capsp;
	struct { uint32_t pid; char name[16]; } *procs;
	size_t nprocs, capprocs;
	struct { uint32_t tid, pid; char name[16]; } *threads;
	size_t nthreads, capthreads;
	struct { uint64_t ts; uint32_t pid, tid, corr; } *launch;
	size_t nlaunch, caplaunch;
	struct ls_ev_gpu *gpu;
	size_t ngpu, capgpu;
	struct busy *busy; /* each device's busy periods */
	size_t nbusy, capbusy;
	struct { uint64_t ts; uint32_t pid; uint32_t kind; uint64_t req; char xrid[64]; } *eng;
	size_t neng, capeng;
	struct ls_tick *inflight;
	size_t ninflight, capinflight;
	uint64_t *rtx;
	size_t nrtx, caprtx;
	size_t nrequests;
	struct { uint64_t track, end; } *lanes;
	size_t nlanes, caplanes;
	struct ls_stack_loader stacks;
	struct ls_stack_data sd;
	bool finished;
	struct ls_idmap blocked_in; /* tid + 1 -> its last blocking stacks (ustack << 32 | kstack) */
};

static bool in_window(const struct tl_ctx *c, uint64_t b, uint64_t e)
{
	return !c->w1 || (e >= c->w0 && b <= c->w1);
}

static int on_record(void *ctx, const struct ls_hdr *rec)
{
	struct tl_ctx *c = ctx;

	ls_stack_loader_add(&c->stacks, rec);
	if (!c->base && rec->type < LS_EV_KERNEL_MAX) {
		c->base = rec->ts;
		if (c->w1s) { /* the window, from the first event on */
			c->w0 = c->base + (uint64_t)(c->w0s * 1e9);
			c->w1 = c->base + (uint64_t)(c->w1s * 1e9);
		}
	}
	switch (rec->type) {
	case LS_REC_PROC_INFO: {
		const struct ls_rec_proc_info *p = (const void *)rec;
		GROW(c->procs, c->nprocs, c->capprocs);
		c->procs[c->nprocs].pid = rec->pid;
		snprintf(c->procs[c->nprocs].name, 16, "%.15s", p->comm);
		c->nprocs++;
		break;
	}
	case LS_EV_SCHED_SWITCH: {
		const struct ls_ev_sched_switch *s = (const void *)rec;
		size_t i;
		if (s->prev_state && rec->tid) {
			uint64_t v = (uint64_t)(uint32_t)s->prev_ustack << 32 | (uint32_t)s->prev_kstack;
			uint64_t key = (uint64_t)rec->tid + 1;
			ls_idmap_remove(&c->blocked_in, key);
			if (v != UINT64_MAX) /* both -1: no stack */
				ls_idmap_put(&c->blocked_in, key, (void *)(uintptr_t)v);
		}
		for (i = 0; i < c->nthreads && c->threads[i].tid != s->next_tid; i++)
			;
		if (i == c->nthreads && s->next_tid) {
			GROW(c->threads, c->nthreads, c->capthreads);
			c->threads[i].tid = s->next_tid;
			c->threads[i].pid = s->next_pid;
			snprintf(c->threads[i].name, 16, "%.15s", s->next_comm);
			c->nthreads++;
		}
		break;
	}
	case LS_EV_BLOCK_KSTACK: { /* the kernel half of the thread's open block */
		const struct ls_ev_block_kstack *k = (const void *)rec;
		uint64_t key = (uint64_t)rec->tid + 1;
		uint64_t v = (uintptr_t)ls_idmap_get(&c->blocked_in, key);
		if (v && (int32_t)(uint32_t)v == LS_STACK_LATER) {
			ls_idmap_remove(&c->blocked_in, key);
			ls_idmap_put(&c->blocked_in, key,
				     (void *)(uintptr_t)((v & ~0xffffffffull) | (uint32_t)k->kstack));
		}
		break;
	}
	case LS_EV_GPU_LAUNCH: {
		const struct ls_ev_gpu_launch *l = (const void *)rec;
		GROW(c->launch, c->nlaunch, c->caplaunch);
		c->launch[c->nlaunch].ts = rec->ts;
		c->launch[c->nlaunch].pid = rec->pid;
		c->launch[c->nlaunch].tid = rec->tid;
		c->launch[c->nlaunch].corr = l->correlation;
		c->nlaunch++;
		break;
	}
	case LS_EV_TCP_RETRANS:
		GROW(c->rtx, c->nrtx, c->caprtx);
		c->rtx[c->nrtx++] = rec->ts;
		break;
	default:
		break;
	}
	return 0;
}

static int on_span(void *ctx, enum ls_span_kind kind, uint32_t tgid, uint32_t tid, uint64_t b,
		   uint64_t e, const struct ls_hdr *rec)
{
	struct tl_ctx *c = ctx;

	if (kind == LS_SPAN_GPU_BUSY) { /* the device's, whoever's work: no pid filter */
		if (in_window(c, b, e)) {
			GROW(c->busy, c->nbusy, c->capbusy);
			c->busy[c->nbusy++] = (struct busy){tgid, b, e};
		}
		return 0;
	}
	if ((c->pid && tgid != c->pid) || !in_window(c, b, e))
		return 0;
	if (kind == LS_SPAN_GPU) {
		GROW(c->gpu, c->ngpu, c->capgpu);
		memcpy(&c->gpu[c->ngpu++], rec, sizeof(struct ls_ev_gpu));
	} else if (kind == LS_SPAN_ENGINE) {
		const struct ls_ev_engine *x = (const void *)rec;
		GROW(c->eng, c->neng, c->capeng);
		c->eng[c->neng].ts = b;
		c->eng[c->neng].pid = tgid;
		c->eng[c->neng].kind = x->kind;
		c->eng[c->neng].req = x->req_id;
		memcpy(c->eng[c->neng].xrid, x->x_request_id, 64);
		c->eng[c->neng].xrid[63] = '\0';
		c->neng++;
	} else {
		int32_t us = -1, ks = -1;
		if (kind == LS_SPAN_BLOCKED) {
			uint64_t v = (uintptr_t)ls_idmap_get(&c->blocked_in, (uint64_t)tid + 1);
			if (v) {
				us = (int32_t)(v >> 32);
				ks = (int32_t)(uint32_t)v;
				if (ks == LS_STACK_LATER) /* the block ended too soon for one */
					ks = -1;
			}
		}
		GROW(c->sp, c->nsp, c->capsp);
		c->sp[c->nsp++] = (struct tspan){b, e, tgid, tid, kind, us, ks};
	}
	return 0;
}

static void phase(struct tl_ctx *c, uint64_t track, const struct ls_phases *ph, int k)
{
	if (ls_phase_len(ph, k))
		ls_pf_slice(c->pf, track, ph->b[k], ph->e[k], ls_phase_name(k), 1, NULL, 0, 0, false);
}

static int on_request(void *ctx, const struct ls_request_view *v)
{
	struct tl_ctx *c = ctx;
	const struct ls_request *r = v->r;
	const struct ls_split *s = v->s;
	uint64_t end = v->ph->end;
	uint64_t track = U_REQ + r->id;
	char name[512], title[400];
	struct ls_pf_arg a[32];
	int n = 0;

	if ((c->request && r->id != c->request) || (c->pid && r->pid != c->pid) || !r->t_start ||
	    !end || !in_window(c, r->t_start, end))
		return 0;
	c->nrequests++;
	snprintf(title, sizeof(title), "%s %s", r->method[0] ? r->method : "?",
		 r->path[0] ? r->path : "?");
	snprintf(name, sizeof(name), "#%llu %s%s%s", (unsigned long long)r->id, title,
		 r->x_request_id[0] ? " " : "", r->x_request_id);
	ls_pf_track(c->pf, track, U_REQUESTS, LS_PF_PLAIN, name, 0, 0);
	a[n++] = (struct ls_pf_arg){"id", NULL, r->id};
	a[n++] = (struct ls_pf_arg){"x_request_id", r->x_request_id[0] ? r->x_request_id : "-", 0};
	a[n++] = (struct ls_pf_arg){"outcome", ls_outcome_name(r->outcome), 0};
	a[n++] = (struct ls_pf_arg){"status", NULL, (uint64_t)r->status};
	if (s->total != LS_NULL)
		a[n++] = (struct ls_pf_arg){"total_ns", NULL, s->total};
	if (s->ttft != LS_NULL)
		a[n++] = (struct ls_pf_arg){"ttft_ns", NULL, s->ttft};
	for (int k = 0; k < LS_C_N && n < 30; k++)
		if (s->comp[k] != LS_NULL)
			a[n++] = (struct ls_pf_arg){ls_comp_name(k), NULL, s->comp[k]};
	ls_pf_slice(c->pf, track, r->t_start, end, title, 0, a, n, 0, false);
	/* the partition's phases, in order; served carries the split */
	for (int k = LS_PH_UPLOAD; k < LS_PH_SERVED; k++)
		phase(c, track, v->ph, k);
	if (ls_phase_len(v->ph, LS_PH_SERVED)) {
		struct ls_pf_arg sa[16];
		int m = 0;
		for (int k = 0; k < LS_S_N; k++)
			if (s->sub[k] != LS_NULL && s->sub[k])
				sa[m++] = (struct ls_pf_arg){ls_sub_name(k), NULL, s->sub[k]};
		if (s->comp[LS_C_HOST] != LS_NULL)
			sa[m++] = (struct ls_pf_arg){"host", NULL, s->comp[LS_C_HOST]};
		if (s->comp[LS_C_OTHER] != LS_NULL)
			sa[m++] = (struct ls_pf_arg){"other", NULL, s->comp[LS_C_OTHER]};
		ls_pf_slice(c->pf, track, v->ph->b[LS_PH_SERVED], v->ph->e[LS_PH_SERVED], "served", 1,
			    sa, m, 0, false);
	}
	phase(c, track, v->ph, LS_PH_DRAIN);
	if (r->t_first)
		ls_pf_instant(c->pf, track, r->t_first, "first token written", NULL, 0, 0);
	if (r->t_first_dlv)
		ls_pf_instant(c->pf, track, r->t_first_dlv, "first token delivered", NULL, 0, 0);
	if (r->t_end)
		ls_pf_instant(c->pf, track, r->t_end, "last byte acknowledged", NULL, 0, 0);
	GROW(c->inflight, c->ninflight, c->capinflight);
	c->inflight[c->ninflight++] = (struct ls_tick){r->t_start, 1};
	GROW(c->inflight, c->ninflight, c->capinflight);
	c->inflight[c->ninflight++] = (struct ls_tick){end, -1};
	return 0;
}

static int tick_cmp(const void *a, const void *b)
{
	const struct ls_tick *x = a, *y = b;
	return x->t != y->t ? (x->t < y->t ? -1 : 1) : x->d - y->d;
}

/* A step counter from +1/-1 ticks. */
static void counter(struct ls_pf *pf, uint64_t track, struct ls_tick *t, size_t n)
{
	long v = 0;

	if (n)
		qsort(t, n, sizeof(*t), tick_cmp);
	for (size_t i = 0; i < n; i++) {
		v += t[i].d;
		if (i + 1 == n || t[i + 1].t != t[i].t)
			ls_pf_counter(pf, track, t[i].t, (double)v);
	}
}

static const char *proc_name(const struct tl_ctx *c, uint32_t pid)
{
	for (size_t i = c->nprocs; i-- > 0;)
		if (c->procs[i].pid == pid)
			return c->procs[i].name;
	return "?";
}

static void emit_threads(struct tl_ctx *c, const struct ls_stack_data *d)
{
	static const char *const names[] = {"running", "runnable", "blocked"};
	struct ls_tick *rq = NULL;
	size_t nrq = 0, caprq = 0;

	for (size_t i = 0; i < c->nsp; i++) {
		const struct tspan *t = &c->sp[i];
		char name[64];
		if (!ls_timeline_in_group(c->tl, t->tgid))
			continue;
		if (!ls_pf_has_track(c->pf, U_PROC + t->tgid)) {
			snprintf(name, sizeof(name), "%s", proc_name(c, t->tgid));
			ls_pf_track(c->pf, U_PROC + t->tgid, 0, LS_PF_PROCESS, name, t->tgid, 0);
		}
		if (!ls_pf_has_track(c->pf, U_THREAD + t->tid)) {
			const char *tn = "?";
			for (size_t k = 0; k < c->nthreads; k++)
				if (c->threads[k].tid == t->tid)
					tn = c->threads[k].name;
			ls_pf_track(c->pf, U_THREAD + t->tid, U_PROC + t->tgid, LS_PF_THREAD, tn, t->tgid,
				    t->tid);
		}
		struct ls_pf_arg st[1];
		int nst = 0;
		char stack[1024];
		if (t->kind == LS_SPAN_BLOCKED && (t->ustack >= 0 || t->kstack >= 0) && d) {
			char nm[96][128];
			const char *fr[96];
			int n = ls_stack_frames(d, t->tgid, "", t->ustack, t->kstack, nm, fr, 96);
			size_t at = 0;
			stack[0] = '\0';
			for (int k = 1; k < n && at + 2 < sizeof(stack); k++) /* fr[0]: the process */
				at += snprintf(stack + at, sizeof(stack) - at, "%s%s", k > 1 ? ";" : "", fr[k]);
			st[nst++] = (struct ls_pf_arg){"stack", stack, 0};
		}
		ls_pf_slice(c->pf, U_THREAD + t->tid, t->b, t->e, names[t->kind], 0, st, nst, 0, false);
		if (t->kind == LS_SPAN_RUNNABLE) {
			GROW(rq, nrq, caprq);
			rq[nrq++] = (struct ls_tick){t->b, 1};
			GROW(rq, nrq, caprq);
			rq[nrq++] = (struct ls_tick){t->e, -1};
		}
	}
	if (nrq) {
		ls_pf_track(c->pf, U_RUNQ, 0, LS_PF_COUNTER, "run queue (engine threads runnable)", 0, 0);
		counter(c->pf, U_RUNQ, rq, nrq);
	}
	free(rq);
}

static uint64_t lane_end(const struct tl_ctx *c, uint64_t track)
{
	for (size_t i = 0; i < c->nlanes; i++)
		if (c->lanes[i].track == track)
			return c->lanes[i].end;
	return 0;
}

static void set_lane_end(struct tl_ctx *c, uint64_t track, uint64_t end)
{
	for (size_t i = 0; i < c->nlanes; i++)
		if (c->lanes[i].track == track) {
			c->lanes[i].end = end > c->lanes[i].end ? end : c->lanes[i].end;
			return;
		}
	GROW(c->lanes, c->nlanes, c->caplanes);
	c->lanes[c->nlanes].track = track;
	c->lanes[c->nlanes++].end = end;
}

static int gpu_by_start(const void *a, const void *b)
{
	const struct ls_ev_gpu *x = a, *y = b;
	return x->start_ns < y->start_ns ? -1 : x->start_ns > y->start_ns;
}

static void emit_gpu(struct tl_ctx *c)
{
	if (c->ngpu) /* qsort(NULL, 0) is undefined */
		qsort(c->gpu, c->ngpu, sizeof(*c->gpu), gpu_by_start);
	static const char *const dir[4] = {"copy", "H2D", "D2H", "D2D"};

	if (c->ngpu)
		ls_pf_track(c->pf, U_GPU, 0, LS_PF_PLAIN, "GPU", 0, 0);
	for (size_t i = 0; i < c->ngpu; i++) {
		const struct ls_ev_gpu *g = &c->gpu[i];
		uint64_t track = U_STREAM + (uint64_t)(g->device & 0xffff) * 65536 + (g->stream & 0xffff);
		char name[80];
		struct ls_pf_arg a[4];
		int n = 0;
		if (g->flags & LS_GPU_F_HOST_SIDE)
			continue;
		/* slices on a track must nest: work overlapping the stream's last
		 * slice goes on a child track */
		int lane = 0;
		while (lane < 7 && lane_end(c, track + ((uint64_t)lane << 32)) > g->start_ns)
			lane++;
		track += (uint64_t)lane << 32;
		set_lane_end(c, track, g->end_ns);
		if (!ls_pf_has_track(c->pf, track)) {
			if (lane)
				snprintf(name, sizeof(name), "GPU %u stream %u (overlap %d)", g->device,
					 g->stream, lane);
			else
				snprintf(name, sizeof(name), "GPU %u stream %u", g->device, g->stream);
			ls_pf_track(c->pf, track, U_GPU, LS_PF_PLAIN, name, 0, 0);
		}
		if (g->kind == LS_GPU_KERNEL) {
			snprintf(name, sizeof(name), "%.63s", g->name[0] ? g->name : "kernel");
		} else {
			snprintf(name, sizeof(name), "%s", g->kind == LS_GPU_MEMSET ? "memset" : dir[g->copy_kind & 3]);
			a[n++] = (struct ls_pf_arg){"bytes", NULL, g->bytes};
			a[n++] = (struct ls_pf_arg){"direction", dir[g->copy_kind & 3], 0};
		}
		a[n++] = (struct ls_pf_arg){"source", g->source == LS_GPU_SRC_CUPTI ? "cupti"
						      : g->source == LS_GPU_SRC_UPROBE ? "uprobe" : "simulated", 0};
		ls_pf_slice(c->pf, track, g->start_ns, g->end_ns, name, 0, a, n,
			    g->correlation ? ((uint64_t)g->h.pid << 32 | g->correlation) : 0, true);
	}
	/* launches: instants on their thread, each the start of a flow */
	for (size_t i = 0; i < c->nlaunch; i++) {
		uint64_t track = U_THREAD + c->launch[i].tid;
		if (!ls_pf_has_track(c->pf, track))
			continue;
		ls_pf_instant(c->pf, track, c->launch[i].ts, "launch", NULL, 0,
			      (uint64_t)c->launch[i].pid << 32 | c->launch[i].corr);
	}
}

/* The core's busy periods (the union of each device's work), as a 0/1
 * counter per device. */
static void emit_busy(struct tl_ctx *c)
{
	for (uint32_t d = 0; d < LS_GPU_MAX_DEV; d++) {
		bool track = false;
		for (size_t i = 0; i < c->nbusy; i++) {
			if (c->busy[i].dev != d)
				continue;
			if (!track) {
				char name[32];
				snprintf(name, sizeof(name), "GPU %u busy", d);
				ls_pf_track(c->pf, U_BUSY + d, 0, LS_PF_COUNTER, name, 0, 0);
				track = true;
			}
			ls_pf_counter(c->pf, U_BUSY + d, c->busy[i].b, 1);
			ls_pf_counter(c->pf, U_BUSY + d, c->busy[i].e, 0);
		}
	}
}

static void emit_engine(struct tl_ctx *c)
{
	static const char *const kinds[] = {"?",           "arrived",   "queued",  "scheduled",
					    "first_token", "preempted", "resumed", "finished"};
	for (size_t i = 0; i < c->neng; i++) {
		struct ls_pf_arg a[2] = {{"req_id", NULL, c->eng[i].req},
					 {"x_request_id", c->eng[i].xrid[0] ? c->eng[i].xrid : "-", 0}};
		if (!ls_pf_has_track(c->pf, U_PROC + c->eng[i].pid))
			ls_pf_track(c->pf, U_PROC + c->eng[i].pid, 0, LS_PF_PROCESS,
				    proc_name(c, c->eng[i].pid), c->eng[i].pid, 0);
		ls_pf_instant(c->pf, U_PROC + c->eng[i].pid, c->eng[i].ts,
			      c->eng[i].kind < 8 ? kinds[c->eng[i].kind] : "?", a, 2, 0);
	}
}


static int on_begin(void *ctx, const struct ls_file_hdr *h)
{
	struct tl_ctx *c = ctx;

	/* BOOTTIME is MONOTONIC plus suspend time; the capture has no suspend
	 * record, so the snapshot pairs them equal at the header's instant */
	c->pf = ls_pf_new(h->monotonic_ns, h->monotonic_ns);
	if (!c->pf)
		return -ENOMEM;
	ls_pf_track(c->pf, U_REQUESTS, 0, LS_PF_PLAIN, "requests", 0, 0);
	return 0;
}

static int on_end(void *ctx, struct ls_analysis *a)
{
	struct tl_ctx *c = ctx;
	struct ls_stack_data *sd = &c->sd;

	c->tl = a->tl;
	ls_stack_loader_finish(&c->stacks, sd);
	c->finished = true;
	emit_threads(c, sd);
	emit_gpu(c);
	emit_busy(c);
	emit_engine(c);
	if (c->ninflight) {
		ls_pf_track(c->pf, U_INFLIGHT, 0, LS_PF_COUNTER, "requests in flight", 0, 0);
		counter(c->pf, U_INFLIGHT, c->inflight, c->ninflight);
	}
	if (c->nrtx) {
		ls_pf_track(c->pf, U_RETRANS, 0, LS_PF_COUNTER, "retransmitted segments", 0, 0);
		for (size_t i = 0; i < c->nrtx; i++)
			if (in_window(c, c->rtx[i], c->rtx[i]))
				ls_pf_counter(c->pf, U_RETRANS, c->rtx[i], (double)(i + 1));
	}
	return 0;
}

struct ls_trace *ls_trace_new(unsigned long request, unsigned long pid, double w0, double w1)
{
	struct tl_ctx *c = calloc(1, sizeof(*c));

	if (c) {
		c->request = request;
		c->pid = pid;
		c->w0s = w0;
		c->w1s = w1;
	}
	return (struct ls_trace *)c;
}

struct ls_sink ls_trace_sink(struct ls_trace *t)
{
	return (struct ls_sink){.name = "timeline", .begin = on_begin, .record = on_record,
				.span = on_span, .request = on_request, .end = on_end, .ctx = t};
}

size_t ls_trace_requests(const struct ls_trace *t)
{
	return ((const struct tl_ctx *)t)->nrequests;
}

int ls_trace_write(struct ls_trace *t, FILE *out, size_t *nev)
{
	return ls_pf_write(((struct tl_ctx *)t)->pf, out, nev);
}

void ls_trace_free(struct ls_trace *t)
{
	struct tl_ctx *c = (struct tl_ctx *)t;

	if (!c)
		return;
	if (!c->finished) {
		ls_stack_loader_finish(&c->stacks, &c->sd);
		c->finished = true;
	}
	ls_pf_free(c->pf);
	free(c->sp);
	free(c->procs);
	free(c->threads);
	free(c->launch);
	free(c->gpu);
	free(c->busy);
	free(c->eng);
	free(c->inflight);
	free(c->rtx);
	free(c->lanes);
	ls_stack_data_free(&c->sd);
	ls_idmap_free(&c->blocked_in);
	free(c);
}
