/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Live mode (DESIGN.md §2): the recording's records, as written, feed the
 * analysis core as they come (a recorder tap); a clock tick lets it go on
 * when the host is quiet. Its request sinks: the Prometheus histograms
 * (served by libmicrohttpd on `record --metrics`); the caller's sinks: the recent window that
 * `latsplit top` shows, and a hook (the flight recorder's trigger).
 * A request reaches the live sinks provisionally within about a second of
 * its delivery (a shorter ordering window than a file's, then the next
 * batch), and finally after the grace period for late records, as from a
 * file: the final numbers equal `report`'s on the capture.
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

#define LS_LIVE_SINKS 4

struct ls_live {
	struct ls_analysis a;
	bool started;
	struct ls_sink sinks[LS_LIVE_SINKS]; /* its own (metrics, top), then the caller's */
	size_t nsinks;
	pthread_mutex_t lock; /* prom, read by the HTTP thread */
	struct ls_prom prom;
	struct MHD_Daemon *mhd;
	uint64_t scrapes;
	uint64_t http_errors; /* the HTTP server's messages, counted (atomic) */
};

/* h: the recording's header. more: the caller's sinks (top's window, the
 * flight recorder's trigger, OTLP export), up to LS_LIVE_SINKS - 1. */
int ls_live_init(struct ls_live *l, const struct ls_file_hdr *h, const struct ls_sink *more,
		 size_t nmore, char *err, size_t len);
/* The recorder tap: one record. */
void ls_live_record(void *ctx, const struct ls_hdr *rec);
/* The clock, and the figures only the recorder knows (drops, stacks not
 * captured), about once a second. */
void ls_live_tick(struct ls_live *l, uint64_t now, uint64_t drops, uint64_t stacks_lost);
/* Serves GET /metrics on ADDR:PORT (IPv4 or [IPv6]; default address
 * 127.0.0.1 when only :PORT or PORT is given). 0, or -1 with a reason. */
int ls_live_serve(struct ls_live *l, const char *spec, char *err, size_t len);
/* "ADDR:PORT", "[ADDR6]:PORT", ":PORT" or "PORT" (address 127.0.0.1) into a
 * socket address. 0, or -1 with err naming flag. */
struct sockaddr_storage;
int ls_parse_listen(const char *flag, const char *spec, struct sockaddr_storage *ss, char *err,
		    size_t len);
/* Stops serving; ends the analysis (what waits is split and counted). */
void ls_live_finish(struct ls_live *l);
void ls_live_free(struct ls_live *l);

#endif
