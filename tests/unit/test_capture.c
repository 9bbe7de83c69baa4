// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Capture writer/reader: round trip of every record type, truncation at every
 * byte offset, random bit flips, empty files, and the reorder buffer.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <errno.h>
#include <stdint.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "capture.h"
#include "order.h"

#define MAXREC 400

struct corpus {
	unsigned char recs[MAXREC][512];
	int n;
	char path[64];
	unsigned char *file;
	size_t file_len;
};

static struct corpus C;

/* One record of `type`, fields filled with a pattern that depends on i. */
static size_t make_record(unsigned char *buf, __u16 type, int i)
{
	size_t size = ls_record_min_size(type);
	struct ls_hdr *h = (struct ls_hdr *)buf;

	if (type == LS_REC_PROC_INFO)
		size += 5 + i % 40; /* variable cmdline */
	if (type == LS_REC_DROPS)
		size += 8 * 4;
	size = (size + 7) & ~7u;
	for (size_t k = 0; k < size; k++)
		buf[k] = (unsigned char)(k * 31 + i * 7 + type);
	h->type = type;
	h->size = size;
	h->ts = 1000000ull * i + (i % 3) * 17;
	if (type == LS_REC_PROC_INFO)
		((struct ls_rec_proc_info *)buf)->cmdline_len = 5 + i % 40;
	if (type == LS_REC_DROPS)
		((struct ls_rec_drops *)buf)->ncpu = 4;
	return size;
}

static const __u16 all_types[] = {
	LS_EV_SCHED_SWITCH, LS_EV_SCHED_WAKEUP, LS_EV_SCHED_WAKEUP_NEW, LS_EV_PROC_FORK,
	LS_EV_PROC_EXEC,    LS_EV_PROC_EXIT,    LS_EV_TCP_STATE,        LS_EV_TCP_RETRANS,
	LS_EV_TCP_PROBE,    LS_EV_TCP_RESET,    LS_EV_TCP_DESTROY,      LS_REC_PROC_INFO,
	LS_REC_DROPS,
};
#define NTYPES (sizeof(all_types) / sizeof(all_types[0]))

static unsigned char *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	unsigned char *buf;
	long n;

	assert_non_null(f);
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	rewind(f);
	buf = malloc(n ? n : 1);
	assert_int_equal(fread(buf, 1, n, f), (size_t)n);
	fclose(f);
	*len = n;
	return buf;
}

static void spit(const char *path, const void *buf, size_t len)
{
	FILE *f = fopen(path, "wb");

	assert_non_null(f);
	assert_int_equal(fwrite(buf, 1, len, f), len);
	fclose(f);
}

static int setup_corpus(void **state)
{
	struct ls_file_hdr hdr;
	struct ls_writer *w;
	struct ls_writer_opts opts = {.block_size = 2048, .nblocks = 2};
	struct ls_rec_stats stats;
	char *argv[] = {"latsplit", "record", "-d", "1"};

	(void)state;
	snprintf(C.path, sizeof(C.path), "/tmp/ls-test-%d.data", getpid());
	unlink(C.path);
	ls_file_hdr_init(&hdr, 4, argv);
	assert_int_equal(ls_writer_open(&w, C.path, &hdr, &opts), 0);
	C.n = 0;
	for (int i = 0; i < 120; i++) {
		make_record(C.recs[C.n], all_types[i % NTYPES], i);
		assert_int_equal(ls_writer_append(w, (struct ls_hdr *)C.recs[C.n]), 0);
		C.n++;
	}
	memset(&stats, 0, sizeof(stats));
	stats.h.type = LS_REC_STATS;
	stats.h.size = sizeof(stats);
	stats.h.ts = 999999999;
	stats.events = C.n;
	memcpy(C.recs[C.n++], &stats, sizeof(stats));
	assert_int_equal(ls_writer_close(w, &stats.h, NULL), 0);
	C.file = slurp(C.path, &C.file_len);
	return 0;
}

