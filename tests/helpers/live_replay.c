// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The live path, without a live host: hands a capture's records to the
 * analysis core one at a time through ls_analysis_push, as the ring-buffer
 * consumer would, with the per-CPU interleaving a ring shows (records
 * shuffled within runs of up to 32, fixed seed), printing each request with
 * report --json's writer as the analysis hands it over (final splits; the
 * live ordering window, ls_analysis_live). test_live.sh compares the output
 * with `latsplit report --json` on the same file: they must be identical.
 * Provisional splits are counted, and said on stderr ("provisional N").
 * Usage: live-replay CAPTURE
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis.h"
#include "out/request_json.h"

#define RUN 32

static int print_request(void *ctx, const struct ls_request_view *v)
{
	if (!v->final)
		(*(size_t *)ctx)++;
	else
		ls_request_json(stdout, v->r, v->s, v->j, v->inner, v->tl, NULL);
	return 0;
}

int main(int argc, char **argv)
{
	struct ls_analysis a = {0};
	struct ls_reader *rd;
	const struct ls_hdr *rec;
	struct ls_hdr *held[RUN];
	unsigned seed = 1;
	int nheld = 0, more = 1;
	char err[512];
	size_t nprov = 0;
	struct ls_sink sink = {.name = "replay", .request = print_request, .ctx = &nprov,
			       .provisional = true};

	if (argc != 2) {
		fprintf(stderr, "usage: live-replay CAPTURE\n");
		return 2;
	}
	if (ls_reader_open(&rd, argv[1], err, sizeof(err)) < 0) {
		fprintf(stderr, "live-replay: %s\n", err);
		return 1;
	}
	if (ls_analysis_begin(&a, ls_reader_header(rd), &sink, 1, err, sizeof(err))) {
		fprintf(stderr, "live-replay: %s\n", err);
		return 1;
	}
	ls_analysis_live(&a);
	while (more) {
		more = ls_reader_next(rd, &rec) == 1;
		if (more) {
			held[nheld] = malloc(rec->size);
			if (!held[nheld])
				return 1;
			memcpy(held[nheld++], rec, rec->size);
		}
		if (nheld == RUN || (!more && nheld)) {
			for (int i = nheld - 1; i > 0; i--) { /* Fisher-Yates */
				int j = rand_r(&seed) % (i + 1);
				struct ls_hdr *t = held[i];
				held[i] = held[j];
				held[j] = t;
			}
			for (int i = 0; i < nheld; i++) {
				if (ls_analysis_push(&a, held[i]))
					return 1;
				free(held[i]);
			}
			nheld = 0;
		}
	}
	if (ls_analysis_end(&a, err, sizeof(err))) {
		fprintf(stderr, "live-replay: %s\n", err);
		return 1;
	}
	struct ls_verdict v;
	ls_analysis_verdict(&a, false, &v);
	ls_verdict_json(stdout, &v);
	fprintf(stderr, "provisional %zu\n", nprov);
	ls_analysis_free(&a);
	ls_reader_close(rd);
	return 0;
}
