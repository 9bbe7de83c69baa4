// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Engine-group timeline (see timeline.h).
 *
 * CPU state per thread from the scheduler events: on CPU from a switch-in to
 * the next switch-out; runnable from a wakeup, or from a switch-out that left
 * the thread runnable (preempted, prev_state 0), to its next switch-in.
 * GPU layers from GPU records: kernels (collectives apart), H2D, D2H and
 * other copies/memsets. Spans of every thread are kept with their process
 * and filtered to the engine group at the end, when the group is known.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "grow.h"
#include "idmap.h"

#include "latsplit/engine.h"
#include "timeline.h"
#include "container.h"


#define BUSY_GAP_NS 20000 /* GPU spans closer than this form one busy period */

struct tspan {
	uint64_t b, e;
	uint32_t tgid, tid;
};

struct thread {
	uint32_t tid, tgid;
	uint64_t on_since, runnable_since, blocked_since;
};

struct eng_req {
	uint32_t pid;
	uint64_t req_id;
	char xrid[64]; /* X-Request-Id; a span's gen_ai.request.id */
	struct ls_engine_join j;
	bool claimed;
	char trace[33];       /* a span's trace id in hex, "" when none */
};

/* Kept spans: everything the attribution of a request not yet attributed
 * may ask for. ls_timeline_retire() forgets the rest, so memory holds the
 * recent past, not the capture. */
struct ls_timeline {
	bool track_all;
	/* threads: open-addressing table keyed by tid */
	struct thread *threads;
	size_t cap_threads, n_threads;
	/* every thread's on-CPU and runnable spans, in order of their end
	 * (pushed at the switch that ends them) */
	struct tspan *oncpu, *runnable;
	size_t n_oncpu, cap_oncpu, n_runnable, cap_runnable;
	/* the group, as a sorted array of tgids */
	uint32_t *group;
	size_t n_group, cap_group;
	/* process names from the capture's process records (the newest) */
	struct {
		uint32_t pid;
		char comm[LS_COMM_LEN + 1];
	} *comms;
	size_t n_comms, cap_comms;
	struct ls_proc_place *places; /* processes in a container (LS_REC_PROC_NS) */
	size_t n_places, cap_places;
	struct ls_spans raw[LS_L_N];        /* GPU spans as they came */
	struct ls_spans uprobe_raw[LS_L_N]; /* used only without device records */
	struct ls_spans layers[LS_L_N];     /* merged (ls_timeline_build) */
	struct ls_gpu_summary sum;
	struct ls_spans busy;
	/* each device's busy period being built (the union of its GPU work) */
	struct {
		uint64_t b, e, last_end;
		bool open;
	} dev[LS_GPU_MAX_DEV];
	/* The thread that drives the GPU (most GPU records or launches), and
	 * its on-CPU spans: when it can run, the engine can schedule. */
	uint32_t launcher_tid[8];
	uint64_t launcher_n[8];
	struct ls_spans launcher_oncpu;
	struct ls_runq runq;
	unsigned gpu_sources;
	bool saw_sched;
	uint64_t n_ev;
	/* engine requests in order of arrival; by (process, engine id) */
	struct eng_req *ereq;
	size_t n_ereq, cap_ereq;
	struct ls_idmap ereq_by_id; /* value: index + 1 into ereq */
	/* engine spans (OTLP): whole requests, received after they ended, kept
	 * in order of arrival; how many came and how many were let go unjoined */
	struct eng_req *sreq;
	size_t n_sreq, cap_sreq;
	uint64_t spans, spans_unjoined;
	const struct ls_span_sink *sink;
};

void ls_timeline_set_span_sink(struct ls_timeline *tl, const struct ls_span_sink *sink)
{
	tl->sink = sink;
}

static void tell(struct ls_timeline *tl, enum ls_span_kind k, uint32_t tgid, uint32_t tid,
		 uint64_t b, uint64_t e, const struct ls_hdr *rec)
{
	if (tl->sink && (e > b || k >= LS_SPAN_GPU))
		tl->sink->span(tl->sink->ctx, k, tgid, tid, b, e, rec);
}

void ls_spans_add(struct ls_spans *s, uint64_t b, uint64_t e)
{
	if (e <= b)
		return;
	GROW(s->v, s->n, s->cap);
	s->v[s->n++] = (struct ls_span){b, e};
}

static int span_cmp(const void *a, const void *b)
{
	const struct ls_span *x = a, *y = b;
	return x->b < y->b ? -1 : x->b > y->b;
}

void ls_spans_normalise(struct ls_spans *s)
{
	size_t k = 0;

	if (!s->n)
		return;
	/* Spans mostly arrive in order: sort only when one does not. */
	for (size_t i = 1; i < s->n; i++)
		if (s->v[i].b < s->v[i - 1].b) {
			qsort(s->v, s->n, sizeof(*s->v), span_cmp);
			break;
		}
	for (size_t i = 0; i < s->n; i++) {
		if (k && s->v[i].b <= s->v[k - 1].e) {
			if (s->v[i].e > s->v[k - 1].e)
				s->v[k - 1].e = s->v[i].e;
		} else {
			s->v[k++] = s->v[i];
		}
	}
	s->n = k;
}

