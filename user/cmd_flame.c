// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * `latsplit flame`: flame graphs from a capture, folded or SVG.
 *   latency  requests' wall time by component and sub-part
 *            (latency;queueing;queueing.engine), ns summed over requests;
 *            under host, the CPU samples of the engine group in each
 *            request's served window (its host time spread over them)
 *   gpu      GPU time by process and kernel (or copy direction), ns
 *   cpu      on-CPU samples: process;user frames;kernel frames, samples
 *   offcpu   time tracked threads spent blocked, by the stack they blocked
 *            in, ns (from the block to the next switch-in)
 * Stacks are symbolized from the capture's own symbol records.
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

static int owner(int sub)
{
	if (sub <= LS_S_NET_DRAIN)
		return LS_C_NETWORK;
	if (sub <= LS_S_Q_CPU)
		return LS_C_QUEUEING;
	if (sub <= LS_S_COMPUTE_COMM)
		return LS_C_COMPUTE;
	return LS_C_TRANSFER;
}

struct stack_data;
static void expand_host(struct ls_flame *f, const struct stack_data *d, uint64_t b, uint64_t e,
			uint64_t host_ns);
static void expand_other(struct ls_flame *f, const struct stack_data *d, uint64_t b, uint64_t e,
			 uint64_t other_ns);

static void latency_flame(struct ls_flame *f, const struct ls_analysis *a, const struct stack_data *d,
			  bool ttft, unsigned long request, const char *component, unsigned long pid)
{
	for (size_t i = 0; i < a->n; i++) {
		const struct ls_request *r = &a->v[i];
		const struct ls_split *s = &a->split[i];
		const uint64_t *sub = ttft ? s->ttft_sub : s->sub, *comp = ttft ? s->ttft_comp : s->comp;

		if ((request && r->id != request) || (pid && r->pid != pid))
			continue;
		for (int k = 0; k < LS_S_N; k++) {
			const char *fr[3] = {"latency", ls_comp_name(owner(k)), ls_sub_name(k)};
			if (sub[k] == LS_NULL || (component && strcmp(component, fr[1]) &&
						  strcmp(component, fr[2])))
				continue;
			ls_flame_add(f, fr, 3, sub[k]);
		}
		for (int c = LS_C_HOST; c <= LS_C_OTHER; c++) {
			const char *fr[2] = {"latency", ls_comp_name(c)};
			if (comp[c] == LS_NULL || (component && strcmp(component, fr[1])))
				continue;
			if (d && comp[c]) {
				uint64_t b = s->t_sched ? s->t_sched : r->t_read;
				uint64_t e = ttft ? r->t_first : r->t_out;
				if (c == LS_C_HOST)
					expand_host(f, d, b, e, comp[c]);
				else
					expand_other(f, d, b, e, comp[c]);
				continue;
			}
			ls_flame_add(f, fr, 2, comp[c]);
		}
	}
}

static int gpu_flame(struct ls_flame *f, const char *path, unsigned long pid, char *err, size_t len)
{
	static const char *const dir[4] = {"memcpy other", "memcpy H2D", "memcpy D2H", "memcpy D2D"};
	struct ls_reader *rd;
	const struct ls_hdr *rec;
	struct {
		__u32 pid;
		char comm[LS_COMM_LEN + 1];
	} *procs = NULL;
	size_t nprocs = 0;

	if (ls_reader_open(&rd, path, err, len) < 0)
		return -1;
	while (ls_reader_next(rd, &rec) == 1) {
		if (rec->type == LS_REC_PROC_INFO) {
			const struct ls_rec_proc_info *p = (const void *)rec;
			void *np = realloc(procs, (nprocs + 1) * sizeof(*procs));
			if (!np)
				break;
			procs = np;
			procs[nprocs].pid = p->h.pid;
			memcpy(procs[nprocs].comm, p->comm, LS_COMM_LEN);
			procs[nprocs].comm[LS_COMM_LEN] = '\0';
			nprocs++;
			continue;
		}
		if (rec->type != LS_EV_GPU)
			continue;
		const struct ls_ev_gpu *g = (const void *)rec;
		char who[64], name[65];
		const char *comm = "?";

		if ((pid && g->h.pid != pid) || (g->flags & LS_GPU_F_HOST_SIDE) || g->kind == LS_GPU_SYNC ||
		    g->end_ns <= g->start_ns)
			continue;
		for (size_t i = nprocs; i-- > 0;)
			if (procs[i].pid == g->h.pid) {
				comm = procs[i].comm;
				break;
			}
		snprintf(who, sizeof(who), "%s (%u)", comm, g->h.pid);
		memcpy(name, g->name, 64);
		name[64] = '\0';
		const char *fr[3] = {"gpu", who,
				     g->kind == LS_GPU_MEMCPY ? dir[g->copy_kind & 3]
				     : g->kind == LS_GPU_MEMSET ? "memset" : name};
		ls_flame_add(f, fr, 3, g->end_ns - g->start_ns);
	}
	free(procs);
	ls_reader_close(rd);
	return 0;
}

