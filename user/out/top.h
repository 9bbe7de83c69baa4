/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * `latsplit top`'s screen: the requests split in the last seconds (a
 * window kept here, bounded), rendered as a header (requests/s, in flight,
 * drops), p50/p99 and share per component and sub-part, the slowest recent
 * requests with their split, and the verdict over the window.
 */
#ifndef LATSPLIT_OUT_TOP_H
#define LATSPLIT_OUT_TOP_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "analysis.h"
#include "attribute.h"
#include "idmap.h"
#include "requests.h"
#include "timeline.h"

#define LS_TOP_MAX 65536 /* requests kept in the window at most */

struct ls_top_entry {
	uint64_t t_done; /* when it was split (record time) */
	uint64_t seq;    /* its place in the window's history */
	bool provisional; /* split at delivery; the final split replaces it */
	struct ls_request r; /* without its blocked spans */
	struct ls_split s;
	struct ls_engine_join j;
};

struct ls_top_window {
	struct ls_top_entry *v; /* a ring of LS_TOP_MAX */
	size_t head, n;
	uint64_t seq;          /* of the next pushed */
	struct ls_idmap prov;  /* request id + 1 -> seq + 1 of its provisional entry */
	uint64_t window_ns;
	uint64_t evicted; /* pushed out by the cap before their time */
};

/* A request split (final false: provisionally, at delivery). A final split
 * replaces the request's provisional entry in place: counted once. */
void ls_top_push(struct ls_top_window *w, uint64_t now, const struct ls_request *r,
		 const struct ls_split *s, const struct ls_engine_join *j, bool final);
/* The live sink that fills the window: provisional splits, then final. */
struct ls_sink ls_top_sink(struct ls_top_window *w);
/* Forgets what is older than the window. */
void ls_top_expire(struct ls_top_window *w, uint64_t now);

struct ls_top_status {
	const char *target; /* what is tracked, in words */
	double elapsed_s;
	uint64_t in_flight, drops, stacks_lost, total_requests;
	bool have_gpu, have_sched, have_engine;
	bool clear; /* a terminal: redraw in place */
};

void ls_top_render(FILE *out, struct ls_top_window *w, const struct ls_top_status *st);
void ls_top_free(struct ls_top_window *w);

#endif