static int teardown_corpus(void **state)
{
	(void)state;
	unlink(C.path);
	free(C.file);
	return 0;
}

/* ls_reader_floor after each of n records (ts[k], floor[k]): no record
 * after the k-th is older than floor[k]. */
static void check_floors(const __u64 *ts, const __u64 *floor, int n)
{
	__u64 least = UINT64_MAX; /* of the records after k */

	for (int k = n - 1; k >= 0; k--) {
		assert_true(floor[k] <= least);
		if (ts[k] < least)
			least = ts[k];
	}
}

/* Reads `path`; checks every record returned is the next original in a
 * subsequence of C.recs (exact prefix when `prefix`), and the reader's
 * floors. Returns the count. */
static int read_check(const char *path, bool prefix, struct ls_reader_stats *st_out)
{
	struct ls_reader *r;
	const struct ls_hdr *h;
	char err[256];
	int got = 0, at = 0;
	static __u64 ts[MAXREC], floor[MAXREC];

	if (ls_reader_open(&r, path, err, sizeof(err)) < 0)
		return -1;
	while (ls_reader_next(r, &h) == 1) {
		assert_true(got < MAXREC);
		ts[got] = h->ts;
		floor[got] = ls_reader_floor(r);
		if (prefix) {
			assert_true(at < C.n);
			assert_memory_equal(h, C.recs[at], h->size);
			at++;
		} else {
			while (at < C.n && (h->size != ((struct ls_hdr *)C.recs[at])->size ||
					    memcmp(h, C.recs[at], h->size)))
				at++;
			assert_true(at < C.n); /* never a record that was not written */
			at++;
		}
		got++;
	}
	check_floors(ts, floor, got);
	if (st_out)
		*st_out = *ls_reader_stats(r);
	ls_reader_close(r);
	return got;
}

static void test_round_trip(void **state)
{
	struct ls_reader_stats st;
	struct stat sb;

	(void)state;
	assert_int_equal(stat(C.path, &sb), 0);
	assert_int_equal(sb.st_mode & 0777, 0600);
	assert_int_equal(read_check(C.path, true, &st), C.n);
	assert_true(st.complete);
	assert_false(st.truncated);
	assert_int_equal(st.frames_bad, 0);
	assert_true(st.frames_ok > 5); /* small blocks: many frames */
}

static void test_header_fields(void **state)
{
	struct ls_reader *r;
	char err[256];

	(void)state;
	assert_int_equal(ls_reader_open(&r, C.path, err, sizeof(err)), 0);
	assert_string_equal(ls_reader_header(r)->cmdline, "latsplit record -d 1");
	assert_int_equal(ls_reader_header(r)->abi_version, LS_ABI_VERSION);
	ls_reader_close(r);
}

static void test_truncate_every_offset(void **state)
{
	char path[80];
	int prev = 0;

	(void)state;
	snprintf(path, sizeof(path), "%s.cut", C.path);
	for (size_t len = 0; len <= C.file_len; len++) {
		struct ls_reader_stats st;
		int got;

		unlink(path);
		spit(path, C.file, len);
		got = read_check(path, true, &st);
		if (len < sizeof(struct ls_file_hdr)) {
			assert_int_equal(got, -1);
			continue;
		}
		assert_true(got >= prev); /* more bytes never give fewer records */
		prev = got;
		if (len < C.file_len) {
			assert_false(st.complete);
			/* every record is either read or accounted lost, unless the
			 * cut fell inside a frame header (its count is unknowable) */
			if (st.records_lost)
				assert_true(got + st.records_lost <= (__u64)C.n);
		} else {
			assert_int_equal(got, C.n);
			assert_true(st.complete);
		}
	}
	unlink(path);
}

