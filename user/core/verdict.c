// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The verdict (see verdict.h). Shares are of the summed latency (or TTFT) of
 * the requests whose split is known; the dominant cause is the sub-part with
 * the largest share, host and other counted as their own parts.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "grow.h"
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
	case LS_S_NET_CONNECT:
		return "new connections wait for their handshakes: reuse connections (keep-alive, "
		       "client connection pools); a slow handshake is the path's RTT and loss, or a "
		       "full listen queue (raise the backlog, add acceptors)";
	case LS_S_NET_UPLOAD:
		return "requests take long to arrive: long prompts over a slow or lossy uplink; "
		       "compress request bodies, move clients closer, check loss toward the server";
	case LS_S_NET_WIRE:
		return "tokens wait to leave or to cross the network: set TCP_NODELAY on the server's "
		       "sockets if Nagle holds them (see wire.holds), else check loss and the path";
	case LS_S_NET_SEND_BLOCKED:
	case LS_S_NET_DRAIN:
		return "responses wait on the network: loss and RTT toward the clients (see per "
		       "client); check the path (mtr), consider BBR, keep streams' clients close";
	case LS_S_NET_PROXY:
		return "the proxy in front of the engine holds requests and tokens: turn its response "
		       "buffering off for streams (nginx: proxy_buffering off; proxy_http_version "
		       "1.1; keep-alive upstream), and check its own CPU and upstream connections";
	case LS_S_Q_SOCKET:
		return "requests sit in the socket before the server reads them: the HTTP front end "
		       "is saturated; add front-end workers or processes";
	case LS_S_Q_ENGINE:
		return "requests wait for a batch slot: raise max batch size / max batched tokens if "
		       "memory allows, else add replicas; watch preemptions (KV cache too small)";
	case LS_S_Q_APP:
		return "requests wait in the application's own queue for its one slot (a single-"
		       "slot server: llama.cpp with one slot, a FIFO in front of the model): add "
		       "slots or parallel sequences (llama.cpp --parallel), batch, or add replicas";
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

const char *ls_verdict_advice(const struct ls_verdict *v)
{
	if (v->best == P_HOST && v->cpu_compute_share >= 0.3)
		return "the engine computes on the CPU (ggml/BLAS frames: see host): the model's own "
		       "work, not the serving stack; offload to a GPU (llama.cpp -ngl), a smaller or "
		       "more quantised model, threads matched to the physical cores (-t), fewer "
		       "parallel slots per core";
	return ls_verdict_remedy(v->best);
}

static int tick_cmp(const struct ls_tick *x, const struct ls_tick *y)
{
	if (x->t != y->t)
		return x->t < y->t ? -1 : 1;
	return x->d - y->d; /* ends before starts at the same instant */
}

static void tick_push(struct ls_verdict_acc *a, uint64_t t, int d)
{
	size_t i;

	GROW(a->ticks, a->nticks, a->capticks);
	i = a->nticks++;
	a->ticks[i] = (struct ls_tick){t, d};
	while (i && tick_cmp(&a->ticks[i], &a->ticks[(i - 1) / 2]) < 0) {
		struct ls_tick x = a->ticks[i];
		a->ticks[i] = a->ticks[(i - 1) / 2];
		a->ticks[(i - 1) / 2] = x;
		i = (i - 1) / 2;
	}
}

static struct ls_tick tick_pop(struct ls_verdict_acc *a)
{
	struct ls_tick top = a->ticks[0];
	size_t i = 0;

	a->ticks[0] = a->ticks[--a->nticks];
	for (;;) {
		size_t l = 2 * i + 1, r = l + 1, m = i;
		if (l < a->nticks && tick_cmp(&a->ticks[l], &a->ticks[m]) < 0)
			m = l;
		if (r < a->nticks && tick_cmp(&a->ticks[r], &a->ticks[m]) < 0)
			m = r;
		if (m == i)
			break;
		struct ls_tick x = a->ticks[i];
		a->ticks[i] = a->ticks[m];
		a->ticks[m] = x;
		i = m;
	}
	return top;
}

void ls_verdict_acc_sweep(struct ls_verdict_acc *a, uint64_t before)
{
	while (a->nticks && a->ticks[0].t < before) {
		a->cur += tick_pop(a).d;
		if (a->cur > a->peak)
			a->peak = a->cur;
	}
}