void ls_spans_free(struct ls_spans *s)
{
	free(s->v);
	memset(s, 0, sizeof(*s));
}

struct ls_timeline *ls_timeline_new(bool track_all)
{
	struct ls_timeline *tl = calloc(1, sizeof(*tl));

	if (tl)
		tl->track_all = track_all;
	return tl;
}

static struct thread *thread_get(struct ls_timeline *tl, uint32_t tid, uint32_t tgid)
{
	if ((tl->n_threads + 1) * 2 > tl->cap_threads) {
		size_t nc = tl->cap_threads ? tl->cap_threads * 2 : 1024;
		struct thread *nt = calloc(nc, sizeof(*nt));
		if (!nt)
			abort();
		for (size_t i = 0; i < tl->cap_threads; i++) {
			struct thread *t = &tl->threads[i];
			if (!t->tid)
				continue;
			size_t h = (t->tid * 2654435761u) & (nc - 1);
			while (nt[h].tid)
				h = (h + 1) & (nc - 1);
			nt[h] = *t;
		}
		free(tl->threads);
		tl->threads = nt;
		tl->cap_threads = nc;
	}
	size_t h = (tid * 2654435761u) & (tl->cap_threads - 1);
	while (tl->threads[h].tid && tl->threads[h].tid != tid)
		h = (h + 1) & (tl->cap_threads - 1);
	if (!tl->threads[h].tid) {
		tl->threads[h].tid = tid;
		tl->n_threads++;
	}
	tl->threads[h].tgid = tgid;
	return &tl->threads[h];
}

static void push_tspan(struct tspan **v, size_t *n, size_t *cap, uint64_t b, uint64_t e,
		       uint32_t tgid, uint32_t tid)
{
	if (e <= b)
		return;
	GROW(*v, *n, *cap);
	(*v)[(*n)++] = (struct tspan){b, e, tgid, tid};
}

/* Sorted insert: the group is asked at every attribution. */
static void note_comm(struct ls_timeline *tl, uint32_t pid, const char *comm)
{
	size_t i = 0;

	while (i < tl->n_comms && tl->comms[i].pid != pid)
		i++;
	if (i == tl->n_comms) {
		if (tl->n_comms >= 4096) /* a name is a courtesy: bounded */
			return;
		GROW(tl->comms, tl->n_comms, tl->cap_comms);
		tl->n_comms++;
	}
	tl->comms[i].pid = pid;
	memcpy(tl->comms[i].comm, comm, LS_COMM_LEN);
	tl->comms[i].comm[LS_COMM_LEN] = '\0';
}

/* A process's container, from its newest LS_REC_PROC_NS; the host's
 * processes are not kept. Bounded like the names. */
static void note_place(struct ls_timeline *tl, const struct ls_rec_proc_ns *e)
{
	struct ls_container c;
	char cg[1024];
	size_t i = 0, n = e->cgroup_len;

	if (n > e->h.size - sizeof(*e))
		n = e->h.size - sizeof(*e);
	if (n > sizeof(cg) - 1)
		n = sizeof(cg) - 1;
	memcpy(cg, e + 1, n);
	cg[n] = '\0';
	for (size_t k = 0; k < n && cg[k]; k++) /* text, whatever the file holds */
		if ((unsigned char)cg[k] < 0x20 || (unsigned char)cg[k] >= 0x7f)
			cg[k] = '?';
	while (i < tl->n_places && tl->places[i].pid != e->h.pid)
		i++;
	if (!ls_container_name(cg, e->flags, e->pidns, &c)) {
		if (i < tl->n_places) { /* it left its container (exec'd out): the host's now */
			free(tl->places[i].cgroup);
			tl->places[i] = tl->places[--tl->n_places];
		}
		return;
	}
	if (i == tl->n_places) {
		if (tl->n_places >= 4096)
			return;
		GROW(tl->places, tl->n_places, tl->cap_places);
		tl->places[tl->n_places++] = (struct ls_proc_place){.pid = e->h.pid};
	}
	struct ls_proc_place *p = &tl->places[i];
	char *dup = strdup(cg);
	if (!dup)
		return;
	free(p->cgroup);
	p->cgroup = dup;
	p->ns_pid = e->ns_pid;
	p->c = c;
}

static void group_add(struct ls_timeline *tl, uint32_t tgid)
{
	size_t lo = 0, hi = tl->n_group;

	if (!tgid)
		return;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (tl->group[mid] < tgid)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo < tl->n_group && tl->group[lo] == tgid)
		return;
	GROW(tl->group, tl->n_group, tl->cap_group);
	memmove(tl->group + lo + 1, tl->group + lo, (tl->n_group - lo) * sizeof(uint32_t));
	tl->group[lo] = tgid;
	tl->n_group++;
}

void ls_timeline_note_pid(struct ls_timeline *tl, uint32_t pid)
{
	if (tl->track_all)
		group_add(tl, pid);
}

/* Thread t woken at ts (its sched_wakeup, or one folded into the switch
 * that runs it: rec): a block ends there, and it waits for a CPU from then. */
