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

#define P_HOST LS_VERDICT_HOST
#define P_OTHER LS_VERDICT_OTHER
#define P_N LS_VERDICT_PARTS

const char *ls_verdict_part_name(int p)
{
	return p == P_HOST ? "host" : p == P_OTHER ? "other" : ls_sub_name(p);
}

int ls_verdict_part_comp(int p)
{
	if (p == P_HOST)
		return LS_C_HOST;
	if (p == P_OTHER)
		return LS_C_OTHER;
	return ls_sub_comp(p);
}

const char *ls_verdict_remedy(int p)
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
		v->comp[ls_verdict_part_comp(p)] += v->part[p];
		if (v->best < 0 || v->part[p] > v->part[v->best])
			v->best = p;
	}
}

const char *ls_verdict_dominant(const struct ls_verdict *v)
{
	return v->best < 0 ? NULL : ls_verdict_part_name(v->best);
}

const char *ls_verdict(FILE *out, const struct ls_verdict_in *in)
{
	struct ls_verdict v;

	ls_verdict_compute(in, &v);
	ls_verdict_print(out, &v);
	return ls_verdict_dominant(&v);
}
