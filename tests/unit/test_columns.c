// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The column transform of capture frames: a frame's records come back byte
 * for byte; a damaged transformed frame is refused, never decoded wrong or
 * read out of bounds; frames it cannot take are left plain. The field
 * prediction before it: records come back byte for byte whatever they hold,
 * and the fields columns.h names as predicted come out as it says.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "columns.h"
#include "latsplit/events.h"

static uint64_t next(uint64_t *s)
{
	*s ^= *s << 13, *s ^= *s >> 7, *s ^= *s << 17;
	return *s;
}

/* n records of `kinds` kinds (sizes 24..24+8*7), random fields, rising ts
 * with the odd step back (ts deltas wrap). Returns the length. */
static size_t make_frame(unsigned char *buf, size_t cap, uint32_t n, int kinds, uint64_t *seed)
{
	size_t len = 0;
	uint64_t ts = 1000;

	for (uint32_t i = 0; i < n; i++) {
		uint16_t type = (uint16_t)(1 + next(seed) % kinds);
		uint16_t size = (uint16_t)(sizeof(struct ls_hdr) + 8 * (type % 8));
		struct ls_hdr h = {.type = type, .size = size, .cpu = (uint32_t)(next(seed) % 4)};

		assert_true(len + size <= cap);
		ts += next(seed) % 3 ? next(seed) % 50000 : (uint64_t)-(int64_t)(next(seed) % 1000);
		h.ts = ts;
		h.pid = 4000 + next(seed) % 3;
		h.tid = h.pid + next(seed) % 5;
		memcpy(buf + len, &h, sizeof(h));
		for (size_t b = sizeof(h); b < size; b++)
			buf[len + b] = (unsigned char)(b % 3 ? next(seed) : type);
		len += size;
	}
	return len;
}

static void roundtrip(uint32_t n, int kinds)
{
	uint64_t seed = 88172645463325252ull + n + kinds;
	size_t cap = (size_t)n * 88 + 64;
	unsigned char *in = malloc(cap), *enc = malloc(ls_columns_bound(cap, n)), *out = malloc(cap);
	size_t len = make_frame(in, cap, n, kinds, &seed);
	size_t elen = ls_columns_encode(in, len, n, enc);

	assert_int_not_equal(elen, 0);
	assert_true(elen <= ls_columns_bound(len, n));
	assert_int_equal(ls_columns_decoded_len(enc, elen, n), len);
	assert_int_equal(ls_columns_decode(enc, elen, n, out, len), 0);
	assert_memory_equal(in, out, len);
	free(in);
	free(enc);
	free(out);
}

static void test_roundtrip(void **state)
{
	(void)state;
	roundtrip(1, 1);
	roundtrip(7, 3);
	roundtrip(1000, 1);
	roundtrip(5000, 40);
	roundtrip(20000, 255);
}

/* The layout as columns.h states it, one byte at a time: what the encoder
 * must produce byte for byte (it works in tiles of records). */
static size_t reference_encode(const unsigned char *in, size_t len, uint32_t nrec, unsigned char *out)
{
	uint16_t type[255], size[255];
	uint32_t count[255] = {0}, next[255] = {0};
	size_t off[255], p = 0, base;
	int ng = 0;
	uint64_t prev = 0;

	for (uint32_t k = 0; k < nrec; k++) {
		uint16_t t, sz;
		int gi;

		memcpy(&t, in + p, 2);
		memcpy(&sz, in + p + 2, 2);
		for (gi = 0; gi < ng && !(type[gi] == t && size[gi] == sz); gi++)
			;
		if (gi == ng) {
			type[ng] = t;
			size[ng++] = sz;
		}
		out[2 + k] = (unsigned char)gi;
		count[gi]++;
		p += sz;
	}
	assert_int_equal(p, len);
	out[0] = (unsigned char)ng;
	out[1] = 0;
	base = 2 + nrec;
	for (int i = 0; i < ng; i++) {
		memcpy(out + base + 8 * i, &type[i], 2);
		memcpy(out + base + 8 * i + 2, &size[i], 2);
		memcpy(out + base + 8 * i + 4, &count[i], 4);
	}
	base += 8 * (size_t)ng;
	for (int i = 0; i < ng; i++) {
		off[i] = base;
		base += (size_t)size[i] * count[i];
	}
	p = 0;
	for (uint32_t k = 0; k < nrec; k++) {
		int gi = out[2 + k];
		unsigned char rec[65536];
		uint64_t ts, d;

		memcpy(rec, in + p, size[gi]);
		memcpy(&ts, rec + offsetof(struct ls_hdr, ts), 8);
		d = ts - prev;
		prev = ts;
		for (int b = 0; b < 8; b++)
			rec[offsetof(struct ls_hdr, ts) + b] = (unsigned char)(d >> (8 * b));
		for (size_t i = 0; i < size[gi]; i++)
			out[off[gi] + i * count[gi] + next[gi]] = rec[i];
		next[gi]++;
		p += size[gi];
	}
	return base;
}

