// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Symbolizer on live code: a function of this (PIE) test binary, one of a
 * shared library (libc's .dynsym), an address in no mapping, a kernel
 * address when /proc/kallsyms shows real ones, and programs built here: PIE,
 * non-PIE, stripped with a debuglink, stripped with the debug file found by
 * build-id, and a function in a shared library they link.
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

/* The budget spent: libc's table, read after it, is not kept but counted;
 * what was read before still resolves. */
static void test_budget(void **state)
{
	struct ls_symbolizer *s = ls_sym_new();
	char buf[256];

	(void)state;
	assert_int_equal(ls_sym_add_process(s, getpid()), 0);
	ls_sym_resolve(s, getpid(), (uint64_t)(uintptr_t)&ls_test_known_function + 4, buf, sizeof(buf));
	assert_string_equal(buf, "ls_test_known_function");
	assert_int_equal(ls_sym_dropped(s), 0);
	ls_sym_set_budget(s, 0);
	ls_sym_resolve(s, getpid(), (uint64_t)(uintptr_t)&fwrite, buf, sizeof(buf));
	assert_null(strstr(buf, "fwrite"));
	assert_true(ls_sym_dropped(s) > 100);
	ls_sym_resolve(s, getpid(), (uint64_t)(uintptr_t)&ls_test_known_function + 4, buf, sizeof(buf));
	assert_string_equal(buf, "ls_test_known_function");
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

	/* read ahead in a thread: the same name; and freed unused (joined) */
	s = ls_sym_new();
	ls_sym_prefetch_kernel(s);
	ls_sym_prefetch_kernel(s); /* once */
	ls_sym_resolve(s, 0, addr + 1, buf, sizeof(buf));
	assert_string_equal(buf, "schedule");
	ls_sym_free(s);
	s = ls_sym_new();
	ls_sym_prefetch_kernel(s);
	ls_sym_free(s);
}

enum variant {
	V_PLAIN,     /* symbols in the binary */
	V_DEBUGLINK, /* stripped; symbols in p.debug beside it, named by .gnu_debuglink */
	V_BUILDID,   /* stripped, no debuglink; symbols in DEBUG/.build-id/xx/rest.debug */
	V_SHLIB,     /* the function lives in a shared library the program links */
};

static int sh(const char *fmt, ...)
{
	char cmd[2048];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	return system(cmd);
}

static void sh_line(char *out, size_t len, const char *fmt, ...)
{
	char cmd[2048];
	va_list ap;
	FILE *p;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	p = popen(cmd, "r");
	assert_non_null(p);
	out[0] = '\0';
	if (!fgets(out, (int)len, p))
		out[0] = '\0';
	pclose(p);
	out[strcspn(out, "\n")] = '\0';
}

/* Builds a program (cc FLAGS) in the given variant, runs it, and resolves
 * the address of a known function (nm's value, placed by the process's
 * mappings). */
static void check_variant(const char *flags, enum variant v)
{
	char dir[] = "/tmp/ls-sym-XXXXXX", buf[256], line[512], pid_s[32], nm_s[64];
	const char *obj = v == V_SHLIB ? "libsym.so" : "p";
	struct ls_symbolizer *s;

	if (system("command -v cc >/dev/null") != 0)
		skip(); /* no compiler */
	assert_non_null(mkdtemp(dir));
	assert_int_equal(sh("cd %s && printf '%%s\\n' '__attribute__((noinline)) int sym_target_fn(int x) "
			    "{ return x * 7; }' >lib.c && printf '%%s\\n' '#include <unistd.h>' "
			    "'int sym_target_fn(int);' 'int main(void) { sleep(5); return "
			    "sym_target_fn(1) == 7 ? 0 : 1; }' >p.c",
			    dir),
			 0);
	if (v == V_SHLIB)
		assert_int_equal(sh("cd %s && cc -g -O1 -shared -fPIC -o libsym.so lib.c && "
				    "cc -g -O1 %s -o p p.c -L. -lsym -Wl,-rpath,%s",
				    dir, flags, dir),
				 0);
	else
		assert_int_equal(sh("cd %s && cc -g -O1 %s -o p p.c lib.c", dir, flags), 0);
	if (v == V_DEBUGLINK)
		assert_int_equal(sh("cd %s && objcopy --only-keep-debug p p.debug && strip --strip-all p && "
				    "objcopy --add-gnu-debuglink=p.debug p",
				    dir),
				 0);
	if (v == V_BUILDID) {
		char id[128];
		sh_line(id, sizeof(id), "readelf -n %s/p | awk '/Build ID/ {print $3}'", dir);
		assert_true(strlen(id) > 2);
		assert_int_equal(sh("cd %s && mkdir -p debug/.build-id/%.2s && "
				    "objcopy --only-keep-debug p debug/.build-id/%.2s/%s.debug && "
				    "strip --strip-all p",
				    dir, id, id, id + 2),
				 0);
	}
	if (v == V_DEBUGLINK || v == V_BUILDID)
		assert_int_not_equal(sh("nm %s/p 2>&1 | grep -q sym_target_fn", dir), 0); /* really stripped */
	sh_line(pid_s, sizeof(pid_s), "%s/p & echo $!", dir);
	pid_t pid = atoi(pid_s);
	assert_true(pid > 0);
	usleep(200000);
	/* The function's address: the object's first mapping plus nm's value */
	sh_line(nm_s, sizeof(nm_s), "nm %s/%s | awk '/ sym_target_fn$/ {print $1}'", dir,
		v == V_DEBUGLINK ? "p.debug" : v == V_BUILDID ? "debug/.build-id/*/*.debug" : obj);
	unsigned long long vaddr = strtoull(nm_s, NULL, 16), base = 0;
	char mpath[64], suffix[32];
	snprintf(mpath, sizeof(mpath), "/proc/%d/maps", pid);
	snprintf(suffix, sizeof(suffix), "/%s\n", obj);
	FILE *m = fopen(mpath, "r");
	while (m && fgets(line, sizeof(line), m)) {
		unsigned long long b, e, off;
		size_t n = strlen(line);
		if (n > strlen(suffix) && !strcmp(line + n - strlen(suffix), suffix) &&
		    sscanf(line, "%llx-%llx %*s %llx", &b, &e, &off) == 3 && off == 0) {
			base = b;
			break;
		}
	}
	if (m)
		fclose(m);
	/* position-independent: runtime = base + vaddr; non-PIE: the link address */
	unsigned long long ip = strstr(flags, "no-pie") && v != V_SHLIB ? vaddr : base + vaddr;
	char unknown[256] = "";
	if (v == V_BUILDID) { /* without the debug dir it is not found */
		s = ls_sym_new();
		assert_int_equal(ls_sym_add_process(s, pid), 0);
		ls_sym_resolve(s, pid, ip + 1, unknown, sizeof(unknown));
		ls_sym_free(s);
	}
	s = ls_sym_new();
	assert_int_equal(ls_sym_add_process(s, pid), 0);
	if (v == V_BUILDID) {
		char dd[64];
		snprintf(dd, sizeof(dd), "%s/debug/", dir);
		assert_int_equal(ls_sym_set_debug_dir(s, dd), 0);
	}
	ls_sym_resolve(s, pid, ip + 1, buf, sizeof(buf));
	kill(pid, 9);
	waitpid(pid, NULL, 0);
	if (sh("rm -rf %s", dir)) /* leftovers in /tmp are harmless */
		fprintf(stderr, "could not remove %s\n", dir);
	ls_sym_free(s);
	assert_true(base != 0 || (strstr(flags, "no-pie") && v != V_SHLIB));
	assert_string_equal(buf, "sym_target_fn");
	if (v == V_BUILDID)
		assert_string_not_equal(unknown, "sym_target_fn");
}

/* The build-id note as readelf reads it; none in a file without one. */
static void test_build_id(void **state)
{
	unsigned char id[LS_BUILD_ID_MAX];
	char hex[64] = "", want[64];
	int n;

	(void)state;
	sh_line(want, sizeof(want), "readelf -n /proc/%d/exe | awk '/Build ID/ {print $3}'", getpid());
	struct ls_symbolizer *s = ls_sym_new();
	n = ls_sym_build_id(s, "/proc/self/exe", id, sizeof(id));
	for (int i = 0; i < n; i++)
		snprintf(hex + 2 * i, sizeof(hex) - 2 * i, "%02x", id[i]);
	assert_string_equal(hex, want);
	assert_true(n == 20);
	assert_int_equal(ls_sym_build_id(s, "/proc/self/exe", id, sizeof(id)), n); /* cached */
	assert_int_equal(ls_sym_build_id(s, "/nonexistent", id, sizeof(id)), -1);
	assert_int_equal(ls_sym_build_id(s, "/proc/self/status", id, sizeof(id)), -1); /* not ELF */
	ls_sym_free(s);
}

static void test_pie(void **state)
{
	(void)state;
	check_variant("-pie -fPIE", V_PLAIN);
}

static void test_non_pie(void **state)
{
	(void)state;
	check_variant("-no-pie -fno-pie", V_PLAIN);
}

static void test_stripped_debuglink(void **state)
{
	(void)state;
	check_variant("-pie -fPIE", V_DEBUGLINK);
}

static void test_stripped_build_id(void **state)
{
	(void)state;
	check_variant("-pie -fPIE", V_BUILDID);
}

static void test_shared_library(void **state)
{
	(void)state;
	check_variant("-no-pie -fno-pie", V_SHLIB);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_self_and_libc),
		cmocka_unit_test(test_kernel),
		cmocka_unit_test(test_budget),
		cmocka_unit_test(test_pie),
		cmocka_unit_test(test_non_pie),
		cmocka_unit_test(test_stripped_debuglink),
		cmocka_unit_test(test_stripped_build_id),
		cmocka_unit_test(test_shared_library),
		cmocka_unit_test(test_build_id),
	};
	return cmocka_run_group_tests_name("symbolize", tests, NULL, NULL);
}
