// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * A capture's stack data (see stacks.h).
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grow.h"
#include "demangle.h"
#include "stacks.h"

static int sym_cmp(const void *a, const void *b)
{
	const struct ls_symrec *x = a, *y = b;
	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	return x->ip < y->ip ? -1 : x->ip > y->ip;
}

/* A symbol record whose C++ name is demangled (the record grown to hold
 * it); as is when it is not mangled. */
static struct ls_rec_sym *demangled(struct ls_rec_sym *c)
{
	char *dm = ls_demangle((const char *)(c + 1));
	struct ls_rec_sym *g;

	if (!dm)
		return c;
	g = realloc(c, sizeof(*c) + strlen(dm) + 1);
	if (g) {
		strcpy((char *)(g + 1), dm);
		c = g;
	}
	free(dm);
	return c;
}

const char *ls_stack_sym(const struct ls_stack_data *d, __u32 pid, __u64 ip, char *buf, size_t len)
{
	struct ls_symrec key = {pid, ip, NULL};
	const struct ls_symrec *s = d->nsyms ? bsearch(&key, d->syms, d->nsyms, sizeof(key), sym_cmp) : NULL;

	if (s)
		return s->name;
	if (pid && d->offline) {
		const char *name = ls_sym_resolve(d->offline, pid, ip, buf, len);
		char *dm = ls_demangle(name);
		if (!dm)
			return name;
		snprintf(buf, len, "%s", dm);
		free(dm);
		return buf;
	}
	snprintf(buf, len, "0x%llx", (unsigned long long)ip);
	return buf;
}

static int stk_cmp(const void *a, const void *b)
{
	const struct ls_stk *x = a, *y = b;
	return (x->id > y->id) - (x->id < y->id);
}

/* stacks are sorted by id once loaded */
const struct ls_stk *ls_stack_of(const struct ls_stack_data *d, __s32 id)
{
	struct ls_stk key = {.id = id};

	return id >= 0 && d->nstacks ? bsearch(&key, d->stacks, d->nstacks, sizeof(key), stk_cmp) : NULL;
}

static int sample_cmp(const void *a, const void *b)
{
	const struct ls_sample *x = a, *y = b;
	return x->ts < y->ts ? -1 : x->ts > y->ts;
}

/* By thread, then time; at the same instant a switch-in first (the thread
 * cannot block and be switched in at one timestamp; if the clock says so,
 * the block has not ended yet). */
static int switch_cmp(const void *a, const void *b)
{
	const struct ls_switch_ev *x = a, *y = b;
	if (x->tid != y->tid)
		return x->tid < y->tid ? -1 : 1;
	if (x->ts != y->ts)
		return x->ts < y->ts ? -1 : 1;
	return (int)y->in - (int)x->in;
}

