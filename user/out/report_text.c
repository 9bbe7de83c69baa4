// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * `report`'s text (see report_text.h).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "format.h"
#include "grow.h"
#include "quant.h"
#include "report_text.h"
#include "verdict.h"

/* The text report's figures, gathered request by request in bounded
 * memory: a percentile row per total, TTFT, component and sub-part; the
 * slowest requests; per-client network facts. */
enum { ROW_TOTAL, ROW_TTFT, ROW_COMP, ROW_SUB = ROW_COMP + LS_C_N, ROW_N = ROW_SUB + LS_S_N };

struct client_stat {
	char addr[64];
	uint64_t requests, retrans, bytes_out;
	struct ls_quant srtt;
};

/* One server: its address (unix sockets: "unix") and process; or one
 * container (addr: its name, pid: the first of its processes seen). */
struct server_stat {
	char addr[136]; /* "ip:port", or "proxy > server" */
	uint32_t pid, ns_pid;
	uint64_t requests;
	struct ls_quant total, ttft;
};

struct slow {
	struct ls_request r;
	struct ls_split s;
	uint64_t key;
};

struct ls_report_text {
	FILE *out;
	const char *path;
	bool ttft, print;
	size_t top;
	size_t n, outcomes[LS_REQ_NOUTCOMES], n_events, n_inferred, n_otlp, n_timings;
	uint64_t total_sum, ttft_sum;
	struct {
		struct ls_quant q;
		uint64_t sum;
	} rows[ROW_N];
	struct slow *slow; /* the slowest, by key descending, then arrival */
	size_t nslow;
	struct client_stat *cs;
	size_t nc, capc;
	struct server_stat *ss;
	size_t nss, capss;
	struct server_stat *cts; /* per container (DESIGN §11) */
	size_t ncts, capcts;
	const struct ls_trust *trust;
	size_t forwarded; /* requests counted under the client a proxy named */
};

void ls_report_text_trust(struct ls_report_text *t, const struct ls_trust *trust)
{
	t->trust = trust;
}

static void text_client(struct ls_report_text *t, const struct ls_request *r)
{
	char addr[64];
	char *colon;
	size_t k;

	const char *fwd = ls_trust_forwarded(t->trust, r);

	snprintf(addr, sizeof(addr), "%s", r->client[0] ? r->client : "?");
	colon = strrchr(addr, ':'); /* the client's port varies per connection */
	if (colon)
		*colon = '\0';
	if (fwd) { /* the real client, as a proxy of ours named it */
		snprintf(addr, sizeof(addr), "%s (forwarded)", fwd);
		t->forwarded++;
	}
	for (k = 0; k < t->nc && strcmp(t->cs[k].addr, addr); k++)
		;
	if (k == t->nc) {
		GROW(t->cs, t->nc, t->capc);
		memset(&t->cs[k], 0, sizeof(t->cs[k]));
		snprintf(t->cs[k].addr, sizeof(t->cs[k].addr), "%s", addr);
		t->cs[k].srtt.exact_max = 4096;
		t->nc++;
	}
	t->cs[k].requests++;
	t->cs[k].retrans += r->retransmits;
	t->cs[k].bytes_out += r->bytes_out;
	if (r->srtt_avg_us)
		ls_quant_add(&t->cs[k].srtt, r->srtt_avg_us);
}

/* The entry of stats keyed by (name, pid; pid 0: any), added if new. */
static struct server_stat *stat_of(struct server_stat **v, size_t *n, size_t *cap, const char *name,
				   uint32_t pid)
{
	size_t k;

	for (k = 0; k < *n && ((pid && (*v)[k].pid != pid) || strcmp((*v)[k].addr, name)); k++)
		;
	if (k == *n) {
		GROW(*v, *n, *cap);
		memset(&(*v)[k], 0, sizeof((*v)[k]));
		snprintf((*v)[k].addr, sizeof((*v)[k].addr), "%s", name);
		(*v)[k].pid = pid;
		(*n)++;
	}
	return &(*v)[k];
}

static void stat_add(struct server_stat *v, const struct ls_split *s)
{
	v->requests++;
	if (s->total != LS_NULL)
		ls_quant_add(&v->total, s->total);
	if (s->ttft != LS_NULL)
		ls_quant_add(&v->ttft, s->ttft);
}

