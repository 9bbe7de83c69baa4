// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Incremental HTTP/1.1 parser (see http.h). A byte-at-a-time state machine
 * for framing, with bulk skips over body bytes, so a split anywhere gives
 * the same callbacks as the whole stream.
 */
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "http.h"

static const char *const methods[] = {"GET",   "POST",    "PUT",   "DELETE", "HEAD",
				      "PATCH", "OPTIONS", "TRACE", "CONNECT"};

void ls_http_init(struct ls_http_parser *p, enum ls_http_kind kind, const struct ls_http_cb *cb,
		  void *ctx)
{
	memset(p, 0, sizeof(*p));
	p->kind = kind;
	p->cb = cb;
	p->ctx = ctx;
}

void ls_http_first_forwarded(char *dst, size_t cap, const char *v, size_t n)
{
	const char *comma = memchr(v, ',', n);
	size_t k = comma ? (size_t)(comma - v) : n;

	while (k && (v[k - 1] == ' ' || v[k - 1] == '\t'))
		k--;
	while (k && (*v == ' ' || *v == '\t'))
		v++, k--;
	if (k >= cap)
		k = cap - 1;
	memcpy(dst, v, k);
	dst[k] = '\0';
}

void ls_http_first_forwarded_for(char *dst, size_t cap, const char *v, size_t n)
{
	const char *end = v + n, *comma = memchr(v, ',', n), *p;

	dst[0] = '\0';
	if (comma)
		end = comma; /* the first element: the client's side */
	for (p = v; p + 4 <= end; p++) { /* a pair "for=" at a pair's start */
		if (strncasecmp(p, "for=", 4) || (p > v && p[-1] != ';' && p[-1] != ' ' && p[-1] != '\t'))
			continue;
		const char *b = p + 4, *e = b;
		while (e < end && *e != ';')
			e++;
		while (e > b && (e[-1] == ' ' || e[-1] == '\t'))
			e--;
		if (b < e && *b == '"') {
			if (e - b < 2 || e[-1] != '"')
				return; /* an unterminated quoted string */
			b++, e--;
		}
		if (b < e && *b == '[') { /* [v6] or [v6]:port */
			const char *rb = memchr(b, ']', e - b);
			if (!rb)
				return;
			b++, e = rb;
		} else {
			const char *colon = memchr(b, ':', e - b);
			if (colon && !memchr(colon + 1, ':', e - colon - 1))
				e = colon; /* v4:port */
		}
		ls_http_first_forwarded(dst, cap, b, e - b);
		return;
	}
}

void ls_http_expect_head(struct ls_http_parser *p)
{
	p->pending_head_requests++;
}

bool ls_http_in_message(const struct ls_http_parser *p)
{
	return p->st != LS_HTTP_ST_START && p->st != LS_HTTP_ST_OPAQUE && p->st != LS_HTTP_ST_LOST;
}

static void lose(struct ls_http_parser *p, enum ls_http_state st, const char *why)
{
	p->st = st;
	p->lost_count++;
	if (p->cb->lost)
		p->cb->lost(p->ctx, why);
}

static void message_end(struct ls_http_parser *p)
{
	p->messages++;
	p->st = LS_HTTP_ST_START;
	p->head_len = 0;
	if (p->cb->end)
		p->cb->end(p->ctx);
}

static void body_start(struct ls_http_parser *p)
{
	if (p->body_started)
		return;
	p->body_started = true;
	if (p->cb->body_start)
		p->cb->body_start(p->ctx);
}

/* ---- SSE: events end at a blank line; "data:" lines make them events ---- */

static void sse_line_done(struct ls_http_parser *p)
{
	size_t n = p->sse_line_len;

	if (!p->sse_line_unknown) {
		/* Only the first bytes of a line are kept: enough to classify it. */
		if (n == 1 && p->sse_line[0] == '\r')
			n = 0;
		if (n > sizeof(p->sse_line))
			n = sizeof(p->sse_line);
		if (n == 0) {
			if (p->sse_has_data && p->cb->event)
				p->cb->event(p->ctx, p->sse_done);
			p->sse_has_data = p->sse_done = false;
		} else if (n >= 5 && !memcmp(p->sse_line, "data:", 5)) {
			const char *v = p->sse_line + 5;
			size_t vl = n - 5;
			if (vl && *v == ' ')
				v++, vl--;
			p->sse_has_data = true;
			if (vl >= 6 && !memcmp(v, "[DONE]", 6))
				p->sse_done = true;
		}
	}
	p->sse_line_len = 0;
	p->sse_line_unknown = false;
}