/* Narrow and wide records (sock_io records carry up to a KiB of payload),
 * group sizes on and off the encoder's tile: the reference layout exactly. */
static void test_layout(void **state)
{
	uint64_t seed = 7;
	uint32_t n = 3001;
	size_t cap = (size_t)n * 1200, len = 0;
	unsigned char *in = malloc(cap), *enc = malloc(ls_columns_bound(cap, n)),
		      *ref = malloc(ls_columns_bound(cap, n));
	uint64_t ts = 5;
	(void)state;

	for (uint32_t i = 0; i < n; i++) {
		uint16_t kind = (uint16_t)(next(&seed) % 6);
		uint16_t size = (uint16_t)(kind < 3 ? 24u + 8u * kind
						   : 112u + 320u * kind * (unsigned)(next(&seed) % 3));
		struct ls_hdr h = {.type = (uint16_t)(1 + kind), .size = size};

		ts += next(&seed) % 100000;
		h.ts = ts;
		h.pid = (uint32_t)next(&seed);
		memcpy(in + len, &h, sizeof(h));
		for (size_t b = sizeof(h); b < size; b++)
			in[len + b] = (unsigned char)next(&seed);
		len += size;
	}
	size_t elen = ls_columns_encode(in, len, n, enc);
	assert_int_equal(elen, reference_encode(in, len, n, ref));
	assert_memory_equal(enc, ref, elen);
	free(in);
	free(enc);
	free(ref);
}

/* 256 kinds do not fit the one-byte group index: the frame stays plain. */
static void test_too_many_kinds(void **state)
{
	unsigned char in[256 * 24], enc[256 * 24 + 2 + 255 * 8 + 256];
	(void)state;
	memset(in, 0, sizeof(in));
	for (int i = 0; i < 256; i++) {
		struct ls_hdr h = {.type = (uint16_t)i, .size = 24};
		memcpy(in + 24 * i, &h, sizeof(h));
	}
	assert_int_equal(ls_columns_encode(in, sizeof(in), 256, enc), 0);
	assert_int_not_equal(ls_columns_encode(in, 255 * 24, 255, enc), 0);
}

/* Malformed input records (a size past the end, a size not a multiple of
 * 8, fewer records than claimed) are not encoded. */
static void test_malformed_input(void **state)
{
	unsigned char in[64] = {0}, enc[64 + 2 + 255 * 8 + 8];
	struct ls_hdr h = {.type = 1, .size = 48};
	(void)state;
	memcpy(in, &h, sizeof(h));
	assert_int_equal(ls_columns_encode(in, 40, 1, enc), 0);
	h.size = 28;
	memcpy(in, &h, sizeof(h));
	assert_int_equal(ls_columns_encode(in, 28, 1, enc), 0);
	h.size = 24;
	memcpy(in, &h, sizeof(h));
	assert_int_equal(ls_columns_encode(in, 48, 1, enc), 0); /* bytes left over */
	assert_int_equal(ls_columns_encode(in, 24, 2, enc), 0); /* records missing */
}

