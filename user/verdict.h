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

/* Writes the verdict section; returns the dominant sub-part's name (or a
 * component's), or NULL when there is nothing to judge. */
const char *ls_verdict(FILE *out, const struct ls_verdict_in *in);

#endif
