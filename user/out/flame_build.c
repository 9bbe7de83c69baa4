// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The flame graphs' model (see flame_build.h).
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "flame_build.h"
#include "grow.h"
#include "latsplit/engine.h"
#include "latsplit/events.h"

struct proc_name {
	__u32 pid;
	char comm[LS_COMM_LEN + 1];
};

/* The latency flame's part of a request: its split, and (with stacks) the
 * instants the split called host and other, taken while the analysis still
 * holds the request's window; drawn once the stacks are loaded. */
struct lat_req {
	uint64_t sub[LS_S_N], comp[LS_C_N];
	struct ls_spans where[2];
};

/* One stack of a graph with its weight (samples or ns). */
struct weighted {
	__u32 pid;
	__s32 ustack, kstack;
	char comm[LS_COMM_LEN + 1];
	uint64_t weight;
};

static int weighted_cmp(const void *a, const void *b)
{
	const struct weighted *x = a, *y = b;

	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	if (x->ustack != y->ustack)
		return x->ustack < y->ustack ? -1 : 1;
	if (x->kstack != y->kstack)
		return x->kstack < y->kstack ? -1 : 1;
	return strcmp(x->comm, y->comm);
}

static void push_weighted(struct weighted **v, size_t *n, size_t *cap, __u32 pid, __s32 ustack,
			  __s32 kstack, const char *comm, uint64_t weight)
{
	GROW(*v, *n, *cap);
	(*v)[*n] = (struct weighted){pid, ustack, kstack, "", weight};
	snprintf((*v)[*n].comm, sizeof((*v)[*n].comm), "%s", comm);
	(*n)++;
}

/* Adds the stacks of v (sorted here, identical ones merged) under the
 * frames of prefix (NULL-terminated, may be NULL). */
static void add_merged(struct ls_flame *f, const struct ls_stack_data *d, struct weighted *v, size_t nv,
		       const char *const *prefix)
{
	static char names[256][128];
	const char *fr[260];
	int np = 0;

	while (prefix && prefix[np] && np < 4) {
		fr[np] = prefix[np];
		np++;
	}
	if (nv)
		qsort(v, nv, sizeof(*v), weighted_cmp);
	for (size_t i = 0; i < nv;) {
		size_t j = i + 1;
		uint64_t w = v[i].weight;
		while (j < nv && !weighted_cmp(&v[i], &v[j]))
			w += v[j++].weight;
		int n = ls_stack_frames(d, v[i].pid, v[i].comm, v[i].ustack, v[i].kstack, names, fr + np, 256);
		ls_flame_add(f, fr, np + n, w);
		i = j;
	}
}

/* Where a user stack ends: a thread's root (the runtime's entry, a thread's
 * start), the depth limit, a frame with no symbol, or elsewhere (a frame
 * without a frame pointer above it: the walk could not go on). */
static void count_end(struct ls_flame_build *b, const struct ls_stack_data *d, __u32 pid,
		      __s32 ustack)
{
	static const char *const roots[] = {"_start", "start_thread", "clone", "clone3", "__clone",
					    "__clone3", "__libc_start_main", "__libc_start_call_main",
					    "thread_start", "__thread_start"};
	const struct ls_stk *u = ls_stack_of(d, ustack);
	char buf[128];
	const char *name;

	if (!u || !u->n)
		return;
	b->ends.stacks++;
	name = ls_stack_sym(d, pid, u->ips[u->n - 1], buf, sizeof(buf));
	/* glibc's own names for them: "__GI___clone3" (its internal alias,
	 * named by a debug file's symbols), "clone3@@GLIBC_2.34" */
	const char *bare = !strncmp(name, "__GI_", 5) ? name + 5 : name;
	size_t blen = strcspn(bare, "@");
	for (size_t i = 0; i < sizeof(roots) / sizeof(roots[0]); i++)
		if (strlen(roots[i]) == blen && !strncmp(bare, roots[i], blen)) {
			b->ends.rooted++;
			return;
		}
	if (u->n >= LS_STACK_DEPTH)
		b->ends.depth++;
	else if (!strncmp(name, "[unknown]", 9) || !strncmp(name, "0x", 2))
		b->ends.no_symbol++;
	else
		b->ends.elsewhere++;
}