static void test_bit_flips(void **state)
{
	char path[80];
	unsigned char *copy = malloc(C.file_len);
	unsigned seed = 12345;
	int detected = 0;

	(void)state;
	snprintf(path, sizeof(path), "%s.flip", C.path);
	for (int iter = 0; iter < 2000; iter++) {
		struct ls_reader_stats st;
		int flips = 1 + rand_r(&seed) % 8, got;

		memcpy(copy, C.file, C.file_len);
		for (int k = 0; k < flips; k++) {
			size_t off = rand_r(&seed) % C.file_len;
			copy[off] ^= 1u << (rand_r(&seed) % 8);
		}
		unlink(path);
		spit(path, copy, C.file_len);
		got = read_check(path, false, &st);
		if (got < 0 || got < C.n || st.frames_bad)
			detected++;
	}
	/* Every flip lands in a CRC-covered byte: each must be detected. */
	assert_int_equal(detected, 2000);
	unlink(path);
	free(copy);
}

static void test_garbage_and_empty(void **state)
{
	char path[80], err[256];
	struct ls_reader *r;
	unsigned char junk[4096];
	unsigned seed = 7;

	(void)state;
	snprintf(path, sizeof(path), "%s.junk", C.path);
	unlink(path);
	spit(path, "", 0);
	assert_int_equal(ls_reader_open(&r, path, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "not a latsplit capture"));

	for (size_t i = 0; i < sizeof(junk); i++)
		junk[i] = rand_r(&seed);
	unlink(path);
	spit(path, junk, sizeof(junk));
	assert_true(ls_reader_open(&r, path, err, sizeof(err)) < 0);
	assert_non_null(strstr(err, "bad magic"));

	/* A valid header followed by garbage: no records, no crash. */
	memcpy(junk, C.file, sizeof(struct ls_file_hdr));
	unlink(path);
	spit(path, junk, sizeof(junk));
	struct ls_reader_stats st;
	assert_int_equal(read_check(path, false, &st), 0);
	assert_false(st.complete);
	assert_true(st.bytes_skipped > 0);

	/* Header only. */
	unlink(path);
	spit(path, C.file, sizeof(struct ls_file_hdr));
	assert_int_equal(read_check(path, true, &st), 0);
	assert_false(st.complete);
	unlink(path);
	assert_int_equal(ls_reader_open(&r, "/nonexistent/x", err, sizeof(err)), -ENOENT);
}

static void test_existing_file_refused(void **state)
{
	struct ls_file_hdr hdr;
	struct ls_writer *w;

	(void)state;
	ls_file_hdr_init(&hdr, 0, NULL);
	assert_int_equal(ls_writer_open(&w, C.path, &hdr, NULL), -EEXIST);
}

static void test_order(void **state)
{
	struct ls_order *o = ls_order_new(100);
	struct ls_hdr h = {.type = 1, .size = sizeof(h)};
	const struct ls_hdr *out;
	__u64 ts[] = {50, 10, 30, 20, 40, 200, 150, 400, 300};
	__u64 last = 0;
	int n = 0;

	(void)state;
	for (size_t i = 0; i < sizeof(ts) / sizeof(ts[0]); i++) {
		h.ts = ts[i];
		assert_int_equal(ls_order_push(o, &h), 0);
		while ((out = ls_order_pop(o, false))) {
			assert_true(out->ts >= last);
			last = out->ts;
			n++;
		}
	}
	while ((out = ls_order_pop(o, true))) {
		assert_true(out->ts >= last);
		last = out->ts;
		n++;
	}
	assert_int_equal(n, 9);
	assert_int_equal(ls_order_late(o), 0);
	ls_order_free(o);
}

/* Nearly in order, as from per-CPU ring-buffer reservations: most records
 * in time order, some late by up to lag (< window), many equal timestamps.
 * Out in the order of a stable sort by ts (equal ones as they came). */
