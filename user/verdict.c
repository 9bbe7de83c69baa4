// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The verdict (see verdict.h). Shares are of the summed latency (or TTFT) of
 * the requests whose split is known; the dominant cause is the sub-part with
 * the largest share, host and other counted as their own parts.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "out/json.h"
#include "verdict.h"

#define P_HOST LS_VERDICT_HOST
#define P_OTHER LS_VERDICT_OTHER
#define P_N LS_VERDICT_PARTS

static const char *part_name(int p)
{
	return p == P_HOST ? "host" : p == P_OTHER ? "other" : ls_sub_name(p);
}

static int part_comp(int p)
{
	if (p == P_HOST)
		return LS_C_HOST;
	if (p == P_OTHER)
		return LS_C_OTHER;
	return ls_sub_comp(p);
}

static const char *remedy(int p)
{
	switch (p) {
	case LS_S_NET_UPLOAD:
		return "requests take long to arrive: long prompts over a slow or lossy uplink; "
		       "compress request bodies, move clients closer, check loss toward the server";
	case LS_S_NET_SEND_BLOCKED:
	case LS_S_NET_DRAIN:
		return "responses wait on the network: loss and RTT toward the clients (see per "
		       "client); check the path (mtr), consider BBR, keep streams' clients close";
	case LS_S_Q_SOCKET:
		return "requests sit in the socket before the server reads them: the HTTP front end "
		       "is saturated; add front-end workers or processes";
	case LS_S_Q_ENGINE:
		return "requests wait for a batch slot: raise max batch size / max batched tokens if "
		       "memory allows, else add replicas; watch preemptions (KV cache too small)";
	case LS_S_Q_CPU:
		return "engine threads wait for a CPU: other load on the host or too few cores; "
		       "pin the engine, move other work away, give it more cores";
	case LS_S_COMPUTE_KERNEL:
	case LS_S_COMPUTE_COMM:
		return "the GPU is busy computing: long prompts -> prefix caching, chunked prefill; "
		       "smaller/quantised model, tensor parallelism, faster GPU";
	case LS_S_TRANSFER_H2D:
	case LS_S_TRANSFER_D2H:
	case LS_S_TRANSFER_OTHER:
		return "CPU-GPU copies dominate: weights or KV cache not resident on the GPU "
		       "(offloading/swapping), pageable copies; use pinned memory, keep data resident";
	case P_HOST:
		return "engine threads are on CPU (tokenisation, scheduling, sampling, Python): "
		       "profile them (latsplit flame --kind cpu), move work off the critical path";
	default:
		return "time no source explains (locks, disk, sleeps, unobserved work): add engine "
		       "events or GPU timings, or profile off-CPU time";
	}
}

static double pearson(const double *x, const double *y, size_t n)
{
	double mx = 0, my = 0, sxx = 0, syy = 0, sxy = 0;

	if (n < 3)
		return NAN;
	for (size_t i = 0; i < n; i++)
		mx += x[i], my += y[i];
	mx /= n, my /= n;
	for (size_t i = 0; i < n; i++) {
		sxx += (x[i] - mx) * (x[i] - mx);
		syy += (y[i] - my) * (y[i] - my);
		sxy += (x[i] - mx) * (y[i] - my);
	}
	/* prompts of (nearly) one size say nothing about size vs TTFT */
	if (sxx / n < (0.01 * mx) * (0.01 * mx))
		return NAN;
	return sxx > 0 && syy > 0 ? sxy / sqrt(sxx * syy) : NAN;
}

struct tick {
	uint64_t t;
	int d;
};

static int tick_cmp(const void *a, const void *b)
{
	const struct tick *x = a, *y = b;
	if (x->t != y->t)
		return x->t < y->t ? -1 : 1;
	return x->d - y->d; /* ends before starts at the same instant */
}

static int max_concurrency(const struct ls_request *r, size_t n)
{
	struct tick *t = malloc((2 * n + 1) * sizeof(*t));
	size_t k = 0;
	int cur = 0, best = 0;

	if (!t)
		return 0;
	for (size_t i = 0; i < n; i++) {
		if (!r[i].t_start || !r[i].t_end)
			continue;
		t[k++] = (struct tick){r[i].t_start, 1};
		t[k++] = (struct tick){r[i].t_end, -1};
	}
	qsort(t, k, sizeof(*t), tick_cmp);
	for (size_t i = 0; i < k; i++) {
		cur += t[i].d;
		if (cur > best)
			best = cur;
	}
	free(t);
	return best;
}

