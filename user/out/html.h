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

#include "analysis.h"
#include "attribute.h"
#include "flame.h"
#include "requests.h"
#include "timeline.h"
#include "out/report_text.h"

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
	const char *path, *outpath;
	FILE *out; /* set after init: written there instead of outpath */
	struct ls_report_text *text;
	char why[256];
};

/* path: the capture's; outpath: the page's; text: the report's text sink
 * (printed into the page at the end; owned by the caller). */
void ls_html_init(struct ls_html *h, const char *path, const char *outpath,
		  struct ls_report_text *text);
/* The sink (ctx: h): requests for the waterfall and the latency flame, GPU
 * spans for the busy strip; its end writes the page to outpath. */
struct ls_sink ls_html_sink(struct ls_html *h);
void ls_html_free(struct ls_html *h);

#endif
