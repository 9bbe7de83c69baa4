// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * HTTP/2 frame reader (see h2.h): frame headers byte by byte, the payload
 * bytes a frame type needs copied, the rest skipped by count. HPACK is
 * libnghttp2's inflater, never ours.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <nghttp2/nghttp2.h>

#include "h2.h"
#include "redact.h"

enum {
	T_DATA = 0x0, T_HEADERS = 0x1, T_PRIORITY = 0x2, T_RST_STREAM = 0x3, T_SETTINGS = 0x4,
	T_PUSH_PROMISE = 0x5, T_PING = 0x6, T_GOAWAY = 0x7, T_WINDOW_UPDATE = 0x8,
	T_CONTINUATION = 0x9,
};
enum { F_END_STREAM = 0x1, F_ACK = 0x1, F_END_HEADERS = 0x4, F_PADDED = 0x8, F_PRIORITY = 0x20 };

#define MAX_BLOCK (256u << 10) /* a header block larger than this is not followed */
#define DONE_MARKER "data: [DONE]"

bool ls_h2_starts(const uint8_t *s, size_t n, bool client)
{
	if (client)
		return n >= LS_H2_PREFACE_LEN && !memcmp(s, LS_H2_PREFACE, LS_H2_PREFACE_LEN);
	/* SETTINGS (type 4), no flags, stream 0, a whole number of settings */
	return n >= 9 && s[3] == T_SETTINGS && !s[4] && !s[5] && !s[6] && !s[7] && !s[8] &&
	       ((uint32_t)s[0] << 16 | (uint32_t)s[1] << 8 | s[2]) % 6 == 0;
}

bool ls_h2_whole_frames(const uint8_t *s, size_t known, size_t total)
{
	size_t at = 0;

	if (known != total || total < 9)
		return false;
	while (at + 9 <= total) {
		uint32_t len = (uint32_t)s[at] << 16 | (uint32_t)s[at + 1] << 8 | s[at + 2];
		if (s[at + 3] > T_CONTINUATION || (s[at + 5] & 0x80) || len > total - at - 9)
			return false;
		at += 9 + len;
	}
	return at == total;
}

void ls_h2_midflight(struct ls_h2 *p)
{
	p->midflight = true;
	p->preface_left = 0;
}

int ls_h2_init(struct ls_h2 *p, bool client_side, const struct ls_h2_cb *cb, void *ctx)
{
	nghttp2_hd_inflater *inf;

	memset(p, 0, sizeof(*p));
	p->cb = cb;
	p->ctx = ctx;
	p->preface_left = client_side ? LS_H2_PREFACE_LEN : 0;
	p->max_frame = 16384; /* SETTINGS_MAX_FRAME_SIZE's initial value */
	p->init_window = 65535; /* SETTINGS_INITIAL_WINDOW_SIZE's */
	if (nghttp2_hd_inflate_new(&inf))
		return -1;
	p->inflater = inf;
	return 0;
}

void ls_h2_free(struct ls_h2 *p)
{
	nghttp2_hd_inflate_del(p->inflater);
	free(p->buf);
	free(p->blk);
	memset(p, 0, sizeof(*p));
}

static void lose(struct ls_h2 *p, const char *why)
{
	if (p->lost)
		return;
	p->lost = true;
	p->lost_count++;
	if (p->cb->lost)
		p->cb->lost(p->ctx, why);
}

static void copy_value(char *dst, size_t cap, const uint8_t *v, size_t n)
{
	if (n >= cap)
		n = cap - 1;
	memcpy(dst, v, n);
	dst[n] = '\0';
}

static bool name_is(const nghttp2_nv *nv, const char *name)
{
	size_t n = strlen(name);

	return nv->namelen == n && !memcmp(nv->name, name, n);
}

static bool value_starts(const nghttp2_nv *nv, const char *prefix)
{
	size_t n = strlen(prefix);

	return nv->valuelen >= n && !strncasecmp((const char *)nv->value, prefix, n);
}

