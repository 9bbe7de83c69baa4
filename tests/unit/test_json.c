// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The JSON writer: escapes per RFC 8259 (quote, backslash, \n \r \t, other
 * control bytes as \u00xx; UTF-8 passes through), null for LS_NULL and
 * empty strings, numbers at both ends of the range, and lines longer than
 * its buffer written whole and in order.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attribute.h"
#include "out/json.h"

struct mem {
	char *buf;
	size_t len;
	FILE *f;
};

static void mem_open(struct mem *m)
{
	m->buf = NULL;
	m->f = open_memstream(&m->buf, &m->len);
	assert_non_null(m->f);
}

static char *mem_close(struct mem *m)
{
	fclose(m->f);
	return m->buf;
}

static void test_escapes(void **state)
{
	struct mem m;
	char *s;

	(void)state;
	mem_open(&m);
	ls_json_string(m.f, "a\"b\\c\nd\re\tf\x01g\x1fh\x7f\xc3\xa9");
	s = mem_close(&m);
	assert_string_equal(s, "\"a\\\"b\\\\c\\nd\\re\\tf\\u0001g\\u001fh\x7f\xc3\xa9\"");
	free(s);
	mem_open(&m);
	ls_json_string(m.f, "");
	s = mem_close(&m);
	assert_string_equal(s, "\"\"");
	free(s);
}

static void test_fields(void **state)
{
	struct mem m;
	struct ls_jbuf j;
	char *s;

	(void)state;
	mem_open(&m);
	ls_jb_init(&j, m.f);
	ls_jb_raw(&j, "{", 1);
	ls_jb_kv_u64(&j, "zero", 0, true);
	ls_jb_kv_u64(&j, "big", LS_NULL - 1, true);
	ls_jb_kv_u64(&j, "none", LS_NULL, true);
	ls_jb_kv_str(&j, "empty", "", true);
	ls_jb_kv_str(&j, "missing", NULL, true);
	ls_jb_kv_str(&j, "path", "/v1/\"x\"", false);
	ls_jb_raw(&j, "}", 1);
	ls_jb_flush(&j);
	s = mem_close(&m);
	assert_string_equal(s, "{\"zero\":0,\"big\":18446744073709551614,\"none\":null,"
			       "\"empty\":null,\"missing\":null,\"path\":\"/v1/\\\"x\\\"\"}");
	free(s);
}

/* a line three buffers long, mixing small pieces, a string bigger than the
 * buffer and escapes across the flushes */
static void test_long_line(void **state)
{
	enum { BIG = 3 * sizeof(((struct ls_jbuf *)0)->b) };
	char *big = malloc(BIG + 1), *want = malloc(4 * BIG), *s;
	struct ls_jbuf j;
	struct mem m;
	size_t w = 0;

	(void)state;
	for (size_t i = 0; i < BIG; i++)
		big[i] = i % 97 == 0 ? '"' : (char)('a' + i % 26);
	big[BIG] = '\0';
	mem_open(&m);
	ls_jb_init(&j, m.f);
	for (int k = 0; k < 1000; k++) {
		ls_jb_u64(&j, (uint64_t)k);
		ls_jb_raw(&j, ",", 1);
		w += (size_t)sprintf(want + w, "%d,", k);
	}
	ls_jb_string(&j, big);
	want[w++] = '"';
	for (size_t i = 0; i < BIG; i++) {
		if (big[i] == '"')
			want[w++] = '\\';
		want[w++] = big[i];
	}
	want[w++] = '"';
	ls_jb_raw(&j, big, BIG); /* raw, bigger than the buffer */
	memcpy(want + w, big, BIG);
	w += BIG;
	want[w] = '\0';
	ls_jb_flush(&j);
	s = mem_close(&m);
	assert_int_equal(strlen(s), w);
	assert_string_equal(s, want);
	free(s);
	free(big);
	free(want);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_escapes),
		cmocka_unit_test(test_fields),
		cmocka_unit_test(test_long_line),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
