// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The shared analysis pass (see analysis.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis.h"
#include "grow.h"
#include "order.h"

#define REORDER_WINDOW_NS 2000000000ull

static void collect(void *ctx, const struct ls_request *r)
{
	struct ls_analysis *a = ctx;

	GROW(a->v, a->n, a->cap);
	a->v[a->n++] = *r;
}

int ls_analysis_run(struct ls_analysis *a, const char *path, char *err, size_t len)
{
	const struct ls_hdr *rec;
	struct ls_order *ord;
	struct ls_corr *corr;

	memset(a, 0, sizeof(*a));
	if (ls_reader_open(&a->rd, path, err, len) < 0)
		return -1;
	ord = ls_order_new(REORDER_WINDOW_NS);
	corr = ls_corr_new(collect, a);
	a->tl = ls_timeline_new(ls_reader_header(a->rd)->track_all);
	if (!ord || !corr || !a->tl)
		goto nomem;
	for (;;) {
		int more = ls_reader_next(a->rd, &rec);

		if (more == 1 && ls_order_push(ord, rec))
			goto nomem;
		while ((rec = ls_order_pop(ord, more != 1))) {
			if (rec->type == LS_REC_DROPS) {
				a->drops = ((const struct ls_rec_drops *)rec)->total;
				a->stack_errors = ((const struct ls_rec_drops *)rec)->stack_errors;
			}
			if (rec->type < LS_EV_KERNEL_MAX) {
				if (!a->first_ts)
					a->first_ts = rec->ts;
				a->last_ts = rec->ts;
			}
			ls_corr_add(corr, rec);
			ls_timeline_add(a->tl, rec);
		}
		if (more != 1)
			break;
	}
	ls_corr_finish(corr);
	a->cst = *ls_corr_stats(corr);
	ls_corr_free(corr);
	ls_order_free(ord);
	ls_timeline_finish(a->tl, a->v, a->n);
	a->split = calloc(a->n ? a->n : 1, sizeof(*a->split));
	a->join = calloc(a->n ? a->n : 1, sizeof(*a->join));
	if (!a->split || !a->join)
		goto nomem_late;
	ls_timeline_join(a->tl, a->v, a->n, a->join);
	for (size_t i = 0; i < a->n; i++)
		ls_attribute(&a->v[i], a->tl, &a->join[i], &a->split[i]);
	return 0;
nomem:
	ls_corr_free(corr);
	ls_order_free(ord);
nomem_late:
	snprintf(err, len, "%s: out of memory", path);
	ls_analysis_free(a);
	return -1;
}

void ls_analysis_free(struct ls_analysis *a)
{
	for (size_t i = 0; i < a->n; i++)
		ls_request_release(&a->v[i]);
	free(a->v);
	free(a->split);
	free(a->join);
	ls_timeline_free(a->tl);
	ls_reader_close(a->rd);
	memset(a, 0, sizeof(*a));
}
