// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The analysis core's reading loop (see analysis.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis.h"
#include "grow.h"

#define REORDER_WINDOW_NS 2000000000ull

static void collect(void *ctx, const struct ls_request *r)
{
	struct ls_analysis *a = ctx;

	GROW(a->v, a->n, a->cap);
	a->v[a->n++] = *r;
}

int ls_analysis_begin(struct ls_analysis *a, bool track_all, const struct ls_consumer *consumers,
		      size_t nconsumers, char *err, size_t len)
{
	struct ls_reader *rd = a->rd; /* kept: ls_analysis_run opened it */

	memset(a, 0, sizeof(*a));
	a->rd = rd;
	a->consumers = consumers;
	a->nconsumers = nconsumers;
	a->ord = ls_order_new(REORDER_WINDOW_NS);
	a->corr = ls_corr_new(collect, a);
	a->tl = ls_timeline_new(track_all);
	if (!a->ord || !a->corr || !a->tl) {
		snprintf(err, len, "out of memory");
		ls_analysis_free(a);
		return -1;
	}
	return 0;
}

/* One record in time order, to every consumer. */
static void dispatch(struct ls_analysis *a, const struct ls_hdr *rec)
{
	if (rec->type == LS_REC_DROPS && rec->size >= sizeof(struct ls_rec_drops)) {
		a->drops = ((const struct ls_rec_drops *)rec)->total;
		a->stack_errors = ((const struct ls_rec_drops *)rec)->stack_errors;
	}
	if (rec->type < LS_EV_KERNEL_MAX) {
		if (!a->first_ts)
			a->first_ts = rec->ts;
		a->last_ts = rec->ts;
	}
	ls_corr_add(a->corr, rec);
	ls_timeline_add(a->tl, rec);
	for (size_t i = 0; i < a->nconsumers; i++)
		a->consumers[i].record(a->consumers[i].ctx, rec);
}

int ls_analysis_push(struct ls_analysis *a, const struct ls_hdr *rec)
{
	if (ls_order_push(a->ord, rec))
		return -1;
	while ((rec = ls_order_pop(a->ord, false)))
		dispatch(a, rec);
	return 0;
}

int ls_analysis_end(struct ls_analysis *a, char *err, size_t len)
{
	const struct ls_hdr *rec;

	while ((rec = ls_order_pop(a->ord, true)))
		dispatch(a, rec);
	ls_corr_finish(a->corr);
	a->cst = *ls_corr_stats(a->corr);
	ls_corr_free(a->corr);
	a->corr = NULL;
	ls_order_free(a->ord);
	a->ord = NULL;
	ls_timeline_finish(a->tl, a->v, a->n);
	a->split = calloc(a->n ? a->n : 1, sizeof(*a->split));
	a->join = calloc(a->n ? a->n : 1, sizeof(*a->join));
	if (!a->split || !a->join) {
		snprintf(err, len, "out of memory");
		return -1;
	}
	ls_timeline_join(a->tl, a->v, a->n, a->join);
	for (size_t i = 0; i < a->n; i++)
		ls_attribute(&a->v[i], a->tl, &a->join[i], &a->split[i]);
	return 0;
}

int ls_analysis_run(struct ls_analysis *a, const char *path, const struct ls_consumer *consumers,
		    size_t nconsumers, char *err, size_t len)
{
	const struct ls_hdr *rec;
	int more;

	memset(a, 0, sizeof(*a));
	if (ls_reader_open(&a->rd, path, err, len) < 0)
		return -1;
	if (ls_analysis_begin(a, ls_reader_header(a->rd)->track_all, consumers, nconsumers, err,
			      len))
		goto fail;
	while ((more = ls_reader_next(a->rd, &rec)) == 1)
		if (ls_analysis_push(a, rec))
			goto nomem;
	if (ls_analysis_end(a, err, len))
		goto fail;
	return 0;
nomem:
	snprintf(err, len, "out of memory");
fail: {
	char why[256];
	snprintf(why, sizeof(why), "%s", err);
	snprintf(err, len, "%s: %s", path, why);
	ls_analysis_free(a);
	return -1;
}
}

void ls_analysis_verdict(const struct ls_analysis *a, bool ttft, struct ls_verdict *v)
{
	struct ls_verdict_in in = {.reqs = a->v,
				   .splits = a->split,
				   .joins = a->join,
				   .n = a->n,
				   .ttft = ttft,
				   .have_gpu = ls_timeline_has_gpu(a->tl),
				   .have_sched = ls_timeline_has_sched(a->tl),
				   .have_engine = ls_timeline_has_engine(a->tl)};

	ls_verdict_compute(&in, v);
}

void ls_analysis_free(struct ls_analysis *a)
{
	for (size_t i = 0; i < a->n; i++)
		ls_request_release(&a->v[i]);
	free(a->v);
	free(a->split);
	free(a->join);
	ls_corr_free(a->corr);
	ls_order_free(a->ord);
	ls_timeline_free(a->tl);
	ls_reader_close(a->rd);
	memset(a, 0, sizeof(*a));
}
