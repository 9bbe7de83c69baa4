// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Credential redaction for captures (see redact.h).
 */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "http.h"
#include "redact.h"

#define SECRET_NAME_MAX 19 /* the longest below ("proxy-authorization") */
/* A name and its length; a secret's longer than SECRET_NAME_MAX does not
 * compile (a negative array size). */
#define NAME(s) {s, sizeof(s) - 1}
#define SECRET(s) {s, sizeof(s) - 1 + 0 * sizeof(char[sizeof(s) - 1 <= SECRET_NAME_MAX ? 1 : -1])}
static const struct {
	const char *name;
	size_t len;
} secret_headers[] = {SECRET("authorization"), SECRET("proxy-authorization"), SECRET("cookie"),
		      SECRET("set-cookie"),    SECRET("x-api-key"),           SECRET("api-key")};
#undef SECRET

/* Every header line of every payload comes here: lengths first. */
bool ls_secret_header(const char *name, size_t n)
{
	for (size_t i = 0; i < sizeof(secret_headers) / sizeof(secret_headers[0]); i++)
		if (secret_headers[i].len == n && (name[0] | 0x20) == secret_headers[i].name[0] &&
		    !strncasecmp(name, secret_headers[i].name, n))
			return true;
	return false;
}

/* Redacts the value of the header line at line[0..n) if it names a secret. */
static int redact_line(uint8_t *line, size_t n, bool *open)
{
	/* no secret's name is longer: a colon further on is not one's */
	const uint8_t *colon = memchr(line, ':', n < SECRET_NAME_MAX + 1 ? n : SECRET_NAME_MAX + 1);
	size_t nl, v;

	if (!colon)
		return 0;
	nl = colon - line;
	if (!ls_secret_header((const char *)line, nl))
		return 0;
	for (v = nl + 1; v < n && (line[v] == ' ' || line[v] == '\t'); v++)
		;
	for (; v < n && line[v] != '\r'; v++)
		line[v] = '*';
	*open = v == n; /* no CR: the value may go on past this buffer */
	return 1;
}

int ls_redact_http(uint8_t *buf, size_t n, bool *carry)
{
	int count = 0;
	size_t at = 0;
	bool open = false;

	if (*carry) { /* the rest of a value cut at the end of the last buffer */
		for (; at < n && buf[at] != '\r' && buf[at] != '\n'; at++)
			buf[at] = '*';
		count++;
		if (at == n)
			return count; /* still inside it */
	}
	while (at < n) {
		uint8_t *eol = memchr(buf + at, '\n', n - at);
		size_t end = eol ? (size_t)(eol - buf) : n;

		open = false;
		count += redact_line(buf + at, end - at, &open);
		if (eol)
			open = false;
		at = end + 1;
	}
	*carry = open;
	return count;
}

/* Does word w (n bytes) end with suffix (any case)? */
static bool ends_with(const char *w, size_t n, const char *suffix)
{
	size_t k = strlen(suffix);

	return n >= k && !strncasecmp(w + n - k, suffix, k);
}

/* By name segments (split at '-', '_', '.'), not substrings: a glob such as
 * *TOKEN* would take --max-tokens 16 or --token-ms 2 for secrets. The last
 * segment ends with KEY, TOKEN, SECRET, PASSWORD or PASSWD (OPENAI_API_KEY,
 * --hf-token, GITHUB_TOKEN, APIKEY), or any segment is SECRET, PASSWORD,
 * PASSWD or CREDENTIALS (SECRET_KEY_BASE). */
bool ls_secret_name(const char *name, size_t n)
{
	static const char *const last[] = {"key", "token", "secret", "password", "passwd"};
	static const char *const any[] = {"secret", "password", "passwd", "credentials"};
	size_t b = 0;

	for (size_t i = 0; i <= n; i++) {
		if (i < n && name[i] != '-' && name[i] != '_' && name[i] != '.')
			continue;
		const char *seg = name + b;
		size_t sl = i - b;
		for (size_t k = 0; k < sizeof(any) / sizeof(any[0]); k++)
			if (sl == strlen(any[k]) && !strncasecmp(seg, any[k], sl))
				return true;
		if (i == n)
			for (size_t k = 0; k < sizeof(last) / sizeof(last[0]); k++)
				if (ends_with(seg, sl, last[k]))
					return true;
		b = i + 1;
	}
	return false;
}

