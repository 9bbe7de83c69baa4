// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Flame graphs: folded output of a hand-built tree, line by line (merged,
 * sorted, self weights only, separators in names replaced); the SVG has one
 * titled frame per node, escaped names, and balanced tags.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "flame.h"

static char *render(struct ls_flame *f, bool svg)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *m = open_memstream(&buf, &len);

	if (svg)
		ls_flame_svg(f, m, "t<1>", "ns");
	else
		ls_flame_folded(f, m);
	fclose(m);
	return buf;
}

static void test_folded(void **state)
{
	struct ls_flame *f = ls_flame_new();
	const char *a[] = {"latency", "queueing", "queueing.engine"};
	const char *b[] = {"latency", "network", "network.drain"};
	const char *c[] = {"latency", "host"};
	const char *d[] = {"gpu", "a;b\nc"};
	char *out;

	(void)state;
	ls_flame_add(f, a, 3, 100);
	ls_flame_add(f, b, 3, 40);
	ls_flame_add(f, a, 3, 5); /* merges */
	ls_flame_add(f, c, 2, 7);
	ls_flame_add(f, c, 1, 0); /* zero weight: nothing */
	ls_flame_add(f, d, 2, 1);
	assert_int_equal(ls_flame_total(f), 153);
	out = render(f, false);
	assert_string_equal(out, "gpu;a_b_c 1\n"
				 "latency;host 7\n"
				 "latency;network;network.drain 40\n"
				 "latency;queueing;queueing.engine 105\n");
	free(out);
	ls_flame_free(f);
}

static int count(const char *hay, const char *needle)
{
	int n = 0;
	for (const char *p = hay; (p = strstr(p, needle)); p++)
		n++;
	return n;
}

static void test_svg(void **state)
{
	struct ls_flame *f = ls_flame_new();
	const char *a[] = {"latency", "compute", "kernel<fp16>&co"};
	const char *b[] = {"latency", "other"};
	char *out;

	(void)state;
	ls_flame_add(f, a, 3, 300);
	ls_flame_add(f, b, 2, 100);
	out = render(f, true);
	assert_non_null(strstr(out, "<?xml"));
	assert_non_null(strstr(out, "kernel&lt;fp16&gt;&amp;co (300 ns, 75.00%)"));
	assert_non_null(strstr(out, "<title>other (100 ns, 25.00%)"));
	assert_non_null(strstr(out, "t&lt;1&gt;"));
	/* all, latency, compute, kernel, other: five frames, balanced tags */
	assert_int_equal(count(out, "<g>"), 5);
	assert_int_equal(count(out, "</g>"), 5);
	assert_int_equal(count(out, "<title>"), count(out, "</title>"));
	assert_int_equal(count(out, "<svg"), 1);
	assert_int_equal(count(out, "</svg>"), 1);
	free(out);
	ls_flame_free(f);
}

/* Hostile-host finding 10: a process name the kernel cut inside a UTF-8
 * character (comm is 15 bytes), and bytes that are not UTF-8 at all, must
 * not make the SVG ill-formed XML: each bad byte becomes '?', good
 * characters stay. */
static void test_svg_utf8(void **state)
{
	struct ls_flame *f = ls_flame_new();
	/* "modèle-servé" cut after the first byte of é, a lone continuation
	 * byte, an overlong '/', a surrogate */
	const char *a[] = {"latency", "mod\xc3\xa8le-serv\xc3", "x\x80y\xc0\xafz\xed\xa0\x80w"};
	char *out;

	(void)state;
	ls_flame_add(f, a, 3, 300);
	out = render(f, true);
	assert_non_null(strstr(out, "mod\xc3\xa8le-serv? "));
	assert_non_null(strstr(out, "x?y??z???w"));
	for (const unsigned char *p = (const unsigned char *)out; *p; p++)
		if (*p >= 0x80) { /* every byte >= 0x80 is part of a whole "è" */
			assert_true((p[0] == 0xc3 && p[1] == 0xa8) || (p[-1] == 0xc3 && p[0] == 0xa8));
		}
	free(out);
	ls_flame_free(f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_folded),
		cmocka_unit_test(test_svg),
		cmocka_unit_test(test_svg_utf8),
	};
	return cmocka_run_group_tests_name("flame", tests, NULL, NULL);
}
