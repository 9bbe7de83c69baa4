// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * libFuzzer target for the HTTP parser: the input is split into pieces at
 * offsets taken from its first bytes, each piece with a known prefix and an
 * unknown rest, fed to a request and a response parser. The parser must not
 * crash, and must never report an end without a head. With the first byte's
 * top bit set both start resynchronising, as on a connection joined
 * mid-stream (seeds mid-*).
 *
 * The body scrub (redact.h: what record writes instead of users' bodies)
 * must leave the parser nothing less: the same pieces scrubbed in turn must
 * parse to the same heads, ends, events, engine numbers and losses, at the
 * same stream offsets. (Not for a stream joined mid-flight: there the
 * scrub stars everything before a message starts, by design.)
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "http.h"
#include "redact.h"

#define MAX_TRACE 512

static bool verbose; /* FUZZ_HTTP_VERBOSE set: the scrubbed pieces and both traces */

struct mark {
	char what; /* h(ead) b(ody) e(vent) E(nd) l(ost) t(imings) */
	uint64_t pos, a, b;
};

struct counts {
	long heads, ends;
	const struct ls_http_parser *p;
	struct mark trace[MAX_TRACE];
	int n;
};

static void mark(struct counts *c, char what, uint64_t a, uint64_t b)
{
	if (c->n < MAX_TRACE)
		c->trace[c->n++] = (struct mark){what, c->p->pos, a, b};
}

static void on_head(void *ctx, const struct ls_http_msg *m)
{
	struct counts *c = ctx;
	c->heads++;
	mark(c, 'h', (uint64_t)m->status << 8 | m->sse << 2 | m->chunked << 1 | m->has_length,
	     m->content_length);
}
static void on_body(void *ctx)
{
	mark(ctx, 'b', 0, 0);
}
static void on_event(void *ctx, bool done)
{
	mark(ctx, 'e', done, 0);
}
static void on_end(void *ctx)
{
	struct counts *c = ctx;
	c->ends++;
	if (c->ends > c->heads)
		abort();
	mark(c, 'E', 0, 0);
}
static void on_lost(void *ctx, const char *why)
{
	mark(ctx, 'l', (uintptr_t)why, 0);
}
static void on_timings(void *ctx, const struct ls_http_timings *t)
{
	mark(ctx, 't', (uint64_t)t->prompt_tokens << 32 | t->completion_tokens,
	     (uint64_t)t->prompt_n << 32 | t->predicted_n);
}

static const struct ls_http_cb cb = {.head = on_head,
				     .body_start = on_body,
				     .event = on_event,
				     .end = on_end,
				     .lost = on_lost,
				     .timings = on_timings};

/* Parses the input's pieces (scrubbed first when sc is given) into c. */
static void parse(const uint8_t *data, size_t size, int kind, struct ls_body_conn *sc,
		  struct counts *c)
{
	static struct ls_http_parser p;
	static uint8_t piece_buf[97];
	size_t at = size > 4 ? 4 : size;
	unsigned k = 0;

	c->p = &p;
	ls_http_init(&p, kind, &cb, c);
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
		memcpy(piece_buf, data + at, known);
		if (sc)
			ls_scrub_body(sc, kind == LS_HTTP_RESPONSE, piece_buf, known, piece);
		if (sc && verbose)
			fprintf(stderr, "  piece %zu of %zu: %.*s\n", known, piece, (int)known, piece_buf);
		ls_http_feed(&p, piece_buf, known, piece);
		at += piece;
		k++;
	}
	ls_http_eof(&p);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc, (void)argv;
	verbose = getenv("FUZZ_HTTP_VERBOSE") != NULL;
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct counts plain, scrubbed;

	for (int kind = 0; kind < 2; kind++) {
		struct ls_body_conn sc = {0};

		memset(&plain, 0, sizeof(plain));
		parse(data, size, kind, NULL, &plain);
		/* the scrub's stream must begin with a whole start line */
		size_t first = size > 4 ? 1 + data[0] % 97 : 0;
		if (!first || data[0] & 0x80 ||
		    !ls_http_starts_message(kind, data + 4, first < size - 4 ? first : size - 4))
			continue;
		memset(&scrubbed, 0, sizeof(scrubbed));
		sc.heads_pending = kind; /* as ls_http_expect_head: the first response answers a HEAD */
		parse(data, size, kind, &sc, &scrubbed);
		ls_body_free(&sc);
		for (int i = 0; i < plain.n || i < scrubbed.n; i++) {
			const struct mark *a = &plain.trace[i], *b = &scrubbed.trace[i];
			if (i < plain.n && i < scrubbed.n && a->what == b->what && a->pos == b->pos &&
			    a->a == b->a && a->b == b->b)
				continue;
			fprintf(stderr, "kind %d: mark %d differs: plain %c@%llu (%llx %llx), scrubbed %c@%llu (%llx %llx)\n",
				kind, i, i < plain.n ? a->what : '-', (unsigned long long)a->pos,
				(unsigned long long)a->a, (unsigned long long)a->b,
				i < scrubbed.n ? b->what : '-', (unsigned long long)b->pos,
				(unsigned long long)b->a, (unsigned long long)b->b);
			if (verbose)
				for (int j = 0; j < plain.n || j < scrubbed.n; j++)
					fprintf(stderr, "  %3d: %c@%llu | %c@%llu\n", j,
						j < plain.n ? plain.trace[j].what : '-',
						(unsigned long long)plain.trace[j].pos,
						j < scrubbed.n ? scrubbed.trace[j].what : '-',
						(unsigned long long)scrubbed.trace[j].pos);
			abort();
		}
	}
	return 0;
}
