// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * `latsplit top`'s screen (see top.h). Plain text and ANSI clear/home
 * only: works in any terminal and under tmux, no curses.
 */
#include <stdlib.h>
#include <string.h>

#include "format.h"
#include "quant.h"
#include "top.h"
#include "verdict.h"

#define AT(w, i) (&(w)->v[((w)->head + (i)) % LS_TOP_MAX])

static void pop_head(struct ls_top_window *w)
{
	const struct ls_top_entry *e = &w->v[w->head];

	if (e->provisional)
		ls_idmap_remove(&w->prov, e->r.id + 1);
	w->head = (w->head + 1) % LS_TOP_MAX;
	w->n--;
}

static void fill(struct ls_top_entry *e, const struct ls_request *r, const struct ls_split *s,
		 const struct ls_engine_join *j, bool final)
{
	e->r = *r;
	ls_request_detach(&e->r);
	e->s = *s;
	e->j = j ? *j : (struct ls_engine_join){0};
	e->provisional = !final;
}

void ls_top_push(struct ls_top_window *w, uint64_t now, const struct ls_request *r,
		 const struct ls_split *s, const struct ls_engine_join *j, bool final)
{
	struct ls_top_entry *e;
	uintptr_t at;

	if (!w->v && !(w->v = calloc(LS_TOP_MAX, sizeof(*w->v))))
		return;
	if (final && (at = (uintptr_t)ls_idmap_remove(&w->prov, r->id + 1))) {
		uint64_t seq = at - 1, first = w->seq - w->n;
		if (seq >= first && seq < w->seq && AT(w, seq - first)->r.id == r->id) {
			fill(AT(w, seq - first), r, s, j, true); /* in place, counted once */
			return;
		}
	}
	if (w->n == LS_TOP_MAX) {
		pop_head(w);
		w->evicted++;
	}
	e = &w->v[(w->head + w->n++) % LS_TOP_MAX];
	e->t_done = now;
	e->seq = w->seq++;
	fill(e, r, s, j, final);
	if (!final)
		ls_idmap_put(&w->prov, r->id + 1, (void *)(uintptr_t)(e->seq + 1));
}

static int top_request(void *ctx, const struct ls_request_view *v)
{
	struct ls_top_window *w = ctx;

	ls_top_push(w, v->now, v->r, v->s, v->j, v->final);
	ls_top_expire(w, v->now);
	return 0;
}

struct ls_sink ls_top_sink(struct ls_top_window *w)
{
	return (struct ls_sink){.name = "top", .request = top_request, .ctx = w, .provisional = true};
}

void ls_top_expire(struct ls_top_window *w, uint64_t now)
{
	while (w->n && w->v[w->head].t_done + w->window_ns < now)
		pop_head(w);
}

void ls_top_free(struct ls_top_window *w)
{
	free(w->v);
	ls_idmap_free(&w->prov);
	memset(w, 0, sizeof(*w));
}

/* One row: p50, p99 and share of the window's summed latency. */
static void row(FILE *out, struct ls_top_window *w, const char *label, int comp, int sub,
		uint64_t whole)
{
	struct ls_quant q = {0};
	char p50[24], p99[24];

	for (size_t i = 0; i < w->n; i++) {
		const struct ls_split *s = &AT(w, i)->s;
		uint64_t v = sub >= 0 ? s->sub[sub] : comp >= 0 ? s->comp[comp]
					: comp == -1 ? s->total : s->ttft;
		if (v != LS_NULL && s->total != LS_NULL)
			ls_quant_add(&q, v);
	}
	if (!q.count) {
		fprintf(out, "  %-24s %10s %10s %7s\n", label, "-", "-", "-");
		return;
	}
	ls_fmt_ms(p50, sizeof(p50), ls_quant_rank(&q, q.count / 2));
	ls_fmt_ms(p99, sizeof(p99), ls_quant_rank(&q, (uint64_t)(q.count * 0.99)));
	if (comp == -2 || comp == -1 || !whole)
		fprintf(out, "  %-24s %10s %10s %7s\n", label, p50, p99, "");
	else
		fprintf(out, "  %-24s %10s %10s %6.1f%%\n", label, p50, p99, 100.0 * q.sum / whole);
	ls_quant_free(&q);
}

