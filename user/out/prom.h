/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The Prometheus sink: cumulative histograms and counters of the split,
 * fed request by request, written in the text exposition format (version
 * 0.0.4: # HELP and # TYPE per family, cumulative _bucket{le} with +Inf,
 * _sum, _count). Labels are bounded: outcome, component and sub-part only;
 * never a request, client or port. Bucket edges: vLLM's and OpenTelemetry
 * gen_ai's (see prom.c).
 */
#ifndef LATSPLIT_OUT_PROM_H
#define LATSPLIT_OUT_PROM_H

#include <stdint.h>
#include <stdio.h>

#include "attribute.h"
#include "verdict.h"
#include "requests.h"

#define LS_PROM_MAX_EDGES 32

struct ls_prom_hist {
	uint64_t bucket[LS_PROM_MAX_EDGES + 1]; /* per edge, not cumulative; last: +Inf */
	uint64_t count;
	double sum; /* seconds */
};

/* Host and other are parts of their own: the verdict's parts. */
#define LS_PROM_PARTS LS_VERDICT_PARTS

struct ls_prom {
	struct ls_prom_hist total, ttft, part[LS_PROM_PARTS];
	uint64_t outcomes[LS_REQ_NOUTCOMES];
	uint64_t retransmits;
	/* set by the live source before each scrape */
	uint64_t drops, stacks_lost, in_flight;
	double gpu_busy_ratio; /* < 0: no GPU data */
};

void ls_prom_init(struct ls_prom *p);
/* A request delivered (provisional split): its outcome, total and TTFT. */
void ls_prom_delivered(struct ls_prom *p, const struct ls_request *r, const struct ls_split *s);
/* Its final split: the parts and retransmits, and the rest unless
 * ls_prom_delivered counted it (r->delivered_told). */
void ls_prom_add(struct ls_prom *p, const struct ls_request *r, const struct ls_split *s);
/* The exposition text. */
void ls_prom_write(FILE *out, const struct ls_prom *p);

#endif