struct stk {
	__s32 id;
	__u32 n;
	const __u64 *ips;
};

struct symrec {
	__u32 pid;
	__u64 ip;
	const char *name;
};

/* A thread blocked from ts (a switch-out with stacks) to end (its next
 * switch-in; 0 while open). */
struct pending_block {
	__u32 tid, pid;
	__u64 ts, end;
	__s32 ustack, kstack;
	char comm[LS_COMM_LEN + 1];
};

/* Everything the stack graphs need, copied out of the reader's frames. */
struct stack_data {
	struct stk *stacks;
	size_t nstacks, capstacks;
	struct symrec *syms;
	size_t nsyms, capsyms;
	struct ls_hdr **events; /* samples and blocking switches, in order */
	size_t nevents, capevents;
	struct pending_block *blocked; /* closed blocked spans with their stacks, by start */
	size_t nblocked, capblocked;
};

static int sym_cmp(const void *a, const void *b)
{
	const struct symrec *x = a, *y = b;
	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	return x->ip < y->ip ? -1 : x->ip > y->ip;
}

static const char *sym_name(const struct stack_data *d, __u32 pid, __u64 ip, char *buf, size_t len)
{
	struct symrec key = {pid, ip, NULL};
	const struct symrec *s = d->nsyms ? bsearch(&key, d->syms, d->nsyms, sizeof(key), sym_cmp) : NULL;

	if (s)
		return s->name;
	snprintf(buf, len, "0x%llx", (unsigned long long)ip);
	return buf;
}

static int stk_cmp(const void *a, const void *b)
{
	const struct stk *x = a, *y = b;
	return (x->id > y->id) - (x->id < y->id);
}

/* stacks are sorted by id once loaded */
static const struct stk *stack_of(const struct stack_data *d, __s32 id)
{
	struct stk key = {.id = id};

	return id >= 0 && d->nstacks ? bsearch(&key, d->stacks, d->nstacks, sizeof(key), stk_cmp) : NULL;
}

static int ev_cmp(const void *a, const void *b)
{
	const struct ls_hdr *x = *(struct ls_hdr *const *)a, *y = *(struct ls_hdr *const *)b;
	return x->ts < y->ts ? -1 : x->ts > y->ts;
}

static int block_cmp(const void *a, const void *b)
{
	const struct pending_block *x = a, *y = b;
	return x->ts < y->ts ? -1 : x->ts > y->ts;
}

static void *dup_rec(const struct ls_hdr *h)
{
	void *c = malloc(h->size);
	if (!c)
		abort();
	memcpy(c, h, h->size);
	return c;
}


/* The innermost kernel frames of a stack taken in a tracepoint are the
 * tracing machinery itself (the BPF program, bpf_trace_run4,
 * __traceiter_sched_switch): not where the thread was. */
static bool tracing_frame(const char *name)
{
	static const char *const prefix[] = {"bpf_prog_", "bpf_trace_run", "__traceiter_",
					     "__bpf_trace_", "perf_trace_"};

	for (size_t i = 0; i < sizeof(prefix) / sizeof(prefix[0]); i++)
		if (!strncmp(name, prefix[i], strlen(prefix[i])))
			return true;
	return false;
}

/* Frames root first: process, user stack outermost first, kernel stack
 * (without the tracing machinery's own frames at its leaf). */