/* A copy of the first len bytes of b, byte `at` (when < len) XORed with
 * 0x5a: a damaged frame for the decoder. */
static unsigned char *damaged(const unsigned char *b, size_t len, size_t at)
{
	unsigned char *t = malloc(len ? len : 1);

	memcpy(t, b, len);
	if (at < len)
		t[at] ^= 0x5a;
	return t;
}

/* Every single-byte corruption of the header and index, and every
 * truncation, is refused or decodes to records of the declared kinds; the
 * decoder never writes past outlen (ASan watches). */
static void test_damage(void **state)
{
	uint64_t seed = 42;
	uint32_t n = 300;
	size_t cap = n * 88 + 64;
	unsigned char *in = malloc(cap), *enc = malloc(ls_columns_bound(cap, n));
	size_t len = make_frame(in, cap, n, 5, &seed), elen = ls_columns_encode(in, len, n, enc);
	(void)state;

	for (size_t cut = 0; cut < elen; cut += 1 + cut / 7) {
		unsigned char *t = damaged(enc, cut, cut);
		assert_int_equal(ls_columns_decoded_len(t, cut, n), 0);
		free(t);
	}
	for (size_t at = 0; at < 2 + n + 5 * 8; at++) {
		unsigned char *t = damaged(enc, elen, at);
		size_t dl = ls_columns_decoded_len(t, elen, n);
		if (dl && dl <= 16u << 20) {
			unsigned char *out = malloc(dl);
			int e = ls_columns_decode(t, elen, n, out, dl);
			assert_true(e == 0 || e == -EBADMSG);
			free(out);
		}
		free(t);
	}
	/* the wrong record count */
	assert_int_equal(ls_columns_decoded_len(enc, elen, n - 1), 0);
	free(in);
	free(enc);
}

/* The elision as columns.h states it, one column at a time, of a whole
 * encoding: its header, each constant column (a group of two records or
 * more, one byte value throughout) as that byte, others whole, then the
 * bitmaps. Returns the length; what the encoder must produce byte for byte. */
static size_t reference_elide(const unsigned char *enc, size_t elen, uint32_t nrec, unsigned char *out)
{
	uint16_t ng;
	size_t hdr, at, w, nb = 0;
	static unsigned char bits[255 * 8192];

	memset(bits, 0, sizeof(bits));

	memcpy(&ng, enc, 2);
	hdr = 2 + nrec + 8 * (size_t)ng;
	memcpy(out, enc, hdr);
	at = w = hdr;
	for (int g = 0; g < ng; g++) {
		uint16_t size;
		uint32_t count;

		memcpy(&size, enc + 2 + nrec + 8 * g + 2, 2);
		memcpy(&count, enc + 2 + nrec + 8 * g + 4, 4);
		for (size_t i = 0; i < size; i++, at += count) {
			bool same = count > 1;
			for (uint32_t t = 1; t < count && same; t++)
				same = enc[at + t] == enc[at];
			if (same) {
				bits[nb + i / 8] |= (unsigned char)(1u << (i % 8));
				out[w++] = enc[at];
			} else {
				memcpy(out + w, enc + at, count);
				w += count;
			}
		}
		nb += (size + 7u) / 8;
	}
	assert_int_equal(at, elen);
	memcpy(out + w, bits, nb);
	return w + nb;
}

/* Frames from all-random to mostly constant (a payload every record
 * repeats): elided exactly as the reference says of the whole encoding,
 * then expanded back to it byte for byte and decoded to the records. */