static void sse_bytes(struct ls_http_parser *p, const uint8_t *d, size_t n)
{
	uint64_t base = p->pos;

	for (size_t i = 0; i < n; i++) {
		if (d[i] == '\n') {
			p->pos = base + i + 1;
			sse_line_done(p);
			continue;
		}
		if (p->sse_line_len < sizeof(p->sse_line))
			p->sse_line[p->sse_line_len] = d[i];
		p->sse_line_len++;
	}
	p->pos = base;
}

size_t ls_http_numbers_object(const uint8_t *b, size_t n)
{
	size_t i = 0;

	if (n < 2 || b[i++] != '{')
		return 0;
	for (;;) {
		size_t k;
		while (i < n && b[i] == ' ')
			i++;
		if (i < n && b[i] == '}')
			return i + 1;
		if (i >= n || b[i++] != '"')
			return 0;
		for (k = i; i < n && ((b[i] >= 'a' && b[i] <= 'z') || isdigit(b[i]) || b[i] == '_'); i++)
			;
		if (i == k || i + 1 >= n || b[i++] != '"' || b[i++] != ':')
			return 0;
		while (i < n && b[i] == ' ')
			i++;
		for (k = i; i < n && (isdigit(b[i]) || b[i] == '.' || b[i] == '-' || b[i] == '+' ||
				      b[i] == 'e' || b[i] == 'E');
		     i++)
			;
		if (i == k)
			return 0;
		while (i < n && b[i] == ' ')
			i++;
		if (i < n && b[i] == ',')
			i++;
		else if (i >= n || b[i] != '}')
			return 0;
	}
}

const uint8_t *ls_http_numbers_under(const uint8_t *b, size_t n, const char *key, size_t *len)
{
	const size_t kl = strlen(key);

	/* most bodies searched hold no quote at all (scrubbed to '*', or
	 * framing): one memchr, not memmem's set-up, says so */
	if (n < kl + 2 || !memchr(b, key[0], n))
		return NULL;
	for (const uint8_t *p = memmem(b, n, key, kl); p;
	     p = memmem(p + 1, n - (p + 1 - b), key, kl)) {
		size_t ol = ls_http_numbers_object(p + kl, n - (p + kl - b));
		if (ol) {
			*len = kl + ol;
			return p;
		}
	}
	return NULL;
}

/* The first object of numbers under key ("\"name\":") in b: each of its
 * name/number pairs to each(); false when there is none. */
static bool find_numbers(const uint8_t *b, size_t n, const char *key,
			 void (*each)(struct ls_http_timings *t, const uint8_t *name, size_t nl, double v),
			 struct ls_http_timings *t)
{
	size_t len, kl = strlen(key);
	const uint8_t *p = ls_http_numbers_under(b, n, key, &len);

	if (p) {
		const uint8_t *o = p + kl;
		size_t ol = len - kl;
		for (size_t i = 1; i < ol;) { /* "name":number pairs, checked */
			const uint8_t *name = memchr(o + i, '"', ol - i);
			if (!name)
				break;
			const uint8_t *ne = memchr(name + 1, '"', ol - (name + 1 - o));
			char num[32];
			const uint8_t *v = ne + 2, *ve = v;
			while (ve < o + ol && *ve != ',' && *ve != '}')
				ve++;
			snprintf(num, sizeof(num), "%.*s", (int)(ve - v), (const char *)v);
			each(t, name + 1, ne - name - 1, strtod(num, NULL));
			i = ve - o + 1;
		}
		return true;
	}
	return false;
}

static bool name_is(const uint8_t *name, size_t nl, const char *want)
{
	return nl == strlen(want) && !memcmp(name, want, nl);
}

