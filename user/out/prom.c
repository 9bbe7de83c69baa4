// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The Prometheus sink (see prom.h).
 *
 * Bucket edges, seconds:
 * - request duration: OpenTelemetry gen_ai.server.request.duration's low
 *   edges (10 ms .. 160 ms) then vLLM's e2e_request_latency_seconds (0.3 s
 *   .. 7680 s);
 * - time to first token, and each component: vLLM's
 *   time_to_first_token_seconds (= OTel gen_ai.server.time_to_first_token
 *   to 10 s, then to 2560 s), which starts at 1 ms.
 */
#include <string.h>

#include "prom.h"
#include "verdict.h"

static const double duration_edges[] = {0.01, 0.02, 0.04, 0.08, 0.16, 0.3, 0.5, 0.8, 1.0,
					  1.5, 2.0, 2.5, 5.0, 10.0, 15.0, 20.0, 30.0, 40.0,
					  50.0, 60.0, 120.0, 240.0, 480.0, 960.0, 1920.0, 7680.0};
static const double ttft_edges[] = {0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1,
				      0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0,
				      20.0, 40.0, 80.0, 160.0, 640.0, 2560.0};
#define NDUR (sizeof(duration_edges) / sizeof(double))
#define NTTFT (sizeof(ttft_edges) / sizeof(double))
_Static_assert(NDUR <= LS_PROM_MAX_EDGES && NTTFT <= LS_PROM_MAX_EDGES, "edges");

void ls_prom_init(struct ls_prom *p)
{
	memset(p, 0, sizeof(*p));
	p->gpu_busy_ratio = -1;
}

static void hist_add(struct ls_prom_hist *h, const double *edges, size_t n, uint64_t ns)
{
	double s = ns / 1e9;
	size_t i = 0;

	while (i < n && s > edges[i])
		i++;
	h->bucket[i]++;
	h->count++;
	h->sum += s;
}

/* A request is counted once: its outcome, total and TTFT when it is
 * delivered (they are known then and do not change), its parts and
 * retransmits when its split is final (late records may still move them). */
void ls_prom_delivered(struct ls_prom *p, const struct ls_request *r, const struct ls_split *s)
{
	p->outcomes[r->outcome < LS_REQ_NOUTCOMES ? r->outcome : LS_REQ_INCOMPLETE]++;
	if (s->total == LS_NULL)
		return; /* no split: partial, or no marks */
	hist_add(&p->total, duration_edges, NDUR, s->total);
	if (s->ttft != LS_NULL)
		hist_add(&p->ttft, ttft_edges, NTTFT, s->ttft);
}

void ls_prom_add(struct ls_prom *p, const struct ls_request *r, const struct ls_split *s)
{
	if (!r->delivered_told)
		ls_prom_delivered(p, r, s);
	p->retransmits += r->retransmits;
	if (s->total == LS_NULL)
		return;
	for (int k = 0; k < LS_PROM_PARTS; k++) {
		uint64_t v = k < LS_S_N ? s->sub[k] : s->comp[ls_verdict_part_comp(k)];
		if (v != LS_NULL)
			hist_add(&p->part[k], ttft_edges, NTTFT, v);
	}
}

static void hist_write(FILE *out, const char *name, const char *labels,
		       const struct ls_prom_hist *h, const double *edges, size_t n)
{
	uint64_t cum = 0;
	const char *sep = labels[0] ? "," : "";

	for (size_t i = 0; i < n; i++) {
		cum += h->bucket[i];
		fprintf(out, "%s_bucket{%s%sle=\"%g\"} %llu\n", name, labels, sep, edges[i],
			(unsigned long long)cum);
	}
	fprintf(out, "%s_bucket{%s%sle=\"+Inf\"} %llu\n", name, labels, sep,
		(unsigned long long)h->count);
	fprintf(out, "%s_sum%s%s%s %.9f\n", name, labels[0] ? "{" : "", labels, labels[0] ? "}" : "",
		h->sum);
	fprintf(out, "%s_count%s%s%s %llu\n", name, labels[0] ? "{" : "", labels,
		labels[0] ? "}" : "", (unsigned long long)h->count);
}

void ls_prom_write(FILE *out, const struct ls_prom *p)
{
	char labels[128];

	fprintf(out, "# HELP latsplit_request_duration_seconds HTTP request latency, first byte in "
		     "to last byte acknowledged (requests with a split).\n"
		     "# TYPE latsplit_request_duration_seconds histogram\n");
	hist_write(out, "latsplit_request_duration_seconds", "", &p->total, duration_edges, NDUR);
	fprintf(out, "# HELP latsplit_time_to_first_token_seconds Time to first token as the "
		     "client sees it (first token written).\n"
		     "# TYPE latsplit_time_to_first_token_seconds histogram\n");
	hist_write(out, "latsplit_time_to_first_token_seconds", "", &p->ttft, ttft_edges, NTTFT);
	fprintf(out, "# HELP latsplit_request_component_seconds Each request's latency split into "
		     "components and sub-parts (they sum to the request's duration).\n"
		     "# TYPE latsplit_request_component_seconds histogram\n");
	for (int k = 0; k < LS_PROM_PARTS; k++) {
		if (k < LS_S_N && ls_sub_optional(k) && !p->part[k].count)
			continue; /* no request had it */
		snprintf(labels, sizeof(labels), "component=\"%s\",sub=\"%s\"", ls_comp_name(ls_verdict_part_comp(k)),
			 ls_verdict_part_name(k));
		hist_write(out, "latsplit_request_component_seconds", labels, &p->part[k], ttft_edges,
			   NTTFT);
	}
	fprintf(out, "# HELP latsplit_requests_total Requests seen, by outcome.\n"
		     "# TYPE latsplit_requests_total counter\n");
	for (int o = 0; o < LS_REQ_NOUTCOMES; o++)
		fprintf(out, "latsplit_requests_total{outcome=\"%s\"} %llu\n", ls_outcome_name(o),
			(unsigned long long)p->outcomes[o]);
	fprintf(out, "# HELP latsplit_retransmits_total TCP segments retransmitted in responses.\n"
		     "# TYPE latsplit_retransmits_total counter\n"
		     "latsplit_retransmits_total %llu\n",
		(unsigned long long)p->retransmits);
	fprintf(out, "# HELP latsplit_ringbuf_drops_total Events the kernel could not hand over "
		     "(ring buffer full).\n"
		     "# TYPE latsplit_ringbuf_drops_total counter\n"
		     "latsplit_ringbuf_drops_total %llu\n",
		(unsigned long long)p->drops);
	fprintf(out, "# HELP latsplit_stacks_lost_total Stacks not captured (stack map full or "
		     "collisions).\n"
		     "# TYPE latsplit_stacks_lost_total counter\n"
		     "latsplit_stacks_lost_total %llu\n",
		(unsigned long long)p->stacks_lost);
	fprintf(out, "# HELP latsplit_requests_in_flight Requests begun and not yet split.\n"
		     "# TYPE latsplit_requests_in_flight gauge\n"
		     "latsplit_requests_in_flight %llu\n",
		(unsigned long long)p->in_flight);
	if (p->gpu_busy_ratio >= 0)
		fprintf(out, "# HELP latsplit_gpu_busy_ratio Share of time GPU 0 ran kernels or "
			     "copies, since the start.\n"
			     "# TYPE latsplit_gpu_busy_ratio gauge\n"
			     "latsplit_gpu_busy_ratio %.6f\n",
			p->gpu_busy_ratio);
}