void ls_verdict_compute(const struct ls_verdict_in *in, struct ls_verdict *v)
{
	uint64_t batch_sum = 0;
	double *px = calloc(in->n + 1, sizeof(double)), *py = calloc(in->n + 1, sizeof(double));
	size_t npx = 0;

	memset(v, 0, sizeof(*v));
	v->ttft = in->ttft;
	v->n = in->n;
	v->have_engine = in->have_engine;
	v->have_gpu = in->have_gpu;
	v->have_sched = in->have_sched;
	v->best = -1;
	for (size_t i = 0; i < in->n; i++) {
		const struct ls_request *r = &in->reqs[i];
		const struct ls_split *s = &in->splits[i];
		const uint64_t *sub = in->ttft ? s->ttft_sub : s->sub;
		const uint64_t *c = in->ttft ? s->ttft_comp : s->comp;
		uint64_t w = in->ttft ? s->ttft : s->total;

		if (r->outcome == LS_REQ_ABORTED || r->outcome == LS_REQ_RESET)
			v->aborted++;
		v->retrans += r->retransmits;
		if (in->joins && in->joins[i].joined) {
			v->joined++;
			v->preempted += in->joins[i].preemptions > 0;
			if (in->joins[i].batch_size) {
				batch_sum += in->joins[i].batch_size;
				v->nbatch++;
				if (in->joins[i].batch_size > v->batch_max)
					v->batch_max = in->joins[i].batch_size;
			}
		}
		if (s->ttft != LS_NULL && r->bytes_in) {
			px[npx] = (double)r->bytes_in;
			py[npx++] = (double)s->ttft;
		}
		if (w == LS_NULL || w == 0)
			continue;
		v->judged++;
		v->whole += w;
		for (int p = 0; p < LS_S_N; p++)
			if (sub[p] != LS_NULL)
				v->part[p] += sub[p];
		if (c[LS_C_HOST] != LS_NULL)
			v->part[P_HOST] += c[LS_C_HOST];
		if (c[LS_C_OTHER] != LS_NULL)
			v->part[P_OTHER] += c[LS_C_OTHER];
	}
	v->batch_mean = v->nbatch ? (double)batch_sum / v->nbatch : 0;
	v->rho = pearson(px, py, npx);
	v->peak_concurrency = max_concurrency(in->reqs, in->n);
	free(px);
	free(py);
	if (!v->judged || v->whole <= 0)
		return;
	for (int p = 0; p < P_N; p++) {
		v->comp[part_comp(p)] += v->part[p];
		if (v->best < 0 || v->part[p] > v->part[v->best])
			v->best = p;
	}
}

const char *ls_verdict_dominant(const struct ls_verdict *v)
{
	return v->best < 0 ? NULL : part_name(v->best);
}

