/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The verdict: walks the layers an operator would check — network, engine
 * (queueing vs compute vs transfer), application (concurrency, prompt size,
 * aborted requests), host (CPU contention) — and names the dominant cause
 * with its evidence and the usual remedies. It claims only what the data
 * supports and says which sources were missing.
 */
#ifndef LATSPLIT_USER_VERDICT_H
#define LATSPLIT_USER_VERDICT_H

#include <stdbool.h>
#include <stdio.h>
#include "attribute.h"
#include "requests.h"
#include "timeline.h"

/* Parts the verdict weighs: every sub-part, plus host and other. */
#define LS_VERDICT_HOST LS_S_N
#define LS_VERDICT_OTHER (LS_S_N + 1)
#define LS_VERDICT_PARTS (LS_S_N + 2)

/* The verdict as data: every sink renders it (text, JSON, ...). Shares are
 * of `whole`, the summed latency (or TTFT) of the `judged` requests. */
struct ls_verdict {
	bool ttft, have_engine, have_gpu, have_sched;
	size_t n, judged, aborted, unparsed, preempted, joined, nbatch;
	size_t nagle; /* requests with a token held by Nagle */
	double whole, part[LS_VERDICT_PARTS], comp[LS_C_N];
	/* a part (component) some judged request's sources observed: the
	 * others are not 0 but unknown, printed "-" and null (DESIGN §6) */
	bool seen[LS_VERDICT_PARTS], seen_comp[LS_C_N];
	unsigned long long retrans;
	double batch_mean, rho; /* rho: prompt size vs TTFT, NAN when meaningless */
	uint32_t batch_max;
	int peak_concurrency;
	int best; /* dominant part, -1: nothing to judge */
	/* requests joined across a traced proxy (DESIGN §11): how many, and
	 * the shares of their summed TTFT and latency spent inside it */
	size_t proxied;
	double proxy_ttft_share, proxy_share;
	/* the engine's own spans (record --otlp-receive): received, and those
	 * that joined no request */
	uint64_t spans, spans_unjoined;
	uint64_t probe_skips; /* runs of latsplit's programs the kernel skipped */
	/* the engine group's CPU samples in ggml/BLAS frames (its own compute
	 * on the CPU), and the most common such frame; 0 and "" when none */
	double cpu_compute_share;
	char cpu_compute_frame[64];
};

struct ls_tick {
	uint64_t t;
	int d;
};

/* The verdict's inputs, summed request by request in bounded memory (the
 * peak concurrency sweeps request starts and ends in time order: ticks
 * before a horizon no later request can start at are swept as it moves). */
struct ls_verdict_acc {
	size_t n, aborted, unparsed, preempted, joined, nbatch, nagle;
	size_t timed; /* split by the timings in their responses (an engine source) */
	size_t proxied; /* with network.proxy: [0] latency, [1] TTFT sums below */
	double proxy_whole[2], proxy_part[2];
	unsigned long long retrans;
	uint64_t batch_sum;
	uint32_t batch_max;
	struct {
		size_t judged;
		double whole, part[LS_VERDICT_PARTS];
		bool seen[LS_VERDICT_PARTS];
	} w[2]; /* [0] latency, [1] TTFT */
	size_t npx; /* prompt bytes vs TTFT, exact sums */
	__int128 sx, sy, sxx, syy, sxy;
	struct ls_tick *ticks; /* a min-heap */
	size_t nticks, capticks;
	int cur, peak;
};

void ls_verdict_acc_add(struct ls_verdict_acc *a, const struct ls_request *r,
			const struct ls_split *s, const struct ls_engine_join *j);
/* Counts concurrency up to `before`: no request added later starts earlier. */
void ls_verdict_acc_sweep(struct ls_verdict_acc *a, uint64_t before);
/* The verdict over every request added (sweeps the rest). */
void ls_verdict_from_acc(struct ls_verdict_acc *a, bool ttft, bool have_gpu, bool have_sched,
			 bool have_engine, struct ls_verdict *v);
void ls_verdict_acc_free(struct ls_verdict_acc *a);
/* A part's name (a sub-part, "host" or "other"), its component, the usual
 * remedies when it dominates. */
const char *ls_verdict_part_name(int p);
int ls_verdict_part_comp(int p);
const char *ls_verdict_remedy(int p);
/* The advice for this verdict: the dominant part's, but host time of an
 * engine that computes on the CPU (ggml/BLAS in >= 30% of its samples) is
 * the model's compute, not tokenisation. */
const char *ls_verdict_advice(const struct ls_verdict *v);
/* The dominant sub-part's name ("host", "other" too), or NULL. */
const char *ls_verdict_dominant(const struct ls_verdict *v);
/* Its one line, "verdict: PART dominates ..." (user/out/verdict_out.c). */
void ls_verdict_line(const struct ls_verdict *v, char *buf, size_t len);
/* The report's verdict section (user/out/verdict_out.c). */
void ls_verdict_print(FILE *out, const struct ls_verdict *v);
/* One JSON record, {"type":"verdict",...}, the last line of report --json. */
void ls_verdict_json(FILE *out, const struct ls_verdict *v);

#endif
