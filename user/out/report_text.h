/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * `report`'s text, as an analysis sink: the capture's header facts, a
 * summary (percentiles of total, TTFT and every component and sub-part the
 * capture supports, gathered request by request in bounded memory), the
 * slowest requests, the GPU, per-client network facts and the verdict.
 */
#ifndef LATSPLIT_OUT_REPORT_TEXT_H
#define LATSPLIT_OUT_REPORT_TEXT_H

#include <stdbool.h>
#include <stdio.h>

#include "analysis.h"
#include "trust.h"

struct ls_report_text;

/* print: the sink's end prints it to out (else ls_report_text_print, by
 * whoever embeds it). path: the capture's, as shown. NULL: out of memory. */
struct ls_report_text *ls_report_text_new(FILE *out, const char *path, bool ttft, size_t top,
					  bool print);
struct ls_sink ls_report_text_sink(struct ls_report_text *t);
/* Per-client rows name the client a trusted proxy forwarded for (see
 * core/trust.h); t: the networks trusted, kept by the caller. */
void ls_report_text_trust(struct ls_report_text *t, const struct ls_trust *trust);
/* The whole text, after the analysis's end. */
void ls_report_text_print(FILE *out, struct ls_report_text *t, struct ls_analysis *a);
bool ls_report_text_ttft(const struct ls_report_text *t);
void ls_report_text_free(struct ls_report_text *t);

#endif
