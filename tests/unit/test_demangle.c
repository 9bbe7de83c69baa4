// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* C++ names demangled by libstdc++'s demangler; C names left alone. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <cmocka.h>

#include "demangle.h"

static void expect(const char *mangled, const char *want)
{
	char *got = ls_demangle(mangled);

	if (!want) {
		assert_null(got);
		return;
	}
	assert_non_null(got);
	assert_string_equal(got, want);
	free(got);
}

static void test_names(void **state)
{
	(void)state;
	expect("_ZN13llama_context6decodeER11llama_batch", "llama_context::decode(llama_batch&)");
	expect("_ZNSt6thread11_State_implISt5tupleIJPFvvEEEE6_M_runEv",
	       "std::thread::_State_impl<std::tuple<void (*)()> >::_M_run()");
	expect("_Z3foov.cold", "foo() [clone .cold]");
	expect("main", NULL);           /* a C name */
	expect("_Z", NULL);             /* not a whole name */
	expect("_Zgarbage!!", NULL);
	expect(NULL, NULL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {cmocka_unit_test(test_names)};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
