// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * `latsplit dump`: every record of a capture, one line each, in time order
 * (perf script style), or JSON lines. Reads through the capture reader only.
 */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "capture.h"
#include "cli.h"
#include "format.h"
#include "order.h"

#define REORDER_WINDOW_NS 2000000000ull

static void usage(FILE *out)
{
	fprintf(out, "usage: latsplit dump [FILE] [--json] [--no-header] [--absolute]\n\n"
		     "Prints every event of a capture (default latsplit.data) in time order.\n\n"
		     "  -j, --json       one JSON object per line (header first)\n"
		     "      --no-header  omit the capture header\n"
		     "      --absolute   text timestamps as raw CLOCK_MONOTONIC, not since start\n"
		     "  -h, --help       this help\n\n"
		     "Damage is reported on stderr; the exit code is 0 as long as the header\n"
		     "is readable.\n");
}

int cmd_dump(int argc, char **argv)
{
	static const struct option longopts[] = {{"json", no_argument, NULL, 'j'},
						  {"no-header", no_argument, NULL, 'H'},
						  {"absolute", no_argument, NULL, 'a'},
						  {"help", no_argument, NULL, 'h'},
						  {}};
	bool json = false, header = true, absolute = false;
	const char *path = "latsplit.data";
	struct ls_reader *r;
	struct ls_order *o;
	const struct ls_hdr *rec;
	char err[512], loss[512];
	__u64 drops = 0, events = 0;
	int opt;

	optind = 1;
	while ((opt = getopt_long(argc, argv, "jh", longopts, NULL)) != -1) {
		switch (opt) {
		case 'j':
			json = true;
			break;
		case 'H':
			header = false;
			break;
		case 'a':
			absolute = true;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return EXIT_USAGE;
		}
	}
	if (ls_capture_arg("dump", argc, argv, &path))
		return EXIT_USAGE;
	if (ls_reader_open(&r, path, err, sizeof(err)) < 0) {
		ls_err("dump", "%s", err);
		return 1;
	}
	const struct ls_file_hdr *h = ls_reader_header(r);
	__u64 base = absolute ? 0 : h->monotonic_ns;

	if (header)
		ls_format_header(stdout, h, json);
	o = ls_order_new(REORDER_WINDOW_NS);
	if (!o) {
		ls_reader_close(r);
		return 1;
	}
	for (;;) {
		int more = ls_reader_next(r, &rec);

		if (more == 1) {
			if (ls_order_push(o, rec)) {
				ls_err("dump", "out of memory");
				break;
			}
			if (rec->type == LS_REC_DROPS)
				drops = ((const struct ls_rec_drops *)rec)->total;
		}
		while ((rec = ls_order_pop(o, more != 1))) {
			ls_format_record(stdout, rec, base, json);
			events++;
		}
		if (more != 1)
			break;
	}
	if (!json)
		printf("# %llu records; ring-buffer drops: %llu%s\n", (unsigned long long)events,
		       (unsigned long long)drops,
		       ls_order_late(o) ? " (some records later than the reorder window)" : "");
	ls_reader_loss_line(r, loss, sizeof(loss));
	if (loss[0])
		fprintf(stderr, "latsplit dump: %s: %s\n", path, loss);
	ls_order_free(o);
	ls_reader_close(r);
	return 0;
}