/* A request joined across a proxy counts under the server behind it,
 * named "proxy > server" (replicas behind one proxy part here). A request
 * read in a container counts under it too. */
static void text_server(struct ls_report_text *t, const struct ls_request *r,
			const struct ls_request *inner, const struct ls_split *s,
			const struct ls_timeline *tl)
{
	char addr[sizeof(t->ss[0].addr)];
	uint32_t pid = inner ? inner->pid : r->pid;

	if (inner)
		snprintf(addr, sizeof(addr), "%s > %s", r->server[0] ? r->server : "?",
			 inner->transport_unix ? "unix" : inner->server[0] ? inner->server : "?");
	else
		snprintf(addr, sizeof(addr), "%s", r->server[0] ? r->server : "?");
	stat_add(stat_of(&t->ss, &t->nss, &t->capss, addr, pid), s);
	const struct ls_proc_place *pl = ls_timeline_place(tl, r->pid);
	if (pl) {
		struct server_stat *c = stat_of(&t->cts, &t->ncts, &t->capcts, pl->c.name, 0);
		if (!c->pid)
			c->pid = r->pid, c->ns_pid = pl->ns_pid;
		stat_add(c, s);
	}
}

static void text_slowest(struct ls_report_text *t, const struct ls_request *r, const struct ls_split *s)
{
	uint64_t key = t->ttft ? s->ttft : s->total;
	size_t i = t->nslow;

	key = key == LS_NULL ? 0 : key;
	while (i > 0 && t->slow[i - 1].key < key) /* ties keep arrival order */
		i--;
	if (i >= t->top)
		return;
	if (t->nslow == t->top)
		t->nslow--;
	memmove(t->slow + i + 1, t->slow + i, (t->nslow - i) * sizeof(*t->slow));
	t->slow[i].r = *r;
	ls_request_detach(&t->slow[i].r); /* owned by the analysis */
	t->slow[i].s = *s;
	t->slow[i].key = key;
	t->nslow++;
}

static int text_request(void *ctx, const struct ls_request_view *vw)
{
	struct ls_report_text *t = ctx;
	const struct ls_request *r = vw->r;
	const struct ls_split *s = vw->s;

	t->n++;
	t->outcomes[r->outcome]++;
	if (s->total != LS_NULL)
		t->total_sum += s->total;
	if (s->ttft != LS_NULL)
		t->ttft_sum += s->ttft;
	t->n_events += !strcmp(s->engine_source, "events");
	t->n_inferred += !strcmp(s->engine_source, "inferred");
	t->n_otlp += !strcmp(s->engine_source, "otlp");
	t->n_timings += !strcmp(s->engine_source, "timings");
	uint64_t v[ROW_N];
	v[ROW_TOTAL] = s->total;
	v[ROW_TTFT] = s->ttft;
	for (int c = 0; c < LS_C_N; c++)
		v[ROW_COMP + c] = t->ttft ? s->ttft_comp[c] : s->comp[c];
	for (int k = 0; k < LS_S_N; k++)
		v[ROW_SUB + k] = t->ttft ? s->ttft_sub[k] : s->sub[k];
	for (int i = 0; i < ROW_N; i++)
		if (v[i] != LS_NULL) {
			ls_quant_add(&t->rows[i].q, v[i]);
			t->rows[i].sum += v[i];
		}
	text_slowest(t, r, s);
	text_client(t, r);
	text_server(t, r, vw->inner, s, vw->tl);
	return 0;
}

/* Rows of server_stat (per server, per container) and the array. */
static void stats_free(struct server_stat *v, size_t n)
{
	for (size_t k = 0; k < n; k++) {
		ls_quant_free(&v[k].total);
		ls_quant_free(&v[k].ttft);
	}
	free(v);
}

void ls_report_text_free(struct ls_report_text *t)
{
	if (!t)
		return;
	for (int i = 0; i < ROW_N; i++)
		ls_quant_free(&t->rows[i].q);
	for (size_t k = 0; k < t->nc; k++)
		ls_quant_free(&t->cs[k].srtt);
	free(t->cs);
	stats_free(t->ss, t->nss);
	stats_free(t->cts, t->ncts);
	free(t->slow);
	free(t);
}

/* One summary row: percentiles of a row's values (requests without it
 * excluded). */
