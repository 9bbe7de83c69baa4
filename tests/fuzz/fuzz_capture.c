// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * libFuzzer target for everything that reads a capture: the reader (file
 * header, frames, CRCs, resynchronisation), the text and JSON formatters of
 * dump, the analysis core (correlator, HTTP, timeline, join, attribution,
 * verdict, provisional splits) driving every command's sinks: report's
 * text, JSON and CSV, the HTML page, the Perfetto timeline, the latency
 * flame; and the stack graphs: the stack loader (stacks, symbols, samples,
 * blocks, launches, Python frames), the flame tree and its folded and SVG
 * writers. Every id, count, length and index in a capture is hostile.
 *
 * The first byte picks the mode:
 *  - odd: the rest is a capture file as is (framing, damage, truncation);
 *  - even: the rest is a stream of raw records, which the harness wraps in a
 *    valid header and one zlib frame with correct CRCs, so mutations reach
 *    the record consumers instead of dying at a CRC check.
 * Must not crash, leak or hang (every loop bounded by lengths from the file).
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "analysis.h"
#include "capture.h"
#include "columns.h"
#include "format.h"
#include "out/flame.h"
#include "out/flame_build.h"
#include "out/html.h"
#include "out/report_rows.h"
#include "out/report_text.h"
#include "out/trace_build.h"
#include "stacks.h"

static FILE *sink(void)
{
	static FILE *null;

	if (!null)
		null = fopen("/dev/null", "w");
	return null;
}

static int count_provisional(void *ctx, const struct ls_request_view *v)
{
	(*(size_t *)ctx) += !v->final;
	return 0;
}

/* The flame graphs' path: every sample's, blocked span's and launch's
 * frames into one tree, written folded and as SVG. */
static void graphs(struct ls_stack_loader *l)
{
	static char names[256][128];
	const char *fr[256];
	struct ls_stack_data d;
	struct ls_flame *f = ls_flame_new();

	ls_stack_loader_finish(l, &d);
	for (size_t i = 0; f && i < d.nsamples; i++) {
		const struct ls_sample *sm = &d.samples[i];
		int n = ls_stack_frames(&d, sm->pid, sm->comm, sm->ustack, sm->kstack, names, fr, 256);
		ls_flame_add(f, fr, n, 1);
	}
	for (size_t i = 0; f && i < d.nblocked; i++) {
		const struct ls_block *b = &d.blocked[i];
		int n = ls_stack_frames(&d, b->pid, b->comm, b->ustack, b->kstack, names, fr, 256);
		ls_flame_add(f, fr, n, b->end > b->ts ? b->end - b->ts : 1);
	}
	for (size_t i = 0; f && i < d.nlaunches; i++) {
		const struct ls_launch *g = &d.launches[i];
		int n = ls_stack_frames(&d, g->pid, "gpu", g->ustack, -1, names, fr, 256);
		ls_flame_add(f, fr, n, 1);
	}
	if (f) {
		ls_flame_folded(f, sink());
		ls_flame_svg(f, sink(), "fuzz", "samples");
		ls_flame_free(f);
	}
	ls_stack_data_free(&d);
}

static void consume(struct ls_reader *rd)
{
	struct ls_analysis a = {0};
	struct ls_stack_loader sl = {0};
	const struct ls_hdr *rec;
	char err[256];
	size_t nprov = 0, nev;
	struct ls_report_json js = {sink(), false};
	struct ls_report_text *text = ls_report_text_new(sink(), "fuzz", false, 3, true);
	struct ls_trace *trace = ls_trace_new(0, 0, 0, 0);
	struct ls_flame_build fb = {.kind = LS_FLAME_LATENCY};
	struct ls_html page;
	struct ls_sink sinks[7];
	size_t n = 0;

	if (!text || !trace || ls_flame_build_init(&fb))
		abort();
	ls_html_init(&page, "fuzz", "-", text);
	page.out = sink();
	sinks[n++] = ls_report_json_sink(&js);
	sinks[n++] = ls_report_csv_sink(sink());
	sinks[n++] = ls_report_text_sink(text);
	sinks[n++] = ls_html_sink(&page);
	sinks[n++] = ls_trace_sink(trace);
	sinks[n++] = ls_flame_build_sink(&fb);
	sinks[n++] = (struct ls_sink){.name = "provisional", .request = count_provisional,
				      .ctx = &nprov, .provisional = true};
	ls_format_header(sink(), ls_reader_header(rd), true);
	if (ls_analysis_begin(&a, ls_reader_header(rd), sinks, n, err, sizeof(err)))
		goto out;
	if (ls_reader_header(rd)->reserved[0] & 1)
		ls_analysis_live(&a); /* the live ordering window too */
	while (ls_reader_next(rd, &rec) == 1) {
		if (!(ls_reader_header(rd)->reserved[0] & 1)) /* a file: its frames tell */
			ls_analysis_floor(&a, ls_reader_floor(rd));
		ls_format_record(sink(), rec, 0, false);
		ls_format_record(sink(), rec, 0, true);
		ls_stack_loader_add(&sl, rec);
		if (ls_analysis_push(&a, rec))
			break;
	}
	graphs(&sl);
	ls_reader_loss_line(rd, err, sizeof(err));
	if (!ls_analysis_end(&a, err, sizeof(err))) {
		ls_trace_write(trace, sink(), &nev);
		ls_flame_folded(fb.f, sink());
	}
	ls_analysis_free(&a);
out:
	ls_html_free(&page);
	ls_report_text_free(text);
	ls_trace_free(trace);
	ls_flame_build_free(&fb);
}