static void elide_roundtrip(uint32_t n, int kinds, int constant_pct)
{
	uint64_t seed = 0x2545f4914f6cdd1dull + n + (uint64_t)kinds * 131 + (uint64_t)constant_pct;
	size_t cap = (size_t)n * 88 + 64;
	unsigned char *in = malloc(cap), *enc = malloc(ls_columns_bound(cap, n)),
		      *ref = malloc(ls_columns_bound(cap, n)), *kept, *out = malloc(cap);
	size_t len = make_frame(in, cap, n, kinds, &seed), elen, klen, rlen;
	bool elided;

	/* bytes 24.. of each record: a share the same in every record */
	for (size_t p = 0; p < len;) {
		struct ls_hdr h;
		memcpy(&h, in + p, sizeof(h));
		for (size_t b = sizeof(h); b < h.size; b++)
			if ((int)(b * 37 % 100) < constant_pct)
				in[p + b] = (unsigned char)(b * 7);
		p += h.size;
	}
	elen = ls_columns_encode(in, len, n, enc);
	assert_int_not_equal(elen, 0);
	rlen = reference_elide(enc, elen, n, ref);
	kept = malloc(ls_columns_bound(cap, n));
	klen = ls_columns_encode_elided(in, len, n, kept, &elided);
	if (!elided) { /* nothing to gain: the whole frame */
		assert_true(rlen >= elen);
		assert_int_equal(klen, elen);
		assert_memory_equal(kept, enc, elen);
	} else {
		assert_int_equal(klen, rlen);
		assert_true(klen < elen);
		assert_memory_equal(kept, ref, klen);
		assert_int_equal(ls_columns_expanded_len(kept, klen, n), elen);
		memset(out, 0xee, cap);
		assert_int_equal(ls_columns_expand(kept, klen, n, out, elen), 0);
		assert_memory_equal(out, enc, elen);
		assert_int_equal(ls_columns_decode(out, elen, n, ref, len), 0);
		assert_memory_equal(ref, in, len);
	}
	free(in);
	free(enc);
	free(ref);
	free(kept);
	free(out);
}

static void test_elide_roundtrip(void **state)
{
	(void)state;
	elide_roundtrip(1, 1, 100); /* one record: nothing to gain */
	elide_roundtrip(2, 1, 0);
	elide_roundtrip(7, 3, 50);
	elide_roundtrip(1000, 1, 0);
	elide_roundtrip(1000, 1, 90);
	elide_roundtrip(5000, 40, 60);
	elide_roundtrip(20000, 255, 100);
}

/* An elided frame cut anywhere, or with any byte of its header or bitmaps
 * changed, is refused or expands within outlen (ASan watches); a wrong
 * record count or a whole (not elided) frame is refused. */
static void test_elide_damage(void **state)
{
	uint64_t seed = 99;
	uint32_t n = 300;
	size_t cap = n * 88 + 64;
	unsigned char *in = malloc(cap), *enc = malloc(ls_columns_bound(cap, n)), *out;
	size_t len = make_frame(in, cap, n, 5, &seed), elen = ls_columns_encode(in, len, n, enc), klen;
	bool elided;
	(void)state;

	out = malloc(elen);
	klen = ls_columns_encode_elided(in, len, n, enc, &elided);
	assert_true(elided); /* the type bytes make constant columns */
	for (size_t cut = 0; cut < klen; cut += 1 + cut / 7) {
		unsigned char *t = damaged(enc, cut, cut);
		assert_int_equal(ls_columns_expanded_len(t, cut, n), 0);
		free(t);
	}
	for (size_t at = 0; at < klen; at += at < 2 + n + 5 * 8 || at + 64 > klen ? 1 : 97) {
		unsigned char *t = damaged(enc, klen, at);
		size_t xl = ls_columns_expanded_len(t, klen, n);
		if (xl && xl <= 16u << 20) {
			unsigned char *x = malloc(xl);
			assert_int_equal(ls_columns_expand(t, klen, n, x, xl), 0);
			free(x);
		}
		free(t);
	}
	assert_int_equal(ls_columns_expanded_len(enc, klen, n - 1), 0);
	assert_int_equal(ls_columns_expand(enc, klen, n, out, elen - 1), -EBADMSG);
	free(in);
	free(enc);
	free(out);
}

/* A frame of the kinds prediction touches (sock_io with payload, tcp_probe,
 * sched_switch), some cut short of their full size, among others; fields
 * random or following each other as on a host, from `nconn` connections and
 * `nthr` threads (past LS_PREDICT_KEYS: the spare path). */