static void take_field(struct ls_h2_headers *h, const nghttp2_nv *nv)
{
	struct ls_http_msg *m = &h->m;

	if (name_is(nv, ":method")) {
		copy_value(m->method, sizeof(m->method), nv->value, nv->valuelen);
	} else if (name_is(nv, ":path")) {
		copy_value(m->path, sizeof(m->path), nv->value, nv->valuelen);
	} else if (name_is(nv, ":status")) {
		char s[8];
		copy_value(s, sizeof(s), nv->value, nv->valuelen);
		m->status = atoi(s);
	} else if (name_is(nv, "x-request-id")) {
		copy_value(m->x_request_id, sizeof(m->x_request_id), nv->value, nv->valuelen);
	} else if (name_is(nv, "traceparent")) {
		copy_value(m->traceparent, sizeof(m->traceparent), nv->value, nv->valuelen);
	} else if (name_is(nv, "x-forwarded-for") && !m->forwarded_for[0]) {
		ls_http_first_forwarded(m->forwarded_for, sizeof(m->forwarded_for),
					(const char *)nv->value, nv->valuelen);
	} else if (name_is(nv, "forwarded") && !m->forwarded_for[0]) {
		ls_http_first_forwarded_for(m->forwarded_for, sizeof(m->forwarded_for),
					    (const char *)nv->value, nv->valuelen);
	} else if (name_is(nv, "content-type")) {
		m->sse = value_starts(nv, "text/event-stream");
		h->grpc = value_starts(nv, "application/grpc");
	} else if (name_is(nv, "grpc-status")) {
		char s[8];
		copy_value(s, sizeof(s), nv->value, nv->valuelen);
		h->grpc_status = atoi(s);
	}
}

static void sse_end(struct ls_h2 *p, uint32_t stream);

/* A header block read (decoded, or scrubbed in place): told, unless a
 * PUSH_PROMISE's; an event-stream response's stream is scanned for events
 * from now until it ends. */
static void headers_done(struct ls_h2 *p, const struct ls_h2_headers *h)
{
	if (p->blk_push)
		return;
	if (h->m.sse && !p->blk_end_stream && p->nsse < (int)(sizeof(p->sse) / sizeof(p->sse[0])))
		p->sse[p->nsse++] = (struct ls_h2_sse){.stream = p->blk_stream};
	if (p->cb->headers)
		p->cb->headers(p->ctx, p->blk_stream, h, p->blk_end_stream);
	if (p->blk_end_stream)
		sse_end(p, p->blk_stream);
}

/* The block is whole: decode it (always, so the table stays in step) and
 * tell it, unless it was a PUSH_PROMISE's. */
static void block_done(struct ls_h2 *p)
{
	nghttp2_hd_inflater *inf = p->inflater;
	struct ls_h2_headers h = {.grpc_status = -1};
	static const uint8_t none;
	const uint8_t *in = p->blk ? p->blk : &none; /* an empty block is one */
	size_t left = p->blk_len;

	p->blk_open = false;
	for (;;) {
		nghttp2_nv nv;
		int flags = 0;
		ssize_t n = nghttp2_hd_inflate_hd2(inf, &nv, &flags, in, left, 1);
		if (n < 0) {
			char why[96];
			snprintf(why, sizeof(why), "HPACK: %s", nghttp2_strerror((int)n));
			lose(p, why);
			return;
		}
		in += n;
		left -= (size_t)n;
		if (flags & NGHTTP2_HD_INFLATE_EMIT)
			take_field(&h, &nv);
		if (flags & NGHTTP2_HD_INFLATE_FINAL) {
			nghttp2_hd_inflate_end_headers(inf);
			break;
		}
		if (!n && !(flags & NGHTTP2_HD_INFLATE_EMIT)) {
			lose(p, "HPACK: header block ends inside a field");
			return;
		}
	}
	p->blk_len = 0;
	headers_done(p, &h);
}

static struct ls_h2_sse *sse_of(struct ls_h2 *p, uint32_t stream)
{
	for (int i = 0; i < p->nsse; i++)
		if (p->sse[i].stream == stream)
			return &p->sse[i];
	return NULL;
}

/* The stream is over (END_STREAM, RST_STREAM): its scan goes. */
static void sse_end(struct ls_h2 *p, uint32_t stream)
{
	struct ls_h2_sse *e = sse_of(p, stream);

	if (e)
		*e = p->sse[--p->nsse];
}

