/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Order statistics in bounded memory: values are kept exactly up to
 * LS_QUANT_EXACT of them (ranks then are exact, as a sorted array gives);
 * past that they fold into a log-linear histogram (64 sub-buckets per power
 * of two, HdrHistogram's layout), whose ranks are within 0.8% of the true
 * value. Min and max stay exact. For percentiles of whole captures of any
 * length.
 */
#ifndef LATSPLIT_CORE_QUANT_H
#define LATSPLIT_CORE_QUANT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define LS_QUANT_EXACT 32768

struct ls_quant {
	uint64_t *v; /* exact values (NULL once folded) */
	size_t n, cap;
	bool sorted;
	uint64_t *hist; /* folded: counts per bucket */
	uint64_t count, min, max, sum;
	size_t exact_max; /* 0: LS_QUANT_EXACT */
};

void ls_quant_add(struct ls_quant *q, uint64_t v);
/* The k-th smallest value (0-based, k < count). */
uint64_t ls_quant_rank(struct ls_quant *q, uint64_t k);
static inline bool ls_quant_exact(const struct ls_quant *q)
{
	return !q->hist;
}
void ls_quant_free(struct ls_quant *q);

#endif
