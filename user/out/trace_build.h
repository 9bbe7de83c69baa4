/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The Perfetto timeline's model, as one analysis sink (`latsplit
 * timeline`; the writer is out/perfetto.c): one track per request (under
 * "requests"): its whole span, its phases (the core's, ls_phases_of) with
 * the split as annotations, instants at the first token, its delivery and
 * the ACK; one track per engine thread (on CPU, runnable, blocked), per GPU
 * stream (kernels and copies, bytes and direction), flows from each launch
 * to its kernel; counters (requests in flight, GPU busy, run queue,
 * retransmits); engine events as instants on their process.
 */
#ifndef LATSPLIT_OUT_TRACE_BUILD_H
#define LATSPLIT_OUT_TRACE_BUILD_H

#include <stdio.h>

#include "analysis.h"

struct ls_trace;

/* Filters: request and pid (0: all); [w0, w1] seconds from the capture's
 * first event (w1 0: no window). NULL when out of memory. */
struct ls_trace *ls_trace_new(unsigned long request, unsigned long pid, double w0, double w1);
struct ls_sink ls_trace_sink(struct ls_trace *t);
/* After the analysis: the requests drawn; the trace written (0, or -1). */
size_t ls_trace_requests(const struct ls_trace *t);
int ls_trace_write(struct ls_trace *t, FILE *out, size_t *nev);
void ls_trace_free(struct ls_trace *t);

#endif
