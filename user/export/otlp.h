/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * OTLP span export (DESIGN.md §11), as an analysis sink: `report --otlp URL`
 * and `record --otlp URL`. Each request's final split becomes one SERVER
 * span, [T_start, T_dlv] on the wall clock (the capture header's pair),
 * joined to the request's traceparent when it has one, with the split as
 * attributes (latsplit.<component>_ns sum exactly to the span's duration)
 * and the request's phases as contiguous INTERNAL children. Spans are
 * encoded with protobuf-c from the OpenTelemetry project's own .proto files
 * (proto/, compiled at build time) and POSTed by libcurl, as OTLP/HTTP
 * (application/x-protobuf) to URL's /v1/traces: batched (512 requests, or
 * every 200 ms), retried with backoff on 429, 502-504 and transport errors,
 * through a bounded queue; every drop is counted.
 */
#ifndef LATSPLIT_EXPORT_OTLP_H
#define LATSPLIT_EXPORT_OTLP_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "analysis.h"

struct ls_otlp;

struct ls_otlp_stats {
	uint64_t requests;       /* handed to the exporter */
	uint64_t sent_requests;  /* their spans accepted by the endpoint */
	uint64_t sent_spans;     /* server spans and phase children */
	uint64_t skipped;        /* no span: no start or end (partial, unparsed) */
	uint64_t dropped_full;   /* the queue was full */
	uint64_t dropped_failed; /* the endpoint refused them, or retries ran out */
	uint64_t posts, retries;
	char last_error[256];
};

/* Checks URL (http:// or https://; a URL with no path gets /v1/traces).
 * 0, or -1 with a reason. */
int ls_otlp_check_url(const char *url, char *err, size_t len);
/* The exporter, its sender thread started. NULL with a reason. */
struct ls_otlp *ls_otlp_new(const char *url, char *err, size_t len);
/* The sink (final splits only). Its begin takes the wall-clock pair and the
 * host from the header; its end sends what is queued (retries bounded) and
 * fails when nothing could be delivered. */
struct ls_sink ls_otlp_sink(struct ls_otlp *o);
void ls_otlp_stats(struct ls_otlp *o, struct ls_otlp_stats *st);
/* One line: "N requests -> N spans sent to URL; ..." */
void ls_otlp_summary(struct ls_otlp *o, char *buf, size_t len);
/* Stops the sender (what is queued is sent first) and frees. */
void ls_otlp_free(struct ls_otlp *o);

#endif
