// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * `latsplit timeline`: a capture as a Perfetto trace. Flags and wiring; the
 * model is out/trace_build.c, the writer out/perfetto.c.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis.h"
#include "cli.h"
#include "out/trace_build.h"

static void usage(FILE *out)
{
	fprintf(out,
		"usage: latsplit timeline [FILE] [-o OUT] [--request ID] [--window T0,T1] [--pid PID]\n\n"
		"Writes a capture (default latsplit.data) as a Perfetto trace (default\n"
		"OUT: trace.perfetto-trace): a track per request with its phases and split,\n"
		"the engine threads' on-CPU, runnable and blocked spans, GPU streams with\n"
		"flows from each launch, counters (in flight, GPU busy, run queue,\n"
		"retransmits), engine events. Open it at https://ui.perfetto.dev or with\n"
		"trace_processor.\n"
		"  --request ID   only this request (and the threads' and GPU's spans)\n"
		"  --window T0,T1 only [T0, T1], seconds from the capture's first event\n"
		"  --pid PID      only this process\n"
		"  -o OUT         where to write\n");
}

int cmd_timeline(int argc, char **argv)
{
	static const struct option longopts[] = {
		{"output", required_argument, NULL, 'o'}, {"request", required_argument, NULL, 'r'},
		{"window", required_argument, NULL, 'w'}, {"pid", required_argument, NULL, 'p'},
		{"help", no_argument, NULL, 'h'},         {}};
	const char *path = "latsplit.data", *outpath = "trace.perfetto-trace";
	double w0 = 0, w1 = 0;
	unsigned long c_request = 0, c_pid = 0;
	char err[512];
	int opt, rc = 1;

	optind = 1;
	while ((opt = getopt_long(argc, argv, "o:h", longopts, NULL)) != -1) {
		switch (opt) {
		case 'o': outpath = optarg; break;
		case 'r':
		case 'p':
			if (!ls_parse_uint(optarg, ~0ul, opt == 'r' ? &c_request : &c_pid)) {
				ls_err("timeline", "bad %s '%s'", opt == 'r' ? "--request" : "--pid", optarg);
				return EXIT_USAGE;
			}
			break;
		case 'w': {
			char *comma = strchr(optarg, ',');
			if (!comma || (*comma = '\0', !ls_parse_double(optarg, &w0)) ||
			    !ls_parse_double(comma + 1, &w1) || w0 < 0 || w1 <= w0) {
				ls_err("timeline", "bad --window (T0,T1: seconds from the capture's start, "
				       "T0 < T1, e.g. 1.5,3)");
				return EXIT_USAGE;
			}
			break;
		}
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return EXIT_USAGE;
		}
	}
	if (ls_capture_arg("timeline", argc, argv, &path))
		return EXIT_USAGE;

	struct ls_trace *t = ls_trace_new(c_request, c_pid, w0, w1);
	struct ls_sink sink = ls_trace_sink(t);
	struct ls_analysis a;
	if (!t) {
		ls_err("timeline", "out of memory");
		return 1;
	}
	if (ls_analysis_run(&a, path, &sink, 1, err, sizeof(err))) {
		ls_err("timeline", "%s", err);
		ls_trace_free(t);
		return 1;
	}
	FILE *out = ls_open_output("timeline", outpath);
	size_t nev = 0;
	if (!out)
		goto out;
	if (ls_trace_write(t, out, &nev) || fclose(out)) {
		ls_err("timeline", "writing %s failed", outpath);
		goto out;
	}
	ls_reader_loss_line(a.rd, err, sizeof(err));
	if (err[0])
		fprintf(stderr, "latsplit timeline: %s: %s\n", path, err);
	fprintf(stderr, "latsplit timeline: %zu requests, %zu events -> %s (open at "
			"https://ui.perfetto.dev)\n",
		ls_trace_requests(t), nev, outpath);
	rc = 0;
out:
	ls_analysis_free(&a);
	ls_trace_free(t);
	return rc;
}
