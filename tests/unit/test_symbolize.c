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
#include <signal.h>
#include <stdbool.h>
#include <stdlib.h>
#include <sys/wait.h>
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

/* Builds a program (cc FLAGS), optionally stripped with its symbols in a
 * .gnu_debuglink file beside it, runs it, and resolves the address of a known
 * function (nm's value, placed by the process's mappings). */
static void check_variant(const char *flags, bool strip_debuglink)
{
	char dir[] = "/tmp/ls-sym-XXXXXX", cmd[1024], buf[256];
	struct ls_symbolizer *s;
	FILE *p;

	assert_non_null(mkdtemp(dir));
	snprintf(cmd, sizeof(cmd), "%s/p.c", dir);
	FILE *src = fopen(cmd, "w");
	assert_non_null(src);
	fputs("#include <unistd.h>\n"
	      "__attribute__((noinline)) int sym_target_fn(int x) { return x * 7; }\n"
	      "int main(void) { sleep(5); return sym_target_fn(1) == 7 ? 0 : 1; }\n",
	      src);
	fclose(src);
	if (system("command -v cc >/dev/null") != 0)
		skip(); /* no compiler */
	snprintf(cmd, sizeof(cmd), "cc -g -O1 %s -o %s/p %s/p.c", flags, dir, dir);
	assert_int_equal(system(cmd), 0);
	if (strip_debuglink) {
		snprintf(cmd, sizeof(cmd),
			 "cd %s && objcopy --only-keep-debug p p.debug && strip --strip-all p && "
			 "objcopy --add-gnu-debuglink=p.debug p",
			 dir);
		assert_int_equal(system(cmd), 0);
		snprintf(cmd, sizeof(cmd), "nm %s/p 2>&1 | grep -q sym_target_fn", dir);
		assert_int_not_equal(system(cmd), 0); /* really stripped */
	}
	snprintf(cmd, sizeof(cmd), "%s/p & echo $!", dir);
	p = popen(cmd, "r");
	assert_non_null(p);
	char pid_s[32] = "";
	assert_non_null(fgets(pid_s, sizeof(pid_s), p));
	pclose(p);
	pid_t pid = atoi(pid_s);
	usleep(200000);
	s = ls_sym_new();
	assert_int_equal(ls_sym_add_process(s, pid), 0);
	/* The function's address: the executable mapping plus nm's offset */
	snprintf(cmd, sizeof(cmd), "nm %s/%s | awk '/ sym_target_fn$/ {print $1}'", dir,
		 strip_debuglink ? "p.debug" : "p");
	p = popen(cmd, "r");
	char nm_s[64] = "";
	assert_non_null(fgets(nm_s, sizeof(nm_s), p));
	pclose(p);
	unsigned long long vaddr = strtoull(nm_s, NULL, 16);
	char mpath[64], line[512];
	snprintf(mpath, sizeof(mpath), "/proc/%d/maps", pid);
	FILE *m = fopen(mpath, "r");
	unsigned long long base = 0;
	while (m && fgets(line, sizeof(line), m)) {
		unsigned long long b, e, off;
		if (strstr(line, "/p\n") && sscanf(line, "%llx-%llx %*s %llx", &b, &e, &off) == 3 && off == 0) {
			base = b;
			break;
		}
	}
	if (m)
		fclose(m);
	/* PIE: runtime = base + vaddr; non-PIE: the link address itself */
	unsigned long long ip = strstr(flags, "no-pie") ? vaddr : base + vaddr;
	ls_sym_resolve(s, pid, ip + 1, buf, sizeof(buf));
	kill(pid, 9);
	waitpid(pid, NULL, 0);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	if (system(cmd)) /* leftovers in /tmp are harmless */
		fprintf(stderr, "could not remove %s\n", dir);
	ls_sym_free(s);
	assert_string_equal(buf, "sym_target_fn");
}

static void test_pie(void **state)
{
	(void)state;
	check_variant("-pie -fPIE", false);
}

static void test_non_pie(void **state)
{
	(void)state;
	check_variant("-no-pie -fno-pie", false);
}

static void test_stripped_debuglink(void **state)
{
	(void)state;
	check_variant("-pie -fPIE", true);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_self_and_libc),
		cmocka_unit_test(test_kernel),
		cmocka_unit_test(test_pie),
		cmocka_unit_test(test_non_pie),
		cmocka_unit_test(test_stripped_debuglink),
	};
	return cmocka_run_group_tests_name("symbolize", tests, NULL, NULL);
}