static uint32_t count_of(double d)
{
	return d >= 0 && d < 4e9 ? (uint32_t)d : 0;
}

static void timing(struct ls_http_timings *t, const uint8_t *name, size_t nl, double v)
{
	if (name_is(name, nl, "prompt_ms"))
		t->prompt_ms = v;
	else if (name_is(name, nl, "predicted_ms"))
		t->predicted_ms = v;
	else if (name_is(name, nl, "prompt_n"))
		t->prompt_n = count_of(v);
	else if (name_is(name, nl, "predicted_n"))
		t->predicted_n = count_of(v);
}

static void usage(struct ls_http_timings *t, const uint8_t *name, size_t nl, double v)
{
	if (name_is(name, nl, "prompt_tokens"))
		t->prompt_tokens = count_of(v);
	else if (name_is(name, nl, "completion_tokens"))
		t->completion_tokens = count_of(v);
}

bool ls_http_find_timings(const uint8_t *b, size_t n, struct ls_http_timings *t)
{
	*t = (struct ls_http_timings){.prompt_ms = NAN, .predicted_ms = NAN};
	t->has_timings = find_numbers(b, n, "\"timings\":", timing, t);
	t->has_usage = find_numbers(b, n, "\"usage\":", usage, t);
	return t->has_timings || t->has_usage;
}

/* Body bytes at p->pos: known when d != NULL. Advances p->pos past them. */
static void body_bytes(struct ls_http_parser *p, const uint8_t *d, size_t n)
{
	struct ls_http_timings t;

	if (!n)
		return;
	body_start(p);
	if (d && p->cb->timings && ls_http_find_timings(d, n, &t))
		p->cb->timings(p->ctx, &t);
	if (p->sse && d) {
		sse_bytes(p, d, n);
	} else if (p->sse) {
		/* Unknown bytes. Servers write whole events: a data line cut
		 * by the capture limit is an event whose end we cannot see.
		 * Count it now; whatever line the bytes end in is unknowable. */
		bool data_line = !p->sse_line_unknown && p->sse_line_len >= 5 &&
				 !memcmp(p->sse_line, "data:", 5);
		if ((data_line || p->sse_has_data) && p->cb->event) {
			bool done = data_line && p->sse_line_len >= 11 &&
				    !memcmp(p->sse_line + 5, " [DONE]", 6);
			p->cb->event(p->ctx, done || p->sse_done);
		}
		p->sse_line_unknown = true;
		p->sse_has_data = p->sse_done = false;
	}
	p->pos += n;
}

/* ---- heads ---- */

static bool is_token_upper(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (!isupper((unsigned char)s[i]))
			return false;
	return n > 0;
}

/* Could `s` (n bytes) be the start of a message of this kind? Used to
 * reject non-HTTP early and to resynchronise. */
static bool plausible_start(enum ls_http_kind kind, const uint8_t *s, size_t n)
{
	if (kind == LS_HTTP_RESPONSE) {
		static const char v[] = "HTTP/1.";
		size_t k = n < 7 ? n : 7;
		return k && !memcmp(s, v, k);
	}
	for (size_t m = 0; m < sizeof(methods) / sizeof(methods[0]); m++) {
		size_t ml = strlen(methods[m]);
		size_t k = n < ml + 1 ? n : ml + 1;
		char want[16];

		memcpy(want, methods[m], ml);
		want[ml] = ' ';
		if (k && !memcmp(s, want, k))
			return true;
	}
	return false;
}

/* Does `s` (n known bytes) begin with a whole request line (METHOD target
 * HTTP/1.x) or status line (HTTP/1.x NNN)? The proof a resynchronising
 * parser needs before it takes bytes for a message start: a body that
 * merely begins with "GET " has no such line. */
