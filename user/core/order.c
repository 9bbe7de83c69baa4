// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Reorder buffer (see order.h). Records come nearly in order: one that is
 * not older than the last one queued in order joins a FIFO (which stays
 * sorted); only the others go to a binary min-heap. Both order by (ts,
 * arrival number), so records with equal timestamps keep their arrival
 * order, and the next record out is the smaller of the FIFO's head and the
 * heap's top. In-order records cost O(1) (the heap of every record was a
 * quarter of report's time on a synthetic capture).
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

/* The FIFO's copies live in chunks filled in order and emptied in the same
 * order (a FIFO record is popped in the order it was pushed), so a chunk is
 * reused once its last record is out: no malloc/free per record, and records
 * read back in the order they sit in memory. Late records are malloc'd. */
#define CHUNK_DATA (1u << 20)

struct chunk {
	struct chunk *next;
	size_t used, live;
	unsigned char data[];
};

struct ls_order {
	struct slot *heap; /* records that came out of order */
	size_t n, cap;
	struct slot *fifo; /* records that came in order: a ring, sorted */
	size_t fhead, flen, fcap;
	__u64 window, max_ts, seq, late, last_out_ts;
	__u64 floor; /* no record to come is older (ls_order_floor) */
	struct chunk *chead, *ctail, *spare;
	struct ls_hdr *out;
	bool out_in_chunk; /* out is the oldest chunk's, else malloc'd */
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

static int fifo_push(struct ls_order *o, struct slot sl)
{
	if (o->flen == o->fcap) {
		size_t cap = o->fcap ? o->fcap * 2 : 1024;
		struct slot *f = malloc(cap * sizeof(*f));

		if (!f)
			return -ENOMEM;
		for (size_t i = 0; i < o->flen; i++)
			f[i] = o->fifo[(o->fhead + i) % o->fcap];
		free(o->fifo);
		o->fifo = f;
		o->fcap = cap;
		o->fhead = 0;
	}
	o->fifo[(o->fhead + o->flen++) % o->fcap] = sl;
	return 0;
}

static int heap_push(struct ls_order *o, struct slot sl)
{
	size_t i;

	if (o->n == o->cap) {
		size_t cap = o->cap ? o->cap * 2 : 1024;
		struct slot *h = realloc(o->heap, cap * sizeof(*h));

		if (!h)
			return -ENOMEM;
		o->heap = h;
		o->cap = cap;
	}
	i = o->n++;
	o->heap[i] = sl;
	while (i && before(&o->heap[i], &o->heap[(i - 1) / 2])) {
		swap(&o->heap[i], &o->heap[(i - 1) / 2]);
		i = (i - 1) / 2;
	}
	return 0;
}

static size_t rounded(size_t size)
{
	return (size + 7) & ~(size_t)7;
}

/* Room for `size` bytes at the end of the newest chunk. */
static void *chunk_alloc(struct ls_order *o, size_t size)
{
	size_t sz = rounded(size);
	struct chunk *c = o->ctail;

	if (sz > CHUNK_DATA)
		return NULL;
	if (!c || c->used + sz > CHUNK_DATA) {
		c = o->spare ? o->spare : malloc(sizeof(*c) + CHUNK_DATA);
		if (!c)
			return NULL;
		o->spare = NULL;
		*c = (struct chunk){0};
		if (o->ctail)
			o->ctail->next = c;
		else
			o->chead = c;
		o->ctail = c;
	}
	c->live++;
	c->used += sz;
	return c->data + c->used - sz;
}

/* The oldest chunk's oldest record is out for good. */
static void chunk_release(struct ls_order *o)
{
	struct chunk *c = o->chead;

	if (--c->live)
		return;
	if (c == o->ctail) {
		c->used = 0;
		return;
	}
	o->chead = c->next;
	free(o->spare);
	o->spare = c;
}

int ls_order_push(struct ls_order *o, const struct ls_hdr *rec)
{
	/* in order after the FIFO's tail: it joins the FIFO */
	bool in_order = !o->flen || o->fifo[(o->fhead + o->flen - 1) % o->fcap].ts <= rec->ts;
	struct ls_hdr *copy = in_order ? chunk_alloc(o, rec->size) : malloc(rec->size);
	struct slot sl;
	int e;

	if (!copy)
		return -ENOMEM;
	memcpy(copy, rec, rec->size);
	if (rec->ts < o->last_out_ts)
		o->late++;
	if (rec->ts > o->max_ts)
		o->max_ts = rec->ts;
	sl = (struct slot){rec->ts, o->seq++, copy};
	e = in_order ? fifo_push(o, sl) : heap_push(o, sl);
	if (e && in_order) { /* the newest allocation: give it back */
		o->ctail->used -= rounded(rec->size);
		o->ctail->live--;
	} else if (e) {
		free(copy);
	}
	return e;
}

void ls_order_floor(struct ls_order *o, __u64 floor)
{
	o->floor = floor;
}

void ls_order_advance(struct ls_order *o, __u64 now)
{
	if (now > o->max_ts)
		o->max_ts = now;
}

const struct ls_hdr *ls_order_pop(struct ls_order *o, bool drain)
{
	const struct slot *f = o->flen ? &o->fifo[o->fhead] : NULL;
	bool from_fifo;
	size_t i = 0;

	if (o->out && o->out_in_chunk)
		chunk_release(o);
	else
		free(o->out);
	o->out = NULL;
	if (!o->n && !f)
		return NULL;
	from_fifo = f && (!o->n || before(f, &o->heap[0]));
	const struct slot *next = from_fifo ? f : &o->heap[0];
	if (!drain && next->ts + o->window > o->max_ts && next->ts >= o->floor)
		return NULL;
	o->out = next->rec;
	o->out_in_chunk = from_fifo;
	o->last_out_ts = next->ts;
	if (from_fifo) {
		o->fhead = (o->fhead + 1) % o->fcap;
		o->flen--;
		return o->out;
	}
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
	if (!o->out_in_chunk)
		free(o->out);
	while (o->chead) {
		struct chunk *c = o->chead;
		o->chead = c->next;
		free(c);
	}
	free(o->spare);
	free(o->heap);
	free(o->fifo);
	free(o);
}
