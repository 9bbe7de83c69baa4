// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The verdict (see verdict.h). Shares are of the summed latency (or TTFT) of
 * the requests whose split is known; the dominant cause is the sub-part with
 * the largest share, host and other counted as their own parts.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "verdict.h"

/* Parts the verdict weighs: every sub-part, plus host and other. */
#define P_HOST LS_S_N
#define P_OTHER (LS_S_N + 1)
#define P_N (LS_S_N + 2)

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
	if (p <= LS_S_NET_DRAIN)
		return LS_C_NETWORK;
	if (p <= LS_S_Q_CPU)
		return LS_C_QUEUEING;
	if (p <= LS_S_COMPUTE_COMM)
		return LS_C_COMPUTE;
	return LS_C_TRANSFER;
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

const char *ls_verdict(FILE *out, const struct ls_verdict_in *in)
{
	double part[P_N] = {0}, comp[LS_C_N] = {0}, whole = 0;
	size_t judged = 0, aborted = 0, preempted = 0, joined = 0, nb = 0;
	uint64_t retrans = 0, batch_sum = 0;
	uint32_t batch_max = 0;
	double *px = calloc(in->n + 1, sizeof(double)), *py = calloc(in->n + 1, sizeof(double));
	size_t npx = 0;
	int best = -1;

	for (size_t i = 0; i < in->n; i++) {
		const struct ls_request *r = &in->reqs[i];
		const struct ls_split *s = &in->splits[i];
		const uint64_t *sub = in->ttft ? s->ttft_sub : s->sub;
		const uint64_t *c = in->ttft ? s->ttft_comp : s->comp;
		uint64_t w = in->ttft ? s->ttft : s->total;

		if (r->outcome == LS_REQ_ABORTED || r->outcome == LS_REQ_RESET)
			aborted++;
		retrans += r->retransmits;
		if (in->joins && in->joins[i].joined) {
			joined++;
			preempted += in->joins[i].preemptions > 0;
			if (in->joins[i].batch_size) {
				batch_sum += in->joins[i].batch_size;
				nb++;
				if (in->joins[i].batch_size > batch_max)
					batch_max = in->joins[i].batch_size;
			}
		}
		if (s->ttft != LS_NULL && r->bytes_in) {
			px[npx] = (double)r->bytes_in;
			py[npx++] = (double)s->ttft;
		}
		if (w == LS_NULL || w == 0)
			continue;
		judged++;
		whole += w;
		for (int p = 0; p < LS_S_N; p++)
			if (sub[p] != LS_NULL)
				part[p] += sub[p];
		if (c[LS_C_HOST] != LS_NULL)
			part[P_HOST] += c[LS_C_HOST];
		if (c[LS_C_OTHER] != LS_NULL)
			part[P_OTHER] += c[LS_C_OTHER];
	}
	if (!judged || whole <= 0) {
		fprintf(out, "\nverdict: nothing to judge (no request with a complete split)\n");
		free(px);
		free(py);
		return NULL;
	}
	for (int p = 0; p < P_N; p++) {
		comp[part_comp(p)] += part[p];
		if (best < 0 || part[p] > part[best])
			best = p;
	}
	const char *what = in->ttft ? "time to first token" : "latency";
	fprintf(out, "\nverdict (%zu requests, shares of summed %s):\n", judged, what);
	fprintf(out, "  network:     %5.1f%%  upload %.1f%%, send-blocked %.1f%%, drain %.1f%%; "
		     "%llu retransmitted segments\n",
		100 * comp[LS_C_NETWORK] / whole, 100 * part[LS_S_NET_UPLOAD] / whole,
		100 * part[LS_S_NET_SEND_BLOCKED] / whole, 100 * part[LS_S_NET_DRAIN] / whole,
		(unsigned long long)retrans);
	fprintf(out, "  engine:      queueing.engine %.1f%%, compute %.1f%%, transfer %.1f%%",
		100 * part[LS_S_Q_ENGINE] / whole, 100 * comp[LS_C_COMPUTE] / whole,
		100 * comp[LS_C_TRANSFER] / whole);
	if (nb)
		fprintf(out, "; batch at scheduling mean %.1f max %u", (double)batch_sum / nb,
			batch_max);
	if (joined)
		fprintf(out, "; %zu preempted", preempted);
	fprintf(out, "\n");
	double rho = pearson(px, py, npx);
	fprintf(out, "  application: peak concurrency %d; prompt size vs TTFT correlation %s",
		max_concurrency(in->reqs, in->n), isnan(rho) ? "n/a" : "");
	if (!isnan(rho))
		fprintf(out, "%.2f", rho);
	fprintf(out, "; %zu aborted or reset of %zu\n", aborted, in->n);
	fprintf(out, "  host:        on CPU %.1f%%, waiting for a CPU (queueing.cpu) %.1f%%, "
		     "socket queueing %.1f%%, other %.1f%%\n",
		100 * part[P_HOST] / whole, 100 * part[LS_S_Q_CPU] / whole,
		100 * part[LS_S_Q_SOCKET] / whole, 100 * part[P_OTHER] / whole);
	if (!in->have_engine || !in->have_gpu || !in->have_sched)
		fprintf(out, "  missing:     %s%s%s(their parts are not claimed)\n",
			in->have_engine ? "" : "engine events (queueing.engine inferred or absent) ",
			in->have_gpu ? "" : "GPU timings (no compute/transfer) ",
			in->have_sched ? "" : "scheduler events (no host/queueing.cpu) ");
	fprintf(out, "verdict: %s dominates %s (%.1f%% of it, %s %.1f%%)\n  try: %s\n",
		part_name(best), what, 100 * part[best] / whole, ls_comp_name(part_comp(best)),
		100 * comp[part_comp(best)] / whole, remedy(best));
	free(px);
	free(py);
	return part_name(best);
}
