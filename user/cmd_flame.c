// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * `latsplit flame`: flame graphs from a capture, folded or SVG.
 *   latency  requests' wall time by component and sub-part
 *            (latency;queueing;queueing.engine), ns summed over requests;
 *            under host, the engine group's CPU samples taken at instants
 *            the split called host (each request's host time spread over
 *            them); under other, the group's blocked spans (off-CPU stacks)
 *            overlapping the instants it called other, in proportion
 *   gpu      GPU time by process, the CPU stack that launched it, and
 *            kernel (or copy direction), ns
 *   cpu      on-CPU samples: process;user frames;kernel frames, samples
 *   offcpu   time tracked threads spent blocked, by the stack they blocked
 *            in, ns (from the block to the next switch-in)
 * Stacks are symbolized from the capture's own symbol records, else from its
 * mapping records (by build-id).
 */
#include <getopt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis.h"
#include "cli.h"
#include "flame.h"
#include "grow.h"
#include "latsplit/engine.h"
#include "stacks.h"
#include "symbolize.h"

/* A cut or damaged capture draws less than was recorded: say what was lost,
 * as report does. */
static void warn_loss(const struct ls_reader *rd, const char *path)
{
	char loss[512];

	ls_reader_loss_line(rd, loss, sizeof(loss));
	if (loss[0])
		fprintf(stderr, "latsplit flame: warning: %s: %s\n", path, loss);
}

/* A capture's stack data, read on its own (cpu and offcpu graphs). */
static int load_stack_data(const char *path, const char *debug_dir, struct ls_stack_data *dd,
			   __u64 *sources, char *err, size_t len)
{
	struct ls_stack_loader l = {.debug_dir = debug_dir};
	struct ls_reader *rd;
	const struct ls_hdr *rec;

	if (ls_reader_open(&rd, path, err, len) < 0)
		return -1;
	*sources = ls_reader_header(rd)->sources;
	while (ls_reader_next(rd, &rec) == 1)
		ls_stack_loader_add(&l, rec);
	ls_stack_loader_finish(&l, dd);
	warn_loss(rd, path);
	ls_reader_close(rd);
	return 0;
}


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

