// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The column transform of capture frames: a frame's records come back byte
 * for byte; a damaged transformed frame is refused, never decoded wrong or
 * read out of bounds; frames it cannot take are left plain.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
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
		unsigned char *t = malloc(cut ? cut : 1);
		memcpy(t, enc, cut);
		assert_int_equal(ls_columns_decoded_len(t, cut, n), 0);
		free(t);
	}
	for (size_t at = 0; at < 2 + n + 5 * 8; at++) {
		unsigned char *t = malloc(elen);
		memcpy(t, enc, elen);
		t[at] ^= 0x5a;
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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_roundtrip),
		cmocka_unit_test(test_layout),
		cmocka_unit_test(test_too_many_kinds),
		cmocka_unit_test(test_malformed_input),
		cmocka_unit_test(test_damage),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