static void woken(struct ls_timeline *tl, struct thread *t, uint64_t ts, const struct ls_hdr *rec)
{
	if (t->blocked_since) {
		tell(tl, LS_SPAN_BLOCKED, t->tgid, t->tid, t->blocked_since, ts, rec);
		t->blocked_since = 0;
	}
	if (!t->on_since && !t->runnable_since)
		t->runnable_since = ts;
}

static void on_switch(struct ls_timeline *tl, const struct ls_ev_sched_switch *e)
{
	uint64_t ts = e->h.ts;

	tl->saw_sched = true;
	if (e->h.tid) {
		struct thread *p = thread_get(tl, e->h.tid, e->h.pid);
		if (p->on_since) {
			push_tspan(&tl->oncpu, &tl->n_oncpu, &tl->cap_oncpu, p->on_since, ts, p->tgid,
				   p->tid);
			tell(tl, LS_SPAN_ONCPU, p->tgid, p->tid, p->on_since, ts, &e->h);
		}
		p->on_since = 0;
		if (e->prev_state == 0) /* preempted: still runnable */
			p->runnable_since = ts;
		else
			p->blocked_since = ts;
	}
	if (e->next_tid) {
		struct thread *n = thread_get(tl, e->next_tid, e->next_pid);
		/* its wakeup, folded (ABI 7): as its own record would have been */
		if (e->next_woken_dt && e->next_woken_dt <= ts)
			woken(tl, n, ts - e->next_woken_dt, &e->h);
		if (n->runnable_since) {
			push_tspan(&tl->runnable, &tl->n_runnable, &tl->cap_runnable,
				   n->runnable_since, ts, n->tgid, n->tid);
			tell(tl, LS_SPAN_RUNNABLE, n->tgid, n->tid, n->runnable_since, ts, &e->h);
		}
		n->runnable_since = n->blocked_since = 0;
		n->on_since = ts;
	}
}

static void on_wakeup(struct ls_timeline *tl, const struct ls_ev_sched_wakeup *e)
{
	if (e->h.tid)
		woken(tl, thread_get(tl, e->h.tid, e->h.pid), e->h.ts, &e->h);
}

static void gpu_stats_add(struct ls_timeline *tl, const struct ls_ev_gpu *e);

/* Counts a thread that hands work to the GPU (a small table of candidates). */
static void count_launcher(struct ls_timeline *tl, uint32_t tid)
{
	int i, min = 0;

	for (i = 0; i < 8; i++) {
		if (tl->launcher_tid[i] == tid) {
			tl->launcher_n[i]++;
			return;
		}
		if (tl->launcher_n[i] < tl->launcher_n[min])
			min = i;
	}
	tl->launcher_tid[min] = tid;
	tl->launcher_n[min] = 1;
}

static void on_gpu(struct ls_timeline *tl, const struct ls_ev_gpu *e)
{
	enum ls_layer l;
	bool uprobe = e->source == LS_GPU_SRC_UPROBE;

	if (e->source < 8)
		tl->gpu_sources |= 1u << e->source;
	if (tl->track_all)
		group_add(tl, e->h.pid);
	gpu_stats_add(tl, e);
	tell(tl, LS_SPAN_GPU, e->h.pid, e->h.tid, e->start_ns, e->end_ns, &e->h);
	if (e->source == LS_GPU_SRC_SIMULATED || e->source == LS_GPU_SRC_UPROBE)
		count_launcher(tl, e->h.tid);
	if (e->flags & LS_GPU_F_HOST_SIDE)
		return; /* an enqueue, not device time */
	if (uprobe && e->kind == LS_GPU_SYNC) {
		/* Host-side only: a thread blocked in a synchronize waited for
		 * GPU work it queued; counted as compute (gpu: uprobe). */
		ls_spans_add(&tl->uprobe_raw[LS_L_KERNEL], e->start_ns, e->end_ns);
		return;
	}
	switch (e->kind) {
	case LS_GPU_KERNEL:
		l = e->flags & LS_GPU_F_COMM ? LS_L_COMM : LS_L_KERNEL;
		break;
	case LS_GPU_MEMCPY:
		l = e->copy_kind == LS_COPY_H2D ? LS_L_H2D
		    : e->copy_kind == LS_COPY_D2H ? LS_L_D2H : LS_L_XFER_OTHER;
		break;
	case LS_GPU_MEMSET:
		l = LS_L_XFER_OTHER;
		break;
	default:
		return; /* sync: the CPU waiting, not the device working */
	}
	ls_spans_add(uprobe ? &tl->uprobe_raw[l] : &tl->raw[l], e->start_ns, e->end_ns);
}

/* Engine events -> one record per engine request (a new one per arrival),
 * found by (process, engine id); they are created in time order, so the
 * array is in order of arrival. */
static uint64_t ereq_key(uint32_t pid, uint64_t req_id)
{
	uint64_t k = req_id * 0x9e3779b97f4a7c15ull ^ pid;
	return (k ^ (k >> 29)) | 1; /* nonzero */
}