void ls_verdict_acc_add(struct ls_verdict_acc *a, const struct ls_request *r,
			const struct ls_split *s, const struct ls_engine_join *j)
{
	a->n++;
	a->nagle += r->holds[LS_HOLD_NAGLE] > 0;
	if (r->outcome == LS_REQ_ABORTED || r->outcome == LS_REQ_RESET)
		a->aborted++;
	a->unparsed += r->outcome == LS_REQ_UNPARSED;
	a->retrans += r->retransmits;
	a->timed += s && s->engine_source && !strcmp(s->engine_source, "timings");
	if (j && j->joined) {
		a->joined++;
		a->preempted += j->preemptions > 0;
		if (j->batch_size) {
			a->batch_sum += j->batch_size;
			a->nbatch++;
			if (j->batch_size > a->batch_max)
				a->batch_max = j->batch_size;
		}
	}
	/* sums stay exact within __int128 for sane sizes (a prompt under 1 TB,
	 * a TTFT under ~4.9 h); a value beyond is a damaged record */
	if (s->ttft != LS_NULL && r->bytes_in && r->bytes_in < (1ull << 40) &&
	    s->ttft < (1ull << 44)) {
		__int128 x = r->bytes_in, y = s->ttft;
		a->npx++;
		a->sx += x, a->sy += y, a->sxx += x * x, a->syy += y * y, a->sxy += x * y;
	}
	for (int t = 0; t < 2; t++) {
		const uint64_t *sub = t ? s->ttft_sub : s->sub;
		const uint64_t *c = t ? s->ttft_comp : s->comp;
		uint64_t w = t ? s->ttft : s->total;
		if (w == LS_NULL || w == 0)
			continue;
		a->w[t].judged++;
		a->w[t].whole += w;
		if (sub[LS_S_NET_PROXY] != LS_NULL) {
			a->proxied += !t;
			a->proxy_whole[t] += w;
			a->proxy_part[t] += sub[LS_S_NET_PROXY];
		}
		for (int p = 0; p < LS_S_N; p++)
			if (sub[p] != LS_NULL) {
				a->w[t].part[p] += sub[p];
				a->w[t].seen[p] = true;
			}
		if (c[LS_C_HOST] != LS_NULL) {
			a->w[t].part[P_HOST] += c[LS_C_HOST];
			a->w[t].seen[P_HOST] = true;
		}
		if (c[LS_C_OTHER] != LS_NULL) {
			a->w[t].part[P_OTHER] += c[LS_C_OTHER];
			a->w[t].seen[P_OTHER] = true;
		}
	}
	if (r->t_start && r->t_end) {
		tick_push(a, r->t_start, 1);
		tick_push(a, r->t_end, -1);
	}
}

/* Pearson's r from exact integer sums (combined in long double); NAN when
 * meaningless. */
static double pearson(const struct ls_verdict_acc *a)
{
	long double n = a->npx, vx, vy, cxy, sx = a->sx, sy = a->sy;

	if (a->npx < 3)
		return NAN;
	vx = n * (long double)a->sxx - sx * sx; /* n^2 * variance */
	vy = n * (long double)a->syy - sy * sy;
	cxy = n * (long double)a->sxy - sx * sy;
	/* prompts of (nearly) one size say nothing about size vs TTFT */
	if (vx < 1e-4L * sx * sx)
		return NAN;
	if (vx <= 0 || vy <= 0)
		return NAN;
	return (double)(cxy / sqrtl(vx * vy));
}

void ls_verdict_from_acc(struct ls_verdict_acc *a, bool ttft, bool have_gpu, bool have_sched,
			 bool have_engine, struct ls_verdict *v)
{
	int t = ttft;

	ls_verdict_acc_sweep(a, UINT64_MAX);
	memset(v, 0, sizeof(*v));
	v->ttft = ttft;
	v->n = a->n;
	v->have_engine = have_engine || a->timed; /* timings are the engine's own word */
	v->have_gpu = have_gpu;
	v->have_sched = have_sched;
	v->best = -1;
	v->aborted = a->aborted;
	v->unparsed = a->unparsed;
	v->nagle = a->nagle;
	v->retrans = a->retrans;
	v->joined = a->joined;
	v->preempted = a->preempted;
	v->nbatch = a->nbatch;
	v->batch_max = a->batch_max;
	v->batch_mean = a->nbatch ? (double)a->batch_sum / a->nbatch : 0;
	v->rho = pearson(a);
	v->peak_concurrency = a->peak;
	v->proxied = a->proxied;
	v->proxy_share = a->proxy_whole[0] > 0 ? a->proxy_part[0] / a->proxy_whole[0] : 0;
	v->proxy_ttft_share = a->proxy_whole[1] > 0 ? a->proxy_part[1] / a->proxy_whole[1] : 0;
	v->judged = a->w[t].judged;
	v->whole = a->w[t].whole;
	memcpy(v->part, a->w[t].part, sizeof(v->part));
	memcpy(v->seen, a->w[t].seen, sizeof(v->seen));
	if (!v->judged || v->whole <= 0)
		return;
	for (int p = 0; p < P_N; p++) {
		v->comp[ls_verdict_part_comp(p)] += v->part[p];
		v->seen_comp[ls_verdict_part_comp(p)] |= v->seen[p];
		if (v->best < 0 || v->part[p] > v->part[v->best])
			v->best = p;
	}
}

void ls_verdict_acc_free(struct ls_verdict_acc *a)
{
	free(a->ticks);
	memset(a, 0, sizeof(*a));
}

const char *ls_verdict_dominant(const struct ls_verdict *v)
{
	return v->best < 0 ? NULL : ls_verdict_part_name(v->best);
}
