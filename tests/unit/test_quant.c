// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Percentiles in bounded memory: exact (as a sorted array) up to the exact
 * limit; past it every rank within 0.8% of the true order statistic, min and
 * max exact, memory fixed.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <stdlib.h>

#include "quant.h"

static int cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

static uint64_t next(uint64_t *s)
{
	*s ^= *s << 13, *s ^= *s >> 7, *s ^= *s << 17;
	return *s;
}

static void check(size_t n, size_t exact_max, double tol)
{
	struct ls_quant q = {.exact_max = exact_max};
	uint64_t *v = malloc(n * sizeof(*v)), seed = 88172645463325252ull;

	for (size_t i = 0; i < n; i++) {
		/* log-spread: 1 us to ~10 s, and some zeros */
		v[i] = i % 97 ? (next(&seed) % 1000) * (1ull << (next(&seed) % 24)) : 0;
		ls_quant_add(&q, v[i]);
	}
	qsort(v, n, sizeof(*v), cmp);
	assert_int_equal(q.count, n);
	assert_int_equal(ls_quant_exact(&q), n <= (exact_max ? exact_max : LS_QUANT_EXACT));
	for (size_t k = 0; k < n; k += n / 50 + 1) {
		uint64_t got = ls_quant_rank(&q, k), want = v[k];
		double err = want ? (double)(got > want ? got - want : want - got) / want : got;
		if (err > tol)
			fail_msg("rank %zu of %zu: %llu, want %llu", k, n, (unsigned long long)got,
				 (unsigned long long)want);
	}
	assert_int_equal(ls_quant_rank(&q, n - 1), v[n - 1]);
	assert_int_equal(ls_quant_rank(&q, 0), v[0]);
	ls_quant_free(&q);
	free(v);
}

static void test_exact_below_limit(void **state)
{
	(void)state;
	check(1000, 0, 0);
	check(4096, 4096, 0);
}

static void test_estimates_past_limit(void **state)
{
	(void)state;
	check(200000, 1024, 0.008);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_exact_below_limit),
		cmocka_unit_test(test_estimates_past_limit),
	};
	return cmocka_run_group_tests_name("quant", tests, NULL, NULL);
}
