/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * `report --html`: one self-contained page (no network fetch): the text
 * report (summary, slowest, per client, GPU) and the verdict; a waterfall of
 * the requests (stacked phases and components on a time axis, sortable,
 * values on hover); the latency and GPU flame graphs (the SVG renderer,
 * inline); a GPU busy strip; the sources that were missing. Requests are
 * kept for the waterfall up to LS_HTML_MAX_ROWS, evenly sampled beyond, and
 * the page says so.
 */
#ifndef LATSPLIT_OUT_HTML_H
#define LATSPLIT_OUT_HTML_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "attribute.h"
#include "flame.h"
#include "requests.h"
#include "timeline.h"

#define LS_HTML_MAX_ROWS 2000

struct ls_html_row {
	uint64_t id, t_start, end;
	uint64_t ph[6]; /* upload, socket, frontend, engine queue, served, drain: ns */
	uint64_t total, ttft, comp[LS_C_N];
	int status;
	char path[64], xrid[40], outcome[12];
};

struct ls_html {
	struct ls_html_row *rows;
	size_t nrows, seen, stride;
	struct ls_flame *latency;
	struct ls_span *busy; /* GPU busy, merged as they come (bounded) */
	size_t nbusy, capbusy;
	uint64_t first_ts, last_ts;
};

void ls_html_init(struct ls_html *h);
/* A request sink's callback (ctx: struct ls_html). */
void ls_html_request(void *ctx, const struct ls_request *r, const struct ls_split *s,
		     const struct ls_engine_join *j, const struct ls_timeline *tl);
/* A span sink's (GPU spans for the busy strip). */
void ls_html_span(void *ctx, enum ls_span_kind kind, uint32_t tgid, uint32_t tid, uint64_t b,
		  uint64_t e, const struct ls_hdr *rec);
/* The page. text: the text report; verdict_line: its last verdict line;
 * missing: the sources missing, in words ("" if none). */
void ls_html_write(FILE *out, struct ls_html *h, const char *title, const char *text,
		   const char *verdict_line, const char *missing, const struct ls_timeline *tl);
void ls_html_free(struct ls_html *h);

#endif