static void on_engine(struct ls_timeline *tl, const struct ls_ev_engine *e)
{
	uint64_t key = ereq_key(e->h.pid, e->req_id);
	uintptr_t ix = (uintptr_t)ls_idmap_get(&tl->ereq_by_id, key);
	struct eng_req *r = ix ? &tl->ereq[ix - 1] : NULL;

	tl->n_ev++;
	if (r && (r->req_id != e->req_id || r->pid != e->h.pid))
		r = NULL; /* a key collision: the newer one wins */
	if (e->kind == LS_ENG_ARRIVED || !r) {
		GROW(tl->ereq, tl->n_ereq, tl->cap_ereq);
		r = &tl->ereq[tl->n_ereq++];
		memset(r, 0, sizeof(*r));
		r->pid = e->h.pid;
		r->req_id = e->req_id;
		r->j.t_arrived = e->h.ts;
		ls_idmap_remove(&tl->ereq_by_id, key); /* a re-used id now means this one */
		if (ls_idmap_put(&tl->ereq_by_id, key, (void *)(uintptr_t)tl->n_ereq))
			abort();
	}
	switch (e->kind) {
	case LS_ENG_ARRIVED:
		memcpy(r->xrid, e->x_request_id, sizeof(r->xrid));
		r->xrid[sizeof(r->xrid) - 1] = '\0';
		break;
	case LS_ENG_QUEUED:
		r->j.t_queued = e->h.ts;
		r->j.prompt_tokens = e->arg;
		break;
	case LS_ENG_SCHEDULED:
		if (!r->j.t_sched) {
			r->j.t_sched = e->h.ts;
			r->j.batch_size = e->arg;
		}
		break;
	case LS_ENG_FIRST_TOKEN:
		if (!r->j.t_first)
			r->j.t_first = e->h.ts;
		break;
	case LS_ENG_PREEMPTED:
		r->j.preemptions++;
		break;
	case LS_ENG_FINISHED:
		r->j.t_finish = e->h.ts;
		break;
	}
}

/* An engine's own span of a whole request (OTLP): inserted in order of
 * arrival (spans come in batches, after their requests ended). */
static void on_engine_span(struct ls_timeline *tl, const struct ls_rec_engine_span *e)
{
	struct eng_req *r;
	size_t at = tl->n_sreq;

	tl->spans++;
	if (!e->t_arrived)
		return;
	while (at > 0 && tl->sreq[at - 1].j.t_arrived > e->t_arrived)
		at--;
	GROW(tl->sreq, tl->n_sreq, tl->cap_sreq);
	memmove(tl->sreq + at + 1, tl->sreq + at, (tl->n_sreq - at) * sizeof(*tl->sreq));
	tl->n_sreq++;
	r = &tl->sreq[at];
	memset(r, 0, sizeof(*r));
	r->pid = e->h.pid;
	memcpy(r->xrid, e->request_id, sizeof(r->xrid));
	r->xrid[sizeof(r->xrid) - 1] = '\0';
	for (int i = 0; i < 16; i++)
		if (e->trace_id[i]) { /* all zero: none */
			for (int k = 0; k < 16; k++)
				snprintf(r->trace + 2 * k, 3, "%02x", e->trace_id[k]);
			break;
		}
	r->j = (struct ls_engine_join){.t_arrived = e->t_arrived, .t_queued = e->t_queued,
				       .t_sched = e->t_sched, .t_first = e->t_first,
				       .t_finish = e->t_finish, .prompt_tokens = e->prompt_tokens,
				       .otlp = true};
}

void ls_timeline_add(struct ls_timeline *tl, const struct ls_hdr *rec)
{
	switch (rec->type) {
	case LS_EV_SCHED_SWITCH:
		on_switch(tl, (const void *)rec);
		break;
	case LS_EV_SCHED_WAKEUP:
	case LS_EV_SCHED_WAKEUP_NEW:
		on_wakeup(tl, (const void *)rec);
		break;
	case LS_EV_GPU:
		on_gpu(tl, (const void *)rec);
		break;
	case LS_EV_GPU_LAUNCH:
		count_launcher(tl, rec->tid);
		break;
	case LS_REC_ENGINE_SPAN:
		if (rec->size >= sizeof(struct ls_rec_engine_span))
			on_engine_span(tl, (const void *)rec);
		break;
	case LS_EV_ENGINE:
		on_engine(tl, (const void *)rec);
		tell(tl, LS_SPAN_ENGINE, rec->pid, rec->tid, rec->ts, rec->ts, rec);
		if (tl->track_all)
			group_add(tl, rec->pid);
		break;
	case LS_REC_PROC_INFO:
		if (!tl->track_all)
			group_add(tl, rec->pid);
		if (rec->size >= sizeof(struct ls_rec_proc_info))
			note_comm(tl, rec->pid, ((const struct ls_rec_proc_info *)rec)->comm);
		break;
	case LS_REC_PROC_NS:
		note_place(tl, (const void *)rec);
		break;
	case LS_EV_PROC_FORK: {
		const struct ls_ev_proc_fork *e = (const void *)rec;
		if (!tl->track_all)
			group_add(tl, e->child_pid);
		break;
	}
	default:
		break;
	}
}

