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

struct ls_verdict_in {
	const struct ls_request *reqs;
	const struct ls_split *splits;
	const struct ls_engine_join *joins;
	size_t n;
	bool ttft; /* judge time to first token instead of total latency */
	bool have_gpu, have_sched, have_engine;
};

/* Parts the verdict weighs: every sub-part, plus host and other. */
#define LS_VERDICT_HOST LS_S_N
#define LS_VERDICT_OTHER (LS_S_N + 1)
#define LS_VERDICT_PARTS (LS_S_N + 2)

/* The verdict as data: every sink renders it (text, JSON, ...). Shares are
 * of `whole`, the summed latency (or TTFT) of the `judged` requests. */
struct ls_verdict {
	bool ttft, have_engine, have_gpu, have_sched;
	size_t n, judged, aborted, preempted, joined, nbatch;
	double whole, part[LS_VERDICT_PARTS], comp[LS_C_N];
	unsigned long long retrans;
	double batch_mean, rho; /* rho: prompt size vs TTFT, NAN when meaningless */
	uint32_t batch_max;
	int peak_concurrency;
	int best; /* dominant part, -1: nothing to judge */
};

void ls_verdict_compute(const struct ls_verdict_in *in, struct ls_verdict *v);
/* A part's name (a sub-part, "host" or "other"), its component, the usual
 * remedies when it dominates. */
const char *ls_verdict_part_name(int p);
int ls_verdict_part_comp(int p);
const char *ls_verdict_remedy(int p);
/* The dominant sub-part's name ("host", "other" too), or NULL. */
const char *ls_verdict_dominant(const struct ls_verdict *v);
/* The report's verdict section (user/out/verdict_out.c). */
void ls_verdict_print(FILE *out, const struct ls_verdict *v);
/* One JSON record, {"type":"verdict",...}, the last line of report --json. */
void ls_verdict_json(FILE *out, const struct ls_verdict *v);
/* compute + print; returns ls_verdict_dominant. */
const char *ls_verdict(FILE *out, const struct ls_verdict_in *in);

#endif