static int block_cmp(const void *a, const void *b)
{
	const struct ls_block *x = a, *y = b;
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
bool ls_tracing_frame(const char *name)
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
int ls_stack_frames(const struct ls_stack_data *d, __u32 pid, const char *comm, __s32 ustack,
		  __s32 kstack, char names[][128], const char **fr, int max)
{
	const struct ls_stk *u = ls_stack_of(d, ustack), *k = ls_stack_of(d, kstack);
	int n = 0, kfirst = 0;
	char tmp[128];

	while (k && kfirst < (int)k->n &&
	       ls_tracing_frame(ls_stack_sym(d, 0, k->ips[kfirst], tmp, sizeof(tmp))))
		kfirst++;

	snprintf(names[n], 128, "%s (%u)", comm, pid);
	fr[n] = names[n];
	n++;
	for (int i = u ? (int)u->n - 1 : -1; i >= 0 && n < max; i--, n++)
		fr[n] = ls_stack_sym(d, pid, u->ips[i], names[n], 128);
	for (int i = k ? (int)k->n - 1 : -1; i >= kfirst && n < max; i--, n++) {
		snprintf(names[n], 128, "%s_[k]", ls_stack_sym(d, 0, k->ips[i], tmp, sizeof(tmp)));
		fr[n] = names[n];
	}
	if (!u && !k && n < max)
		fr[n++] = "[no stack]";
	return n;
}


/* python3.N, libpython3.N...: an interpreter's own code */
static bool is_interp(const char *path)
{
	const char *b = strrchr(path, '/');
	int minor;

	b = b ? b + 1 : path;
	if (!strncmp(b, "lib", 3))
		b += 3;
	return sscanf(b, "python3.%d", &minor) == 1;
}

/* A Python stack follows its sample or blocking switch (same ts and
 * thread); anything else is counted, not guessed. */
static void set_last(struct ls_stack_loader *l, __u32 tid, __u32 kind, size_t index)
{
	uint64_t key = ((uint64_t)kind << 32 | tid) + 1;

	ls_idmap_remove(&l->last, key);
	ls_idmap_put(&l->last, key, (void *)(uintptr_t)(index + 1));
}

/* The (first, count) slot of the sample or block a Python or unwound stack
 * belongs to (kind, ts, tid), python or native; NULL when not found. */
static struct ls_keys *slot_of(struct ls_stack_loader *l, const struct ls_hdr *h, __u32 kind,
			       bool native)
{
	struct ls_stack_data *d = &l->d;
	uintptr_t at = (uintptr_t)ls_idmap_get(&l->last, ((uint64_t)(kind & 3) << 32 | h->tid) + 1);

	if (kind == LS_PY_SAMPLE && at && at <= d->nsamples) {
		struct ls_sample *s = &d->samples[at - 1];
		if (s->ts == h->ts && s->tid == h->tid)
			return native ? &s->nat : &s->py;
	} else if (kind == LS_PY_BLOCK && at && at <= d->nblocked) {
		struct ls_block *b = &d->blocked[at - 1];
		if (b->ts == h->ts && b->tid == h->tid)
			return native ? &b->nat : &b->py;
	} else if (kind == LS_PY_LAUNCH && at && at <= d->nlaunches) {
		struct ls_launch *g = &d->launches[at - 1];
		if (g->ts == h->ts && g->tid == h->tid)
			return native ? &g->nat : &g->py;
	}
	return NULL;
}

/* Appends keys to the pool for slot. */
static void fill_slot(struct ls_stack_data *d, struct ls_keys *slot, const __u64 *keys, size_t n)
{
	size_t first = d->npykeys;

	if (!slot || slot->n || !n) {
		d->py_unmatched++;
		return;
	}
	for (size_t i = 0; i < n; i++) {
		GROW(d->pykeys, d->npykeys, d->cappykeys);
		d->pykeys[d->npykeys++] = keys[i];
	}
	*slot = (struct ls_keys){(__u32)first, (__u32)(d->npykeys - first)};
}

static void add_pystack(struct ls_stack_loader *l, const struct ls_ev_pystack *e)
{
	__u64 keys[LS_PY_MAX_FRAMES];
	size_t n = e->n;

	if (offsetof(struct ls_ev_pystack, f) + n * sizeof(e->f[0]) > e->h.size)
		n = (e->h.size - offsetof(struct ls_ev_pystack, f)) / sizeof(e->f[0]);
	if (n > LS_PY_MAX_FRAMES)
		n = LS_PY_MAX_FRAMES;
	for (size_t i = 0; i < n; i++)
		keys[i] = LS_PY_KEY(e->f[i].code, e->f[i].lasti);
	fill_slot(&l->d, slot_of(l, &e->h, e->kind, false), keys, n);
}

static void add_ustack(struct ls_stack_loader *l, const struct ls_rec_ustack *e)
{
	size_t n = e->n;

	if (sizeof(*e) + n * sizeof(__u64) > e->h.size)
		n = (e->h.size - sizeof(*e)) / sizeof(__u64);
	if (n > LS_STACK_DEPTH)
		n = LS_STACK_DEPTH;
	fill_slot(&l->d, slot_of(l, &e->h, e->kind, true), (const __u64 *)(e + 1), n);
}

void ls_stack_loader_add(void *ctx, const struct ls_hdr *rec)
{
	struct ls_stack_loader *l = ctx;
	struct ls_stack_data *d = &l->d;

	if (rec->type == LS_REC_STACK) {
		const struct ls_rec_stack *s = (const void *)rec;
		struct ls_rec_stack *c = dup_rec(rec);
		/* nips is the file's: bounded by the record in 64 bits (n * 8
		 * in 32 wrapped, and a crafted count read past the record) */
		uint64_t n = s->nips;
		if (n > (rec->size - sizeof(*s)) / 8)
			n = (rec->size - sizeof(*s)) / 8;
		GROW(d->stacks, d->nstacks, d->capstacks);
		d->stacks[d->nstacks++] = ((struct ls_stk){s->id, (__u32)n, (const __u64 *)(c + 1)});
	} else if (rec->type == LS_REC_SYM && rec->size > sizeof(struct ls_rec_sym)) {
		/* a name of at least its terminator (a bare header has none: its
		 * name would lie past the record, as the capture fuzzer found) */
		struct ls_rec_sym *c = dup_rec(rec);
		((char *)c)[rec->size - 1] = '\0';
		c = demangled(c);
		GROW(d->syms, d->nsyms, d->capsyms);
		d->syms[d->nsyms++] = ((struct ls_symrec){c->h.pid, c->ip, (const char *)(c + 1)});
	} else if (rec->type == LS_EV_SAMPLE) {
		const struct ls_ev_sample *e = (const void *)rec;
		GROW(d->samples, d->nsamples, d->capsamples);
		struct ls_sample *sm = &d->samples[d->nsamples++];
		*sm = (struct ls_sample){e->h.ts, e->h.pid, e->ustack, e->kstack, "", e->h.tid, {0, 0}, {0, 0}};
		memcpy(sm->comm, e->comm, LS_COMM_LEN);
		set_last(l, e->h.tid, LS_PY_SAMPLE, d->nsamples - 1);
	} else if (rec->type == LS_EV_GPU_LAUNCH) {
		const struct ls_ev_gpu_launch *e = (const void *)rec;
		GROW(d->launches, d->nlaunches, d->caplaunches);
		d->launches[d->nlaunches++] = (struct ls_launch){e->h.ts, e->h.pid, e->h.tid,
								  e->correlation, e->ustack, {0, 0}, {0, 0}};
		set_last(l, e->h.tid, LS_PY_LAUNCH, d->nlaunches - 1);
	} else if (rec->type == LS_EV_PYSTACK) {
		add_pystack(l, (const struct ls_ev_pystack *)rec);
	} else if (rec->type == LS_REC_USTACK) {
		add_ustack(l, (const struct ls_rec_ustack *)rec);
	} else if (rec->type == LS_EV_SCHED_SWITCH) {
		const struct ls_ev_sched_switch *e = (const void *)rec;
		GROW(l->sw, l->nsw, l->capsw);
		l->sw[l->nsw++] = (struct ls_switch_ev){e->h.ts, e->next_tid, true, 0};
		if (e->prev_ustack >= 0 || e->prev_kstack >= 0 || e->prev_kstack == LS_STACK_LATER) {
			GROW(d->blocked, d->nblocked, d->capblocked);
			struct ls_block *pb = &d->blocked[d->nblocked];
			*pb = (struct ls_block){e->h.tid, e->h.pid, e->h.ts, 0, e->prev_ustack,
						     e->prev_kstack, "", {0, 0}, {0, 0}};
			memcpy(pb->comm, e->prev_comm, LS_COMM_LEN);
			set_last(l, e->h.tid, LS_PY_BLOCK, d->nblocked);
			GROW(l->sw, l->nsw, l->capsw);
			l->sw[l->nsw++] = (struct ls_switch_ev){e->h.ts, e->h.tid, false, d->nblocked++};
		}
	} else if (rec->type == LS_EV_BLOCK_KSTACK) {
		/* the kernel stack of the thread's latest block, taken as it ended */
		const struct ls_ev_block_kstack *e = (const void *)rec;
		uintptr_t at = (uintptr_t)ls_idmap_get(&l->last, ((uint64_t)LS_PY_BLOCK << 32 | e->h.tid) + 1);
		if (at && at <= d->nblocked && d->blocked[at - 1].ts == e->block_ts &&
		    d->blocked[at - 1].tid == e->h.tid && d->blocked[at - 1].kstack == LS_STACK_LATER)
			d->blocked[at - 1].kstack = e->kstack;
	} else if (rec->type == LS_REC_MAPPING) {
		const struct ls_rec_mapping *m = (const void *)rec;
		char path[4096];
		size_t n = rec->size - sizeof(*m);
		snprintf(path, sizeof(path), "%.*s", (int)(n < sizeof(path) ? n : sizeof(path) - 1),
			 (const char *)(m + 1));
		if (!d->offline && (d->offline = ls_sym_new()) && l->debug_dir)
			ls_sym_set_debug_dir(d->offline, l->debug_dir);
		if (is_interp(path)) {
			GROW(d->interp, d->ninterp, d->capinterp);
			d->interp[d->ninterp++] = (struct ls_interp_map){m->h.pid, m->start, m->end};
		}
		struct ls_sym_mapping sm = {m->start, m->end, m->pgoff, path, NULL};
		if (d->offline)
			ls_sym_add_mapping(d->offline, m->h.pid, &sm, m->build_id,
					   m->build_id_len <= sizeof(m->build_id) ? m->build_id_len : 0);
	} else if (rec->type == LS_REC_DROPS && rec->size >= sizeof(struct ls_rec_drops)) {
		l->stack_errors = ((const struct ls_rec_drops *)rec)->stack_errors;
	}
}

static bool in_interp(const struct ls_stack_data *d, __u32 pid, __u64 ip)
{
	for (size_t i = 0; i < d->ninterp; i++)
		if (d->interp[i].pid == pid && ip >= d->interp[i].start && ip < d->interp[i].end)
			return true;
	return false;
}

/* Merged stacks get ids from here up (the stack map's are far below). */
#define PY_STACK_ID0 0x40000000

struct merged {
	__u64 hash;
	__s32 id;
};

/* The stack a thread with Python frames was in, leaf first: its native
 * frames up to the first one in the interpreter (those are the evaluation
 * loop the Python frames stand for; without frame pointers the native walk
 * is lost from there on anyway), then the Python frames innermost first.
 * Identical merged stacks share an id. Returns the id, or `ustack` when
 * out of memory. */
static __s32 merge_one(struct ls_stack_data *d, struct merged *tab, size_t cap, __s32 *next,
		       __u32 pid, __s32 ustack, struct ls_keys py, struct ls_keys nat)
{
	const struct ls_stk *u = ls_stack_of(d, ustack);
	const __u64 *native = nat.n ? d->pykeys + nat.first : u ? u->ips : NULL;
	__u32 nnative = nat.n ? nat.n : u ? u->n : 0;
	__u64 ips[LS_STACK_DEPTH + LS_PY_MAX_FRAMES];
	__u32 n = 0;

	for (__u32 i = 0; i < nnative && !(py.n && in_interp(d, pid, native[i])) && n < LS_STACK_DEPTH;
	     i++)
		ips[n++] = native[i];
	for (__u32 i = 0; i < py.n && n < sizeof(ips) / sizeof(ips[0]); i++)
		ips[n++] = d->pykeys[py.first + i];
	__u64 h = 1469598103934665603ull ^ pid;
	for (__u32 i = 0; i < n; i++)
		h = (h ^ ips[i]) * 1099511628211ull;
	size_t at = h & (cap - 1);
	for (; tab[at].id; at = (at + 1) & (cap - 1)) {
		const struct ls_stk *m = ls_stack_of(d, tab[at].id);
		if (tab[at].hash == h && m && m->n == n && !memcmp(m->ips, ips, n * sizeof(ips[0])))
			return tab[at].id;
	}
	struct ls_rec_stack *c = malloc(sizeof(*c) + n * sizeof(ips[0]));
	if (!c)
		return ustack;
	memcpy(c + 1, ips, n * sizeof(ips[0]));
	GROW(d->stacks, d->nstacks, d->capstacks);
	d->stacks[d->nstacks++] = (struct ls_stk){*next, n, (const __u64 *)(c + 1)};
	tab[at] = (struct merged){h, *next};
	return (*next)++; /* ids rise: the stack array stays sorted */
}

static void merge_python(struct ls_stack_data *d)
{
	size_t want = 2 * (d->nsamples + d->nblocked + d->nlaunches) + 2, cap = 16;
	__s32 next = PY_STACK_ID0;

	while (cap < want)
		cap *= 2;
	struct merged *tab = calloc(cap, sizeof(*tab));
	if (!tab)
		return;
	for (size_t i = 0; i < d->nsamples; i++) {
		struct ls_sample *s = &d->samples[i];
		if (s->py.n || s->nat.n)
			s->ustack = merge_one(d, tab, cap, &next, s->pid, s->ustack, s->py, s->nat);
	}
	for (size_t i = 0; i < d->nlaunches; i++) {
		struct ls_launch *g = &d->launches[i];
		if (g->py.n || g->nat.n)
			g->ustack = merge_one(d, tab, cap, &next, g->pid, g->ustack, g->py, g->nat);
	}
	for (size_t i = 0; i < d->nblocked; i++) {
		struct ls_block *b = &d->blocked[i];
		if (b->py.n || b->nat.n)
			b->ustack = merge_one(d, tab, cap, &next, b->pid, b->ustack, b->py, b->nat);
	}
	free(tab);
}

void ls_stack_loader_finish(struct ls_stack_loader *l, struct ls_stack_data *out)
{
	if (l->stack_errors) /* nothing lost silently */
		fprintf(stderr,
			"latsplit flame: warning: %llu stacks were not captured while recording (stack "
			"map full or a walk failed); their samples and blocked time show as [no stack]\n",
			(unsigned long long)l->stack_errors);
	if (l->d.py_unmatched) /* nothing lost silently */
		fprintf(stderr,
			"latsplit flame: warning: %llu Python or unwound stacks came without the "
			"sample or switch they belong to; they are not in the graphs\n",
			(unsigned long long)l->d.py_unmatched);
	if (l->d.nsyms)
		qsort(l->d.syms, l->d.nsyms, sizeof(*l->d.syms), sym_cmp);
	if (l->d.nstacks)
		qsort(l->d.stacks, l->d.nstacks, sizeof(*l->d.stacks), stk_cmp);
	if (l->d.npykeys)
		merge_python(&l->d);
	if (l->d.nsamples)
		qsort(l->d.samples, l->d.nsamples, sizeof(*l->d.samples), sample_cmp);
	/* blocked spans: from a switch-out with stacks to that thread's next
	 * switch-in (a block never closed, at the end of the capture or with
	 * the switch-in lost, is dropped); then sorted by start */
	if (l->nsw)
		qsort(l->sw, l->nsw, sizeof(*l->sw), switch_cmp);
	size_t kept = 0;
	for (size_t i = 0; i < l->nsw; i++) {
		const struct ls_switch_ev *sw = l->sw;
		if (sw[i].in || i + 1 == l->nsw || sw[i + 1].tid != sw[i].tid || !sw[i + 1].in)
			continue;
		l->d.blocked[sw[i].block].end = sw[i + 1].ts;
	}
	for (size_t i = 0; i < l->d.nblocked; i++) {
		if (l->d.blocked[i].kstack == LS_STACK_LATER) { /* ended too soon for one */
			l->d.blocked[i].kstack = -1;
			l->d.kstack_short++;
		}
		if (l->d.blocked[i].end && (l->d.blocked[i].ustack >= 0 || l->d.blocked[i].kstack >= 0))
			l->d.blocked[kept++] = l->d.blocked[i];
	}
	l->d.nblocked = kept;
	free(l->sw);
	ls_idmap_free(&l->last);
	if (l->d.nblocked) {
		qsort(l->d.blocked, l->d.nblocked, sizeof(*l->d.blocked), block_cmp);
		l->d.maxend = malloc(l->d.nblocked * sizeof(*l->d.maxend));
		if (!l->d.maxend)
			abort();
		for (size_t i = 0; i < l->d.nblocked; i++)
			l->d.maxend[i] = i && l->d.maxend[i - 1] > l->d.blocked[i].end
						 ? l->d.maxend[i - 1]
						 : l->d.blocked[i].end;
	}
	*out = l->d;
}

void ls_stack_data_free(struct ls_stack_data *d)
{
	for (size_t i = 0; i < d->nstacks; i++)
		free((char *)d->stacks[i].ips - sizeof(struct ls_rec_stack));
	for (size_t i = 0; i < d->nsyms; i++)
		free((char *)d->syms[i].name - sizeof(struct ls_rec_sym));
	free(d->samples);
	free(d->stacks);
	free(d->syms);
	free(d->blocked);
	free(d->maxend);
	free(d->pykeys);
	free(d->interp);
	free(d->launches);
	ls_sym_free(d->offline);
}
