// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * `latsplit dump`: every record of a capture, one line each, in time order
 * (perf script style), or JSON lines. Flags and wiring; the sink is
 * out/dump.c, driven by the analysis loop.
 */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "analysis.h"
#include "cli.h"
#include "out/dump.h"

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
	struct ls_analysis a;
	char err[512];
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
	struct ls_dump d = {.out = stdout, .json = json, .header = header, .absolute = absolute};
	struct ls_sink sink = ls_dump_sink(&d);
	if (ls_analysis_run(&a, path, &sink, 1, err, sizeof(err))) {
		ls_err("dump", "%s", err);
		return 1;
	}
	ls_reader_loss_line(a.rd, err, sizeof(err));
	if (err[0])
		fprintf(stderr, "latsplit dump: %s: %s\n", path, err);
	ls_analysis_free(&a);
	return 0;
}