/* Header + one frame holding `raw` (records), every CRC right. mode 2:
 * the records go through the field prediction and the column transform
 * first (as record writes them, constant columns elided; raw is changed);
 * mode 4: raw is taken as a transformed frame of `mode >> 3` records (the
 * decoder's own input, fuzzed), field-predicted when that count is odd,
 * elided when its bit 1 is set. */
static unsigned char *wrap(uint8_t *raw, size_t n, size_t *len, int mode)
{
	struct ls_file_hdr h;
	struct ls_frame_hdr f = {0};
	uLongf clen = compressBound(n);
	unsigned char *out = malloc(sizeof(h) + sizeof(f) + clen);
	__u32 nrec = 0;

	if (!out)
		return NULL;
	for (size_t at = 0; at + sizeof(struct ls_hdr) <= n && nrec < 1u << 20;) {
		const struct ls_hdr *r = (const void *)(raw + at);
		if (r->size < sizeof(*r) || r->size > n - at)
			break;
		nrec++;
		at += (r->size + 7) & ~7u;
	}
	if (mode & 2) {
		bool predicted = !ls_predict_encode(raw, n, nrec);
		unsigned char *enc = malloc(ls_columns_bound(n, nrec));
		bool elided = false;
		size_t elen = enc ? ls_columns_encode_elided(raw, n, nrec, enc, &elided) : 0;
		if (elen) {
			unsigned char *o2 = realloc(out, sizeof(h) + sizeof(f) + compressBound(elen));
			if (!o2) {
				free(enc);
				free(out);
				return NULL;
			}
			out = o2;
			clen = compressBound(elen);
			raw = enc; /* freed below */
			n = elen;
			f.flags = LS_FRAME_F_COLUMNS | (predicted ? LS_FRAME_F_PREDICT : 0) |
				  (elided ? LS_FRAME_F_CONST : 0);
		} else {
			free(enc);
			if (predicted)
				ls_predict_decode(raw, n, nrec, LS_PREDICT_VERSION);
		}
	} else if (mode & 4) {
		nrec = (__u32)(mode >> 3);
		f.flags = LS_FRAME_F_COLUMNS | (nrec & 1 ? LS_FRAME_F_PREDICT : 0) |
			  (nrec & 2 ? LS_FRAME_F_CONST : 0);
	}
	ls_file_hdr_init(&h, 0, NULL);
	h.track_all = n & 1;
	h.reserved[0] = (n >> 1) & 1; /* the harness's: live ordering window */
	h.crc = crc32(0, (const Bytef *)&h, offsetof(struct ls_file_hdr, crc));
	int zerr = compress2(out + sizeof(h) + sizeof(f), &clen, raw, n, 1);
	if ((mode & 2) && f.flags)
		free((void *)raw);
	if (zerr != Z_OK) {
		free(out);
		return NULL;
	}
	f.magic = LS_FRAME_MAGIC;
	f.comp_len = clen;
	f.raw_len = n;
	f.nrec = nrec;
	f.data_crc = crc32(0, out + sizeof(h) + sizeof(f), clen);
	f.hdr_crc = crc32(0, (const Bytef *)&f, offsetof(struct ls_frame_hdr, hdr_crc));
	memcpy(out, &h, sizeof(h));
	memcpy(out + sizeof(h), &f, sizeof(f));
	*len = sizeof(h) + sizeof(f) + clen;
	return out;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct ls_reader *rd;
	unsigned char *buf = NULL;
	size_t len;
	char err[256];

	if (size < 1)
		return 0;
	if (data[0] & 1) {
		buf = malloc(size - 1 ? size - 1 : 1); /* aligned, as a mapped file is */
		if (!buf)
			return 0;
		memcpy(buf, data + 1, size - 1);
		len = size - 1;
	} else {
		uint8_t *raw = malloc(size - 1 ? size - 1 : 1);
		if (!raw)
			return 0;
		memcpy(raw, data + 1, size - 1);
		buf = wrap(raw, size - 1, &len, data[0]);
		free(raw);
		if (!buf)
			return 0;
	}
	if (ls_reader_open_mem(&rd, buf, len, err, sizeof(err)) == 0) {
		consume(rd);
		ls_reader_close(rd);
	}
	free(buf);
	return 0;
}
