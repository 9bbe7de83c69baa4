/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Live mode (DESIGN.md §2): the recording's records, as written, feed the
 * analysis core as they come (a recorder tap); a clock tick lets it go on
 * when the host is quiet. Its request sinks: the Prometheus histograms
 * (served by libmicrohttpd on `record --metrics`), the recent window that
 * `latsplit top` shows, and a hook (the flight recorder's trigger).
 * Requests reach the sinks about 4 s after they end: the ordering window
 * and the grace period for late records, the same as from a file, so the
 * numbers equal `report`'s on the capture.
 */
#ifndef LATSPLIT_LIVE_LIVE_H
#define LATSPLIT_LIVE_LIVE_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "analysis.h"
#include "prom.h"
#include "top.h"

struct MHD_Daemon;

struct ls_live {
	struct ls_analysis a;
	bool started;
	struct ls_request_sink sink;
	pthread_mutex_t lock; /* prom, read by the HTTP thread */
	struct ls_prom prom;
	struct MHD_Daemon *mhd;
	uint64_t scrapes;
	uint64_t http_errors; /* the HTTP server's messages, counted (atomic) */
	struct ls_top_window recent; /* top's */
	bool keep_recent;
	/* called for every request split (the flight recorder's trigger) */
	void (*on_request)(void *ctx, const struct ls_request *r, const struct ls_split *s);
	void *on_request_ctx;
};

/* keep_recent: hold the last seconds of requests for top. */
int ls_live_init(struct ls_live *l, bool track_all, bool keep_recent, char *err, size_t len);
/* The recorder tap: one record. */
void ls_live_record(void *ctx, const struct ls_hdr *rec);
/* The clock, and the figures only the recorder knows (drops, stacks not
 * captured), about once a second. */
void ls_live_tick(struct ls_live *l, uint64_t now, uint64_t drops, uint64_t stacks_lost);
/* Serves GET /metrics on ADDR:PORT (IPv4 or [IPv6]; default address
 * 127.0.0.1 when only :PORT or PORT is given). 0, or -1 with a reason. */
int ls_live_serve(struct ls_live *l, const char *spec, char *err, size_t len);
/* Stops serving; ends the analysis (what waits is split and counted). */
void ls_live_finish(struct ls_live *l);
void ls_live_free(struct ls_live *l);

#endif
