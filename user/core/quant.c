// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Order statistics in bounded memory (see quant.h).
 */
#include <stdlib.h>
#include <string.h>

#include "grow.h"
#include "quant.h"

#define SUB_BITS 6
#define NBUCKETS ((64 - SUB_BITS) * (1u << SUB_BITS) + (1u << SUB_BITS))

/* Values below 128 have a bucket each; above, 64 per power of two. */
static unsigned bucket(uint64_t v)
{
	int msb = 63 - __builtin_clzll(v | 1);
	unsigned shift;

	if (msb <= SUB_BITS)
		return (unsigned)v;
	shift = (unsigned)(msb - SUB_BITS);
	return (shift << SUB_BITS) + (unsigned)(v >> shift);
}

/* The middle of a bucket's range. */
static uint64_t bucket_value(unsigned b)
{
	unsigned shift;

	if (b < (2u << SUB_BITS))
		return b;
	shift = (b >> SUB_BITS) - 1;
	uint64_t lo = (uint64_t)(b - (shift << SUB_BITS)) << shift;
	return lo + ((1ull << shift) >> 1);
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

static void fold(struct ls_quant *q)
{
	q->hist = calloc(NBUCKETS, sizeof(*q->hist));
	if (!q->hist)
		abort();
	for (size_t i = 0; i < q->n; i++)
		q->hist[bucket(q->v[i])]++;
	free(q->v);
	q->v = NULL;
	q->n = q->cap = 0;
}

void ls_quant_add(struct ls_quant *q, uint64_t v)
{
	size_t lim = q->exact_max ? q->exact_max : LS_QUANT_EXACT;

	if (!q->count || v < q->min)
		q->min = v;
	if (v > q->max)
		q->max = v;
	q->count++;
	q->sum += v;
	if (!q->hist && q->n == lim)
		fold(q);
	if (q->hist) {
		q->hist[bucket(v)]++;
		return;
	}
	GROW(q->v, q->n, q->cap);
	q->v[q->n++] = v;
	q->sorted = false;
}

uint64_t ls_quant_rank(struct ls_quant *q, uint64_t k)
{
	uint64_t seen = 0;

	if (!q->count)
		return 0;
	if (k >= q->count)
		k = q->count - 1;
	if (!q->hist) {
		if (!q->sorted)
			qsort(q->v, q->n, sizeof(*q->v), cmp_u64);
		q->sorted = true;
		return q->v[k];
	}
	if (k == q->count - 1)
		return q->max;
	if (k == 0)
		return q->min;
	for (unsigned b = 0; b < NBUCKETS; b++) {
		seen += q->hist[b];
		if (seen > k) {
			uint64_t v = bucket_value(b);
			return v < q->min ? q->min : v > q->max ? q->max : v;
		}
	}
	return q->max;
}

void ls_quant_free(struct ls_quant *q)
{
	free(q->v);
	free(q->hist);
	memset(q, 0, sizeof(*q));
}