static int stack_flame(struct ls_flame *f, const char *path, const char *debug_dir, bool offcpu,
		       unsigned long pid, char *err, size_t len)
{
	struct ls_stack_data d;
	__u64 sources;

	if (load_stack_data(path, debug_dir, &d, &sources, err, len))
		return -1;
	if (!(sources & (offcpu ? LS_SRC_OFFCPU : LS_SRC_SAMPLES))) {
		snprintf(err, len, "%s: no %s stacks in this capture (recorded with %s)", path,
			 offcpu ? "off-CPU" : "on-CPU", offcpu ? "--no-offcpu" : "-F 0 or a failed sampler");
		ls_stack_data_free(&d);
		return -1;
	}
	/* identical stacks are merged first: a profile has many samples and
	 * few distinct stacks, and walking the tree is per frame */
	struct weighted *v = NULL;
	size_t nv = 0, capv = 0;
	if (offcpu) {
		for (size_t i = 0; i < d.nblocked; i++) {
			const struct ls_block *p = &d.blocked[i];
			if (pid && p->pid != pid)
				continue;
			push_weighted(&v, &nv, &capv, p->pid, p->ustack, p->kstack, p->comm,
				      p->end > p->ts ? p->end - p->ts : 0);
		}
	}
	for (size_t i = 0; !offcpu && i < d.nsamples; i++) {
		const struct ls_sample *e = &d.samples[i];
		if (pid && e->pid != pid)
			continue;
		push_weighted(&v, &nv, &capv, e->pid, e->ustack, e->kstack, e->comm, 1);
	}
	add_merged(f, &d, v, nv, NULL);
	free(v);
	ls_stack_data_free(&d);
	return 0;
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
 * correlation id (CUPTI shim, or an engine's latsplit_gpu_launch); launches
 * and device records are collected in one pass, then joined. */
static int gpu_flame(struct ls_flame *f, const char *path, const char *debug_dir, unsigned long pid,
		     char *err, size_t len)
{
	static const char *const dir[4] = {"memcpy other", "memcpy H2D", "memcpy D2H", "memcpy D2D"};
	static char names[256][128];
	const char *fr[260];
	struct ls_stack_data d;
	struct ls_reader *rd;
	const struct ls_hdr *rec;
	struct launch *lv = NULL;
	struct ls_ev_gpu *gv = NULL;
	size_t nl = 0, capl = 0, ng = 0, capg = 0, nprocs = 0, capprocs = 0;
	struct {
		__u32 pid;
		char comm[LS_COMM_LEN + 1];
	} *procs = NULL;
	__u64 sources;
	bool have_d = !load_stack_data(path, debug_dir, &d, &sources, err, len);

	if (ls_reader_open(&rd, path, err, len) < 0) {
		if (have_d)
			ls_stack_data_free(&d);
		return -1;
	}
	/* launches and their stacks (merged with Python and unwound frames)
	 * come from the stack data */
	for (size_t i = 0; have_d && i < d.nlaunches; i++) {
		GROW(lv, nl, capl);
		lv[nl++] = (struct launch){d.launches[i].pid, d.launches[i].corr, d.launches[i].ts,
					   d.launches[i].ustack};
	}
	while (ls_reader_next(rd, &rec) == 1) {
		if (rec->type == LS_REC_PROC_INFO) {
			const struct ls_rec_proc_info *p = (const void *)rec;
			GROW(procs, nprocs, capprocs);
			procs[nprocs].pid = p->h.pid;
			memcpy(procs[nprocs].comm, p->comm, LS_COMM_LEN);
			procs[nprocs++].comm[LS_COMM_LEN] = '\0';
		} else if (rec->type == LS_EV_GPU) {
			const struct ls_ev_gpu *g = (const void *)rec;
			if ((pid && g->h.pid != pid) || (g->flags & LS_GPU_F_HOST_SIDE) ||
			    g->kind == LS_GPU_SYNC || g->end_ns <= g->start_ns)
				continue;
			GROW(gv, ng, capg);
			gv[ng++] = *g;
		}
	}
	warn_loss(rd, path);
	ls_reader_close(rd);
	if (nl)
		qsort(lv, nl, sizeof(*lv), launch_cmp);
	for (size_t j = 0; j < ng; j++) {
		const struct ls_ev_gpu *g = &gv[j];
		char comm[LS_COMM_LEN + 1] = "?", name[65];

		for (size_t i = nprocs; i-- > 0;)
			if (procs[i].pid == g->h.pid) {
				memcpy(comm, procs[i].comm, sizeof(comm));
				break;
			}
		memcpy(name, g->name, 64);
		name[64] = '\0';
		/* launched before it ended (start may predate the API call's
		 * timestamp on a simulated device) */
		__s32 ustack = have_d ? launch_stack(lv, nl, g->h.pid, g->correlation, g->end_ns) : -1;
		fr[0] = "gpu";
		int n = 1;
		if (ustack >= 0) {
			n += ls_stack_frames(&d, g->h.pid, comm, ustack, -1, names, fr + 1, 256);
		} else {
			snprintf(names[0], sizeof(names[0]), "%s (%u)", comm, g->h.pid);
			fr[n++] = names[0];
		}
		fr[n++] = g->kind == LS_GPU_MEMCPY ? dir[g->copy_kind & 3]
			  : g->kind == LS_GPU_MEMSET ? "memset" : name;
		ls_flame_add(f, fr, n, g->end_ns - g->start_ns);
	}
	free(gv);
	free(procs);
	free(lv);
	if (have_d)
		ls_stack_data_free(&d);
	return 0;
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

/* The latency flame's part of a request: its split, and (with stacks) the
 * instants the split called host and other, taken while the analysis still
 * holds the request's window; drawn once the stacks are loaded. */
struct lat_req {
	uint64_t sub[LS_S_N], comp[LS_C_N];
	struct ls_spans where[2];
};

struct latency_sink {
	const struct ls_analysis *a; /* its capture's header: stacks or not */
	bool ttft, stacks;
	unsigned long request, pid;
	struct lat_req *v;
	size_t n, cap;
};

static void latency_request(void *ctx, const struct ls_request *r, const struct ls_split *s,
			    const struct ls_engine_join *j, const struct ls_timeline *tl)
{
	struct latency_sink *ls = ctx;
	struct lat_req *q;

	if ((ls->request && r->id != ls->request) || (ls->pid && r->pid != ls->pid))
		return;
	ls->stacks = ls->a->rd && (ls_reader_header(ls->a->rd)->sources & LS_SRC_SAMPLES);
	GROW(ls->v, ls->n, ls->cap);
	q = &ls->v[ls->n++];
	memset(q, 0, sizeof(*q));
	memcpy(q->sub, ls->ttft ? s->ttft_sub : s->sub, sizeof(q->sub));
	memcpy(q->comp, ls->ttft ? s->ttft_comp : s->comp, sizeof(q->comp));
	if (ls->stacks)
		ls_attribute_spans(r, tl, j, ls->ttft, &q->where[0], &q->where[1]);
}

static void latency_flame(struct ls_flame *f, struct latency_sink *ls, const struct ls_timeline *tl,
			  const struct ls_stack_data *d, const char *component)
{
	for (size_t i = 0; i < ls->n; i++) {
		struct lat_req *q = &ls->v[i];

		for (int k = 0; k < LS_S_N; k++) {
			const char *fr[3] = {"latency", ls_comp_name(ls_sub_comp(k)), ls_sub_name(k)};
			if (q->sub[k] == LS_NULL || (component && strcmp(component, fr[1]) &&
						     strcmp(component, fr[2])))
				continue;
			ls_flame_add(f, fr, 3, q->sub[k]);
		}
		/* host and other: under the stacks of the instants the split gave
		 * them, when the capture has stacks */
		for (int c = LS_C_HOST; c <= LS_C_OTHER; c++) {
			const char *fr[2] = {"latency", ls_comp_name(c)};
			if (q->comp[c] == LS_NULL || (component && strcmp(component, fr[1])))
				continue;
			if (!d || !q->comp[c])
				ls_flame_add(f, fr, 2, q->comp[c]);
			else if (c == LS_C_HOST)
				expand_host(f, d, tl, &q->where[0], q->comp[c]);
			else
				expand_other(f, d, tl, &q->where[1], q->comp[c]);
		}
		ls_spans_free(&q->where[0]);
		ls_spans_free(&q->where[1]);
	}
	free(ls->v);
}

static void usage(FILE *out)
{
	fprintf(out,
		"usage: latsplit flame [FILE] [--kind latency|gpu|cpu|offcpu] [--svg] [-o OUT]\n"
		"                      [--request ID] [--component NAME] [--pid PID] [--ttft]\n\n"
		"Flame graph of a capture (default latsplit.data), as folded stacks (for\n"
		"flamegraph.pl, speedscope, inferno) or, with --svg, as an SVG.\n"
		"  --kind latency   requests' time by component and sub-part, ns (default)\n"
		"  --kind gpu       GPU time by process, launching CPU stack and kernel, ns\n"
		"  --kind cpu       on-CPU stack samples (latsplit record -F), samples\n"
		"  --kind offcpu    blocked time of tracked threads by blocking stack, ns\n"
		"  --request ID, --component NAME (e.g. queueing or queueing.engine), --pid PID\n"
		"  --ttft           the time-to-first-token split instead of the whole latency\n"
		"  --debug-dir DIR  debug files by build-id, for user addresses the capture\n"
		"                   holds no symbol for (recorded with --no-symbolize, or the\n"
		"                   binaries differ here); default /usr/lib/debug\n"
		"  -o OUT           write there instead of stdout\n");
}

int cmd_flame(int argc, char **argv)
{
	static const struct option longopts[] = {
		{"kind", required_argument, NULL, 'k'},    {"svg", no_argument, NULL, 's'},
		{"output", required_argument, NULL, 'o'},  {"request", required_argument, NULL, 'r'},
		{"component", required_argument, NULL, 'c'}, {"pid", required_argument, NULL, 'p'},
		{"ttft", no_argument, NULL, 't'},          {"help", no_argument, NULL, 'h'},
		{"debug-dir", required_argument, NULL, 'D'},
		{}};
	const char *path = "latsplit.data", *kind = "latency", *outpath = NULL, *component = NULL,
		   *debug_dir = NULL;
	unsigned long request = 0, pid = 0;
	bool svg = false, ttft = false;
	char err[512], title[256];
	struct ls_flame *f;
	FILE *out = stdout;
	int opt, rc = 0;

	optind = 1;
	while ((opt = getopt_long(argc, argv, "k:o:h", longopts, NULL)) != -1) {
		switch (opt) {
		case 'k': kind = optarg; break;
		case 's': svg = true; break;
		case 'o': outpath = optarg; break;
		case 'c': component = optarg; break;
		case 't': ttft = true; break;
		case 'D': debug_dir = optarg; break;
		case 'r':
		case 'p':
			if (!ls_parse_uint(optarg, ~0ul, opt == 'r' ? &request : &pid)) {
				ls_err("flame", "bad %s '%s'", opt == 'r' ? "--request" : "--pid", optarg);
				return EXIT_USAGE;
			}
			break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return EXIT_USAGE;
		}
	}
	if (ls_capture_arg("flame", argc, argv, &path))
		return EXIT_USAGE;
	if (strcmp(kind, "latency") && strcmp(kind, "gpu") && strcmp(kind, "cpu") &&
	    strcmp(kind, "offcpu")) {
		ls_err("flame", "unknown --kind '%s' (latency, gpu, cpu, offcpu)", kind);
		return EXIT_USAGE;
	}
	f = ls_flame_new();
	if (!f)
		return 1;
	if (!strcmp(kind, "latency")) {
		/* one pass: the analysis core's loop also feeds the stack data */
		struct ls_stack_loader l = {.debug_dir = debug_dir};
		struct ls_consumer stacks = {ls_stack_loader_add, &l};
		struct ls_analysis a;
		struct ls_stack_data d;
		struct latency_sink ls = {.ttft = ttft, .request = request, .pid = pid};
		struct ls_request_sink sink = {latency_request, &ls};
		ls.a = &a;
		if (ls_analysis_run(&a, path, &stacks, 1, &sink, 1, err, sizeof(err))) {
			ls_stack_loader_finish(&l, &d);
			ls_stack_data_free(&d);
			free(ls.v);
			ls_err("flame", "%s", err);
			ls_flame_free(f);
			return 1;
		}
		ls_stack_loader_finish(&l, &d);
		latency_flame(f, &ls, a.tl, ls.stacks ? &d : NULL, component);
		ls_stack_data_free(&d);
		warn_loss(a.rd, path);
		ls_analysis_free(&a);
	} else if (!strcmp(kind, "gpu") ? gpu_flame(f, path, debug_dir, pid, err, sizeof(err))
					: stack_flame(f, path, debug_dir, !strcmp(kind, "offcpu"), pid, err,
						      sizeof(err))) {
		ls_err("flame", "%s", err);
		ls_flame_free(f);
		return 1;
	}
	if (!ls_flame_total(f))
		fprintf(stderr, "latsplit flame: nothing to draw (no %s data%s)\n", kind,
			request || pid || component ? " matching the filters" : "");
	if (outpath && !(out = ls_open_output("flame", outpath))) {
		ls_flame_free(f);
		return 1;
	}
	if (svg) {
		if (!strcmp(kind, "cpu"))
			snprintf(title, sizeof(title), "latsplit cpu flame graph: %s (%llu samples)", path,
				 (unsigned long long)ls_flame_total(f));
		else
			snprintf(title, sizeof(title), "latsplit %s flame graph: %s%s (%.1f ms in all)",
				 kind, path, ttft ? ", time to first token" : "",
				 ls_flame_total(f) / 1e6);
		ls_flame_svg(f, out, title, !strcmp(kind, "cpu") ? "samples" : "ns");
	} else {
		ls_flame_folded(f, out);
	}
	if (out != stdout && fclose(out))
		rc = 1;
	ls_flame_free(f);
	return rc;
}