static size_t make_pred_frame(unsigned char *buf, size_t cap, uint32_t n, uint32_t nconn,
			      uint32_t nthr, uint64_t *seed)
{
	size_t len = 0;
	uint64_t ts = 5000;

	for (uint32_t i = 0; i < n; i++) {
		unsigned char rec[512] = {0};
		struct ls_hdr *h = (struct ls_hdr *)rec;
		uint32_t pick = (uint32_t)(next(seed) % 10), conn = (uint32_t)(next(seed) % nconn);
		uint32_t tid = (uint32_t)(next(seed) % nthr);

		ts += next(seed) % 20000;
		*h = (struct ls_hdr){.cpu = (uint32_t)(next(seed) % 2), .ts = ts, .pid = 100 + tid / 4, .tid = tid};
		if (pick < 4) {
			struct ls_ev_sock_io *e = (struct ls_ev_sock_io *)rec;
			uint16_t cap_len = (uint16_t)(next(seed) % 200);
			e->conn_id = 7000 + conn;
			e->ts_enter = ts - next(seed) % 9000;
			e->dir = (uint16_t)(next(seed) % 2);
			e->bytes = (uint32_t)(next(seed) % 5000);
			e->seq = (uint32_t)(conn * 0x9e3779b9u + (next(seed) % 4 ? 0 : next(seed)));
			/* a folded arrival (ABI 6; predicted from v5), from what
			 * was drawn: the draws stay those of the frames before */
			if (!e->dir && ts % 2) {
				e->arrive_dt = 1 + (uint32_t)(ts % 50000);
				e->arrive_ack = conn * 0x85ebca6bu + e->bytes + (uint32_t)(ts % 7);
				e->arrive_srtt_us = (uint32_t)(ts % 1000);
				e->arrive_len_flags = e->bytes << 8 | 0x18;
			}
			e->cap_len = cap_len;
			for (int b = 0; b < cap_len; b++)
				rec[sizeof(*e) + b] = (unsigned char)next(seed);
			h->type = LS_EV_SOCK_IO;
			h->size = (uint16_t)((sizeof(*e) + cap_len + 7) & ~7u);
		} else if (pick < 6) {
			struct ls_ev_tcp_probe *e = (struct ls_ev_tcp_probe *)rec;
			e->conn_id = 7000 + conn;
			e->rcv_nxt = (uint32_t)next(seed);
			e->seq = e->rcv_nxt + (next(seed) % 3 ? 0 : (uint32_t)next(seed));
			e->snd_una = (uint32_t)next(seed);
			e->ack_seq = e->snd_una + (uint32_t)(next(seed) % 100);
			e->snd_nxt = e->snd_una + (uint32_t)(next(seed) % 100);
			e->srtt_us = (uint32_t)next(seed);
			e->snd_wnd = (uint32_t)next(seed);
			e->snd_cwnd = (uint32_t)(next(seed) % 50);
			h->type = LS_EV_TCP_PROBE;
			h->size = sizeof(*e);
		} else if (pick < 9) {
			struct ls_ev_sched_switch *e = (struct ls_ev_sched_switch *)rec;
			e->next_tid = next(seed) % 8 ? (uint32_t)(next(seed) % nthr) : tid; /* the odd prev == next */
			e->next_pid = 100 + e->next_tid / 4;
			e->prev_prio = 120 + (uint32_t)(next(seed) % 3);
			e->next_prio = 120;
			e->prev_state = (int64_t)(next(seed) % 3);
			snprintf(e->prev_comm, sizeof(e->prev_comm), "w-%u", next(seed) % 5 ? tid : 99);
			snprintf(e->next_comm, sizeof(e->next_comm), "w-%u", e->next_tid);
			if (next(seed) % 2) { /* a folded wakeup (ABI 7) */
				e->next_woken_dt = 1 + next(seed) % 100000;
				e->waker_pid = 100 + (uint32_t)(next(seed) % 2);
				e->waker_tid = e->waker_pid * 4 + (uint32_t)(next(seed) % 2);
			}
			h->type = LS_EV_SCHED_SWITCH;
			h->size = sizeof(*e);
		} else {
			h->type = (uint16_t)(1 + next(seed) % 20); /* under 255 kinds in all */
			h->size = (uint16_t)(sizeof(*h) + 8 * (next(seed) % 4));
			for (size_t b = sizeof(*h); b < h->size; b++)
				rec[b] = (unsigned char)next(seed);
		}
		if (pick < 9 && next(seed) % 16 == 0) /* a record of a predicted kind, cut short */
			h->size = (uint16_t)(sizeof(*h) + 8 * (next(seed) % 4));
		assert_true(len + h->size <= cap);
		memcpy(buf + len, rec, h->size);
		len += h->size;
	}
	return len;
}