static bool provable_start(enum ls_http_kind kind, const uint8_t *s, size_t n)
{
	const uint8_t *eol = memchr(s, '\n', n);
	size_t ll;

	if (!plausible_start(kind, s, n))
		return false;
	if (!eol) {
		/* A request line longer than what the capture kept (a long query
		 * string): METHOD SP and an origin-form target running to the end
		 * of the known bytes. Taking it for a start makes the request
		 * "unparsed" (its head is cut), counted; refusing it starred the
		 * head and hid the request, so a client could stay out of the
		 * analysis. */
		const uint8_t *sp1 = kind == LS_HTTP_REQUEST ? memchr(s, ' ', n) : NULL;
		if (!sp1 || n < 32 || sp1 + 1 >= s + n || sp1[1] != '/')
			return false;
		for (const uint8_t *c = sp1 + 1; c < s + n; c++)
			if (*c <= ' ' || *c == 0x7f)
				return false;
		return true;
	}
	ll = eol - s;
	if (ll && s[ll - 1] == '\r')
		ll--;
	if (kind == LS_HTTP_RESPONSE)
		return ll >= 12 && s[8] == ' ' && isdigit(s[7]) && isdigit(s[9]) && isdigit(s[10]) &&
		       isdigit(s[11]) && (ll == 12 || s[12] == ' ');
	/* METHOD SP target SP HTTP/1.x, the target without spaces or controls
	 * (raw non-ASCII bytes are a client's to send: kept, not refused) */
	const uint8_t *sp1 = memchr(s, ' ', ll), *sp2;
	if (!sp1 || ll < 10 || memcmp(s + ll - 9, " HTTP/1.", 8) || !isdigit(s[ll - 1]))
		return false;
	sp2 = s + ll - 9;
	if (sp2 <= sp1 + 1)
		return false;
	for (const uint8_t *c = sp1 + 1; c < sp2; c++)
		if (*c <= ' ' || *c == 0x7f)
			return false;
	return true;
}

bool ls_http_starts_message(enum ls_http_kind kind, const uint8_t *s, size_t n)
{
	return provable_start(kind, s, n);
}

bool ls_http_may_start(enum ls_http_kind kind, const uint8_t *s, size_t n)
{
	return plausible_start(kind, s, n);
}

void ls_http_resync(struct ls_http_parser *p)
{
	p->st = LS_HTTP_ST_LOST;
	p->head_len = 0;
}

static void copy_value(char *dst, size_t cap, const char *v, size_t n)
{
	size_t k = 0;

	for (size_t i = 0; i < n && k + 1 < cap; i++) {
		unsigned char c = v[i];
		dst[k++] = (c < 0x20 || c >= 0x7f || c == '"' || c == '\\') ? '?' : c;
	}
	dst[k] = '\0';
}

static bool header_is(const char *name, size_t nl, const char *want)
{
	return strlen(want) == nl && !strncasecmp(name, want, nl);
}

static void trim(const char **v, size_t *n)
{
	while (*n && (**v == ' ' || **v == '\t'))
		(*v)++, (*n)--;
	while (*n && ((*v)[*n - 1] == ' ' || (*v)[*n - 1] == '\t' || (*v)[*n - 1] == '\r'))
		(*n)--;
}

