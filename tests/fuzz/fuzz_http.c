// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * libFuzzer target for the HTTP parser: the input is split into pieces at
 * offsets taken from its first bytes, each piece with a known prefix and an
 * unknown rest, fed to a request and a response parser. The parser must not
 * crash, and must never report an end without a head. With the first byte's
 * top bit set both start resynchronising, as on a connection joined
 * mid-stream (seeds mid-*).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "http.h"

struct counts {
	long heads, ends;
};

static void on_head(void *ctx, const struct ls_http_msg *m)
{
	(void)m;
	((struct counts *)ctx)->heads++;
}
static void on_end(void *ctx)
{
	struct counts *c = ctx;
	c->ends++;
	if (c->ends > c->heads)
		abort();
}

static const struct ls_http_cb cb = {.head = on_head, .end = on_end};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct ls_http_parser p;

	for (int kind = 0; kind < 2; kind++) {
		struct counts c = {0};
		size_t at = size > 4 ? 4 : size;
		unsigned k = 0;

		ls_http_init(&p, kind, &cb, &c);
		if (size && data[0] & 0x80)
			ls_http_resync(&p);
		if (kind)
			ls_http_expect_head(&p);
		while (at < size) {
			size_t piece = 1 + data[k % (size < 4 ? size : 4)] % 97;
			size_t known = piece - (k & 1 ? data[(k + 1) % (size < 4 ? size : 4)] % (piece + 1) : 0);
			if (piece > size - at)
				piece = size - at;
			if (known > piece)
				known = piece;
			ls_http_feed(&p, data + at, known, piece);
			at += piece;
			k++;
		}
		ls_http_eof(&p);
	}
	return 0;
}
