// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * libFuzzer target for the HTTP/2 frame reader and scrubber: the input
 * (past its first 4 bytes, which choose piece sizes and unknown tails) is
 * one direction of a connection, the first byte's top bit saying which.
 * It is scrubbed piece by piece, as the recorder does, then the scrubbed
 * bytes are read as the report does: in the same pieces, each with the
 * bytes it knew (a capture keeps what each syscall's record held: a
 * SETTINGS frame not captured is as unknown to the report as it was to the
 * recorder), or whole when every byte was known. Neither may crash; and
 * when the scrubbing pass never lost sync, reading its output must tell
 * exactly the header blocks and DATA frames the scrubbing pass told
 * (scrubbing keeps frames and fields), and, when every byte was captured,
 * the same event-stream events (scrubbing keeps "data:" line starts).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "h2.h"

struct counts {
	long headers, data, events;
};

static void on_headers(void *ctx, uint32_t stream, const struct ls_h2_headers *h, bool end)
{
	(void)stream, (void)h, (void)end;
	((struct counts *)ctx)->headers++;
}

static void on_data(void *ctx, uint32_t stream, uint32_t len, bool done, bool end)
{
	(void)stream, (void)len, (void)done, (void)end;
	((struct counts *)ctx)->data++;
}

static void on_event(void *ctx, uint32_t stream, bool done)
{
	(void)stream, (void)done;
	((struct counts *)ctx)->events++;
}

static const struct ls_h2_cb cb = {.headers = on_headers, .data = on_data, .event = on_event};

/* Scrubs buf in the pieces the input's first bytes choose, as the recorder
 * does: a header frame cut by a piece's end (the tail ls_h2_scrub did not
 * take) is scrubbed again joined to the next piece; cut again, starred. */
struct piece {
	size_t at, n, known;
};

static void scrub_pieces(struct ls_h2 *p, uint8_t *buf, size_t n, const uint8_t *sel, bool *partial,
			 struct piece *pc, size_t *npc)
{
	static uint8_t join[2 * 4096 + 200];
	size_t at = 0, held = 0, held_at = 0;

	*npc = 0;
	for (unsigned k = 0; at < n; k++) {
		size_t piece = 1 + sel[k % 4] % 97, known = piece, took;
		if (k & 1)
			known -= sel[(k + 1) % 4] % (piece + 1);
		if (piece > n - at)
			piece = n - at;
		if (known > piece)
			known = piece;
		*partial |= known < piece;
		pc[(*npc)++] = (struct piece){at, piece, known};
		memcpy(join, buf + held_at, held);
		memcpy(join + held, buf + at, known);
		took = ls_h2_scrub(p, join, held + known, held + piece);
		if (took > held + piece)
			abort(); /* never more than it was given */
		if (held && took < held + piece) {
			memset(join + took, '*', held + known - took);
			ls_h2_lose(p, "cut again");
			took = held + piece;
		}
		memcpy(buf + (held ? held_at : at), join, held + known);
		if (took < held + piece) {
			if (known != piece)
				abort(); /* only a tail whose bytes are all known is held */
			held_at = (held ? held_at : at) + took;
			held = held + known - took;
		} else {
			held = 0;
		}
		at += piece;
	}
	if (held) {
		memset(buf + held_at, '*', held);
		ls_h2_lose(p, "the end");
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct ls_h2 s, r;
	struct counts cs = {0}, cr = {0};
	uint8_t *buf;
	bool client, partial = false;
	struct piece *pc;
	size_t npc;

	if (size < 4)
		return 0;
	client = !(data[0] & 0x80);
	buf = malloc(size - 4 + 1);
	pc = malloc((size - 4 + 1) * sizeof(*pc));
	memcpy(buf, data + 4, size - 4);
	if (ls_h2_init(&s, client, &cb, &cs) || ls_h2_init(&r, client, &cb, &cr))
		abort();
	s.peer = &s, r.peer = &r;
	scrub_pieces(&s, buf, size - 4, data, &partial, pc, &npc);
	if (!partial) /* read back whole: the same pieces would lose where the scrub lost */
		ls_h2_feed(&r, buf, size - 4, size - 4);
	for (size_t k = 0; partial && k < npc; k++)
		ls_h2_feed(&r, buf + pc[k].at, pc[k].known, pc[k].n);
	/* event-stream events too, when every byte was captured (bytes not
	 * captured hide where lines are; the buffer still holds them) */
	if (!s.lost_count && (cr.headers != cs.headers || cr.data != cs.data ||
			      (!partial && cr.events != cs.events)))
		abort();
	ls_h2_free(&s);
	ls_h2_free(&r);
	free(pc);
	free(buf);
	return 0;
}