static void summary_row(FILE *rout, const char *name, struct ls_quant *q, uint64_t sum, size_t n,
			uint64_t total_sum)
{
	size_t k = q->count;
	char p[4][24], share[16];

	if (!k) {
		fprintf(rout, "  %-22s %10s %10s %10s %10s %7s   (not in this capture)\n", name, "-", "-", "-",
		       "-", "-");
		return;
	}
	ls_fmt_ms(p[0], 24, ls_quant_rank(q, k / 2));
	ls_fmt_ms(p[1], 24, ls_quant_rank(q, (size_t)(k * 0.9)));
	ls_fmt_ms(p[2], 24, ls_quant_rank(q, (size_t)(k * 0.99)));
	ls_fmt_ms(p[3], 24, ls_quant_rank(q, k - 1));
	if (total_sum)
		snprintf(share, sizeof(share), "%.1f%%", 100.0 * sum / total_sum);
	else
		snprintf(share, sizeof(share), "-");
	fprintf(rout, "  %-22s %10s %10s %10s %10s %7s%s\n", name, p[0], p[1], p[2], p[3], share,
	       k < n ? "   (some requests lack it)" : "");
}

static void per_client(FILE *rout, struct ls_report_text *t)
{
	fprintf(rout, "\nper client (retransmitted segments of responses; srtt averaged per request):\n");
	if (t->forwarded)
		fprintf(rout, "  (forwarded: %zu requests counted under the client a trusted proxy named "
			     "in X-Forwarded-For; their network figures are the proxy's hop)\n",
			t->forwarded);
	fprintf(rout, "  %-40s %9s %9s %11s %10s %10s\n", "client", "requests", "retrans", "retrans/MB",
	       "srtt p50", "srtt max");
	for (size_t k = 0; k < t->nc; k++) {
		struct client_stat *c = &t->cs[k];
		char p50[16] = "-", mx[16] = "-";
		if (c->srtt.count) {
			snprintf(p50, sizeof(p50), "%.2fms",
				 ls_quant_rank(&c->srtt, c->srtt.count / 2) / 1e3);
			snprintf(mx, sizeof(mx), "%.2fms", c->srtt.max / 1e3);
		}
		fprintf(rout, "  %-40s %9llu %9llu %11.1f %10s %10s\n", c->addr,
		       (unsigned long long)c->requests, (unsigned long long)c->retrans,
		       c->bytes_out ? c->retrans / (c->bytes_out / 1e6) : 0.0, p50, mx);
	}
}

/* "12.345" ms at rank q of v, or "-" when it holds none. */
static void rank_ms(char *buf, size_t len, struct ls_quant *v, double q)
{
	if (!v->count)
		snprintf(buf, len, "-");
	else
		snprintf(buf, len, "%.3f", ls_quant_rank(v, (size_t)(v->count * q)) / 1e6);
}

/* A table of stats: each one's requests and latency. */
static void stat_table(FILE *rout, const char *title, const char *what, struct server_stat *v,
		       size_t n, const struct ls_timeline *tl)
{
	fprintf(rout, "\n%s (ms):\n  %-28s %8s %-15s %9s %10s %10s %10s %10s\n", title, what, "pid",
		"comm", "requests", "total p50", "total p90", "total max", "ttft p50");
	for (size_t k = 0; k < n; k++) {
		char p50[24], p90[24], mx[24] = "-", tp50[24];
		rank_ms(p50, sizeof(p50), &v[k].total, 0.5);
		rank_ms(p90, sizeof(p90), &v[k].total, 0.9);
		rank_ms(tp50, sizeof(tp50), &v[k].ttft, 0.5);
		if (v[k].total.count)
			snprintf(mx, sizeof(mx), "%.3f", v[k].total.max / 1e6);
		const char *comm = ls_timeline_comm(tl, v[k].pid);
		fprintf(rout, "  %-28s %8u %-15s %9llu %10s %10s %10s %10s\n", v[k].addr, v[k].pid,
			comm ? comm : "-", (unsigned long long)v[k].requests, p50, p90, mx, tp50);
	}
}

/* More than one server (replicas on several ports, several processes):
 * each one's requests and latency, so one slow replica shows; likewise
 * more than one container. */
static void per_server(FILE *rout, struct ls_report_text *t, const struct ls_timeline *tl)
{
	if (t->nss >= 2)
		stat_table(rout, "per server", "server", t->ss, t->nss, tl);
	if (t->ncts >= 2)
		stat_table(rout, "per container", "container", t->cts, t->ncts, tl);
}