static void stars(char *s, size_t n)
{
	memset(s, '*', n);
}

/* Word boundaries: arguments (NUL), and inside one (a shell script given
 * to sh -c), blanks, quotes and shell operators. */
static bool word_sep(char c)
{
	return !c || strchr(" \t\n'\";&|()`", c);
}

int ls_redact_args(char *buf, size_t len)
{
	int count = 0;
	bool next_is_value = false;

	for (size_t at = 0; at < len;) {
		size_t n = 0;

		while (at < len && word_sep(buf[at]))
			at++;
		while (at + n < len && !word_sep(buf[at + n]))
			n++;
		if (!n)
			break;
		char *word = buf + at, *eq = memchr(word, '=', n);
		const char *name = word;
		size_t nn = eq ? (size_t)(eq - word) : n;

		if (next_is_value) {
			stars(word, n);
			count++;
			next_is_value = false;
		} else {
			while (nn && *name == '-')
				name++, nn--;
			if (ls_secret_name(name, nn)) {
				if (eq && eq + 1 < word + n) {
					stars(eq + 1, word + n - eq - 1);
					count++;
				} else if (!eq && word[0] == '-') {
					next_is_value = true;
				}
			}
		}
		at += n;
	}
	return count;
}

/* What the scrub reads of a head: where it ends and the three headers that
 * frame its body (the last of each where the head repeats one, as the
 * parser takes it). */
enum { HV_CONTENT_TYPE, HV_TRANSFER_ENCODING, HV_CONTENT_LENGTH, HV_N };

struct head_scan {
	const uint8_t *v[HV_N]; /* NULL: absent */
	size_t vl[HV_N];
};

/* Does the line feed at b[lf] end a head? As the parser (http.c
 * head_byte): a line feed after a line feed, or after CR after one. */
static bool ends_head(const uint8_t *b, size_t lf)
{
	return (lf >= 1 && b[lf - 1] == '\n') || (lf >= 3 && b[lf - 1] == '\r' && b[lf - 2] == '\n');
}

/* Just past the blank line that ends a head in b[0..n), its line feed at
 * `from` or later; NULL when there is none. */
static const uint8_t *head_end(const uint8_t *b, size_t n, size_t from)
{
	for (const uint8_t *lf = b + from; (lf = memchr(lf, '\n', b + n - lf)); lf++)
		if (ends_head(b, lf - b))
			return lf + 1;
	return NULL;
}

/* Reads the head at b[0..n) in one walk of its lines; returns its length
 * (just past the blank line that ends it), or 0 when no head ends in these
 * bytes. */
static size_t scan_head(const uint8_t *b, size_t n, struct head_scan *h)
{
	static const struct {
		const char *name;
		size_t len;
	} names[HV_N] = {NAME("content-type"), NAME("transfer-encoding"), NAME("content-length")};
#undef NAME
	const uint8_t *eol;

	memset(h, 0, sizeof(*h));
	for (size_t at = 0; at < n && (eol = memchr(b + at, '\n', n - at)); at = eol - b + 1) {
		size_t end = eol - b;

		if (ends_head(b, end))
			return end + 1;
		for (int k = 0; k < HV_N; k++) {
			size_t nl = names[k].len;
			if (end - at <= nl || b[at + nl] != ':' || (b[at] | 0x20) != names[k].name[0] ||
			    strncasecmp((const char *)b + at, names[k].name, nl))
				continue;
			size_t v = at + nl + 1, e = end; /* trimmed as the parser trims */
			while (v < end && (b[v] == ' ' || b[v] == '\t'))
				v++;
			while (e > v && (b[e - 1] == ' ' || b[e - 1] == '\t' || b[e - 1] == '\r'))
				e--;
			h->v[k] = b + v;
			h->vl[k] = e - v;
		}
	}
	return 0;
}

/* Where in an event-stream line (ls_body_state.sse_line). */
enum {
	SL_START, /* at a line's start, matching "data:" (sse_pre bytes of it so far) */
	SL_SPACE, /* after "data:": the optional space */
	SL_DONE,  /* matching "[DONE]" (sse_pre bytes of it so far) */
	SL_DATA,  /* a data line's content: '*' to its end */
	SL_KEEP,  /* a line that is not data (or a data line's CR): kept to its LF */
	SL_LOST,  /* the rest of a line whose start the capture did not keep: '*' */
};