/*
 * k captured payload bytes of an event-stream response's DATA frame: each
 * line that begins "data:" is an event (told; "data: [DONE]" told as
 * done); scrubbing (star), the rest of a data line becomes '*', line ends
 * and other lines stay. A "data:" cut by a frame's end is matched across.
 */
static void sse_scan(struct ls_h2 *p, struct ls_h2_sse *e, uint8_t *b, size_t k, bool star)
{
	static const char tag[] = "data:";

	for (size_t i = 0; i < k;) {
		if (e->in_data || e->mid_line) {
			for (; i < k && b[i] != '\n' && b[i] != '\r'; i++)
				if (e->in_data && star)
					b[i] = '*';
			if (i < k)
				e->in_data = e->mid_line = false, i++;
			continue;
		}
		if (b[i] == '\n' || b[i] == '\r') {
			e->matched = 0, i++;
			continue;
		}
		if (b[i] != (uint8_t)tag[e->matched]) {
			e->matched = 0;
			e->mid_line = true;
			continue;
		}
		i++;
		if (++e->matched < 5)
			continue;
		e->matched = 0;
		e->in_data = true;
		bool done = false;
		if (i < k && b[i] == ' ')
			i++;
		if (k - i >= 6 && !memcmp(b + i, "[DONE]", 6))
			done = true, i += 6;
		if (p->cb->event)
			p->cb->event(p->ctx, p->stream, done);
	}
}

static void block_add(struct ls_h2 *p, const uint8_t *s, size_t n)
{
	if (!n)
		return;
	if (p->blk_len + n > MAX_BLOCK) {
		lose(p, "a header block larger than 256 KiB");
		return;
	}
	if (p->blk_len + n > p->blk_cap) {
		size_t cap = p->blk_cap ? p->blk_cap : 1024;
		while (cap < p->blk_len + n)
			cap *= 2;
		uint8_t *b = realloc(p->blk, cap);
		if (!b)
			abort();
		p->blk = b;
		p->blk_cap = cap;
	}
	memcpy(p->blk + p->blk_len, s, n);
	p->blk_len += n;
}

/* An HPACK integer with an n-bit prefix at s[*i]; -1 when cut short. */
static int64_t hpack_int(const uint8_t *s, size_t len, size_t *i, int bits)
{
	uint64_t max = (1u << bits) - 1, v;

	if (*i >= len)
		return -1;
	v = s[(*i)++] & max;
	if (v < max)
		return (int64_t)v;
	for (int m = 0; m < 56; m += 7) {
		if (*i >= len)
			return -1;
		uint8_t b = s[(*i)++];
		v += (uint64_t)(b & 0x7f) << m;
		if (!(b & 0x80))
			return (int64_t)v;
	}
	return -1;
}

/* An HPACK string at s[*i]: its bytes [*b, *i after) and whether Huffman. */
static bool hpack_str(const uint8_t *s, size_t len, size_t *i, size_t *b, bool *huff)
{
	int64_t n;

	if (*i >= len)
		return false;
	*huff = s[*i] & 0x80;
	n = hpack_int(s, len, i, 7);
	if (n < 0 || (uint64_t)n > len - *i)
		return false;
	*b = *i;
	*i += (size_t)n;
	return true;
}

/*
 * A whole header block in place: each field representation is found by its
 * lengths (the wire layout, RFC 7541 §6), handed to the inflater on its own
 * (so the name is known, from the table as it stands at that field), and a
 * credential's value bytes are overwritten after the inflater read them.
 */