static int frames(const struct stack_data *d, __u32 pid, const char *comm, __s32 ustack,
		  __s32 kstack, char names[][128], const char **fr, int max)
{
	const struct stk *u = stack_of(d, ustack), *k = stack_of(d, kstack);
	int n = 0, kfirst = 0;
	char tmp[128];

	while (k && kfirst < (int)k->n &&
	       tracing_frame(sym_name(d, 0, k->ips[kfirst], tmp, sizeof(tmp))))
		kfirst++;

	snprintf(names[n], 128, "%s (%u)", comm, pid);
	fr[n] = names[n];
	n++;
	for (int i = u ? (int)u->n - 1 : -1; i >= 0 && n < max; i--, n++)
		fr[n] = sym_name(d, pid, u->ips[i], names[n], 128);
	for (int i = k ? (int)k->n - 1 : -1; i >= kfirst && n < max; i--, n++) {
		snprintf(names[n], 128, "%s_[k]", sym_name(d, 0, k->ips[i], tmp, sizeof(tmp)));
		fr[n] = names[n];
	}
	if (!u && !k && n < max)
		fr[n++] = "[no stack]";
	return n;
}

/* Stacks, symbols, samples and switches of a capture, events in time order.
 * *sources: the capture's source bits. */
static int load_stack_data(const char *path, struct stack_data *dd, __u64 *sources, char *err,
			   size_t len)
{
	struct stack_data d = {0};
	struct ls_reader *rd;
	const struct ls_hdr *rec;

	if (ls_reader_open(&rd, path, err, len) < 0)
		return -1;
	*sources = ls_reader_header(rd)->sources;
	while (ls_reader_next(rd, &rec) == 1) {
		if (rec->type == LS_REC_STACK) {
			const struct ls_rec_stack *s = (const void *)rec;
			struct ls_rec_stack *c = dup_rec(rec);
			__u32 n = s->nips;
			if (sizeof(*s) + n * 8 > rec->size)
				n = (rec->size - sizeof(*s)) / 8;
			GROW(d.stacks, d.nstacks, d.capstacks);
			d.stacks[d.nstacks++] = ((struct stk){s->id, n, (const __u64 *)(c + 1)});
		} else if (rec->type == LS_REC_SYM) {
			struct ls_rec_sym *c = dup_rec(rec);
			((char *)c)[rec->size - 1] = '\0';
			GROW(d.syms, d.nsyms, d.capsyms);
			d.syms[d.nsyms++] = ((struct symrec){c->h.pid, c->ip, (const char *)(c + 1)});
		} else if (rec->type == LS_EV_SAMPLE || rec->type == LS_EV_SCHED_SWITCH) {
			GROW(d.events, d.nevents, d.capevents);
			d.events[d.nevents++] = (struct ls_hdr *)dup_rec(rec);
		}
	}
	if (d.nsyms)
		qsort(d.syms, d.nsyms, sizeof(*d.syms), sym_cmp);
	if (d.nstacks)
		qsort(d.stacks, d.nstacks, sizeof(*d.stacks), stk_cmp);
	if (d.nevents)
		qsort(d.events, d.nevents, sizeof(*d.events), ev_cmp);
	/* blocked spans: from a switch-out with stacks to that thread's next
	 * switch-in; closed in end order, then sorted by start */
	struct pending_block *open = NULL;
	size_t nopen = 0, capopen = 0;
	for (size_t i = 0; i < d.nevents; i++) {
		const struct ls_ev_sched_switch *e = (const void *)d.events[i];
		if (e->h.type != LS_EV_SCHED_SWITCH)
			continue;
		for (size_t k = 0; k < nopen; k++) {
			if (open[k].tid != e->next_tid)
				continue;
			open[k].end = e->h.ts;
			GROW(d.blocked, d.nblocked, d.capblocked);
			d.blocked[d.nblocked++] = open[k];
			open[k--] = open[--nopen];
		}
		if (e->prev_ustack >= 0 || e->prev_kstack >= 0) {
			struct pending_block pb = {e->h.tid, e->h.pid, e->h.ts, 0, e->prev_ustack,
						   e->prev_kstack, ""};
			memcpy(pb.comm, e->prev_comm, LS_COMM_LEN);
			pb.comm[LS_COMM_LEN] = '\0';
			GROW(open, nopen, capopen);
			open[nopen++] = pb;
		}
	}
	free(open);
	if (d.nblocked)
		qsort(d.blocked, d.nblocked, sizeof(*d.blocked), block_cmp);
	ls_reader_close(rd);
	*dd = d;
	return 0;
}