/* Chunk framing of a chunked body (ls_body_state.ck). */
enum { CK_SIZE, CK_DATA, CK_DATA_END, CK_TRAILER };

/* A message head starting at buf[0]: sets the state its body needs and
 * returns the head's length (0: no whole head here, nothing to do). */
static size_t start_message(struct ls_body_conn *c, bool is_response, const uint8_t *buf,
			    size_t n)
{
	struct ls_body_state *st = &c->dir[is_response];
	struct head_scan h;
	size_t hl = scan_head(buf, n, &h), vl;
	const uint8_t *v;

	if (!hl)
		return 0;
	st->sse = st->chunked = st->to_close = false;
	st->body_left = 0;
	if (!is_response && n >= 5 && !memcmp(buf, "HEAD ", 5))
		c->heads_pending++;
	if (is_response && hl < 12) { /* no status line: the parser gives up on it */
		st->synced = false;
		return hl;
	}
	if (is_response) {
		int status = (buf[9] - '0') * 100 + (buf[10] - '0') * 10 + (buf[11] - '0');
		if (status >= 100 && status < 200)
			return hl; /* interim: the real response follows */
		if (c->heads_pending) { /* the answer to a HEAD: no body */
			c->heads_pending--;
			return hl;
		}
		if (status == 204 || status == 304)
			return hl;
	}
	st->sse_line = SL_START;
	st->sse_pre = 0;
	st->sse = is_response && (v = h.v[HV_CONTENT_TYPE]) && h.vl[HV_CONTENT_TYPE] >= 17 &&
		  !strncasecmp((const char *)v, "text/event-stream", 17);
	/* the framing the parser takes: chunks when the last coding is
	 * chunked (RFC 9112 6.1), else a length, else (a response) the
	 * connection's end */
	if ((v = h.v[HV_TRANSFER_ENCODING]) && (vl = h.vl[HV_TRANSFER_ENCODING]) >= 7 &&
	    !strncasecmp((const char *)v + vl - 7, "chunked", 7)) {
		st->chunked = true;
		st->ck = CK_SIZE;
		st->ck_len = 0;
	} else if ((v = h.v[HV_CONTENT_LENGTH])) {
		vl = h.vl[HV_CONTENT_LENGTH];
		if (vl && vl < 20 && isdigit(*v))
			st->body_left = strtoull((const char *)v, NULL, 10);
	} else if (is_response) { /* no length: the body ends with the connection */
		st->to_close = true;
	}
	return hl;
}


/* Body bytes become '*', but for an engine's numbers: a whole "timings" or
 * "usage" object of numbers (llama.cpp's prompt_ms/predicted_ms, token
 * counts) is kept, as the report reads them. Returns the bytes starred. */
static size_t star_body(uint8_t *b, size_t n)
{
	static const char *const keep[] = {"\"timings\":", "\"usage\":"};
	size_t count = 0, i = 0;

	while (i < n) {
		size_t next = n, len = 0;
		for (int k = 0; k < 2; k++) {
			size_t l;
			const uint8_t *p = ls_http_numbers_under(b + i, n - i, keep[k], &l);
			if (p && (size_t)(p - b) < next)
				next = p - b, len = l;
		}
		memset(b + i, '*', next - i);
		count += next - i;
		i = next + len;
	}
	return count;
}


/* Event-stream bytes: data lines keep "data:" (and "[DONE]"), each line
 * followed from buffer to buffer. */
static size_t scrub_sse(struct ls_body_state *st, uint8_t *b, size_t n)
{
	static const char data[] = "data:", done[] = "[DONE]";
	size_t count = 0;

	for (size_t i = 0; i < n;) {
		uint8_t c = b[i];

		switch (st->sse_line) {
		case SL_START:
			if (c != data[st->sse_pre]) {
				st->sse_line = SL_KEEP;
			} else if (i++, ++st->sse_pre == 5) {
				st->sse_line = SL_SPACE;
			}
			break;
		case SL_SPACE:
			st->sse_line = SL_DONE;
			st->sse_pre = 0;
			i += c == ' ';
			break;
		case SL_DONE:
			if (st->sse_pre < 6 && c == done[st->sse_pre]) {
				st->sse_pre++;
				i++;
			} else {
				st->sse_line = SL_DATA;
			}
			break;
		case SL_DATA:
		case SL_LOST: {
			size_t e = i;
			while (e < n && b[e] != '\n' && b[e] != '\r')
				e++;
			count += star_body(b + i, e - i);
			i = e;
			if (i < n)
				st->sse_line = SL_KEEP;
			break;
		}
		case SL_KEEP: {
			const uint8_t *lf = memchr(b + i, '\n', n - i);
			i = lf ? (size_t)(lf - b) + 1 : n;
			if (lf) {
				st->sse_line = SL_START;
				st->sse_pre = 0;
			}
			break;
		}
		}
	}
	return count;
}