static void stack_flame(struct ls_flame_build *b, const struct ls_stack_data *d)
{
	bool offcpu = b->kind == LS_FLAME_OFFCPU;
	/* identical stacks are merged first: a profile has many samples and
	 * few distinct stacks, and walking the tree is per frame */
	struct weighted *v = NULL;
	size_t nv = 0, capv = 0;

	for (size_t i = 0; offcpu && i < d->nblocked; i++) {
		const struct ls_block *p = &d->blocked[i];
		if (b->pid && p->pid != b->pid)
			continue;
		push_weighted(&v, &nv, &capv, p->pid, p->ustack, p->kstack, p->comm,
			      p->end > p->ts ? p->end - p->ts : 0);
		count_end(b, d, p->pid, p->ustack);
	}
	for (size_t i = 0; !offcpu && i < d->nsamples; i++) {
		const struct ls_sample *e = &d->samples[i];
		if (b->pid && e->pid != b->pid)
			continue;
		push_weighted(&v, &nv, &capv, e->pid, e->ustack, e->kstack, e->comm, 1);
		count_end(b, d, e->pid, e->ustack);
	}
	add_merged(b->f, d, v, nv, NULL);
	free(v);
}

/* A launch API call: its thread's process, correlation id, user stack. */
struct launch {
	__u32 pid, corr;
	__u64 ts;
	__s32 ustack;
};

static int launch_cmp(const void *a, const void *b)
{
	const struct launch *x = a, *y = b;

	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	if (x->corr != y->corr)
		return x->corr < y->corr ? -1 : 1;
	return (x->ts > y->ts) - (x->ts < y->ts);
}

/* The user stack of the last launch of (pid, corr) at or before ts (-1:
 * none); correlation ids are 32-bit and wrap, hence the time. */