void ls_top_render(FILE *out, struct ls_top_window *w, const struct ls_top_status *st)
{
	uint64_t whole = 0;
	double secs = w->window_ns / 1e9;

	if (st->clear)
		fputs("\033[H\033[2J", out);
	size_t nprov = 0;
	for (size_t i = 0; i < w->n; i++) {
		if (AT(w, i)->s.total != LS_NULL)
			whole += AT(w, i)->s.total;
		nprov += AT(w, i)->provisional;
	}
	fprintf(out, "latsplit top: %s, %.0f s; window: the requests delivered in the last %.0f s "
		     "(%zu provisional, marked ~: split at delivery, final 2 s later)\n",
		st->target, st->elapsed_s, secs, nprov);
	fprintf(out, "  requests/s %.1f   in flight %llu   split so far %llu   ring-buffer drops %llu"
		     "   stacks lost %llu%s\n",
		w->n / secs, (unsigned long long)st->in_flight,
		(unsigned long long)st->total_requests, (unsigned long long)st->drops,
		(unsigned long long)st->stacks_lost, w->evicted ? "   (window capped)" : "");
	fprintf(out, "\n  %-24s %10s %10s %7s\n", "(ms)", "p50", "p99", "share");
	row(out, w, "total", -1, -1, whole);
	row(out, w, "ttft", -2, -1, whole);
	bool had[LS_S_N] = {0}; /* the optional sub-parts some request had */
	for (size_t i = 0; i < w->n; i++)
		for (int k = 0; k < LS_S_N; k++)
			had[k] |= AT(w, i)->s.sub[k] != LS_NULL;
	for (int c = 0; c < LS_C_N; c++) {
		row(out, w, ls_comp_name(c), c, -1, whole);
		for (int k = 0; k < LS_S_N; k++) {
			char label[40];
			if (ls_sub_comp(k) != c || (ls_sub_optional(k) && !had[k]))
				continue;
			snprintf(label, sizeof(label), "  %s", ls_sub_name(k));
			row(out, w, label, c, k, whole);
		}
	}

	/* the slowest recent requests */
	size_t top[5], ntop = 0;
	for (size_t i = 0; i < w->n; i++) {
		uint64_t t = AT(w, i)->s.total == LS_NULL ? 0 : AT(w, i)->s.total;
		size_t k = ntop;
		while (k > 0 && (AT(w, top[k - 1])->s.total == LS_NULL ? 0 : AT(w, top[k - 1])->s.total) < t)
			k--;
		if (k >= 5)
			continue;
		if (ntop < 5)
			ntop++;
		memmove(top + k + 1, top + k, (ntop - 1 - k) * sizeof(top[0]));
		top[k] = i;
	}
	fprintf(out, "\n  slowest recent (ms):\n  %6s %-21s %-18s %3s %-8s %8s %7s %7s %7s %7s %7s %7s\n",
		"id", "client", "path", "st", "outcome", "total", "ttft", "network", "queue", "xfer",
		"compute", "host");
	for (size_t k = 0; k < ntop; k++) {
		const struct ls_top_entry *e = AT(w, top[k]);
		uint64_t f[7] = {e->s.total, e->s.ttft, e->s.comp[LS_C_NETWORK], e->s.comp[LS_C_QUEUEING],
				 e->s.comp[LS_C_TRANSFER], e->s.comp[LS_C_COMPUTE], e->s.comp[LS_C_HOST]};
		char t[7][24];
		for (int i = 0; i < 7; i++)
			ls_fmt_ms(t[i], sizeof(t[i]), f[i]);
		fprintf(out, "  %5llu%c %-21.21s %-18.18s %3d %-8.8s %8s %7s %7s %7s %7s %7s %7s\n",
			(unsigned long long)e->r.id, e->provisional ? '~' : ' ', e->r.client, e->r.path[0] ? e->r.path : "?",
			e->r.status, ls_outcome_name(e->r.outcome), t[0], t[1], t[2], t[3], t[4], t[5],
			t[6]);
	}

	/* the verdict over the window */
	struct ls_verdict_acc acc = {0};
	struct ls_verdict v;
	for (size_t i = 0; i < w->n; i++)
		ls_verdict_acc_add(&acc, &AT(w, i)->r, &AT(w, i)->s, &AT(w, i)->j);
	ls_verdict_from_acc(&acc, false, st->have_gpu, st->have_sched, st->have_engine, &v);
	ls_verdict_acc_free(&acc);
	if (v.best < 0)
		fprintf(out, "\n  verdict: no request split in the window\n");
	else
		fprintf(out, "\n  verdict: %s dominates latency (%.1f%% of it, %s %.1f%%)\n  try: %s\n",
			ls_verdict_part_name(v.best), 100.0 * v.part[v.best] / v.whole,
			ls_comp_name(ls_verdict_part_comp(v.best)),
			100.0 * v.comp[ls_verdict_part_comp(v.best)] / v.whole,
			ls_verdict_advice(&v));
	fflush(out);
}