/* Bytes of a chunked body: framing kept, the chunks' data starred (an
 * event stream's scrubbed as such), each
 * byte taken as the parser takes it (http.c: its chunk states). Returns the
 * bytes it took: all of b[0..n), or those up to the end of the body (the
 * trailer's blank line), after which chunked is false. Framing the parser
 * gives up on (a size line it refuses, kept: at most LS_HTTP_CHUNK_LINE_MAX
 * bytes): the rest is starred, and so is every byte until a message starts
 * a buffer (the stream is no longer synced). */
static size_t scrub_chunked(struct ls_body_state *st, uint8_t *b, size_t n, size_t *count)
{
	size_t i = 0;

	while (i < n) {
		uint8_t c = b[i];

		switch (st->ck) {
		case CK_SIZE:
			if (c == '\n') {
				uint64_t size;
				if (!ls_http_chunk_size(st->ck_line, st->ck_len, &size)) {
					i++; /* the line the parser refuses is kept: it fails there too */
					goto lost;
				}
				st->ck = size ? CK_DATA : CK_TRAILER;
				st->chunk_left = size;
				st->ck_len = 0;
				/* as the parser: after bytes not kept, a chunk starts a line */
				if (size && st->sse_line == SL_LOST) {
					st->sse_line = SL_START;
					st->sse_pre = 0;
				}
			} else if (st->ck_len == sizeof(st->ck_line)) {
				goto lost;
			} else {
				st->ck_line[st->ck_len++] = c;
			}
			i++;
			break;
		case CK_DATA: {
			size_t k = n - i < st->chunk_left ? n - i : st->chunk_left;
			*count += st->sse ? scrub_sse(st, b + i, k) : star_body(b + i, k);
			i += k;
			if (!(st->chunk_left -= k)) {
				st->ck = CK_DATA_END;
				st->ck_cr = 0;
			}
			break;
		}
		case CK_DATA_END:
			if (c == '\n') {
				st->ck = CK_SIZE;
				st->ck_len = 0;
			} else if (c == '\r') {
				st->ck_cr += st->ck_cr < 255;
			} else {
				goto lost;
			}
			i++;
			break;
		case CK_TRAILER: /* a blank line (or a lone CR) ends the body */
			i++;
			if (c == '\n') {
				bool blank = !st->ck_len || (st->ck_len == 1 && st->ck_line[0] == '\r');
				st->ck_len = 0;
				if (blank) {
					st->chunked = false;
					return i;
				}
			} else {
				if (!st->ck_len)
					st->ck_line[0] = c;
				st->ck_len += st->ck_len < 2;
			}
			break;
		}
	}
	return n;
lost:
	memset(b + i, '*', n - i);
	*count += n - i;
	st->chunked = st->synced = false;
	return n;
}

/* `gap` bytes of a chunked body the capture did not keep, as the parser
 * takes them: they count against the chunk's data and the CRLF after it;
 * past that the framing is lost. */
static void chunked_gap(struct ls_body_state *st, uint64_t gap)
{
	while (gap && st->chunked) {
		if (st->ck == CK_DATA) {
			uint64_t k = gap < st->chunk_left ? gap : st->chunk_left;
			gap -= k;
			if (!(st->chunk_left -= k)) {
				st->ck = CK_DATA_END;
				st->ck_cr = 0;
			}
		} else if (st->ck == CK_DATA_END && st->ck_cr < 2) {
			uint64_t k = gap < 2u - st->ck_cr ? gap : 2u - st->ck_cr;
			gap -= k;
			if ((st->ck_cr += k) == 2) {
				st->ck = CK_SIZE;
				st->ck_len = 0;
			}
		} else if (st->ck == CK_DATA_END) {
			return; /* CRs past two: the parser waits for the LF */
		} else {
			st->chunked = st->synced = false;
		}
	}
}