static int u32_cmp(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	return x < y ? -1 : x > y;
}


struct ls_runq *ls_timeline_runq(struct ls_timeline *tl)
{
	return &tl->runq;
}

bool ls_timeline_in_group(const struct ls_timeline *tl, uint32_t tgid)
{
	return tl->n_group &&
	       bsearch(&tgid, tl->group, tl->n_group, sizeof(uint32_t), u32_cmp) != NULL;
}

static void runq_account(struct ls_timeline *tl, const struct tspan *t)
{
	uint64_t d = t->e - t->b;

	if (!ls_timeline_in_group(tl, t->tgid))
		return;
	ls_quant_add(&tl->runq.q, d);
	tl->runq.over_ms += d >= 1024000; /* runqlat's 1024 us bucket edge */
}

void ls_timeline_build(struct ls_timeline *tl)
{
	for (int l = 0; l < LS_L_N; l++)
		tl->layers[l].n = 0;
	tl->launcher_oncpu.n = tl->busy.n = 0;
	for (size_t i = 0; i < tl->n_oncpu; i++)
		if (ls_timeline_in_group(tl, tl->oncpu[i].tgid))
			ls_spans_add(&tl->layers[LS_L_ONCPU], tl->oncpu[i].b, tl->oncpu[i].e);
	for (size_t i = 0; i < tl->n_runnable; i++)
		if (ls_timeline_in_group(tl, tl->runnable[i].tgid))
			ls_spans_add(&tl->layers[LS_L_RUNNABLE], tl->runnable[i].b, tl->runnable[i].e);
	int best = 0;
	for (int i = 1; i < 8; i++)
		if (tl->launcher_n[i] > tl->launcher_n[best])
			best = i;
	for (size_t i = 0; tl->launcher_n[best] && i < tl->n_oncpu; i++)
		if (tl->oncpu[i].tid == tl->launcher_tid[best])
			ls_spans_add(&tl->launcher_oncpu, tl->oncpu[i].b, tl->oncpu[i].e);
	ls_spans_normalise(&tl->launcher_oncpu);
	/* Host-side uprobe intervals only when no device timings exist. */
	bool device = tl->gpu_sources & ((1u << LS_GPU_SRC_CUPTI) | (1u << LS_GPU_SRC_SIMULATED));
	for (int l = 0; l < LS_L_N; l++) {
		for (size_t i = 0; i < tl->raw[l].n; i++)
			ls_spans_add(&tl->layers[l], tl->raw[l].v[i].b, tl->raw[l].v[i].e);
		for (size_t i = 0; !device && i < tl->uprobe_raw[l].n; i++)
			ls_spans_add(&tl->layers[l], tl->uprobe_raw[l].v[i].b, tl->uprobe_raw[l].v[i].e);
		ls_spans_normalise(&tl->layers[l]);
	}
	/* GPU busy periods, for inferring T_sched */
	for (int l = LS_L_KERNEL; l <= LS_L_XFER_OTHER; l++)
		for (size_t i = 0; i < tl->layers[l].n; i++)
			ls_spans_add(&tl->busy, tl->layers[l].v[i].b, tl->layers[l].v[i].e + BUSY_GAP_NS);
	ls_spans_normalise(&tl->busy);
	for (size_t i = 0; i < tl->busy.n; i++)
		tl->busy.v[i].e -= BUSY_GAP_NS;
}

/* Keeps the spans ending at or after t (order kept). */
static size_t keep_spans(struct ls_span *v, size_t n, uint64_t t)
{
	size_t k = 0;

	for (size_t i = 0; i < n; i++)
		if (v[i].e >= t)
			v[k++] = v[i];
	return k;
}

void ls_timeline_retire(struct ls_timeline *tl, uint64_t t)
{
	size_t k;

	for (k = 0; k < tl->n_oncpu && tl->oncpu[k].e < t; k++)
		;
	if (k) {
		memmove(tl->oncpu, tl->oncpu + k, (tl->n_oncpu - k) * sizeof(*tl->oncpu));
		tl->n_oncpu -= k;
	}
	for (k = 0; k < tl->n_runnable && tl->runnable[k].e < t; k++)
		runq_account(tl, &tl->runnable[k]);
	if (k) {
		memmove(tl->runnable, tl->runnable + k, (tl->n_runnable - k) * sizeof(*tl->runnable));
		tl->n_runnable -= k;
	}
	for (int l = 0; l < LS_L_N; l++) {
		tl->raw[l].n = keep_spans(tl->raw[l].v, tl->raw[l].n, t);
		tl->uprobe_raw[l].n = keep_spans(tl->uprobe_raw[l].v, tl->uprobe_raw[l].n, t);
	}
	for (k = 0; k < tl->n_ereq && tl->ereq[k].j.t_arrived < t; k++) {
		uint64_t key = ereq_key(tl->ereq[k].pid, tl->ereq[k].req_id);
		if ((uintptr_t)ls_idmap_get(&tl->ereq_by_id, key) == k + 1)
			ls_idmap_remove(&tl->ereq_by_id, key);
	}
	if (k) {
		memmove(tl->ereq, tl->ereq + k, (tl->n_ereq - k) * sizeof(*tl->ereq));
		tl->n_ereq -= k;
		for (size_t i = 0; i < tl->ereq_by_id.cap; i++)
			if (tl->ereq_by_id.keys[i])
				tl->ereq_by_id.vals[i] = (void *)((uintptr_t)tl->ereq_by_id.vals[i] - k);
	}
	for (k = 0; k < tl->n_sreq && tl->sreq[k].j.t_arrived < t; k++)
		tl->spans_unjoined += !tl->sreq[k].claimed;
	if (k) {
		memmove(tl->sreq, tl->sreq + k, (tl->n_sreq - k) * sizeof(*tl->sreq));
		tl->n_sreq -= k;
	}
}