/* Parses the complete head in p->head. false: not HTTP. */
static bool parse_head(struct ls_http_parser *p, struct ls_http_msg *m)
{
	char *h = p->head, *end = h + p->head_len;
	char *eol = memchr(h, '\n', p->head_len);
	bool http10 = false, keep_alive = false;

	memset(m, 0, sizeof(*m));
	m->head_bytes = p->head_len;
	if (!eol)
		return false;
	size_t ll = eol - h;
	if (ll && h[ll - 1] == '\r')
		ll--;
	if (p->kind == LS_HTTP_REQUEST) {
		char *sp1 = memchr(h, ' ', ll), *sp2;
		if (!sp1 || !is_token_upper(h, sp1 - h) || (size_t)(sp1 - h) >= sizeof(m->method))
			return false;
		sp2 = memchr(sp1 + 1, ' ', h + ll - sp1 - 1);
		if (!sp2 || sp2 == sp1 + 1 || h + ll - sp2 - 1 != 8 || memcmp(sp2 + 1, "HTTP/1.", 7))
			return false;
		http10 = sp2[8] == '0';
		memcpy(m->method, h, sp1 - h);
		copy_value(m->path, sizeof(m->path), sp1 + 1, sp2 - sp1 - 1);
	} else {
		if (ll < 12 || memcmp(h, "HTTP/1.", 7) || h[8] != ' ' || !isdigit((unsigned char)h[9]) ||
		    !isdigit((unsigned char)h[10]) || !isdigit((unsigned char)h[11]))
			return false;
		http10 = h[7] == '0';
		m->status = (h[9] - '0') * 100 + (h[10] - '0') * 10 + (h[11] - '0');
	}
	for (char *line = eol + 1; line < end;) {
		char *le = memchr(line, '\n', end - line);
		size_t n = le ? (size_t)(le - line) : (size_t)(end - line);
		char *colon = memchr(line, ':', n);

		if (colon) {
			const char *v = colon + 1;
			size_t nl = colon - line, vl = n - nl - 1;

			trim(&v, &vl);
			if (header_is(line, nl, "content-length")) {
				char num[24];
				if (!vl || vl >= sizeof(num))
					return false;
				memcpy(num, v, vl);
				num[vl] = '\0';
				for (size_t i = 0; i < vl; i++)
					if (!isdigit((unsigned char)num[i]))
						return false;
				m->has_length = true;
				m->content_length = strtoull(num, NULL, 10);
			} else if (header_is(line, nl, "transfer-encoding")) {
				/* chunked must be the last coding */
				m->chunked = vl >= 7 && !strncasecmp(v + vl - 7, "chunked", 7);
			} else if (header_is(line, nl, "content-type")) {
				m->sse = vl >= 17 && !strncasecmp(v, "text/event-stream", 17);
			} else if (header_is(line, nl, "connection")) {
				if (vl >= 5 && !strncasecmp(v, "close", 5))
					m->close = true;
				if (vl >= 10 && !strncasecmp(v, "keep-alive", 10))
					keep_alive = true;
			} else if (header_is(line, nl, "x-request-id")) {
				copy_value(m->x_request_id, sizeof(m->x_request_id), v, vl);
			} else if (header_is(line, nl, "traceparent")) {
				copy_value(m->traceparent, sizeof(m->traceparent), v, vl);
			} else if (header_is(line, nl, "x-forwarded-for") && !m->forwarded_for[0]) {
				ls_http_first_forwarded(m->forwarded_for, sizeof(m->forwarded_for), v, vl);
			} else if (header_is(line, nl, "forwarded") && !m->forwarded_for[0]) {
				ls_http_first_forwarded_for(m->forwarded_for, sizeof(m->forwarded_for), v, vl);
			}
		}
		if (!le)
			break;
		line = le + 1;
	}
	if (http10 && !keep_alive)
		m->close = true;
	return true;
}

/* After a complete head: choose how the body is framed. */
static void head_done(struct ls_http_parser *p)
{
	struct ls_http_msg m;

	if (!parse_head(p, &m)) {
		lose(p, LS_HTTP_ST_OPAQUE, "not HTTP");
		return;
	}
	p->head_len = 0;
	p->body_started = false;
	if (p->kind != LS_HTTP_RESPONSE)
		m.sse = false; /* an event stream is a response's (a request's body is data) */
	p->sse = m.sse;
	p->sse_line_len = 0;
	p->sse_line_unknown = false;
	p->sse_has_data = p->sse_done = false;
	if (p->kind == LS_HTTP_RESPONSE && m.status >= 100 && m.status < 200) {
		p->st = LS_HTTP_ST_START; /* interim response: the real one follows */
		return;
	}
	if (p->cb->head)
		p->cb->head(p->ctx, &m);
	bool no_body = false;
	if (p->kind == LS_HTTP_RESPONSE) {
		if (p->pending_head_requests > 0) {
			p->pending_head_requests--;
			no_body = true;
		}
		no_body |= m.status == 204 || m.status == 304;
	}
	if (no_body) {
		message_end(p);
	} else if (m.chunked) {
		p->st = LS_HTTP_ST_CHUNK_SIZE;
		p->line_len = 0;
	} else if (m.has_length) {
		p->remaining = m.content_length;
		p->st = LS_HTTP_ST_BODY_LEN;
		if (!p->remaining)
			message_end(p);
	} else if (p->kind == LS_HTTP_RESPONSE) {
		p->st = LS_HTTP_ST_BODY_EOF;
	} else {
		message_end(p); /* a request without length has no body */
	}
}

