// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * What a traced process can make the recorder hold (user/record/python.c):
 * this test is the hostile process. It maps a forged libpython3.11.so
 * (tests/helpers/fakepy.c), so the detector takes it for CPython 3.11, and
 * forges code objects in its own memory: 400 with line tables just under
 * 1 MiB (the old per-table limit), 400 with 200 KiB ones (a real function's
 * is far smaller). Every frame seen is named from the live process; before
 * the budgets each line table was kept, and the recorder held over 400 MiB.
 * Now what it holds stays bounded (the hits counted), real-sized tables
 * are kept up to the budget, and all of it goes at the process's exit.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "python.h"

__u64 ls_now_ns(void)
{
	return 1;
}

static int set_proc(void *ctx, __u32 tgid, const struct ls_py_proc *pp)
{
	(void)ctx, (void)tgid, (void)pp;
	return 0;
}

static unsigned long names;

static void on_write(void *ctx, const struct ls_hdr *rec)
{
	(void)ctx, (void)rec;
	names++;
}

/* VmRSS of this process, KiB */
static long rss_kib(void)
{
	char line[256];
	long kib = -1;
	FILE *f = fopen("/proc/self/status", "r");

	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "VmRSS: %ld", &kib) == 1)
			break;
	if (f)
		fclose(f);
	return kib;
}

#define NCODES 800
#define BIG ((1u << 20) - 64)
#define SMALL (200u << 10)

/* CPython 3.11 offsets (python.c's layout): code object fields, a compact
 * ASCII str, a bytes object */
static void put64(unsigned char *o, size_t at, unsigned long long v)
{
	memcpy(o + at, &v, 8);
}

static void test_budget(void **state)
{
	static unsigned char str[64], codes[NCODES][256];
	unsigned char *bytes = malloc(32 + BIG), *small = malloc(32 + SMALL);
	struct ls_py *p = ls_py_new(set_proc, NULL);
	struct ls_ev_pystack e;
	long before;

	(void)state;
	assert_non_null(bytes);
	assert_non_null(small);
	memset(bytes, 0x01, 32 + BIG); /* touched: its pages are ours, not the recorder's */
	memset(small, 0x01, 32 + SMALL);
	put64(bytes, 16, BIG);
	put64(small, 16, SMALL);
	put64(str, 16, 4);
	str[32] = 1 << 5 | 1 << 6; /* compact, ascii */
	memcpy(str + 48, "hog", 4);
	for (int i = 0; i < NCODES; i++) {
		put64(codes[i], 112, (unsigned long long)(uintptr_t)str); /* co_filename */
		put64(codes[i], 128, (unsigned long long)(uintptr_t)str); /* co_qualname */
		codes[i][72] = 1;                                          /* co_firstlineno */
		put64(codes[i], 136, (unsigned long long)(uintptr_t)(i % 2 ? small : bytes)); /* co_linetable */
	}
	assert_true(ls_py_detect(p, getpid()));
	before = rss_kib();
	memset(&e, 0, sizeof(e));
	e.h.type = LS_EV_PYSTACK;
	e.h.size = sizeof(e);
	e.h.pid = getpid();
	e.n = 1;
	for (int i = 0; i < NCODES; i++) {
		e.f[0].code = (uintptr_t)codes[i];
		e.f[0].lasti = 3;
		ls_py_seen(p, &e, on_write, NULL);
	}
	long grown = rss_kib() - before;
	printf("  %d forged code objects with large line tables: %lu frames named, recorder holds "
	       "%zu KiB, RSS grew %ld KiB, %llu budget hits\n",
	       NCODES, names, ls_py_held(p) >> 10, grown, ls_py_over_budget(p));
	assert_int_equal(names, NCODES);
	assert_true(grown < 256 * 1024);
	assert_true(ls_py_held(p) < (64u << 20));
	assert_true(ls_py_held(p) > (16u << 20)); /* real-sized tables kept, up to the budget */
	assert_true(ls_py_over_budget(p) > NCODES / 2);
	ls_py_exit(p, getpid());
	assert_true(ls_py_held(p) < (4u << 20)); /* its line tables went */
	ls_py_free(p);
	free(bytes);
	free(small);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_budget),
	};
	return cmocka_run_group_tests_name("pyrecord", tests, NULL, NULL);
}
