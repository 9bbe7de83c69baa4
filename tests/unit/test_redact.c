// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Credential redaction: header values and command-line words become '*',
 * lengths kept, everything else untouched.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <string.h>

#include "redact.h"

static void test_http_headers(void **state)
{
	char buf[] = "POST /v1/completions HTTP/1.1\r\nHost: x\r\nauthorization: Bearer sk-1\r\n"
		     "Cookie: a=b; c=d\r\nX-API-Key:k1\r\nApi-Key:  k2\r\nX-Request-Id: r1\r\n"
		     "Proxy-Authorization: Basic Zm9v\r\n\r\n{\"authorization: no\"}";
	const char *want = "POST /v1/completions HTTP/1.1\r\nHost: x\r\nauthorization: ***********\r\n"
			   "Cookie: ********\r\nX-API-Key:**\r\nApi-Key:  **\r\nX-Request-Id: r1\r\n"
			   "Proxy-Authorization: **********\r\n\r\n{\"authorization: no\"}";
	size_t n = strlen(buf);
	bool carry = false;

	(void)state;
	assert_int_equal(ls_redact_http((uint8_t *)buf, n, &carry), 5);
	assert_string_equal(buf, want);
	assert_false(carry);
	/* a value cut across two reads: the rest, in the next read, too */
	char cut[] = "Set-Cookie: session=abc", rest[] = "def; x=1\r\nHost: h\r\n";
	assert_int_equal(ls_redact_http((uint8_t *)cut, strlen(cut), &carry), 1);
	assert_string_equal(cut, "Set-Cookie: ***********");
	assert_true(carry);
	assert_int_equal(ls_redact_http((uint8_t *)rest, strlen(rest), &carry), 1);
	assert_string_equal(rest, "********\r\nHost: h\r\n");
	assert_false(carry);
}

static void test_args(void **state)
{
	char args[] = "env\0OPENAI_API_KEY=sk-123\0PATH=/bin\0vllm\0--hf-token\0hf_abc\0"
		      "--api-key=k\0--model\0m\0--db-password\0pw\0--port\0008";
	char want[] = "env\0OPENAI_API_KEY=******\0PATH=/bin\0vllm\0--hf-token\0******\0"
		      "--api-key=*\0--model\0m\0--db-password\0**\0--port\0008";

	(void)state;
	assert_int_equal(ls_redact_args(args, sizeof(args)), 4);
	assert_memory_equal(args, want, sizeof(want));
	/* flags that only look like secrets keep their values */
	char plain[] = "vllm\0--max-tokens\00016\0--token-ms\0002\0--kv-cache-dtype\0fp8";
	char plainwant[sizeof(plain)];
	memcpy(plainwant, plain, sizeof(plain));
	assert_int_equal(ls_redact_args(plain, sizeof(plain)), 0);
	assert_memory_equal(plain, plainwant, sizeof(plain));
	char more[] = "SECRET_KEY_BASE=abc\0--passwd\0p\0GITHUB_TOKEN=g";
	assert_int_equal(ls_redact_args(more, sizeof(more)), 3);
	assert_memory_equal(more, "SECRET_KEY_BASE=***\0--passwd\0*\0GITHUB_TOKEN=*", sizeof(more));
	/* inside a script given to sh -c */
	char sh[] = "sh\0-c\0python3 x.py --api-key 'k9' & TOKEN=t1 exec srv";
	char shwant[] = "sh\0-c\0python3 x.py --api-key '**' & TOKEN=** exec srv";
	assert_int_equal(ls_redact_args(sh, sizeof(sh)), 2);
	assert_memory_equal(sh, shwant, sizeof(shwant));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_http_headers),
		cmocka_unit_test(test_args),
	};
	return cmocka_run_group_tests_name("redact", tests, NULL, NULL);
}