static int by_ns_desc(const void *a, const void *b)
{
	uint64_t x = ((const uint64_t *)a)[1], y = ((const uint64_t *)b)[1];

	return x < y ? 1 : x > y ? -1 : 0;
}

/* Per-device busy time, top kernels and copies, pageable-copy warning. */
static void gpu_summary(FILE *rout, const struct ls_timeline *tl, uint64_t span_ns)
{
	const struct ls_gpu_summary *g = ls_timeline_gpu_summary(tl);
	static const char *const dir[4] = {"other", "H2D", "D2H", "D2D"};
	uint64_t order[LS_GPU_MAX_NAMES][2];

	if (!ls_timeline_has_gpu(tl))
		return;
	fprintf(rout, "\nGPU (%s):", ls_timeline_gpu_source(tl));
	for (uint32_t d = 0; d < g->ndev; d++)
		fprintf(rout, " device %u busy %.1f ms (%.1f%% of the capture)", d, g->dev_busy_ns[d] / 1e6,
		       span_ns ? 100.0 * g->dev_busy_ns[d] / span_ns : 0.0);
	fprintf(rout, "\n  top kernels by GPU time:\n");
	for (size_t i = 0; i < g->nnames; i++) {
		order[i][0] = i;
		order[i][1] = g->names[i].ns;
	}
	qsort(order, g->nnames, sizeof(order[0]), by_ns_desc);
	for (size_t k = 0; k < g->nnames && k < 5; k++) {
		size_t i = order[k][0];
		fprintf(rout, "    %10.2f ms %8llu x  %s\n", g->names[i].ns / 1e6,
		       (unsigned long long)g->names[i].count, g->names[i].name[0] ? g->names[i].name : "?");
	}
	fprintf(rout, "  copies:");
	for (int c = 0; c < 4; c++)
		if (g->copies[c])
			fprintf(rout, " %s %llu x %.1f MB in %.2f ms;", dir[c], (unsigned long long)g->copies[c],
			       g->copy_bytes[c] / 1e6, g->copy_ns[c] / 1e6);
	fprintf(rout, "\n");
	if (g->pageable_copies)
		fprintf(rout, "  warning: %llu copies from/to pageable host memory (slower, synchronous): "
		       "use pinned memory\n",
		       (unsigned long long)g->pageable_copies);
}

/* No whole request: say which case applies, so an empty report is never
 * mistaken for an idle server. */
