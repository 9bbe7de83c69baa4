// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The verdict's sinks: the report's text section and report --json's last
 * record. The verdict itself is computed in core/verdict.c.
 */
#include <math.h>

#include "out/json.h"
#include "verdict.h"

#define P_HOST LS_VERDICT_HOST
#define P_OTHER LS_VERDICT_OTHER
#define P_N LS_VERDICT_PARTS

/* A share as text, "-" when no source observed it (unknown, not 0). */
static const char *share(char *buf, bool seen, double x, const char *fmt)
{
	if (!seen)
		return "-";
	snprintf(buf, 16, fmt, 100 * x);
	return buf;
}

void ls_verdict_line(const struct ls_verdict *v, char *buf, size_t len)
{
	const double *part = v->part, *comp = v->comp;
	int best = v->best;

	if (best < 0) {
		snprintf(buf, len, "verdict: nothing to judge (no request with a complete split)");
		return;
	}
	snprintf(buf, len, "verdict: %s dominates %s (%.1f%% of it, %s %.1f%%)",
		 ls_verdict_part_name(best), v->ttft ? "time to first token" : "latency",
		 100 * part[best] / v->whole, ls_comp_name(ls_verdict_part_comp(best)),
		 100 * comp[ls_verdict_part_comp(best)] / v->whole);
}

