// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The Prometheus exposition: HELP and TYPE once per family, cumulative
 * buckets ending at +Inf equal to _count, values in seconds, an edge's own
 * value counted in its bucket (le is "less than or equal"), and no label
 * that names a request or a client.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "prom.h"

static char *render(const struct ls_prom *p)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	ls_prom_write(f, p);
	fclose(f);
	return buf;
}

static void test_exposition(void **state)
{
	struct ls_prom p;
	struct ls_request r = {.outcome = LS_REQ_OK, .retransmits = 3};
	struct ls_split s;

	(void)state;
	ls_prom_init(&p);
	memset(&s, 0, sizeof(s));
	for (int k = 0; k < LS_S_N; k++)
		s.sub[k] = s.ttft_sub[k] = LS_NULL;
	s.total = 10000000;  /* exactly the 0.01 edge */
	s.ttft = 2000000;
	s.sub[LS_S_Q_ENGINE] = 6000000;
	s.comp[LS_C_HOST] = 4000000;
	s.comp[LS_C_OTHER] = LS_NULL;
	ls_prom_add(&p, &r, &s);
	s.total = 3000000000ull;
	ls_prom_add(&p, &r, &s);
	r.outcome = LS_REQ_PARTIAL;
	s.total = LS_NULL;
	ls_prom_add(&p, &r, &s);
	char *t = render(&p);
	assert_non_null(strstr(t, "# TYPE latsplit_request_duration_seconds histogram\n"));
	assert_non_null(strstr(t, "latsplit_request_duration_seconds_bucket{le=\"0.01\"} 1\n"));
	assert_non_null(strstr(t, "latsplit_request_duration_seconds_bucket{le=\"2.5\"} 1\n"));
	assert_non_null(strstr(t, "latsplit_request_duration_seconds_bucket{le=\"5\"} 2\n"));
	assert_non_null(strstr(t, "latsplit_request_duration_seconds_bucket{le=\"+Inf\"} 2\n"));
	assert_non_null(strstr(t, "latsplit_request_duration_seconds_count 2\n"));
	assert_non_null(strstr(t, "latsplit_request_duration_seconds_sum 3.010000000\n"));
	assert_non_null(strstr(t, "latsplit_request_component_seconds_count{component=\"queueing\","
				  "sub=\"queueing.engine\"} 2\n"));
	assert_non_null(strstr(t, "latsplit_request_component_seconds_count{component=\"host\","
				  "sub=\"host\"} 2\n"));
	assert_non_null(strstr(t, "latsplit_request_component_seconds_count{component=\"other\","
				  "sub=\"other\"} 0\n"));
	assert_non_null(strstr(t, "latsplit_requests_total{outcome=\"ok\"} 2\n"));
	assert_non_null(strstr(t, "latsplit_requests_total{outcome=\"partial\"} 1\n"));
	assert_non_null(strstr(t, "latsplit_retransmits_total 9\n"));
	assert_null(strstr(t, "latsplit_gpu_busy_ratio")); /* no GPU data: no gauge */
	/* one HELP and one TYPE per family */
	int types = 0;
	for (const char *q = t; (q = strstr(q, "# TYPE latsplit_request_component_seconds ")); q++)
		types++;
	assert_int_equal(types, 1);
	free(t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_exposition),
	};
	return cmocka_run_group_tests_name("prom", tests, NULL, NULL);
}