/* Adds one head byte; returns false when the head overflowed. */
static bool head_byte(struct ls_http_parser *p, uint8_t c)
{
	if (p->head_len == sizeof(p->head))
		return false;
	p->head[p->head_len++] = c;
	if (p->head_len >= 2 && p->head[p->head_len - 1] == '\n' &&
	    (p->head[p->head_len - 2] == '\n' ||
	     (p->head_len >= 4 && p->head[p->head_len - 2] == '\r' &&
	      p->head[p->head_len - 3] == '\n')))
		head_done(p);
	return true;
}

bool ls_http_chunk_size(const char *line, size_t n, uint64_t *size)
{
	size_t i = 0;

	*size = 0;
	if (n && line[n - 1] == '\r')
		n--;
	for (; i < n && isxdigit((unsigned char)line[i]); i++) {
		if (*size >> 60)
			return false;
		*size = *size * 16 + (isdigit((unsigned char)line[i]) ? line[i] - '0'
								  : (tolower(line[i]) - 'a' + 10));
	}
	/* extensions after ';' are ignored */
	return i && (i == n || line[i] == ';' || line[i] == ' ' || line[i] == '\t');
}

static bool chunk_size_line(struct ls_http_parser *p)
{
	uint64_t size;

	if (!ls_http_chunk_size(p->line, p->line_len, &size))
		return false;
	p->line_len = 0;
	if (size == 0) {
		p->st = LS_HTTP_ST_TRAILER;
	} else {
		p->remaining = size;
		p->st = LS_HTTP_ST_CHUNK_DATA;
		/* After an unseen stretch, assume a chunk starts a line: servers
		 * write whole SSE events, one chunk each. */
		if (p->sse_line_unknown) {
			p->sse_line_unknown = false;
			p->sse_line_len = 0;
		}
	}
	return true;
}

/* Processes known bytes; p->pos advances with every byte consumed. */
static void feed_known(struct ls_http_parser *p, const uint8_t *d, size_t n)
{
	size_t i = 0;

	while (i < n) {
		switch (p->st) {
		case LS_HTTP_ST_OPAQUE:
		case LS_HTTP_ST_LOST:
			p->pos += n - i; /* resync happens only at a feed boundary */
			return;
		case LS_HTTP_ST_START:
			if (d[i] == '\r' || d[i] == '\n') { /* stray CRLF between messages */
				i++;
				p->pos++;
				continue;
			}
			if (!plausible_start(p->kind, d + i, n - i)) {
				lose(p, LS_HTTP_ST_OPAQUE, "not HTTP");
				continue;
			}
			p->st = LS_HTTP_ST_HEAD;
			p->head_len = 0;
			p->msg_begin = p->pos;
			break;
		case LS_HTTP_ST_HEAD:
			p->pos++;
			if (!head_byte(p, d[i++])) {
				lose(p, LS_HTTP_ST_OPAQUE, "head larger than 16 KiB");
				continue;
			}
			/* Reject garbage before a whole head accumulates. */
			if (p->st == LS_HTTP_ST_HEAD && p->head_len <= 8 &&
			    !plausible_start(p->kind, (const uint8_t *)p->head, p->head_len))
				lose(p, LS_HTTP_ST_OPAQUE, "not HTTP");
			else if (p->st == LS_HTTP_ST_HEAD && p->head_len == 8 && p->cb->begin)
				p->cb->begin(p->ctx);
			break;
		case LS_HTTP_ST_BODY_LEN: {
			size_t k = n - i < p->remaining ? n - i : p->remaining;
			body_bytes(p, d + i, k);
			i += k;
			p->remaining -= k;
			if (!p->remaining)
				message_end(p);
			break;
		}
		case LS_HTTP_ST_BODY_EOF:
			body_bytes(p, d + i, n - i);
			i = n;
			break;
		case LS_HTTP_ST_CHUNK_SIZE:
			p->pos++;
			if (d[i] == '\n') {
				i++;
				if (!chunk_size_line(p))
					lose(p, LS_HTTP_ST_OPAQUE, "bad chunk size");
				break;
			}
			if (p->line_len == sizeof(p->line)) {
				lose(p, LS_HTTP_ST_OPAQUE, "chunk-size line too long");
				i++;
				break;
			}
			p->line[p->line_len++] = d[i++];
			break;
		case LS_HTTP_ST_CHUNK_DATA: {
			size_t k = n - i < p->remaining ? n - i : p->remaining;
			body_bytes(p, d + i, k);
			i += k;
			p->remaining -= k;
			if (!p->remaining) {
				p->st = LS_HTTP_ST_CHUNK_CRLF;
				p->line_len = 0;
			}
			break;
		}
		case LS_HTTP_ST_CHUNK_CRLF:
			p->pos++;
			if (d[i] == '\n') {
				p->st = LS_HTTP_ST_CHUNK_SIZE;
				p->line_len = 0;
			} else if (d[i] == '\r') {
				p->line_len++; /* counts CRLF bytes seen, for gaps */
			} else {
				lose(p, LS_HTTP_ST_OPAQUE, "chunk not followed by CRLF");
			}
			i++;
			break;
		case LS_HTTP_ST_TRAILER:
			p->pos++;
			if (d[i] == '\n') {
				bool empty = p->line_len == 0 || (p->line_len == 1 && p->line[0] == '\r');
				p->line_len = 0;
				i++;
				if (empty) {
					body_start(p);
					message_end(p);
				}
				break;
			}
			if (p->line_len < sizeof(p->line))
				p->line[p->line_len] = d[i];
			p->line_len++;
			i++;
			break;
		}
	}
}