static void test_order_nearly_sorted(void **state)
{
	enum { N = 20000 };
	struct ls_order *o = ls_order_new(1000);
	struct {
		struct ls_hdr h;
		__u64 arrival;
	} r = {.h = {.type = 1, .size = sizeof(r)}};
	static __u64 got_ts[N], got_arr[N];
	__u64 seed = 7, t = 1000, n = 0;
	const struct ls_hdr *out;

	(void)state;
	for (__u64 i = 0; i < N; i++) {
		seed = seed * 6364136223846793005ull + 1442695040888963407ull;
		if (seed >> 60 == 0) /* 1 in 16 comes late, by up to 900 */
			r.h.ts = t > 900 ? t - (seed >> 20) % 900 : t;
		else
			r.h.ts = (t += (seed >> 33) % 3); /* steps of 0..2: equal stamps */
		r.arrival = i;
		assert_int_equal(ls_order_push(o, &r.h), 0);
		while ((out = ls_order_pop(o, false))) {
			const __u64 *a = (const __u64 *)(out + 1);
			got_ts[n] = out->ts, got_arr[n] = *a, n++;
		}
	}
	while ((out = ls_order_pop(o, true))) {
		const __u64 *a = (const __u64 *)(out + 1);
		got_ts[n] = out->ts, got_arr[n] = *a, n++;
	}
	assert_int_equal(n, N);
	for (__u64 i = 1; i < N; i++) {
		assert_true(got_ts[i] >= got_ts[i - 1]);
		if (got_ts[i] == got_ts[i - 1])
			assert_true(got_arr[i] > got_arr[i - 1]); /* stable */
	}
	assert_int_equal(ls_order_late(o), 0);
	ls_order_free(o);
}

/* Records out of order across frames (one in 64 late by up to 120 records,
 * some 3 frames): the floors hold for every record, rise as frames are
 * read, and with them a reorder buffer whose window never passes releases
 * the records in order while it holds at most a few frames' worth. */
static void test_reader_floor(void **state)
{
	enum { N = 3000 };
	struct ls_writer_opts opts = {.block_size = 2048, .nblocks = 2};
	char *argv[] = {"latsplit", "record"};
	static __u64 ts[N], floor[N];
	struct ls_file_hdr hdr;
	struct ls_writer *w;
	struct ls_reader *r;
	struct ls_order *o = ls_order_new(UINT64_MAX / 2);
	struct ls_hdr rec = {.type = LS_EV_PROC_EXIT, .size = sizeof(struct ls_ev_proc_exit)};
	unsigned char buf[sizeof(struct ls_ev_proc_exit)] = {0};
	const struct ls_hdr *h, *out;
	char path[80], err[256];
	__u64 seed = 3, last = 0;
	int n = 0, outs = 0, held = 0, most = 0, rises = 0;

	(void)state;
	snprintf(path, sizeof(path), "%s.floor", C.path);
	unlink(path);
	ls_file_hdr_init(&hdr, 2, argv);
	assert_int_equal(ls_writer_open(&w, path, &hdr, &opts), 0);
	for (int i = 0; i < N; i++) {
		seed = seed * 6364136223846793005ull + 1442695040888963407ull;
		rec.ts = 1000000 + 100ull * i - (seed >> 58 == 0 ? (seed >> 20) % 12000 : 0);
		memcpy(buf, &rec, sizeof(rec));
		assert_int_equal(ls_writer_append(w, (struct ls_hdr *)buf), 0);
	}
	assert_int_equal(ls_writer_close(w, NULL, NULL), 0);
	assert_int_equal(ls_reader_open(&r, path, err, sizeof(err)), 0);
	while (ls_reader_next(r, &h) == 1) {
		ts[n] = h->ts;
		floor[n] = ls_reader_floor(r);
		rises += n && floor[n] > floor[n - 1];
		ls_order_floor(o, floor[n]);
		assert_int_equal(ls_order_push(o, h), 0);
		held++;
		while ((out = ls_order_pop(o, false))) {
			assert_true(out->ts >= last);
			last = out->ts;
			outs++, held--;
		}
		most = held > most ? held : most;
		n++;
	}
	assert_int_equal(n, N);
	check_floors(ts, floor, n);
	assert_true(rises > 20); /* frames of ~50 records: the floor follows them */
	assert_true(most < 400);  /* not the whole capture */
	while ((out = ls_order_pop(o, true))) {
		assert_true(out->ts >= last);
		last = out->ts;
		outs++;
	}
	assert_int_equal(outs, N);
	assert_int_equal(ls_order_late(o), 0);
	ls_order_free(o);
	ls_reader_close(r);
	unlink(path);
}