static __s32 launch_stack(const struct launch *v, size_t n, __u32 pid, __u32 corr, __u64 ts)
{
	size_t lo = 0, hi = n;
	struct launch key = {pid, corr, ts, 0};

	while (lo < hi) { /* first launch after key */
		size_t mid = (lo + hi) / 2;
		if (launch_cmp(&v[mid], &key) <= 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo && v[lo - 1].pid == pid && v[lo - 1].corr == corr)
		return v[lo - 1].ustack;
	return -1;
}

/* GPU time: gpu;process;[the CPU stack that launched it];kernel or copy.
 * The launch stack comes from the gpu_launch event with the record's
 * correlation id (CUPTI shim, or an engine's latsplit_gpu_launch), from the
 * stack data (merged with Python and unwound frames). */
static void gpu_flame(struct ls_flame_build *b, const struct ls_stack_data *d)
{
	static const char *const dir[4] = {"memcpy other", "memcpy H2D", "memcpy D2H", "memcpy D2D"};
	static char names[256][128];
	const char *fr[260];
	struct launch *lv = NULL;
	size_t nl = 0, capl = 0;

	for (size_t i = 0; i < d->nlaunches; i++) {
		GROW(lv, nl, capl);
		lv[nl++] = (struct launch){d->launches[i].pid, d->launches[i].corr, d->launches[i].ts,
					   d->launches[i].ustack};
	}
	if (nl)
		qsort(lv, nl, sizeof(*lv), launch_cmp);
	for (size_t j = 0; j < b->ng; j++) {
		const struct ls_ev_gpu *g = &b->gv[j];
		char comm[LS_COMM_LEN + 1] = "?", name[65];

		for (size_t i = b->nprocs; i-- > 0;)
			if (b->procs[i].pid == g->h.pid) {
				memcpy(comm, b->procs[i].comm, sizeof(comm));
				break;
			}
		memcpy(name, g->name, 64);
		name[64] = '\0';
		/* launched before it ended (start may predate the API call's
		 * timestamp on a simulated device) */
		__s32 ustack = launch_stack(lv, nl, g->h.pid, g->correlation, g->end_ns);
		fr[0] = "gpu";
		int n = 1;
		if (ustack >= 0) {
			n += ls_stack_frames(d, g->h.pid, comm, ustack, -1, names, fr + 1, 256);
		} else {
			snprintf(names[0], sizeof(names[0]), "%s (%u)", comm, g->h.pid);
			fr[n++] = names[0];
		}
		fr[n++] = g->kind == LS_GPU_MEMCPY ? dir[g->copy_kind & 3]
			  : g->kind == LS_GPU_MEMSET ? "memset" : name;
		ls_flame_add(b->f, fr, n, g->end_ns - g->start_ns);
	}
	free(lv);
}

/* Overlap of [b, e) with the sorted disjoint spans w. */
static uint64_t overlap(const struct ls_spans *w, uint64_t b, uint64_t e)
{
	uint64_t t = 0;

	for (size_t k = ls_spans_seek(w, b); k < w->n && w->v[k].b < e; k++) {
		uint64_t lo = w->v[k].b > b ? w->v[k].b : b, hi = w->v[k].e < e ? w->v[k].e : e;
		t += hi > lo ? hi - lo : 0;
	}
	return t;
}

/* total spread over the stacks of v in proportion to their weights (the
 * remainder to the last, so it stays exact) under prefix; with no stack,
 * the whole of it under prefix;missing. Frees v. */
static void add_shared(struct ls_flame *f, const struct ls_stack_data *d, struct weighted *v,
		       size_t nv, uint64_t total, const char *const prefix[3], const char *missing)
{
	uint64_t sum = 0, left = total;

	if (!nv) {
		const char *fr[3] = {prefix[0], prefix[1], missing};
		ls_flame_add(f, fr, 3, total);
	}
	for (size_t i = 0; i < nv; i++)
		sum += v[i].weight;
	for (size_t i = 0; i < nv; i++) {
		uint64_t w = i + 1 == nv ? left : (uint64_t)((double)total * v[i].weight / sum);
		v[i].weight = w < left ? w : left;
		left -= v[i].weight;
	}
	add_merged(f, d, v, nv, prefix);
	free(v);
}

/* latency;other, expanded: a request's "other" time spread over the engine
 * group's blocked spans (off-CPU stacks) overlapping the instants the split
 * called other, in proportion to the overlap. None: "[no blocked stack]". */
static void expand_other(struct ls_flame *f, const struct ls_stack_data *d,
			 const struct ls_timeline *tl, const struct ls_spans *where,
			 uint64_t other_ns)
{
	static const char *const prefix[3] = {"latency", "other", NULL};
	struct weighted *v = NULL;
	size_t nv = 0, capv = 0;
	uint64_t b = where->n ? where->v[0].b : 0, e = where->n ? where->v[where->n - 1].e : 0;
	size_t lo = 0, hi = d->nblocked;

	while (lo < hi) { /* the first span that could reach past b */
		size_t mid = (lo + hi) / 2;
		if (d->maxend[mid] <= b)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (size_t i = lo; where->n && i < d->nblocked && d->blocked[i].ts < e; i++) {
		const struct ls_block *p = &d->blocked[i];
		uint64_t o;
		if (!ls_timeline_in_group(tl, p->pid) || !(o = overlap(where, p->ts, p->end)))
			continue;
		push_weighted(&v, &nv, &capv, p->pid, p->ustack, p->kstack, p->comm, o);
	}
	add_shared(f, d, v, nv, other_ns, prefix, "[no blocked stack]");
}

/* latency;host, expanded: a request's host time spread evenly over the
 * engine group's CPU samples taken at instants the split called host (their
 * stacks show what the host was doing). None: "[not sampled]". */
static void expand_host(struct ls_flame *f, const struct ls_stack_data *d,
			const struct ls_timeline *tl, const struct ls_spans *where, uint64_t host_ns)
{
	/* "[not sampled]": no sample fell on the request's host instants
	 * (at 49 Hz a CPU is sampled every 20 ms) */
	static const char *const prefix[3] = {"latency", "host", NULL};
	struct weighted *v = NULL;
	size_t nv = 0, capv = 0, lo = 0, hi = d->nsamples, k = 0;

	if (!where->n) {
		add_shared(f, d, NULL, 0, host_ns, prefix, "[not sampled]");
		return;
	}
	while (lo < hi) { /* first event at or after the first span */
		size_t mid = (lo + hi) / 2;
		if (d->samples[mid].ts < where->v[0].b)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (size_t i = lo; i < d->nsamples && d->samples[i].ts < where->v[where->n - 1].e; i++) {
		const struct ls_sample *smp = &d->samples[i];
		if (!ls_timeline_in_group(tl, smp->pid))
			continue;
		while (k < where->n && where->v[k].e <= smp->ts)
			k++;
		if (k == where->n || where->v[k].b > smp->ts)
			continue; /* not a host instant */
		push_weighted(&v, &nv, &capv, smp->pid, smp->ustack, smp->kstack, smp->comm, 1);
	}
	add_shared(f, d, v, nv, host_ns, prefix, "[not sampled]");
}

static void latency_flame(struct ls_flame_build *b, const struct ls_timeline *tl,
			  const struct ls_stack_data *d)
{
	const char *component = b->component;

	for (size_t i = 0; i < b->n; i++) {
		struct lat_req *q = &b->v[i];
		for (int k = 0; k < LS_S_N; k++) {
			const char *fr[3] = {"latency", ls_comp_name(ls_sub_comp(k)), ls_sub_name(k)};
			if (q->sub[k] == LS_NULL || (component && strcmp(component, fr[1]) &&
						     strcmp(component, fr[2])))
				continue;
			ls_flame_add(b->f, fr, 3, q->sub[k]);
		}
		/* host and other: under the stacks of the instants the split gave
		 * them, when the capture has stacks */
		for (int c = LS_C_HOST; c <= LS_C_OTHER; c++) {
			const char *fr[2] = {"latency", ls_comp_name(c)};
			if (q->comp[c] == LS_NULL || (component && strcmp(component, fr[1])))
				continue;
			if (!d || !q->comp[c])
				ls_flame_add(b->f, fr, 2, q->comp[c]);
			else if (c == LS_C_HOST)
				expand_host(b->f, d, tl, &q->where[0], q->comp[c]);
			else
				expand_other(b->f, d, tl, &q->where[1], q->comp[c]);
		}
		ls_spans_free(&q->where[0]);
		ls_spans_free(&q->where[1]);
	}
}


int ls_flame_kind_of(const char *name)
{
	static const char *const names[] = {"latency", "gpu", "cpu", "offcpu"};

	for (int k = 0; k < 4; k++)
		if (!strcmp(name, names[k]))
			return k;
	return -1;
}

int ls_flame_build_init(struct ls_flame_build *b)
{
	b->l = (struct ls_stack_loader){.debug_dir = b->debug_dir};
	b->f = ls_flame_new();
	return b->f ? 0 : -1;
}

static int fb_begin(void *ctx, const struct ls_file_hdr *h)
{
	((struct ls_flame_build *)ctx)->sources = h->sources;
	return 0;
}

static int fb_record(void *ctx, const struct ls_hdr *rec)
{
	struct ls_flame_build *b = ctx;

	ls_stack_loader_add(&b->l, rec);
	if (b->kind != LS_FLAME_GPU)
		return 0;
	if (rec->type == LS_REC_PROC_INFO) {
		const struct ls_rec_proc_info *p = (const void *)rec;
		GROW(b->procs, b->nprocs, b->capprocs);
		b->procs[b->nprocs].pid = p->h.pid;
		memcpy(b->procs[b->nprocs].comm, p->comm, LS_COMM_LEN);
		b->procs[b->nprocs++].comm[LS_COMM_LEN] = '\0';
	} else if (rec->type == LS_EV_GPU) {
		const struct ls_ev_gpu *g = (const void *)rec;
		if ((b->pid && g->h.pid != b->pid) || (g->flags & LS_GPU_F_HOST_SIDE) ||
		    g->kind == LS_GPU_SYNC || g->end_ns <= g->start_ns)
			return 0;
		GROW(b->gv, b->ng, b->capg);
		b->gv[b->ng++] = *g;
	}
	return 0;
}

static int fb_request(void *ctx, const struct ls_request_view *v)
{
	struct ls_flame_build *b = ctx;
	const struct ls_request *r = v->r;
	const struct ls_split *s = v->s;
	struct lat_req *q;

	if (b->kind != LS_FLAME_LATENCY || (b->request && r->id != b->request) ||
	    (b->pid && r->pid != b->pid))
		return 0;
	GROW(b->v, b->n, b->cap);
	q = &b->v[b->n++];
	memset(q, 0, sizeof(*q));
	memcpy(q->sub, b->ttft ? s->ttft_sub : s->sub, sizeof(q->sub));
	memcpy(q->comp, b->ttft ? s->ttft_comp : s->comp, sizeof(q->comp));
	if (b->sources & LS_SRC_SAMPLES)
		ls_attribute_spans(r, v->tl, v->j, b->ttft, &q->where[0], &q->where[1]);
	return 0;
}

static int fb_end(void *ctx, struct ls_analysis *a)
{
	struct ls_flame_build *b = ctx;
	struct ls_stack_data d;
	bool offcpu = b->kind == LS_FLAME_OFFCPU;

	ls_stack_loader_finish(&b->l, &d);
	b->finished = true;
	if ((b->kind == LS_FLAME_CPU || offcpu) &&
	    !(b->sources & (offcpu ? LS_SRC_OFFCPU : LS_SRC_SAMPLES))) {
		snprintf(b->why, sizeof(b->why), "%s: no %s stacks in this capture (recorded with %s)",
			 b->path ? b->path : "capture", offcpu ? "off-CPU" : "on-CPU", offcpu ? "--no-offcpu" : "-F 0 or a failed sampler");
		ls_stack_data_free(&d);
		return -ENODATA;
	}
	if (offcpu && d.kstack_short)
		fprintf(stderr,
			"latsplit flame: %llu blocks ended before record's --offcpu-kernel-min-us: "
			"their user frames only, no kernel frames\n",
			(unsigned long long)d.kstack_short);
	if (b->kind == LS_FLAME_LATENCY)
		latency_flame(b, a->tl, (b->sources & LS_SRC_SAMPLES) ? &d : NULL);
	else if (b->kind == LS_FLAME_GPU)
		gpu_flame(b, &d);
	else
		stack_flame(b, &d);
	ls_stack_data_free(&d);
	return 0;
}

static const char *fb_error(void *ctx)
{
	struct ls_flame_build *b = ctx;
	return b->why[0] ? b->why : NULL;
}

struct ls_sink ls_flame_build_sink(struct ls_flame_build *b)
{
	return (struct ls_sink){.name = "flame", .begin = fb_begin, .record = fb_record,
				.request = fb_request, .end = fb_end, .error = fb_error, .ctx = b};
}

void ls_flame_build_free(struct ls_flame_build *b)
{
	if (!b->finished) { /* the analysis failed before the end */
		struct ls_stack_data d;
		ls_stack_loader_finish(&b->l, &d);
		ls_stack_data_free(&d);
		b->finished = true;
	}
	for (size_t i = 0; i < b->n; i++) {
		ls_spans_free(&b->v[i].where[0]);
		ls_spans_free(&b->v[i].where[1]);
	}
	free(b->v);
	free(b->gv);
	free(b->procs);
	ls_flame_free(b->f);
	b->v = NULL;
	b->gv = NULL;
	b->procs = NULL;
	b->f = NULL;
}

void ls_flame_build_ends(const struct ls_flame_build *b, char *buf, size_t len)
{
	const struct ls_stack_ends *e = &b->ends;
	int n;

	buf[0] = '\0';
	if (!e->stacks)
		return;
	n = snprintf(buf, len, "%llu of %llu user stacks reached a thread's root (_start, "
		     "start_thread, clone)", (unsigned long long)e->rooted,
		     (unsigned long long)e->stacks);
	if (e->rooted == e->stacks || n < 0 || (size_t)n >= len)
		return;
	snprintf(buf + n, len - n,
		 "; %llu stopped short: %llu at the depth limit (%d frames), %llu at a frame with "
		 "no symbol, %llu where the walk lost the caller (code without frame pointers: "
		 "record --call-graph dwarf reaches further)",
		 (unsigned long long)(e->stacks - e->rooted), (unsigned long long)e->depth,
		 LS_STACK_DEPTH, (unsigned long long)e->no_symbol, (unsigned long long)e->elsewhere);
}