static void pred_roundtrip(uint32_t n, uint32_t nconn, uint32_t nthr)
{
	uint64_t seed = 0x243f6a8885a308d3ull + n + nconn + nthr;
	size_t cap = (size_t)n * 512;
	unsigned char *in = malloc(cap), *work = malloc(cap), *enc = malloc(ls_columns_bound(cap, n)),
		      *out = malloc(cap);
	size_t len = make_pred_frame(in, cap, n, nconn, nthr, &seed), elen;

	memcpy(work, in, len);
	assert_int_equal(ls_predict_encode(work, len, n), 0);
	assert_memory_not_equal(work, in, len);
	elen = ls_columns_encode(work, len, n, enc);
	assert_int_not_equal(elen, 0);
	assert_int_equal(ls_columns_decode(enc, elen, n, out, len), 0);
	assert_int_equal(ls_predict_decode(out, len, n, LS_PREDICT_VERSION), 0);
	assert_memory_equal(in, out, len);
	free(in);
	free(work);
	free(enc);
	free(out);
}

static void test_predict_roundtrip(void **state)
{
	(void)state;
	pred_roundtrip(1, 1, 1);
	pred_roundtrip(3000, 8, 12);
	pred_roundtrip(20000, 3 * LS_PREDICT_KEYS, 2 * LS_PREDICT_KEYS); /* tables full */
}

/* The fields come out as columns.h says, for records that follow each
 * other on one connection and one thread. */
static void test_predict_fields(void **state)
{
	struct {
		struct ls_ev_sock_io io[2];
		struct ls_ev_tcp_probe probe[2];
		struct ls_ev_sched_switch sw[2];
	} f = {0}, orig;
	(void)state;

	for (int i = 0; i < 2; i++) {
		f.io[i].h = (struct ls_hdr){.type = LS_EV_SOCK_IO, .size = sizeof(f.io[i]), .ts = 1000 + i};
		f.io[i].conn_id = 9;
		f.io[i].ts_enter = 990 + i;
		f.io[i].dir = LS_IO_OUT;
		f.io[i].bytes = 300;
		f.io[i].seq = 0xfffffff0u + 300 * i; /* wraps */
		f.probe[i].h = (struct ls_hdr){.type = LS_EV_TCP_PROBE, .size = sizeof(f.probe[i])};
		f.probe[i].conn_id = 9;
		f.probe[i].rcv_nxt = f.probe[i].seq = 5000 + 10 * i;
		f.probe[i].snd_una = 70000 + 600 * i;
		f.probe[i].ack_seq = f.probe[i].snd_una + 300;
		f.probe[i].snd_nxt = f.probe[i].snd_una + 600;
		f.probe[i].srtt_us = 40;
		f.probe[i].snd_wnd = 65535;
		f.probe[i].snd_cwnd = 10;
		f.sw[i].h = (struct ls_hdr){.type = LS_EV_SCHED_SWITCH, .size = sizeof(f.sw[i]), .pid = 50,
					   .tid = i ? 52 : 51};
		f.sw[i].next_pid = 50;
		f.sw[i].next_tid = i ? 51 : 52;
		f.sw[i].prev_prio = f.sw[i].next_prio = 120;
		strcpy(f.sw[i].prev_comm, i ? "engine" : "uvicorn");
		strcpy(f.sw[i].next_comm, i ? "uvicorn" : "engine");
	}
	orig = f;
	assert_int_equal(ls_predict_encode((unsigned char *)&f, sizeof(f), 6), 0);
	assert_int_equal(f.io[0].ts_enter, 10);
	assert_int_equal(f.io[0].seq, 0xfffffff0u); /* nothing before it */
	assert_int_equal(f.io[1].seq, 0);
	assert_int_equal(f.io[0].conn_id, 9); /* the thread's first */
	assert_int_equal(f.io[1].conn_id, 0);
	assert_int_equal(f.probe[0].seq, 0);
	assert_int_equal(f.probe[0].ack_seq, 300);
	assert_int_equal(f.probe[0].snd_nxt, 600);
	assert_int_equal(f.probe[1].rcv_nxt, 10);
	assert_int_equal(f.probe[1].snd_una, 600);
	assert_int_equal(f.probe[1].srtt_us | f.probe[1].snd_wnd | f.probe[1].snd_cwnd, 0);
	assert_int_equal(f.sw[0].h.pid, 50);
	assert_string_equal(f.sw[0].next_comm, "engine");
	assert_int_equal(f.sw[1].h.pid | f.sw[1].next_pid | f.sw[1].prev_prio | f.sw[1].next_prio, 0);
	for (int i = 0; i < LS_COMM_LEN; i++)
		assert_int_equal(f.sw[1].prev_comm[i] | f.sw[1].next_comm[i], 0);
	assert_int_equal(ls_predict_decode((unsigned char *)&f, sizeof(f), 6, LS_PREDICT_VERSION), 0);
	assert_memory_equal(&f, &orig, sizeof(f));
}