#define HEAD_MAX 16384 /* as the parser's */

void ls_body_free(struct ls_body_conn *c)
{
	for (int d = 0; d < 2; d++) {
		free(c->dir[d].head);
		c->dir[d].head = NULL;
		c->dir[d].head_len = 0;
	}
}

/* Gathers a head split across syscalls; once whole, sets up its body.
 * Returns the bytes of buf that belonged to the head, or n if it goes on. */
static size_t gather_head(struct ls_body_conn *c, bool is_response, const uint8_t *buf, size_t n,
			  size_t total)
{
	struct ls_body_state *st = &c->dir[is_response];
	size_t old = st->head_len, k = n < HEAD_MAX - old ? n : HEAD_MAX - old;
	const uint8_t *end;

	memcpy(st->head + old, buf, k);
	st->head_len += k;
	/* the end looked for in the new bytes only: a head trickled a line per
	 * syscall stays linear; read once it is whole */
	end = head_end(st->head, st->head_len, old);
	if (end) {
		size_t hl = end - st->head;
		start_message(c, is_response, st->head, hl);
		free(st->head);
		st->head = NULL;
		return hl - old;
	}
	if (st->head_len == HEAD_MAX || total > n) { /* lost anyway: the parser gives up too */
		free(st->head);
		st->head = NULL;
		st->synced = false; /* until a buffer starts with a message, as the parser */
	}
	return n;
}

size_t ls_scrub_body(struct ls_body_conn *c, bool is_response, uint8_t *buf, size_t n,
		     size_t total)
{
	struct ls_body_state *st = &c->dir[is_response];
	size_t count = 0, at = 0;

	if (st->head) {
		at = gather_head(c, is_response, buf, n, total);
		if (st->head)
			return 0;
	}
	while (at < n) {
		if (st->body_left) {
			size_t k = n - at < st->body_left ? n - at : st->body_left;
			count += st->sse ? scrub_sse(st, buf + at, k) : star_body(buf + at, k);
			at += k;
			st->body_left -= k;
			continue;
		}
		if (st->chunked) { /* inside chunks, nothing starts a message */
			at += scrub_chunked(st, buf + at, n - at, &count);
			continue;
		}
		if (st->to_close) { /* nor in a body that runs to the end */
			count += st->sse ? scrub_sse(st, buf + at, n - at) : star_body(buf + at, n - at);
			break;
		}
		enum ls_http_kind kind = is_response ? LS_HTTP_RESPONSE : LS_HTTP_REQUEST;
		if (st->synced) /* between messages: stray line ends, as the parser */
			while (at < n && (buf[at] == '\r' || buf[at] == '\n'))
				at++;
		if (at == n)
			break;
		/* a message starts here: in sync, where the parser takes one (a
		 * plausible start: its head is read whole); else only where a
		 * whole start line proves it, as the parser resynchronises */
		if (st->synced ? ls_http_may_start(kind, buf + at, n - at)
			       : ls_http_starts_message(kind, buf + at, n - at)) {
			size_t hl = start_message(c, is_response, buf + at, n - at);
			st->synced = true;
			if (!hl && n == total && (st->head = malloc(HEAD_MAX))) {
				/* the head goes on in the next syscall: gather it */
				st->head_len = 0;
				gather_head(c, is_response, buf + at, n - at, n - at);
			}
			if (!hl && n < total) /* a head cut by the capture: the parser resyncs */
				st->synced = false;
			if (!hl)
				break;
			at += hl;
			continue;
		}
		/* mid-flight: nothing here is framing the parser uses; or not a
		 * message where one must start: the parser gives up on the
		 * stream (until a buffer starts with a whole start line) */
		memset(buf + at, '*', n - at);
		count += n - at;
		st->synced = false;
		break;
	}
	if (total > n) {
		/* bytes the capture did not keep still count against the body */
		if (st->body_left)
			st->body_left -= total - n < st->body_left ? total - n : st->body_left;
		chunked_gap(st, total - n);
		/* an event-stream line went on in them: what follows of it is
		 * not known to be anything (the parser's view too; after the
		 * message, harmless: the next head starts its lines afresh) */
		if (st->sse) {
			st->sse_line = SL_LOST;
			st->sse_pre = 0;
		}
	}
	return count;
}