static void scrub_block(struct ls_h2 *p, uint8_t *blk, size_t len)
{
	nghttp2_hd_inflater *inf = p->inflater;
	struct ls_h2_headers h = {.grpc_status = -1};
	const char *err = NULL;
	size_t i = 0, at = 0;

	while (i < len && !err) {
		size_t vb = 0, nb;
		uint8_t b = blk[i];
		bool huff = false, literal = !(b & 0x80) && (b & 0xe0) != 0x20;
		/* indexed, literal with indexing, table size update, literal */
		int bits = b & 0x80 ? 7 : (b & 0xc0) == 0x40 ? 6 : (b & 0xe0) == 0x20 ? 5 : 4;
		int64_t idx;

		at = i;
		idx = hpack_int(blk, len, &i, bits);
		if (idx < 0 || (literal && !idx && !hpack_str(blk, len, &i, &nb, &huff)) ||
		    (literal && !hpack_str(blk, len, &i, &vb, &huff))) {
			err = "cut short";
			break;
		}
		for (size_t in = at; in < i;) {
			nghttp2_nv nv;
			int flags = 0;
			ssize_t n = nghttp2_hd_inflate_hd2(inf, &nv, &flags, blk + in, i - in, i == len);
			if (n < 0 || (!n && !(flags & NGHTTP2_HD_INFLATE_EMIT))) {
				err = n < 0 ? nghttp2_strerror((int)n) : "the inflater took no byte";
				break;
			}
			in += (size_t)n;
			if (!(flags & NGHTTP2_HD_INFLATE_EMIT))
				continue;
			take_field(&h, &nv);
			if (literal && ls_secret_header((const char *)nv.name, nv.namelen)) {
				memset(blk + vb, huff ? 0xf8 : '*', i - vb); /* 0xf8: the code of '&' */
				p->secrets++;
			}
		}
	}
	if (err) {
		char why[96];
		snprintf(why, sizeof(why), "HPACK: the field at byte %zu of a %zu-byte block: %s", at,
			 len, err);
		memset(blk + at, '*', len - at);
		lose(p, why);
		return;
	}
	for (;;) { /* the block's end: the inflater's FINAL */
		nghttp2_nv nv;
		int flags = 0;
		if (nghttp2_hd_inflate_hd2(inf, &nv, &flags, NULL, 0, 1) < 0 ||
		    (flags & NGHTTP2_HD_INFLATE_FINAL))
			break;
	}
	nghttp2_hd_inflate_end_headers(inf);
	p->block_scrubbed = true;
	headers_done(p, &h);
}

/* HEADERS, PUSH_PROMISE or CONTINUATION: its fragment joins the block. */
static void on_fragment(struct ls_h2 *p)
{
	const uint8_t *s = p->buf;
	size_t n = p->len, pad = 0;

	if (p->unknown && !p->midflight) {
		lose(p, "a header block was not captured (HPACK state lost)");
		return;
	}
	if (p->type == T_CONTINUATION) {
		if (!p->blk_open || p->stream != p->blk_stream) {
			lose(p, "CONTINUATION without an open header block");
			return;
		}
	} else {
		if (p->blk_open) {
			lose(p, "a frame inside a header block");
			return;
		}
		p->blk_stream = p->stream;
		p->blk_push = p->type == T_PUSH_PROMISE;
		p->blk_end_stream = p->type == T_HEADERS && (p->flags & F_END_STREAM);
		if (p->midflight) {
			p->blk_open = true;
			goto unread;
		}
		if (p->flags & F_PADDED) {
			if (!n)
				goto bad;
			pad = s[0], s++, n--;
		}
		if (p->type == T_HEADERS && (p->flags & F_PRIORITY)) {
			if (n < 5)
				goto bad;
			s += 5, n -= 5;
		}
		if (p->type == T_PUSH_PROMISE) {
			if (n < 4)
				goto bad;
			s += 4, n -= 4;
		}
		if (pad > n)
			goto bad;
		n -= pad;
		p->blk_open = true;
		p->blk_len = 0;
	}
	if (p->block_scrubbed) { /* read and told while scrubbing */
		p->blk_open = false;
		return;
	}
unread:
	if (p->midflight) { /* no table: the block is not read */
		struct ls_h2_headers h = {.unknown = true, .grpc_status = -1};
		if (!(p->flags & F_END_HEADERS))
			return;
		p->blk_open = false;
		if (!p->blk_push && p->cb->headers)
			p->cb->headers(p->ctx, p->blk_stream, &h, p->blk_end_stream);
		return;
	}
	block_add(p, s, n);
	if (!p->lost && (p->flags & F_END_HEADERS))
		block_done(p);
	return;
bad:
	lose(p, "a malformed header frame");
}

/*
 * SETTINGS bind the other direction's sender from the moment it
 * acknowledges them (RFC 9113 §6.5.3): header blocks it wrote before used
 * the old table size. So a sender's SETTINGS wait on the other direction,
 * and take effect at its ACK, in order.
 */