static void free_stack_data(struct stack_data *d)
{
	for (size_t i = 0; i < d->nevents; i++)
		free(d->events[i]);
	for (size_t i = 0; i < d->nstacks; i++)
		free((char *)d->stacks[i].ips - sizeof(struct ls_rec_stack));
	for (size_t i = 0; i < d->nsyms; i++)
		free((char *)d->syms[i].name - sizeof(struct ls_rec_sym));
	free(d->events);
	free(d->stacks);
	free(d->syms);
	free(d->blocked);
}

static int stack_flame(struct ls_flame *f, const char *path, bool offcpu, unsigned long pid,
		       char *err, size_t len)
{
	struct stack_data d;
	static char names[256][128];
	const char *fr[256];
	__u64 sources;

	if (load_stack_data(path, &d, &sources, err, len))
		return -1;
	if (!(sources & (offcpu ? LS_SRC_OFFCPU : LS_SRC_SAMPLES))) {
		snprintf(err, len, "%s: no %s stacks in this capture (recorded with %s)", path,
			 offcpu ? "off-CPU" : "on-CPU", offcpu ? "--no-offcpu" : "-F 0 or a failed sampler");
		free_stack_data(&d);
		return -1;
	}
	if (offcpu) {
		for (size_t i = 0; i < d.nblocked; i++) {
			const struct pending_block *p = &d.blocked[i];
			if (pid && p->pid != pid)
				continue;
			int n = frames(&d, p->pid, p->comm, p->ustack, p->kstack, names, fr, 256);
			ls_flame_add(f, fr, n, p->end > p->ts ? p->end - p->ts : 0);
		}
	}
	for (size_t i = 0; !offcpu && i < d.nevents; i++) {
		const struct ls_ev_sample *e = (const void *)d.events[i];
		char comm[LS_COMM_LEN + 1];
		if (e->h.type != LS_EV_SAMPLE || (pid && e->h.pid != pid))
			continue;
		memcpy(comm, e->comm, LS_COMM_LEN);
		comm[LS_COMM_LEN] = '\0';
		int n = frames(&d, e->h.pid, comm, e->ustack, e->kstack, names, fr, 256);
		ls_flame_add(f, fr, n, 1);
	}
	free_stack_data(&d);
	return 0;
}

/* latency;other, expanded: each request's "other" time spread over the
 * engine group's blocked spans overlapping its served window, in proportion
 * to the overlap, under the stacks they blocked in. */
static void expand_other(struct ls_flame *f, const struct stack_data *d, uint64_t b, uint64_t e,
			 uint64_t other_ns)
{
	static char names[256][128];
	const char *fr[258];
	uint64_t total = 0, left = other_ns;
	size_t last = SIZE_MAX;

	for (size_t i = 0; i < d->nblocked && d->blocked[i].ts < e; i++) {
		uint64_t lo = d->blocked[i].ts > b ? d->blocked[i].ts : b;
		uint64_t hi = d->blocked[i].end < e ? d->blocked[i].end : e;
		if (hi > lo) {
			total += hi - lo;
			last = i;
		}
	}
	if (!total) {
		const char *plain[2] = {"latency", "other"};
		ls_flame_add(f, plain, 2, other_ns);
		return;
	}
	for (size_t i = 0; i <= last; i++) {
		const struct pending_block *p = &d->blocked[i];
		uint64_t lo = p->ts > b ? p->ts : b, hi = p->end < e ? p->end : e;
		if (hi <= lo)
			continue;
		uint64_t w = i == last ? left : (uint64_t)((double)other_ns * (hi - lo) / total);
		if (w > left)
			w = left;
		fr[0] = "latency";
		fr[1] = "other";
		int n = frames(d, p->pid, p->comm, p->ustack, p->kstack, names, fr + 2, 256);
		ls_flame_add(f, fr, n + 2, w);
		left -= w;
	}
}

/* latency;host, expanded: each request's host time spread evenly over the
 * CPU samples of the engine group inside its served window (their stacks
 * show what the host was doing). Sums stay exact: the remainder goes to the
 * last sample. Without samples in the window, the plain host frame. */
