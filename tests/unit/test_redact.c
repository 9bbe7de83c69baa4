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

static void test_bodies(void **state)
{
	struct ls_body_conn c = {0};
	/* a body split across reads, then a pipelined request after a body */
	char r1[] = "POST /v1/completions HTTP/1.1\r\nContent-Length: 33\r\n\r\n{\"prompt\": \"sec";
	char r2[] = "ret text\"}........GET /health HTTP/1.1\r\n\r\n";
	/* a streamed response: chunk sizes, data lines, the end marker */
	char s1[] = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
		    "Transfer-Encoding: chunked\r\n\r\n19\r\ndata: {\"text\": \"hello\"}\n\n\r\n";
	char s2[] = "e\r\ndata: [DONE]\n\n\r\n0\r\n\r\n";
	/* the answer to a HEAD has a length and no body: the next head stays */
	char h1[] = "HEAD / HTTP/1.1\r\n\r\n";
	char h2[] = "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nhi";

	(void)state;
	ls_scrub_body(&c, false, (uint8_t *)r1, strlen(r1), strlen(r1));
	ls_scrub_body(&c, false, (uint8_t *)r2, strlen(r2), strlen(r2));
	assert_non_null(strstr(r1, "\r\n\r\n************"));
	assert_null(strstr(r1, "prompt"));
	assert_string_equal(r2, "******************GET /health HTTP/1.1\r\n\r\n");
	ls_scrub_body(&c, true, (uint8_t *)s1, strlen(s1), strlen(s1));
	ls_scrub_body(&c, true, (uint8_t *)s2, strlen(s2), strlen(s2));
	assert_non_null(strstr(s1, "\r\n19\r\ndata: *****************\n\n\r\n"));
	assert_string_equal(s2, "e\r\ndata: [DONE]\n\n\r\n0\r\n\r\n");
	ls_scrub_body(&c, false, (uint8_t *)h1, strlen(h1), strlen(h1));
	ls_scrub_body(&c, true, (uint8_t *)h2, strlen(h2), strlen(h2));
	assert_non_null(strstr(h2, "\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n**"));

	/* an event larger than the capture: its line ends in the bytes not kept,
	 * so the next write's chunk size survives (the demo's 1500-byte tokens) */
	struct ls_body_conn big = {0};
	char b0[] = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
		    "Transfer-Encoding: chunked\r\n\r\n";
	char b1[] = "5dc\r\ndata: {\"text\": \"aaaa", b2[] = "5dc\r\ndata: {\"text\": \"bbbb";
	ls_scrub_body(&big, true, (uint8_t *)b0, strlen(b0), strlen(b0));
	/* 1507 moved (size line, 1500 bytes, CRLF), 22 kept */
	ls_scrub_body(&big, true, (uint8_t *)b1, strlen(b1), 1507);
	ls_scrub_body(&big, true, (uint8_t *)b2, strlen(b2), 1507);
	assert_string_equal(b2, "5dc\r\ndata: **************");

	/* events written in pieces, or re-chunked by a proxy where its reads
	 * ended: a data line goes on across chunks and writes, "data:" itself
	 * split; other fields kept */
	struct ls_body_conn pc = {0};
	char p0[] = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
		    "Transfer-Encoding: chunked\r\n\r\n6\r\ndata: \r\n";
	char p1[] = "11\r\n{\"text\":\"secret\"}\r\n", p2[] = "4\r\n\n\nda\r\n";
	char p3[] = "12\r\nta: \"secret2\"\n\nid:\r\n12\r\n 4\n\nda";
	char p4[] = "ta: [DONE]\n\n\r\n0\r\n\r\n";
	ls_scrub_body(&pc, true, (uint8_t *)p0, strlen(p0), strlen(p0));
	ls_scrub_body(&pc, true, (uint8_t *)p1, strlen(p1), strlen(p1));
	ls_scrub_body(&pc, true, (uint8_t *)p2, strlen(p2), strlen(p2));
	ls_scrub_body(&pc, true, (uint8_t *)p3, strlen(p3), strlen(p3));
	ls_scrub_body(&pc, true, (uint8_t *)p4, strlen(p4), strlen(p4));
	assert_non_null(strstr(p0, "\r\n\r\n6\r\ndata: \r\n"));
	assert_string_equal(p1, "11\r\n*****************\r\n");
	assert_string_equal(p2, "4\r\n\n\nda\r\n");
	assert_string_equal(p3, "12\r\nta: *********\n\nid:\r\n12\r\n 4\n\nda");
	assert_string_equal(p4, "ta: [DONE]\n\n\r\n0\r\n\r\n");

	/* a data line the capture cut: the rest of it, in the next write,
	 * is not known to be framing: starred to its end (no chunks here) */
	struct ls_body_conn lc = {0};
	char l0[] = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n\r\ndata: {\"t\":\"se";
	char l1[] = "cret\"}\n\nevent: x\ndata: y\n\n";
	ls_scrub_body(&lc, true, (uint8_t *)l0, strlen(l0), strlen(l0) + 40);
	ls_scrub_body(&lc, true, (uint8_t *)l1, strlen(l1), strlen(l1));
	assert_string_equal(l1, "******\n\nevent: x\ndata: *\n\n");

	/* a head read in two pieces: the body after it is still found */
	struct ls_body_conn split = {0};
	char h1a[] = "POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Le";
	char h1b[] = "ngth: 6\r\n\r\nsecretGET / HTTP/1.1\r\n\r\n";
	ls_scrub_body(&split, false, (uint8_t *)h1a, strlen(h1a), strlen(h1a));
	ls_scrub_body(&split, false, (uint8_t *)h1b, strlen(h1b), strlen(h1b));
	assert_string_equal(h1a, "POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Le");
	assert_string_equal(h1b, "ngth: 6\r\n\r\n******GET / HTTP/1.1\r\n\r\n");
	ls_body_free(&split);

	/* a connection met mid-stream: all of it until a message starts */
	struct ls_body_conn mid = {0};
	char m1[] = "data: {\"text\": \"x\"}\n\n", m2[] = "HTTP/1.1 204 No Content\r\n\r\n";
	ls_scrub_body(&mid, true, (uint8_t *)m1, strlen(m1), strlen(m1));
	ls_scrub_body(&mid, true, (uint8_t *)m2, strlen(m2), strlen(m2));
	assert_string_equal(m1, "*********************");
	assert_string_equal(m2, "HTTP/1.1 204 No Content\r\n\r\n");

	/* an engine's timings and usage (numbers under its own keys) are kept;
	 * an object that holds text, or is cut, is not */
	struct ls_body_conn eng = {0};
	char e0[] = "HTTP/1.1 200 OK\r\nContent-Length: 144\r\n\r\n"
		    "{\"text\":\"secret\",\"usage\":{\"prompt_tokens\":9},\"timings\":{\"prompt_ms\":1.5,"
		    "\"predicted_n\":2, \"predicted_ms\":3e1},\"x\":{\"a\":\"secret\"},\"timings\":{\"p\":1";
	ls_scrub_body(&eng, true, (uint8_t *)e0, strlen(e0), strlen(e0));
	assert_non_null(strstr(e0, "\r\n\r\n*****************\"usage\":{\"prompt_tokens\":9}*"
				    "\"timings\":{\"prompt_ms\":1.5,\"predicted_n\":2, \"predicted_ms\":3e1}***"));
	assert_null(strstr(e0, "secret"));
	assert_null(strstr(e0, "\"p\":1"));
}

/* Chunked bodies that are not event streams (an NDJSON stream such as
 * Ollama's, a chunked request), and bodies that run to the connection's
 * end: framing kept, content starred. */
static void test_chunked_bodies(void **state)
{
	(void)state;
	/* NDJSON, one line per chunk, the numbers of usage kept; then the last
	 * chunk, and the next response on the connection is left alone */
	struct ls_body_conn c = {0};
	char n0[] = "HTTP/1.1 200 OK\r\nContent-Type: application/x-ndjson\r\n"
		    "Transfer-Encoding: chunked\r\n\r\n1f\r\n{\"response\":\"secret\",\"done\":0}\n\r\n";
	char n1[] = "24\r\n{\"done\":1,\"usage\":{\"eval_count\":7}}\n\r\n";
	char n2[] = "0\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nhi";
	ls_scrub_body(&c, true, (uint8_t *)n0, strlen(n0), strlen(n0));
	ls_scrub_body(&c, true, (uint8_t *)n1, strlen(n1), strlen(n1));
	ls_scrub_body(&c, true, (uint8_t *)n2, strlen(n2), strlen(n2));
	assert_non_null(strstr(n0, "chunked\r\n\r\n1f\r\n*******************************\r\n"));
	assert_string_equal(n1, "24\r\n**********\"usage\":{\"eval_count\":7}**\r\n");
	assert_string_equal(n2, "0\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n**");

	/* a chunked request: an extension, a size line and data split across
	 * reads, a trailer, then a pipelined request */
	struct ls_body_conn q = {0};
	char q0[] = "POST /api/generate HTTP/1.1\r\nTransfer-Encoding: gzip, chunked \r\n\r\n"
		    "6;x=1\r\nsecret\r\n1";
	char q1[] = "0\r\nsecretsec", q2[] = "retsecr\r\n0\r\nX-T: v\r\n\r\nGET / HTTP/1.1\r\n\r\n";
	ls_scrub_body(&q, false, (uint8_t *)q0, strlen(q0), strlen(q0));
	ls_scrub_body(&q, false, (uint8_t *)q1, strlen(q1), strlen(q1));
	ls_scrub_body(&q, false, (uint8_t *)q2, strlen(q2), strlen(q2));
	assert_non_null(strstr(q0, "\r\n\r\n6;x=1\r\n******\r\n1"));
	assert_string_equal(q1, "0\r\n*********");
	assert_string_equal(q2, "*******\r\n0\r\nX-T: v\r\n\r\nGET / HTTP/1.1\r\n\r\n");

	/* chunk data the capture did not keep counts against the chunk */
	struct ls_body_conn g = {0};
	char g0[] = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n";
	char g1[] = "14\r\nsecre"; /* 14 moved: 5 of the chunk's 20 bytes not kept */
	char g2[] = "etsecret12\r\n0\r\n\r\n";
	ls_scrub_body(&g, true, (uint8_t *)g0, strlen(g0), strlen(g0));
	ls_scrub_body(&g, true, (uint8_t *)g1, strlen(g1), 14);
	ls_scrub_body(&g, true, (uint8_t *)g2, strlen(g2), strlen(g2));
	assert_string_equal(g1, "14\r\n*****");
	assert_string_equal(g2, "**********\r\n0\r\n\r\n");

	/* framing that makes no sense: everything until a message starts */
	struct ls_body_conn b = {0};
	char b0[] = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nsecret";
	char b1[] = "5\r\nmore secret\r\n", b2[] = "HTTP/1.1 204 No Content\r\n\r\n";
	ls_scrub_body(&b, true, (uint8_t *)b0, strlen(b0), strlen(b0));
	ls_scrub_body(&b, true, (uint8_t *)b1, strlen(b1), strlen(b1));
	ls_scrub_body(&b, true, (uint8_t *)b2, strlen(b2), strlen(b2));
	assert_non_null(strstr(b0, "\r\n\r\nzz\r\n******"));
	assert_string_equal(b1, "****************");
	assert_string_equal(b2, "HTTP/1.1 204 No Content\r\n\r\n");

	/* a status line split between two writes, after a message: the head is
	 * gathered and its body found (it was kept whole); a coding that is
	 * not chunked leaves the length to frame the body, as the parser */
	struct ls_body_conn sp = {0};
	char s0[] = "HTTP/1.1 204 No Content\r\n\r\nHTTP/1.1 2";
	char s1[] = "00 OK\r\nTransfer-Encoding: gzip\r\nContent-Length: 6\r\n\r\nsecret";
	char s2[] = "HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nabc";
	ls_scrub_body(&sp, true, (uint8_t *)s0, strlen(s0), strlen(s0));
	ls_scrub_body(&sp, true, (uint8_t *)s1, strlen(s1), strlen(s1));
	ls_scrub_body(&sp, true, (uint8_t *)s2, strlen(s2), strlen(s2));
	assert_string_equal(s1, "00 OK\r\nTransfer-Encoding: gzip\r\nContent-Length: 6\r\n\r\n******");
	assert_string_equal(s2, "HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\n***");
	ls_body_free(&sp);

	/* no length, no chunks: the body runs to the end of the connection;
	 * a request without either has no body */
	struct ls_body_conn e = {0};
	char e0[] = "GET / HTTP/1.0\r\n\r\n";
	char e1[] = "HTTP/1.0 200 OK\r\nContent-Type: application/json\r\n\r\n{\"text\":";
	char e2[] = "\"secret\"}";
	ls_scrub_body(&e, false, (uint8_t *)e0, strlen(e0), strlen(e0));
	ls_scrub_body(&e, true, (uint8_t *)e1, strlen(e1), strlen(e1));
	ls_scrub_body(&e, true, (uint8_t *)e2, strlen(e2), strlen(e2));
	assert_string_equal(e0, "GET / HTTP/1.0\r\n\r\n");
	assert_non_null(strstr(e1, "\r\n\r\n********"));
	assert_string_equal(e2, "*********");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_http_headers),
		cmocka_unit_test(test_args),
		cmocka_unit_test(test_bodies),
		cmocka_unit_test(test_chunked_bodies),
	};
	return cmocka_run_group_tests_name("redact", tests, NULL, NULL);
}