static void on_settings(struct ls_h2 *p)
{
	struct ls_h2 *o = p->peer;

	if (p->flags & F_ACK) { /* ours to apply: the oldest the peer sent */
		if (!p->npend)
			return;
		if (p->pend[0].table)
			nghttp2_hd_inflate_change_table_size(p->inflater, p->pend[0].table - 1);
		if (p->pend[0].frame)
			p->max_frame = p->pend[0].frame;
		if (p->pend[0].window)
			p->init_window = p->pend[0].window - 1;
		memmove(p->pend, p->pend + 1, (size_t)--p->npend * sizeof(p->pend[0]));
		return;
	}
	if (p->unknown || !o)
		return;
	if (o->npend == (int)(sizeof(o->pend) / sizeof(o->pend[0]))) {
		lose(o, "more than 8 SETTINGS frames not acknowledged");
		return;
	}
	o->pend[o->npend].table = o->pend[o->npend].frame = o->pend[o->npend].window = 0;
	for (size_t i = 0; i + 6 <= p->len; i += 6) {
		const uint8_t *e = p->buf + i;
		uint16_t id = (uint16_t)(e[0] << 8 | e[1]);
		uint32_t v = (uint32_t)e[2] << 24 | (uint32_t)e[3] << 16 | (uint32_t)e[4] << 8 | e[5];
		if (id == 0x1 && v < UINT32_MAX) /* HEADER_TABLE_SIZE, kept + 1 (0 is a value) */
			o->pend[o->npend].table = v + 1;
		else if (id == 0x5 && v >= 16384 && v < (1u << 24)) /* MAX_FRAME_SIZE */
			o->pend[o->npend].frame = v;
		else if (id == 0x4 && v <= 0x7fffffffu) /* INITIAL_WINDOW_SIZE */
			o->pend[o->npend].window = v + 1;
	}
	o->npend++;
}

static void on_data(struct ls_h2 *p)
{
	const uint8_t *s = p->buf;
	size_t n = p->len, known = p->got, pad = 0;
	bool done = false;

	if (p->flags & F_PADDED) {
		if (!n || !known) { /* the pad length not captured: the payload length is a guess */
			n = n ? n - 1 : 0;
		} else {
			pad = s[0], s++, n--, known--;
			n = pad <= n ? n - pad : 0;
		}
	}
	if (!p->unknown && known >= sizeof(DONE_MARKER) - 1)
		done = !memcmp(s, DONE_MARKER, sizeof(DONE_MARKER) - 1);
	if (p->cb->data)
		p->cb->data(p->ctx, p->stream, (uint32_t)n, done, p->flags & F_END_STREAM);
	if (p->flags & F_END_STREAM)
		sse_end(p, p->stream);
}

static void frame_done(struct ls_h2 *p)
{
	p->frames++;
	if (p->blk_open && p->type != T_CONTINUATION) {
		lose(p, "a frame inside a header block");
		return;
	}
	switch (p->type) {
	case T_DATA:
		on_data(p);
		break;
	case T_HEADERS:
	case T_PUSH_PROMISE:
	case T_CONTINUATION:
		on_fragment(p);
		break;
	case T_RST_STREAM:
		sse_end(p, p->stream);
		if (p->peer)
			sse_end(p->peer, p->stream);
		if (p->cb->reset)
			p->cb->reset(p->ctx, p->stream);
		break;
	case T_SETTINGS:
		on_settings(p);
		break;
	case T_WINDOW_UPDATE:
		if (p->len == 4 && !p->unknown && p->cb->window)
			p->cb->window(p->ctx, p->stream,
				      ((uint32_t)p->buf[0] << 24 | (uint32_t)p->buf[1] << 16 |
				       (uint32_t)p->buf[2] << 8 | p->buf[3]) & 0x7fffffffu);
		break;
	default:
		break;
	}
}