/* A folded wakeup's waker (ABI 7) by the switched-in thread's last one; a
 * switch of ABI 6's size (no such fields) keeps every byte past them. */
static void test_predict_waker(void **state)
{
	struct ls_ev_sched_switch f[3] = {0}, orig[3];
	(void)state;

	for (int i = 0; i < 3; i++) {
		f[i].h = (struct ls_hdr){.type = LS_EV_SCHED_SWITCH, .size = sizeof(f[i]), .pid = 50,
					 .tid = 51};
		f[i].next_pid = 50;
		f[i].next_tid = 52;
		f[i].next_woken_dt = 1000 + i;
		f[i].waker_pid = 60;
		f[i].waker_tid = 61;
	}
	f[2].waker_tid = 62;
	orig[0] = f[0], orig[1] = f[1], orig[2] = f[2];
	assert_int_equal(ls_predict_encode((unsigned char *)f, sizeof(f), 3), 0);
	assert_int_equal(f[0].waker_pid, 60); /* nothing before it */
	assert_int_equal(f[0].waker_tid, 61);
	assert_int_equal(f[1].waker_pid | f[1].waker_tid, 0);
	assert_int_equal(f[2].waker_tid, 61 ^ 62);
	assert_int_equal(f[1].next_woken_dt, 1001); /* the key: never changed */
	assert_int_equal(ls_predict_decode((unsigned char *)f, sizeof(f), 3, LS_PREDICT_VERSION), 0);
	assert_memory_equal(f, orig, sizeof(f));

	/* ABI 6's size: the 16 bytes after it are another record's, untouched */
	unsigned char buf[2 * LS_SCHED_SWITCH_SIZE_V6], was[sizeof(buf)];
	for (int i = 0; i < 2; i++) {
		struct ls_ev_sched_switch e = orig[0];

		e.h.size = LS_SCHED_SWITCH_SIZE_V6;
		memcpy(buf + i * LS_SCHED_SWITCH_SIZE_V6, &e, LS_SCHED_SWITCH_SIZE_V6);
	}
	memcpy(was, buf, sizeof(buf));
	assert_int_equal(ls_predict_encode(buf, sizeof(buf), 2), 0);
	assert_int_equal(ls_predict_decode(buf, sizeof(buf), 2, LS_PREDICT_VERSION), 0);
	assert_memory_equal(buf, was, sizeof(buf));
}

/* v5: a folded arrival's ack by where its connection's writes left the
 * stream, its RTT by the connection's last; a file of version 4 decodes
 * without them. */