void ls_verdict_print(FILE *out, const struct ls_verdict *v)
{
	double whole = v->whole;
	const double *part = v->part, *comp = v->comp;
	int best = v->best;

	if (best < 0) {
		fprintf(out, "\nverdict: nothing to judge (no request with a complete split)\n");
		return;
	}
	const char *what = v->ttft ? "time to first token" : "latency";
	fprintf(out, "\nverdict (%zu requests, shares of summed %s):\n", v->judged, what);
	fprintf(out, "  network:     %5.1f%%  upload %.1f%%, send-blocked %.1f%%, drain %.1f%%; "
		     "%llu retransmitted segments\n",
		100 * comp[LS_C_NETWORK] / whole, 100 * part[LS_S_NET_UPLOAD] / whole,
		100 * part[LS_S_NET_SEND_BLOCKED] / whole, 100 * part[LS_S_NET_DRAIN] / whole,
		(unsigned long long)v->retrans);
	fprintf(out, "  engine:      queueing.engine %.1f%%, compute %.1f%%, transfer %.1f%%",
		100 * part[LS_S_Q_ENGINE] / whole, 100 * comp[LS_C_COMPUTE] / whole,
		100 * comp[LS_C_TRANSFER] / whole);
	if (v->nbatch)
		fprintf(out, "; batch at scheduling mean %.1f max %u", v->batch_mean, v->batch_max);
	if (v->joined)
		fprintf(out, "; %zu preempted", v->preempted);
	fprintf(out, "\n");
	fprintf(out, "  application: peak concurrency %d; prompt size vs TTFT correlation %s",
		v->peak_concurrency, isnan(v->rho) ? "n/a" : "");
	if (!isnan(v->rho))
		fprintf(out, "%.2f", v->rho);
	fprintf(out, "; %zu aborted or reset of %zu\n", v->aborted, v->n);
	fprintf(out, "  host:        on CPU %.1f%%, waiting for a CPU (queueing.cpu) %.1f%%, "
		     "socket queueing %.1f%%, other %.1f%%\n",
		100 * part[P_HOST] / whole, 100 * part[LS_S_Q_CPU] / whole,
		100 * part[LS_S_Q_SOCKET] / whole, 100 * part[P_OTHER] / whole);
	if (!v->have_engine || !v->have_gpu || !v->have_sched)
		fprintf(out, "  missing:     %s%s%s(their parts are not claimed)\n",
			v->have_engine ? "" : "engine events (queueing.engine inferred or absent) ",
			v->have_gpu ? "" : "GPU timings (no compute/transfer) ",
			v->have_sched ? "" : "scheduler events (no host/queueing.cpu) ");
	fprintf(out, "verdict: %s dominates %s (%.1f%% of it, %s %.1f%%)\n  try: %s\n",
		part_name(best), what, 100 * part[best] / whole, ls_comp_name(part_comp(best)),
		100 * comp[part_comp(best)] / whole, remedy(best));
}

void ls_verdict_json(FILE *out, const struct ls_verdict *v)
{
	fprintf(out, "{\"type\":\"verdict\",\"of\":\"%s\",\"requests\":%zu,\"judged\":%zu,",
		v->ttft ? "ttft" : "latency", v->n, v->judged);
	if (v->best < 0) {
		fprintf(out, "\"dominant\":null}\n");
		return;
	}
	fprintf(out, "\"dominant\":\"%s\",\"component\":\"%s\",\"share\":%.4f,"
		     "\"component_share\":%.4f,",
		part_name(v->best), ls_comp_name(part_comp(v->best)), v->part[v->best] / v->whole,
		v->comp[part_comp(v->best)] / v->whole);
	ls_json_kv_str(out, "remedy", remedy(v->best), true);
	fprintf(out, "\"components\":{");
	for (int c = 0; c < LS_C_N; c++)
		fprintf(out, "%s\"%s\":%.4f", c ? "," : "", ls_comp_name(c), v->comp[c] / v->whole);
	fprintf(out, "},\"parts\":{");
	for (int p = 0; p < P_N; p++)
		fprintf(out, "%s\"%s\":%.4f", p ? "," : "", part_name(p), v->part[p] / v->whole);
	fprintf(out, "},\"retransmits\":%llu,\"peak_concurrency\":%d,", (unsigned long long)v->retrans,
		v->peak_concurrency);
	if (isnan(v->rho))
		fprintf(out, "\"prompt_ttft_correlation\":null,");
	else
		fprintf(out, "\"prompt_ttft_correlation\":%.4f,", v->rho);
	fprintf(out, "\"aborted\":%zu,\"preempted\":%zu,\"batch_mean\":%.2f,\"batch_max\":%u,"
		     "\"missing\":[",
		v->aborted, v->preempted, v->batch_mean, v->batch_max);
	const char *missing[3] = {v->have_engine ? NULL : "engine", v->have_gpu ? NULL : "gpu",
				  v->have_sched ? NULL : "sched"};
	for (int i = 0, first = 1; i < 3; i++)
		if (missing[i]) {
			fprintf(out, "%s\"%s\"", first ? "" : ",", missing[i]);
			first = 0;
		}
	fprintf(out, "]}\n");
}

const char *ls_verdict(FILE *out, const struct ls_verdict_in *in)
{
	struct ls_verdict v;

	ls_verdict_compute(in, &v);
	ls_verdict_print(out, &v);
	return ls_verdict_dominant(&v);
}