void ls_verdict_print(FILE *out, const struct ls_verdict *v)
{
	char line[512];
	double whole = v->whole;
	const double *part = v->part, *comp = v->comp;
	int best = v->best;

	ls_verdict_line(v, line, sizeof(line));
	if (best < 0) {
		fprintf(out, "\n%s\n", line);
		return;
	}
	const char *what = v->ttft ? "time to first token" : "latency";
	char b[12][16];
#define P(i, k) share(b[i], v->seen[k], part[k] / whole, "%.1f%%")
#define C(i, k) share(b[i], v->seen_comp[k], comp[k] / whole, "%.1f%%")
	fprintf(out, "\nverdict (%zu requests, shares of summed %s):\n", v->judged, what);
	fprintf(out, "  network:     %6s  connect %s, upload %s, send-blocked %s, drain %s; %llu "
		     "retransmitted segments\n",
		share(b[0], v->seen_comp[LS_C_NETWORK], comp[LS_C_NETWORK] / whole, "%5.1f%%"),
		P(1, LS_S_NET_CONNECT), P(2, LS_S_NET_UPLOAD), P(3, LS_S_NET_SEND_BLOCKED),
		P(4, LS_S_NET_DRAIN), (unsigned long long)v->retrans);
	if (part[LS_S_NET_WIRE] > 0)
		fprintf(out, "               first token on the wire (network.wire) %.1f%%\n",
			100 * part[LS_S_NET_WIRE] / whole);
	if (v->proxied) {
		fprintf(out, "  proxy:       %zu requests crossed a traced proxy: inside it %.1f%% of "
			     "their latency, %.1f%% of their time to first token (network.proxy)\n",
			v->proxied, 100 * v->proxy_share, 100 * v->proxy_ttft_share);
		if (v->proxy_ttft_share >= 0.5)
			fprintf(out, "               the proxy held the stream: tokens the engine had "
				     "written waited in it (a buffering proxy: stream through it, e.g. "
				     "nginx proxy_buffering off)\n");
	}
	if (v->nagle)
		fprintf(out, "  nagle:       %zu of %zu requests had a token held by Nagle (a small "
			     "write waiting for an ACK): set TCP_NODELAY on the server's sockets\n",
			v->nagle, v->n);
	fprintf(out, "  engine:      queueing.engine %s, compute %s, transfer %s", P(5, LS_S_Q_ENGINE),
		C(6, LS_C_COMPUTE), C(7, LS_C_TRANSFER));
	if (v->nbatch)
		fprintf(out, "; batch at scheduling mean %.1f max %u", v->batch_mean, v->batch_max);
	if (v->joined)
		fprintf(out, "; %zu preempted", v->preempted);
	if (v->spans)
		fprintf(out, "; engine spans (OTLP) %llu received, %llu joined no request",
			(unsigned long long)v->spans, (unsigned long long)v->spans_unjoined);
	fprintf(out, "\n");
	fprintf(out, "  application: peak concurrency %d; prompt size vs TTFT correlation %s",
		v->peak_concurrency, isnan(v->rho) ? "n/a" : "");
	if (!isnan(v->rho))
		fprintf(out, "%.2f", v->rho);
	fprintf(out, "; %zu aborted or reset of %zu", v->aborted, v->n);
	if (v->unparsed) /* their bytes moved; the capture lacked what parsing needed */
		fprintf(out, "; %zu unparsed (not split: see the report's header)", v->unparsed);
	fputc('\n', out);
	fprintf(out, "  host:        on CPU %s, waiting for a CPU (queueing.cpu) %s, socket queueing "
		     "%s, other %s\n",
		P(8, P_HOST), P(9, LS_S_Q_CPU), P(10, LS_S_Q_SOCKET), P(11, P_OTHER));
	if (v->cpu_compute_share > 0)
		fprintf(out, "               the engine's own compute: %.1f%% of its CPU samples in "
			     "ggml/BLAS frames (most: %s)\n",
			100 * v->cpu_compute_share, v->cpu_compute_frame);
#undef P
#undef C
	if (!v->have_engine || !v->have_gpu || !v->have_sched)
		fprintf(out, "  missing:     %s%s%s(their parts are not claimed)\n",
			v->have_engine ? "" : "engine events (queueing.engine inferred or absent) ",
			v->have_gpu ? "" : "GPU timings (no compute/transfer) ",
			v->have_sched ? "" : "scheduler events (no host/queueing.cpu) ");
	fprintf(out, "%s\n  try: %s\n", line, ls_verdict_advice(v));
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
		ls_verdict_part_name(v->best), ls_comp_name(ls_verdict_part_comp(v->best)), v->part[v->best] / v->whole,
		v->comp[ls_verdict_part_comp(v->best)] / v->whole);
	ls_json_kv_str(out, "remedy", ls_verdict_advice(v), true);
	fprintf(out, "\"components\":{");
	/* what no source observed is null, never 0 */
	for (int c = 0; c < LS_C_N; c++)
		if (v->seen_comp[c])
			fprintf(out, "%s\"%s\":%.4f", c ? "," : "", ls_comp_name(c), v->comp[c] / v->whole);
		else
			fprintf(out, "%s\"%s\":null", c ? "," : "", ls_comp_name(c));
	fprintf(out, "},\"parts\":{");
	for (int p = 0; p < P_N; p++)
		if (p < LS_S_N && ls_sub_optional(p) && !v->seen[p])
			continue; /* no request had it: absent */
		else if (v->seen[p])
			fprintf(out, "%s\"%s\":%.4f", p ? "," : "", ls_verdict_part_name(p),
				v->part[p] / v->whole);
		else
			fprintf(out, "%s\"%s\":null", p ? "," : "", ls_verdict_part_name(p));
	fprintf(out, "},\"retransmits\":%llu,\"peak_concurrency\":%d,", (unsigned long long)v->retrans,
		v->peak_concurrency);
	if (isnan(v->rho))
		fprintf(out, "\"prompt_ttft_correlation\":null,");
	else
		fprintf(out, "\"prompt_ttft_correlation\":%.4f,", v->rho);
	fprintf(out, "\"aborted\":%zu,\"unparsed\":%zu,\"preempted\":%zu,\"batch_mean\":%.2f,"
		     "\"batch_max\":%u,\"nagle_held_requests\":%zu,",
		v->aborted, v->unparsed, v->preempted, v->batch_mean, v->batch_max, v->nagle);
	if (v->proxied)
		fprintf(out, "\"proxied\":%zu,\"proxy_share\":%.4f,\"proxy_ttft_share\":%.4f,",
			v->proxied, v->proxy_share, v->proxy_ttft_share);
	if (v->spans)
		fprintf(out, "\"engine_spans\":{\"received\":%llu,\"unjoined\":%llu},",
			(unsigned long long)v->spans, (unsigned long long)v->spans_unjoined);
	if (v->cpu_compute_share > 0) {
		fprintf(out, "\"cpu_compute\":{\"share\":%.4f,", v->cpu_compute_share);
		ls_json_kv_str(out, "frame", v->cpu_compute_frame, false);
		fprintf(out, "},");
	}
	if (v->probe_skips) /* events never made (only when some were) */
		fprintf(out, "\"probe_skips\":%llu,", (unsigned long long)v->probe_skips);
	fprintf(out, "\"missing\":[");
	const char *missing[3] = {v->have_engine ? NULL : "engine", v->have_gpu ? NULL : "gpu",
				  v->have_sched ? NULL : "sched"};
	for (int i = 0, first = 1; i < 3; i++)
		if (missing[i]) {
			fprintf(out, "%s\"%s\"", first ? "" : ",", missing[i]);
			first = 0;
		}
	fprintf(out, "]}\n");
}

