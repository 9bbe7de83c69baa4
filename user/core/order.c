// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Reorder buffer (see order.h): a binary min-heap on (ts, arrival number),
 * so records with equal timestamps keep their arrival order.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "order.h"

struct slot {
	__u64 ts;
	__u64 seq;
	struct ls_hdr *rec;
};

struct ls_order {
	struct slot *heap;
	size_t n, cap;
	__u64 window, max_ts, seq, late, last_out_ts;
	struct ls_hdr *out;
};

struct ls_order *ls_order_new(__u64 window_ns)
{
	struct ls_order *o = calloc(1, sizeof(*o));

	if (o)
		o->window = window_ns;
	return o;
}

static bool before(const struct slot *a, const struct slot *b)
{
	return a->ts < b->ts || (a->ts == b->ts && a->seq < b->seq);
}

static void swap(struct slot *a, struct slot *b)
{
	struct slot t = *a;
	*a = *b;
	*b = t;
}

int ls_order_push(struct ls_order *o, const struct ls_hdr *rec)
{
	struct ls_hdr *copy;
	size_t i;

	if (o->n == o->cap) {
		size_t cap = o->cap ? o->cap * 2 : 1024;
		struct slot *h = realloc(o->heap, cap * sizeof(*h));

		if (!h)
			return -ENOMEM;
		o->heap = h;
		o->cap = cap;
	}
	copy = malloc(rec->size);
	if (!copy)
		return -ENOMEM;
	memcpy(copy, rec, rec->size);
	if (rec->ts < o->last_out_ts)
		o->late++;
	if (rec->ts > o->max_ts)
		o->max_ts = rec->ts;
	i = o->n++;
	o->heap[i] = (struct slot){rec->ts, o->seq++, copy};
	while (i && before(&o->heap[i], &o->heap[(i - 1) / 2])) {
		swap(&o->heap[i], &o->heap[(i - 1) / 2]);
		i = (i - 1) / 2;
	}
	return 0;
}

void ls_order_advance(struct ls_order *o, __u64 now)
{
	if (now > o->max_ts)
		o->max_ts = now;
}

const struct ls_hdr *ls_order_pop(struct ls_order *o, bool drain)
{
	size_t i = 0;

	free(o->out);
	o->out = NULL;
	if (!o->n)
		return NULL;
	if (!drain && o->heap[0].ts + o->window > o->max_ts)
		return NULL;
	o->out = o->heap[0].rec;
	o->last_out_ts = o->heap[0].ts;
	o->heap[0] = o->heap[--o->n];
	for (;;) {
		size_t l = 2 * i + 1, r = l + 1, m = i;

		if (l < o->n && before(&o->heap[l], &o->heap[m]))
			m = l;
		if (r < o->n && before(&o->heap[r], &o->heap[m]))
			m = r;
		if (m == i)
			break;
		swap(&o->heap[i], &o->heap[m]);
		i = m;
	}
	return o->out;
}

__u64 ls_order_late(const struct ls_order *o)
{
	return o->late;
}

void ls_order_free(struct ls_order *o)
{
	if (!o)
		return;
	for (size_t i = 0; i < o->n; i++)
		free(o->heap[i].rec);
	free(o->heap);
	free(o->out);
	free(o);
}