void ls_timeline_finish(struct ls_timeline *tl, const struct ls_request *reqs, size_t n)
{
	for (size_t i = 0; i < n; i++)
		ls_timeline_note_pid(tl, reqs[i].pid);
	ls_timeline_build(tl);
}

static void busy_close(struct ls_timeline *tl, uint32_t dev);

void ls_timeline_close(struct ls_timeline *tl)
{
	for (uint32_t d = 0; d < LS_GPU_MAX_DEV; d++)
		busy_close(tl, d);
	for (size_t i = 0; i < tl->n_runnable; i++)
		runq_account(tl, &tl->runnable[i]);
}

const struct ls_spans *ls_timeline_layer(const struct ls_timeline *tl, enum ls_layer l)
{
	return &tl->layers[l];
}

bool ls_timeline_has_gpu(const struct ls_timeline *tl)
{
	return tl->gpu_sources != 0;
}

/* A device's busy period closes: counted, and told to the sinks. */
static void busy_close(struct ls_timeline *tl, uint32_t dev)
{
	if (!tl->dev[dev].open)
		return;
	tl->dev[dev].open = false;
	tl->sum.dev_busy_ns[dev] += tl->dev[dev].e - tl->dev[dev].b;
	tl->dev[dev].last_end = tl->dev[dev].e;
	tell(tl, LS_SPAN_GPU_BUSY, dev, 0, tl->dev[dev].b, tl->dev[dev].e, NULL);
}

/* Device busy time is the union of its GPU work (overlapping kernels and
 * copies count once), built as records come: work that starts before the
 * last closed period ended counts from its end. */
static void busy_add(struct ls_timeline *tl, uint32_t dev, uint64_t b, uint64_t e)
{
	if (tl->dev[dev].open && b <= tl->dev[dev].e) {
		if (e > tl->dev[dev].e)
			tl->dev[dev].e = e;
		return;
	}
	busy_close(tl, dev);
	if (b < tl->dev[dev].last_end)
		b = tl->dev[dev].last_end;
	if (e <= b)
		return;
	tl->dev[dev].b = b;
	tl->dev[dev].e = e;
	tl->dev[dev].open = true;
}

/* Per-device busy time and top kernels/copies, for the report. */
static void gpu_stats_add(struct ls_timeline *tl, const struct ls_ev_gpu *e)
{
	struct ls_gpu_summary *s = &tl->sum;
	uint64_t d = e->end_ns > e->start_ns ? e->end_ns - e->start_ns : 0;
	size_t i;

	if (e->flags & LS_GPU_F_HOST_SIDE)
		return;
	if (e->device < LS_GPU_MAX_DEV && e->kind != LS_GPU_SYNC) {
		busy_add(tl, e->device, e->start_ns, e->end_ns);
		if (e->device + 1 > s->ndev)
			s->ndev = e->device + 1;
	}
	if (e->kind == LS_GPU_MEMCPY && (e->flags & LS_GPU_F_PAGEABLE))
		s->pageable_copies++;
	if (e->kind == LS_GPU_MEMCPY) {
		s->copy_ns[e->copy_kind & 3] += d;
		s->copy_bytes[e->copy_kind & 3] += e->bytes;
		s->copies[e->copy_kind & 3]++;
	}
	if (e->kind != LS_GPU_KERNEL)
		return;
	for (i = 0; i < s->nnames; i++)
		if (!strncmp(s->names[i].name, e->name, sizeof(e->name)))
			break;
	if (i == s->nnames) {
		if (s->nnames == LS_GPU_MAX_NAMES)
			return; /* counted in the total below */
		memcpy(s->names[i].name, e->name, sizeof(e->name));
		s->names[i].name[sizeof(e->name) - 1] = '\0';
		s->nnames++;
	}
	s->names[i].ns += d;
	s->names[i].count++;
}

const struct ls_gpu_summary *ls_timeline_gpu_summary(const struct ls_timeline *tl)
{
	return &tl->sum;
}

const char *ls_timeline_gpu_source(const struct ls_timeline *tl)
{
	if (tl->gpu_sources & (1u << LS_GPU_SRC_CUPTI))
		return "cupti";
	if (tl->gpu_sources & (1u << LS_GPU_SRC_UPROBE))
		return "uprobe";
	if (tl->gpu_sources & (1u << LS_GPU_SRC_SIMULATED))
		return "simulated";
	return "none";
}