static void test_predict_v5(void **state)
{
	struct ls_ev_sock_io f[3] = {0}, orig[3], v4[3];
	(void)state;

	for (int i = 0; i < 3; i++) {
		f[i].h = (struct ls_hdr){.type = LS_EV_SOCK_IO, .size = sizeof(f[i]), .ts = 100 * i};
		f[i].conn_id = 9;
	}
	/* a write of 300 bytes from 1000, then two reads with their arrivals */
	f[0].dir = LS_IO_OUT;
	f[0].seq = 1000;
	f[0].bytes = 300;
	f[1].arrive_dt = 5;
	f[1].arrive_ack = 1300;
	f[1].arrive_srtt_us = 40;
	f[2].arrive_dt = 6;
	f[2].arrive_ack = 1290;
	f[2].arrive_srtt_us = 42;
	memcpy(orig, f, sizeof(f));
	assert_int_equal(ls_predict_encode((unsigned char *)f, sizeof(f), 3), 0);
	assert_int_equal(f[1].arrive_ack, 0);
	assert_int_equal(f[1].arrive_srtt_us, 40); /* nothing before it */
	assert_int_equal(f[2].arrive_ack, (uint32_t)-10);
	assert_int_equal(f[2].arrive_srtt_us, 2);
	assert_int_equal(f[2].arrive_dt, 6); /* the key: never changed */
	memcpy(v4, f, sizeof(f));
	assert_int_equal(ls_predict_decode((unsigned char *)f, sizeof(f), 3, LS_PREDICT_VERSION), 0);
	assert_memory_equal(f, orig, sizeof(f));
	/* read as version 4, they stay as stored; the rest decodes as before */
	assert_int_equal(ls_predict_decode((unsigned char *)v4, sizeof(v4), 3, 4), 0);
	assert_int_equal(v4[2].arrive_ack, (uint32_t)-10);
	assert_int_equal(v4[2].arrive_srtt_us, 2);
	assert_int_equal(v4[2].ts_enter, orig[2].ts_enter);
	assert_int_equal(v4[2].seq, orig[2].seq);
}

/* Records that do not add up are refused and left as they were; decoding
 * whatever bytes a damaged frame holds stays in bounds (ASan watches). */
static void test_predict_malformed(void **state)
{
	uint64_t seed = 7;
	uint32_t n = 400;
	size_t cap = (size_t)n * 512;
	unsigned char *in = malloc(cap), *t = malloc(cap);
	size_t len = make_pred_frame(in, cap, n, 5, 5, &seed);
	(void)state;

	memcpy(t, in, len);
	assert_int_equal(ls_predict_encode(t, len - 8, n), -EINVAL);
	assert_int_equal(ls_predict_encode(t, len, n + 1), -EINVAL);
	assert_int_equal(ls_predict_encode(t, len, n - 1), -EINVAL); /* bytes left over */
	assert_memory_equal(t, in, len);
	assert_int_equal(ls_predict_decode(t, len, n - 1, LS_PREDICT_VERSION), -EBADMSG);
	for (int round = 0; round < 200; round++) {
		memcpy(t, in, len);
		for (int k = 0; k < 8; k++)
			t[next(&seed) % len] ^= (unsigned char)(1 + next(&seed) % 255);
		int e = ls_predict_decode(t, len, n, LS_PREDICT_VERSION);
		assert_true(e == 0 || e == -EBADMSG);
	}
	free(in);
	free(t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_roundtrip),
		cmocka_unit_test(test_layout),
		cmocka_unit_test(test_too_many_kinds),
		cmocka_unit_test(test_malformed_input),
		cmocka_unit_test(test_damage),
		cmocka_unit_test(test_elide_roundtrip),
		cmocka_unit_test(test_elide_damage),
		cmocka_unit_test(test_predict_roundtrip),
		cmocka_unit_test(test_predict_waker),
		cmocka_unit_test(test_predict_v5),
		cmocka_unit_test(test_predict_fields),
		cmocka_unit_test(test_predict_malformed),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