/* A floor that a record then belies (a frame header that lied): the record
 * is let through out of order and counted late, as past the window. */
static void test_order_floor_belied(void **state)
{
	struct ls_order *o = ls_order_new(1000);
	struct ls_hdr h = {.type = 1, .size = sizeof(h)};
	const struct ls_hdr *out;

	(void)state;
	h.ts = 50;
	assert_int_equal(ls_order_push(o, &h), 0);
	assert_null(ls_order_pop(o, false)); /* the window holds it */
	ls_order_floor(o, 60);
	out = ls_order_pop(o, false);
	assert_non_null(out);
	assert_int_equal(out->ts, 50);
	h.ts = 40;
	assert_int_equal(ls_order_push(o, &h), 0);
	out = ls_order_pop(o, false);
	assert_non_null(out);
	assert_int_equal(out->ts, 40);
	assert_int_equal(ls_order_late(o), 1);
	ls_order_free(o);
}

/* Records of many sizes, through several of the reorder buffer's 1 MiB
 * chunks (in-order copies) and the heap (late ones): each comes out whole,
 * in order; records still queued at ls_order_free are let go (ASan). */
static void test_order_chunks(void **state)
{
	enum { N = 6000, MAXB = 3000 };
	struct ls_order *o = ls_order_new(5000);
	static unsigned char buf[sizeof(struct ls_hdr) + MAXB];
	struct ls_hdr *h = (struct ls_hdr *)buf;
	__u64 seed = 11, t = 10000, n = 0, last = 0;
	const struct ls_hdr *out;

	(void)state;
	for (int pass = 0; pass < 2; pass++) {
		for (__u64 i = 0; i < N; i++) {
			seed = seed * 6364136223846793005ull + 1442695040888963407ull;
			size_t body = (seed >> 40) % MAXB;
			h->type = 1;
			h->size = sizeof(*h) + body;
			h->ts = seed >> 61 == 0 ? t - (seed >> 20) % 4000 : (t += 1 + (seed >> 33) % 7);
			h->tid = (__u32)i;
			memset(h + 1, (int)(i & 0xff), body);
			assert_int_equal(ls_order_push(o, h), 0);
			while ((out = ls_order_pop(o, false))) {
				const unsigned char *b = (const unsigned char *)(out + 1);
				for (size_t k = 0; k < out->size - sizeof(*out); k++)
					assert_int_equal(b[k], out->tid & 0xff);
				assert_true(out->ts >= last);
				last = out->ts;
				n++;
			}
		}
		if (pass == 0) /* the first pass drains; the second leaves records queued */
			while ((out = ls_order_pop(o, true))) {
				assert_true(out->ts >= last);
				last = out->ts;
				n++;
			}
		t += 5000; /* the next pass's late ones are later than all of these */
	}
	assert_true(n > N);
	assert_int_equal(ls_order_late(o), 0);
	ls_order_free(o);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_round_trip),
		cmocka_unit_test(test_header_fields),
		cmocka_unit_test(test_truncate_every_offset),
		cmocka_unit_test(test_bit_flips),
		cmocka_unit_test(test_garbage_and_empty),
		cmocka_unit_test(test_existing_file_refused),
		cmocka_unit_test(test_order),
		cmocka_unit_test(test_order_nearly_sorted),
		cmocka_unit_test(test_order_chunks),
		cmocka_unit_test(test_reader_floor),
		cmocka_unit_test(test_order_floor_belied),
	};
	return cmocka_run_group_tests_name("capture", tests, setup_corpus, teardown_corpus);
}