const struct ls_proc_place *ls_timeline_place(const struct ls_timeline *tl, uint32_t pid)
{
	for (size_t i = 0; tl && i < tl->n_places; i++)
		if (tl->places[i].pid == pid)
			return &tl->places[i];
	return NULL;
}

const char *ls_timeline_comm(const struct ls_timeline *tl, uint32_t pid)
{
	for (size_t i = 0; tl && i < tl->n_comms; i++)
		if (tl->comms[i].pid == pid)
			return tl->comms[i].comm;
	return NULL;
}

bool ls_timeline_has_engine(const struct ls_timeline *tl)
{
	return tl->n_ev > 0 || tl->spans > 0;
}

void ls_timeline_span_counts(const struct ls_timeline *tl, uint64_t *received, uint64_t *unjoined)
{
	uint64_t u = tl->spans_unjoined;

	for (size_t i = 0; i < tl->n_sreq; i++)
		u += !tl->sreq[i].claimed;
	*received = tl->spans;
	*unjoined = u;
}

bool ls_timeline_has_sched(const struct ls_timeline *tl)
{
	return tl->saw_sched;
}

/* The first of n engine requests v arriving at or after t. */
static size_t first_at(const struct eng_req *v, size_t n, uint64_t t)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (v[mid].j.t_arrived < t)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

struct order_ix {
	uint64_t t;
	size_t i;
};

static int order_cmp(const void *a, const void *b)
{
	const struct order_ix *x = a, *y = b;
	return x->t < y->t ? -1 : x->t > y->t;
}

static void join(struct ls_timeline *tl, const struct ls_request *reqs, size_t n,
		 struct ls_engine_join *out, bool peek);

void ls_timeline_join(struct ls_timeline *tl, const struct ls_request *reqs, size_t n,
		      struct ls_engine_join *out)
{
	join(tl, reqs, n, out, false);
}

void ls_timeline_join_peek(struct ls_timeline *tl, const struct ls_request *reqs, size_t n,
			   struct ls_engine_join *out)
{
	join(tl, reqs, n, out, true);
}