/* The frame header is whole: how much of the payload the reader keeps. */
static void frame_begin(struct ls_h2 *p)
{
	const uint8_t *h = p->fh;

	p->len = (uint32_t)h[0] << 16 | (uint32_t)h[1] << 8 | h[2];
	p->type = h[3];
	p->flags = h[4];
	p->stream = ((uint32_t)h[5] << 24 | (uint32_t)h[6] << 16 | (uint32_t)h[7] << 8 | h[8]) &
		    0x7fffffffu;
	p->left = p->len;
	p->got = 0;
	p->unknown = false;
	if (p->len > p->max_frame) {
		lose(p, "a frame longer than the peer accepts: not HTTP/2, or bytes the recorder "
			"starred after it lost the connection's frames");
		return;
	}
	switch (p->type) {
	case T_HEADERS:
	case T_PUSH_PROMISE:
	case T_CONTINUATION:
	case T_SETTINGS:
		p->need = p->len;
		break;
	case T_WINDOW_UPDATE:
		p->need = p->len == 4 ? 4 : 0;
		break;
	case T_DATA:
		p->need = p->len < 1 + sizeof(DONE_MARKER) ? p->len : 1 + sizeof(DONE_MARKER);
		p->data_sse = sse_of(p, p->stream) != NULL;
		p->data_unknown = false;
		p->data_pad = 0;
		break;
	default:
		p->need = 0;
	}
	if (p->need > MAX_BLOCK) {
		lose(p, "a frame larger than 256 KiB that must be read");
		return;
	}
	if (p->need > p->cap) {
		uint8_t *b = realloc(p->buf, p->need);
		if (!b)
			abort();
		p->buf = b;
		p->cap = p->need;
	}
}

/* Takes up to n bytes of the current frame's payload; returns how many. */
static size_t take_payload(struct ls_h2 *p, const uint8_t *s, size_t n)
{
	size_t k = n < p->left ? n : p->left;
	size_t off = p->len - p->left;

	if (off < p->need) {
		size_t c = p->need - off < k ? p->need - off : k;
		if (s)
			memcpy(p->buf + off, s, c);
		else
			p->unknown = true;
		p->got = off + c;
	}
	p->left -= (uint32_t)k;
	return k;
}

/* Scrubbing, at a header frame's start: its block, when the piece holds
 * all of it, is redacted in place; else its payload is starred. */
static void scrub_header_frame(struct ls_h2 *p, uint8_t *payload, size_t avail)
{
	size_t off = 0, n = p->len, pad = 0;

	p->block_scrubbed = false;
	p->star_payload = true;
	if (p->midflight || p->type == T_CONTINUATION || p->blk_open || !(p->flags & F_END_HEADERS) || avail < p->len)
		return;
	if (p->flags & F_PADDED) {
		if (!n)
			return;
		pad = payload[0], off = 1;
	}
	if (p->type == T_HEADERS && (p->flags & F_PRIORITY))
		off += 5;
	if (p->type == T_PUSH_PROMISE)
		off += 4;
	if (off + pad > n)
		return;
	p->star_payload = false;
	p->blk_stream = p->stream;
	p->blk_push = p->type == T_PUSH_PROMISE;
	p->blk_end_stream = p->type == T_HEADERS && (p->flags & F_END_STREAM);
	scrub_block(p, payload + off, n - off - pad);
}

/* Scrubbing, k bytes of the current frame's payload at s (avail known from
 * s on): DATA becomes '*' but its pad length and a leading [DONE] marker. */
static void scrub_payload(struct ls_h2 *p, uint8_t *s, size_t k, size_t avail)
{
	size_t off = p->len - p->left, start = p->flags & F_PADDED ? 1 : 0;
	const size_t ml = sizeof(DONE_MARKER) - 1;

	if (k > avail)
		k = avail;
	if (p->star_payload) {
		memset(s, '*', k);
		return;
	}
	if (p->type != T_DATA || p->keep_data)
		return;
	for (size_t j = 0; j < k; j++, off++) {
		if (off == start)
			p->keep_marker = avail - j >= ml && !memcmp(s + j, DONE_MARKER, ml);
		if (off < start || (p->keep_marker && off < start + ml))
			continue;
		s[j] = '*';
	}
}

/* k bytes of an event-stream DATA frame's payload (NULL: not captured),
 * from the current offset: the pad length and padding set apart, the rest
 * scanned for events (scrubbing: data lines starred). */