static void expand_host(struct ls_flame *f, const struct stack_data *d, uint64_t b, uint64_t e,
			uint64_t host_ns)
{
	static char names[256][128];
	const char *fr[258];
	size_t lo = 0, hi = d->nevents, k = 0, first;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (d->events[mid]->ts < b)
			lo = mid + 1;
		else
			hi = mid;
	}
	first = lo;
	for (size_t i = first; i < d->nevents && d->events[i]->ts <= e; i++)
		k += d->events[i]->type == LS_EV_SAMPLE;
	if (!k) {
		const char *plain[2] = {"latency", "host"};
		ls_flame_add(f, plain, 2, host_ns);
		return;
	}
	uint64_t each = host_ns / k, left = host_ns;
	for (size_t i = first; i < d->nevents && d->events[i]->ts <= e; i++) {
		const struct ls_ev_sample *smp = (const void *)d->events[i];
		char comm[LS_COMM_LEN + 1];
		if (smp->h.type != LS_EV_SAMPLE)
			continue;
		memcpy(comm, smp->comm, LS_COMM_LEN);
		comm[LS_COMM_LEN] = '\0';
		fr[0] = "latency";
		fr[1] = "host";
		int n = frames(d, smp->h.pid, comm, smp->ustack, smp->kstack, names, fr + 2, 256);
		uint64_t w = --k ? each : left;
		ls_flame_add(f, fr, n + 2, w);
		left -= w;
	}
}

static void usage(FILE *out)
{
	fprintf(out,
		"usage: latsplit flame [FILE] [--kind latency|gpu] [--svg] [-o OUT]\n"
		"                      [--request ID] [--component NAME] [--pid PID] [--ttft]\n\n"
		"Flame graph of a capture (default latsplit.data), as folded stacks (for\n"
		"flamegraph.pl, speedscope, inferno) or, with --svg, as an SVG.\n"
		"  --kind latency   requests' time by component and sub-part, ns (default)\n"
		"  --kind gpu       GPU time by process and kernel, ns\n"
		"  --kind cpu       on-CPU stack samples (latsplit record -F), samples\n"
		"  --kind offcpu    blocked time of tracked threads by blocking stack, ns\n"
		"  --request ID, --component NAME (e.g. queueing or queueing.engine), --pid PID\n"
		"  --ttft           the time-to-first-token split instead of the whole latency\n"
		"  -o OUT           write there instead of stdout\n");
}

int cmd_flame(int argc, char **argv)
{
	static const struct option longopts[] = {
		{"kind", required_argument, NULL, 'k'},    {"svg", no_argument, NULL, 's'},
		{"output", required_argument, NULL, 'o'},  {"request", required_argument, NULL, 'r'},
		{"component", required_argument, NULL, 'c'}, {"pid", required_argument, NULL, 'p'},
		{"ttft", no_argument, NULL, 't'},          {"help", no_argument, NULL, 'h'},
		{}};
	const char *path = "latsplit.data", *kind = "latency", *outpath = NULL, *component = NULL;
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
		struct ls_analysis a;
		if (ls_analysis_run(&a, path, err, sizeof(err))) {
			ls_err("flame", "%s", err);
			ls_flame_free(f);
			return 1;
		}
		struct stack_data d;
		__u64 sources = 0;
		bool have_d = !load_stack_data(path, &d, &sources, err, sizeof(err));
		bool samples = have_d && (sources & LS_SRC_SAMPLES);
		latency_flame(f, &a, samples ? &d : NULL, ttft, request, component, pid);
		if (have_d)
			free_stack_data(&d);
		ls_analysis_free(&a);
	} else if (!strcmp(kind, "gpu") ? gpu_flame(f, path, pid, err, sizeof(err))
					: stack_flame(f, path, !strcmp(kind, "offcpu"), pid, err, sizeof(err))) {
		ls_err("flame", "%s", err);
		ls_flame_free(f);
		return 1;
	}
	if (!ls_flame_total(f))
		fprintf(stderr, "latsplit flame: nothing to draw (no %s data%s)\n", kind,
			request || pid || component ? " matching the filters" : "");
	if (outpath && !(out = fopen(outpath, "w"))) {
		ls_err("flame", "cannot write %s", outpath);
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