static bool id_char(char c)
{
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

/* An engine's request id holds the X-Request-Id as a whole word (vLLM:
 * "cmpl-<id>-0", "chatcmpl-<id>"): not followed or preceded by a letter or
 * digit, so "lg-1" is not found in "cmpl-lg-10-0". */
static bool id_holds(const char *eng_id, const char *xrid)
{
	size_t n = strlen(xrid);

	if (!n)
		return false;
	for (const char *p = strstr(eng_id, xrid); p; p = strstr(p + 1, xrid))
		if ((p == eng_id || !id_char(p[-1]) || !id_char(xrid[0])) &&
		    (!id_char(p[n]) || !id_char(xrid[n - 1])))
			return true;
	return false;
}

/* Whether engine request x (one of the events' if !span, else a span)
 * belongs to request r, in this pass: 0 by id (X-Request-Id, a span's
 * traceparent or request id), 1 by process and time. */
static bool joins(const struct eng_req *x, const struct ls_request *r, bool span, int pass)
{
	if (pass == 1)
		return !(x->xrid[0] && r->x_request_id[0]) && x->pid && x->pid == r->pid;
	if (!span)
		return r->x_request_id[0] && !strcmp(x->xrid, r->x_request_id);
	return (x->trace[0] && ls_trace_id(r) && !strncasecmp(ls_trace_id(r), x->trace, 32)) ||
	       (r->x_request_id[0] && id_holds(x->xrid, r->x_request_id));
}

/* In precedence (DESIGN §11): the engine's events by id, its spans by id,
 * events by process and time, spans by process and time; each pass in order
 * of T_read, each engine request to one request. */
static void join(struct ls_timeline *tl, const struct ls_request *reqs, size_t n,
		 struct ls_engine_join *out, bool peek)
{
	size_t *took = peek ? calloc(n ? n : 1, sizeof(*took)) : NULL, ntook = 0;
	bool *took_span = peek ? calloc(n ? n : 1, sizeof(*took_span)) : NULL;
	const uint64_t slack = 1000000; /* the app may fire `arrived` before its read returns */
	struct order_ix *ord = malloc((n ? n : 1) * sizeof(*ord));

	if (!ord || (peek && (!took || !took_span)))
		abort();
	memset(out, 0, n * sizeof(*out));
	for (size_t i = 0; i < n; i++)
		ord[i] = (struct order_ix){reqs[i].t_read, i};
	qsort(ord, n, sizeof(*ord), order_cmp);
	for (int step = 0; step < 4; step++) {
		int pass = step / 2;
		bool span = step & 1;
		struct eng_req *v = span ? tl->sreq : tl->ereq;
		size_t nv = span ? tl->n_sreq : tl->n_ereq;

		for (size_t k = 0; k < n && nv; k++) {
			const struct ls_request *r = &reqs[ord[k].i];
			struct ls_engine_join *o = &out[ord[k].i];
			uint64_t from = r->t_read > slack ? r->t_read - slack : 0;
			uint64_t until = r->t_out ? r->t_out : UINT64_MAX;

			if (o->joined || !r->t_read ||
			    (pass == 0 && !r->x_request_id[0] && (!span || !r->traceparent[0])))
				continue;
			for (size_t e = first_at(v, nv, from); e < nv; e++) {
				struct eng_req *x = &v[e];
				if (x->j.t_arrived > until)
					break;
				if (x->claimed || !joins(x, r, span, pass))
					continue;
				x->claimed = true;
				if (peek) {
					took_span[ntook] = span;
					took[ntook++] = e;
				}
				*o = x->j;
				o->joined = true;
				break;
			}
		}
	}
	for (size_t i = 0; i < ntook; i++) /* a peek leaves them to the final join */
		(took_span[i] ? tl->sreq : tl->ereq)[took[i]].claimed = false;
	free(took);
	free(took_span);
	free(ord);
}

size_t ls_spans_seek(const struct ls_spans *s, uint64_t t)
{
	size_t lo = 0, hi = s->n;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (s->v[mid].e <= t)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* When thread tid became runnable for the run that includes t (its last
 * wakeup at or before t); t itself if unknown. Runnable spans are sorted by
 * their end (they are pushed at switch-in, in time order). */
static uint64_t woken_before(const struct ls_timeline *tl, uint32_t tid, uint64_t t)
{
	size_t lo = 0, hi = tl->n_runnable;

	while (lo < hi) { /* last span ending at or before t */
		size_t mid = (lo + hi) / 2;
		if (tl->runnable[mid].e <= t)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (size_t i = lo; i-- > 0 && t - tl->runnable[i].e < 100000000ull;)
		if (tl->runnable[i].tid == tid)
			return tl->runnable[i].b;
	return t;
}

/* The first instant at or after t when the thread driving the GPU was on a
 * CPU (t when it was, or when its runs are unknown): its scheduler admits
 * nothing while it sleeps or waits for a CPU. */
static uint64_t launcher_runs(const struct ls_timeline *tl, uint64_t t)
{
	const struct ls_spans *on = &tl->launcher_oncpu;
	size_t k;

	if (!on->n)
		return t;
	k = ls_spans_seek(on, t);
	return k < on->n && on->v[k].b > t ? on->v[k].b : t;
}

uint64_t ls_timeline_infer_sched(const struct ls_timeline *tl, uint64_t t_read, uint64_t t_first,
				 uint32_t first_tid)
{
	size_t lo;

	if (!t_first || !tl->busy.n)
		return 0;
	if (first_tid) {
		/* The token was handed over when the writer woke, if it woke
		 * after T_read and a step since T_read was over by then. A
		 * writer already running at T_read (it never slept in between),
		 * or one woken before any such step (a lock's hand-over, and
		 * then it waited for a CPU past the token), tells nothing, and
		 * T_first stands. */
		uint64_t w = woken_before(tl, first_tid, t_first);
		size_t k = ls_spans_seek(&tl->busy, w); /* the busy periods over by w */
		if (w > t_read && k && tl->busy.v[k - 1].e >= t_read)
			t_first = w;
	}
	lo = ls_spans_seek(&tl->busy, t_first);
	if (!lo)
		return 0;
	const struct ls_span *s = &tl->busy.v[lo - 1];
	if (s->e < t_read)
		return 0;
	/* The step began when the previous one ended: continuous batching
	 * admits at step boundaries, before the step's host work — once the
	 * thread driving the GPU gets a CPU to run its scheduler. */
	uint64_t prev_end = lo >= 2 ? tl->busy.v[lo - 2].e : 0;
	uint64_t t = launcher_runs(tl, prev_end > t_read ? prev_end : t_read);
	return t < s->b ? t : s->b;
}

uint64_t ls_timeline_next_boundary(const struct ls_timeline *tl, uint64_t t_read)
{
	size_t i;

	if (!tl->busy.n || !t_read)
		return 0;
	i = ls_spans_seek(&tl->busy, t_read);
	uint64_t t = t_read;
	if (i < tl->busy.n && tl->busy.v[i].b <= t_read)
		t = tl->busy.v[i++].e;
	/* admitted once the launcher runs, but before the next step starts */
	t = launcher_runs(tl, t);
	return i < tl->busy.n && tl->busy.v[i].b < t ? tl->busy.v[i].b : t;
}

void ls_timeline_free(struct ls_timeline *tl)
{
	if (!tl)
		return;
	free(tl->comms);
	for (size_t i = 0; i < tl->n_places; i++)
		free(tl->places[i].cgroup);
	free(tl->places);
	free(tl->threads);
	free(tl->oncpu);
	free(tl->runnable);
	free(tl->group);
	for (int l = 0; l < LS_L_N; l++) {
		ls_spans_free(&tl->layers[l]);
		ls_spans_free(&tl->raw[l]);
		ls_spans_free(&tl->uprobe_raw[l]);
	}
	ls_spans_free(&tl->busy);
	ls_spans_free(&tl->launcher_oncpu);
	ls_quant_free(&tl->runq.q);
	free(tl->ereq);
	free(tl->sreq);
	ls_idmap_free(&tl->ereq_by_id);
	free(tl);
}