void ls_report_text_print(FILE *rout, struct ls_report_text *t, struct ls_analysis *rs)
{
	const char *path = t->path;
	__u64 span_ns = rs->last_ts - rs->first_ts;
	const struct ls_file_hdr *h = &rs->hdr;
	const struct ls_corr_stats *cst = &rs->cst;
	struct ls_timeline *tl = rs->tl;
	char sources[512], loss[512];
	bool ttft = t->ttft;

	ls_sources_str(h->sources, sources, sizeof(sources));
	loss[0] = '\0';
	if (rs->rd) /* a file's */
		ls_reader_loss_line(rs->rd, loss, sizeof(loss));
	fprintf(rout, "latsplit report: %s\n", path);
	fprintf(rout, "  host %s, kernel %s, %.2f s of events; sources: %s\n", h->hostname, h->release,
	       span_ns / 1e9, sources);
	fprintf(rout, "  ring-buffer drops: %llu; stacks not captured: %llu; capture damage: %s\n",
	       (unsigned long long)rs->drops, (unsigned long long)rs->stack_errors,
	       loss[0] ? loss : "none");
	if (rs->probe_skips) /* events never made: the kernel did not run the program */
		fprintf(rout, "  probe runs the kernel skipped: %llu (most: %s, %llu; a run met on its CPU "
			"by its own unfinished run): the requests they touch may be partial\n",
			(unsigned long long)rs->probe_skips, rs->probe_skips_top,
			(unsigned long long)rs->probe_skips_top_n);
	fprintf(rout, "  %zu requests on %llu HTTP connections (%llu opaque, %llu HTTP sync losses); "
	       "outcomes:",
	       t->n, (unsigned long long)cst->conns_http, (unsigned long long)cst->conns_opaque,
	       (unsigned long long)cst->http_sync_lost);
	for (int o = 0; o < LS_REQ_NOUTCOMES; o++)
		if (t->outcomes[o])
			fprintf(rout, " %s %zu", ls_outcome_name(o), t->outcomes[o]);
	if (cst->conns_adopted || cst->unseen_bytes)
		fprintf(rout, "\n  %llu connections met mid-flight (established before the capture); "
		       "%llu stream bytes moved unseen",
		       (unsigned long long)cst->conns_adopted, (unsigned long long)cst->unseen_bytes);
	if (cst->conns_upstream && rs->hops_joined)
		fprintf(rout, "\n  %llu upstream connections: a traced proxy's hop to a traced server; %llu "
		       "client requests joined across it (one record each, the proxy's time as "
		       "network.proxy)",
		       (unsigned long long)cst->conns_upstream, (unsigned long long)rs->hops_joined);
	else if (cst->conns_upstream)
		fprintf(rout, "\n  %llu upstream connections: the tracked process sent the requests on them "
		       "(a proxy's hop to its upstream, or its own client calls); not split here, trace "
		       "the upstream's port to split them",
		       (unsigned long long)cst->conns_upstream);
	if (cst->conns_h2_midflight)
		fprintf(rout, "\n  %llu HTTP/2 connections met mid-flight: their streams are partial (the "
		       "header compression state began before the capture, so no header can be read)",
		       (unsigned long long)cst->conns_h2_midflight);
	char otlp[128] = ""; /* sources only some engines give: named when used */
	if (t->n_otlp || t->n_timings)
		snprintf(otlp, sizeof(otlp), "%s%.0zu%s%s%.0zu%s", t->n_otlp ? ", " : "", t->n_otlp,
			 t->n_otlp ? " by the engine's OTLP spans" : "", t->n_timings ? ", " : "",
			 t->n_timings, t->n_timings ? " by the timings in its responses" : "");
	fprintf(rout, "\n  engine: %zu joined by events%s, %zu inferred from the GPU timeline, %zu none; "
	       "gpu: %s; scheduler: %s\n",
	       t->n_events, otlp, t->n_inferred,
	       t->n - t->n_events - t->n_otlp - t->n_timings - t->n_inferred,
	       ls_timeline_gpu_source(tl), ls_timeline_has_sched(tl) ? "yes" : "no");
	size_t in_ct = 0;
	for (size_t k = 0; k < t->ncts; k++)
		in_ct += t->cts[k].requests;
	for (size_t k = 0; k < t->ncts && t->ncts <= 8; k++)
		fprintf(rout, "  container %s: %llu of %zu requests (pid %u, %u in its own namespace)\n",
			t->cts[k].addr, (unsigned long long)t->cts[k].requests, t->n, t->cts[k].pid,
			t->cts[k].ns_pid);
	if (t->ncts > 8)
		fprintf(rout, "  %zu containers served %zu of %zu requests (per container below)\n", t->ncts,
			in_ct, t->n);
	struct ls_runq *rq = ls_timeline_runq(tl);
	size_t nq = rq->q.count;
	if (nq)
		fprintf(rout, "  run queue of the tracked threads: %zu waits, mean %.1f us, p50 %.1f us, "
		       "p99 %.1f us, max %.1f us, %.1f%% >= 1024 us\n",
		       nq, rq->q.sum / 1e3 / nq, ls_quant_rank(&rq->q, nq / 2) / 1e3,
		       ls_quant_rank(&rq->q, (size_t)(nq * 0.99)) / 1e3, rq->q.max / 1e3,
		       100.0 * rq->over_ms / nq);
	if (rs->clipped)
		fprintf(rout, "  %zu requests lasted longer than the timeline keeps (120 s): their earliest "
		       "part is split as other\n",
		       rs->clipped);
	char why[320];
	if (ls_analysis_why_empty(rs, h->sources, why, sizeof(why)))
		fprintf(rout, "  %s\n", why);
	else if (cst->requests_unparsed)
		fprintf(rout, "  %llu requests unparsed (no split): %s\n",
			(unsigned long long)cst->requests_unparsed, cst->unparsed_why);
	if (!t->n)
		return;
	fprintf(rout, "\n  %-22s %10s %10s %10s %10s %7s\n", ttft ? "(ms, of TTFT)" : "(ms)", "p50", "p90",
	       "p99", "max", "share");
	uint64_t base = ttft ? t->ttft_sum : t->total_sum;
	summary_row(rout, "total", &t->rows[ROW_TOTAL].q, t->rows[ROW_TOTAL].sum, t->n, base);
	summary_row(rout, "ttft", &t->rows[ROW_TTFT].q, t->rows[ROW_TTFT].sum, t->n, base);
	for (int c = 0; c < LS_C_N; c++) {
		summary_row(rout, ls_comp_name(c), &t->rows[ROW_COMP + c].q, t->rows[ROW_COMP + c].sum, t->n,
			    base);
		for (int k = 0; k < LS_S_N; k++) {
			char label[40];
			if (ls_sub_comp(k) != c)
				continue;
			if (ls_sub_optional(k) && !t->rows[ROW_SUB + k].q.count)
				continue; /* no request had it (no traced proxy, no app queue) */
			snprintf(label, sizeof(label), "  %s", ls_sub_name(k));
			summary_row(rout, label, &t->rows[ROW_SUB + k].q, t->rows[ROW_SUB + k].sum, t->n,
				    base);
		}
	}
	for (int i = 0; i < ROW_N; i++)
		if (!ls_quant_exact(&t->rows[i].q)) {
			fprintf(rout, "  (over %d requests: percentiles are estimates within 1%%; max exact)\n",
			       LS_QUANT_EXACT);
			break;
		}

	fprintf(rout, "\nslowest %zu requests by %s (ms):\n", t->nslow, ttft ? "TTFT" : "total");
	fprintf(rout, "  %6s %-21s %-18s %3s %-8s %8s %7s %7s %7s %7s %7s %7s %7s %7s %3s %4s\n", "id",
	       "client", "path", "st", "outcome", "total", "ttft", "network", "q.sock", "q.engine",
	       "q.cpu", "xfer", "compute", "host", "rtx", "tok");
	for (size_t k = 0; k < t->nslow; k++) {
		const struct ls_request *r = &t->slow[k].r;
		const struct ls_split *s = &t->slow[k].s;
		uint64_t f[10] = {s->total, s->ttft, s->comp[LS_C_NETWORK], s->sub[LS_S_Q_SOCKET],
				  s->sub[LS_S_Q_ENGINE], s->sub[LS_S_Q_CPU], s->comp[LS_C_TRANSFER],
				  s->comp[LS_C_COMPUTE], s->comp[LS_C_HOST]};
		char tx[10][24];

		for (int i = 0; i < 9; i++)
			ls_fmt_ms(tx[i], 24, f[i]);
		fprintf(rout, "  %6llu %-21.21s %-18.18s %3d %-8.8s %8s %7s %7s %7s %7s %7s %7s %7s %7s %3u %4u\n",
		       (unsigned long long)r->id, r->client, r->path[0] ? r->path : "?", r->status,
		       ls_outcome_name(r->outcome), tx[0], tx[1], tx[2], tx[3], tx[4], tx[5], tx[6],
		       tx[7], tx[8], r->retransmits, r->tokens);
	}
	gpu_summary(rout, tl, span_ns);
	per_client(rout, t);
	per_server(rout, t, tl);
	if (cst->retrans_unattributed)
		fprintf(rout, "  %llu retransmitted segments on connections that carried no request\n",
		       (unsigned long long)cst->retrans_unattributed);
	struct ls_verdict v;
	ls_analysis_verdict(rs, ttft, &v);
	ls_verdict_print(rout, &v);
}

static int text_end(void *ctx, struct ls_analysis *a)
{
	struct ls_report_text *t = ctx;

	if (t->print)
		ls_report_text_print(t->out, t, a);
	return 0;
}

struct ls_report_text *ls_report_text_new(FILE *out, const char *path, bool ttft, size_t top,
					  bool print)
{
	struct ls_report_text *t = calloc(1, sizeof(*t));

	if (!t)
		return NULL;
	*t = (struct ls_report_text){.out = out, .path = path, .ttft = ttft, .top = top,
				     .print = print};
	if (top && !(t->slow = calloc(top, sizeof(*t->slow)))) {
		free(t);
		return NULL;
	}
	return t;
}

struct ls_sink ls_report_text_sink(struct ls_report_text *t)
{
	return (struct ls_sink){.name = "report", .request = text_request, .end = text_end, .ctx = t};
}

bool ls_report_text_ttft(const struct ls_report_text *t)
{
	return t->ttft;
}