static void data_sse(struct ls_h2 *p, uint8_t *b, size_t k)
{
	struct ls_h2_sse *e = sse_of(p, p->stream);
	size_t off = p->len - p->left, a = 0, end;

	if (!e || !k)
		return;
	if (!b) { /* where lines are is lost until the next line end */
		p->data_unknown = true;
		e->matched = 0;
		e->in_data = false;
		e->mid_line = true;
		return;
	}
	if ((p->flags & F_PADDED) && off == 0)
		p->data_pad = b[0], a = 1;
	end = p->len - ((p->flags & F_PADDED) ? p->data_pad : 0);
	if (off + k > end)
		k = end > off ? end - off : 0;
	if (k > a)
		sse_scan(p, e, b + a, k - a, p->scrub && !p->keep_data);
}

/* Scrubbing, at a frame's start with the call's last bytes all known: is a
 * frame header, or a header frame's payload, cut by the call's end? Its
 * block cannot be read yet: the caller joins it to the next call. */
static bool cut_at_end(const struct ls_h2 *p, const uint8_t *s, size_t avail)
{
	uint32_t len;

	if (avail < 9)
		return true;
	len = (uint32_t)s[0] << 16 | (uint32_t)s[1] << 8 | s[2];
	return (s[3] == T_HEADERS || s[3] == T_PUSH_PROMISE || s[3] == T_CONTINUATION) &&
	       len <= p->max_frame && len > avail - 9;
}

static size_t read_frames(struct ls_h2 *p, const uint8_t *data, size_t known, size_t total)
{
	size_t i = 0;

	while (i < total && !p->lost) {
		const uint8_t *s = i < known ? data + i : NULL;
		size_t n = i < known ? known - i : total - i;

		if (p->preface_left) {
			size_t k = n < p->preface_left ? n : p->preface_left;
			if (!s || memcmp(s, &LS_H2_PREFACE[LS_H2_PREFACE_LEN - p->preface_left], k)) {
				lose(p, s ? "not the HTTP/2 client preface" : "the HTTP/2 preface was not captured");
				break;
			}
			p->preface_left -= k, p->pos += k, i += k;
			continue;
		}
		if (p->fh_len < 9) {
			if (!s) {
				lose(p, "an HTTP/2 frame header was not captured");
				break;
			}
			if (p->scrub && !p->fh_len && known == total && cut_at_end(p, s, n))
				return i; /* held: the rest comes with the next call */
			if (!p->fh_len)
				p->frame_begin = p->pos;
			size_t k = n < 9 - p->fh_len ? n : 9 - p->fh_len;
			memcpy(p->fh + p->fh_len, s, k);
			p->fh_len += k, p->pos += k, i += k;
			if (p->fh_len < 9)
				continue;
			frame_begin(p);
			if (p->scrub) {
				p->star_payload = false;
				if (p->need && p->type != T_DATA && p->type != T_SETTINGS &&
				    p->type != T_WINDOW_UPDATE)
					scrub_header_frame(p, p->scrub + i, i < known ? known - i : 0);
			}
			if (p->lost || p->len)
				continue;
		} else {
			if (p->type == T_DATA && p->data_sse)
				data_sse(p, s ? p->scrub ? p->scrub + i : (uint8_t *)s : NULL,
					 n < p->left ? n : p->left);
			else if (p->scrub && s)
				scrub_payload(p, p->scrub + i, n < p->left ? n : p->left, n);
			size_t k = take_payload(p, s, n);
			p->pos += k, i += k;
			if (p->left)
				continue;
		}
		p->fh_len = 0;
		frame_done(p);
		p->block_scrubbed = false;
	}
	if (p->scrub && i < known) /* lost: nothing after is known to be framing */
		memset(p->scrub + i, '*', known - i);
	if (i < total)
		p->pos += total - i; /* lost: bytes are still counted */
	return total;
}

void ls_h2_feed(struct ls_h2 *p, const uint8_t *data, size_t known, size_t total)
{
	read_frames(p, data, known, total);
}

size_t ls_h2_scrub(struct ls_h2 *p, uint8_t *data, size_t known, size_t total)
{
	size_t n;

	p->scrub = data;
	n = read_frames(p, data, known, total);
	p->scrub = NULL;
	return n;
}

void ls_h2_lose(struct ls_h2 *p, const char *why)
{
	lose(p, why);
}