/* Processes `n` bytes of unknown content. */
static void feed_gap(struct ls_http_parser *p, uint64_t n)
{
	while (n) {
		switch (p->st) {
		case LS_HTTP_ST_BODY_LEN:
		case LS_HTTP_ST_CHUNK_DATA: {
			uint64_t k = n < p->remaining ? n : p->remaining;
			body_bytes(p, NULL, k);
			p->remaining -= k;
			n -= k;
			if (!p->remaining) {
				if (p->st == LS_HTTP_ST_BODY_LEN) {
					message_end(p);
				} else {
					p->st = LS_HTTP_ST_CHUNK_CRLF;
					p->line_len = 0;
				}
			}
			break;
		}
		case LS_HTTP_ST_CHUNK_CRLF: {
			/* The CRLF that ends a chunk; a write usually ends there. */
			uint64_t k = n < 2 - p->line_len ? n : 2 - p->line_len;
			p->line_len += k;
			p->pos += k;
			n -= k;
			if (p->line_len == 2) {
				p->st = LS_HTTP_ST_CHUNK_SIZE;
				p->line_len = 0;
			}
			break;
		}
		case LS_HTTP_ST_BODY_EOF:
			body_bytes(p, NULL, n);
			return;
		case LS_HTTP_ST_OPAQUE:
		case LS_HTTP_ST_LOST:
			p->pos += n;
			return;
		default:
			lose(p, LS_HTTP_ST_LOST,
			     "HTTP framing beyond the captured bytes (raise --capture-bytes)");
			break;
		}
	}
}

void ls_http_feed(struct ls_http_parser *p, const uint8_t *data, size_t known, size_t total)
{
	if (known > total)
		known = total;
	p->bytes += total;
	if (p->st == LS_HTTP_ST_LOST) {
		/* Resynchronise where a chunk of I/O starts with a whole start
		 * line: never in the middle of a body. */
		if (!known || !provable_start(p->kind, data, known)) {
			p->pos += total;
			return;
		}
		p->st = LS_HTTP_ST_START;
	}
	feed_known(p, data, known);
	if (total > known)
		feed_gap(p, total - known);
}

bool ls_http_eof(struct ls_http_parser *p)
{
	switch (p->st) {
	case LS_HTTP_ST_BODY_EOF:
		if (p->sse && p->sse_line_len)
			sse_line_done(p);
		message_end(p);
		return false;
	case LS_HTTP_ST_START:
	case LS_HTTP_ST_OPAQUE:
	case LS_HTTP_ST_LOST:
		return false;
	default:
		return true;
	}
}
