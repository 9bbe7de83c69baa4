// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Symbolizer on live code: a function of this (PIE) test binary, one of a
 * shared library (libc's .dynsym), an address in no mapping, and a kernel
 * address when /proc/kallsyms shows real ones.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "symbolize.h"

__attribute__((noinline)) int ls_test_known_function(int x)
{
	__asm__ volatile("" ::: "memory");
	return x * 3 + 1;
}

static void test_self_and_libc(void **state)
{
	struct ls_symbolizer *s = ls_sym_new();
	char buf[256];

	(void)state;
	assert_int_equal(ls_sym_add_process(s, getpid()), 0);
	ls_sym_resolve(s, getpid(), (uint64_t)(uintptr_t)&ls_test_known_function + 4, buf, sizeof(buf));
	assert_string_equal(buf, "ls_test_known_function");
	ls_sym_resolve(s, getpid(), (uint64_t)(uintptr_t)&fwrite, buf, sizeof(buf));
	assert_non_null(strstr(buf, "fwrite"));
	ls_sym_resolve(s, getpid(), 0x10, buf, sizeof(buf));
	assert_string_equal(buf, "[unknown]");
	ls_sym_free(s);
}

static void test_kernel(void **state)
{
	struct ls_symbolizer *s = ls_sym_new();
	FILE *f = fopen("/proc/kallsyms", "r");
	unsigned long long addr = 0;
	char name[256] = "", type, line[512], buf[256];

	(void)state;
	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "%llx %c %255s", &addr, &type, name) == 3 && addr &&
		    !strcmp(name, "schedule"))
			break;
	if (f)
		fclose(f);
	if (!addr || strcmp(name, "schedule")) {
		ls_sym_free(s);
		skip(); /* addresses hidden (kptr_restrict, no privileges) */
	}
	ls_sym_resolve(s, 0, addr + 1, buf, sizeof(buf));
	assert_string_equal(buf, "schedule");
	ls_sym_free(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_self_and_libc),
		cmocka_unit_test(test_kernel),
	};
	return cmocka_run_group_tests_name("symbolize", tests, NULL, NULL);
}
