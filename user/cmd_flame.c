// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * `latsplit flame`: flame graphs from a capture, folded or SVG. Flags and
 * wiring; the graphs' model is out/flame_build.c, the writers out/flame.c.
 */
#include <getopt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis.h"
#include "cli.h"
#include "flame.h"
#include "out/flame_build.h"

/* A cut or damaged capture draws less than was recorded: say what was lost,
 * as report does. */
static void warn_loss(const struct ls_reader *rd, const char *path)
{
	char loss[512];

	ls_reader_loss_line(rd, loss, sizeof(loss));
	if (loss[0])
		fprintf(stderr, "latsplit flame: warning: %s: %s\n", path, loss);
}

static void usage(FILE *out)
{
	fprintf(out,
		"usage: latsplit flame [FILE] [--kind latency|gpu|cpu|offcpu] [--svg] [-o OUT]\n"
		"                      [--request ID] [--component NAME] [--pid PID] [--ttft]\n\n"
		"Flame graph of a capture (default latsplit.data), as folded stacks (for\n"
		"flamegraph.pl, speedscope, inferno) or, with --svg, as an SVG.\n"
		"  --kind latency   requests' time by component and sub-part, ns (default)\n"
		"  --kind gpu       GPU time by process, launching CPU stack and kernel, ns\n"
		"  --kind cpu       on-CPU stack samples (latsplit record -F), samples\n"
		"  --kind offcpu    blocked time of tracked threads by blocking stack, ns\n"
		"  --request ID, --component NAME (e.g. queueing or queueing.engine), --pid PID\n"
		"  --ttft           the time-to-first-token split instead of the whole latency\n"
		"  --debug-dir DIR  debug files by build-id, for user addresses the capture\n"
		"                   holds no symbol for (recorded with --no-symbolize, or the\n"
		"                   binaries differ here); default /usr/lib/debug\n"
		"  -o OUT           write there instead of stdout\n");
}

int cmd_flame(int argc, char **argv)
{
	static const struct option longopts[] = {
		{"kind", required_argument, NULL, 'k'},    {"svg", no_argument, NULL, 's'},
		{"output", required_argument, NULL, 'o'},  {"request", required_argument, NULL, 'r'},
		{"component", required_argument, NULL, 'c'}, {"pid", required_argument, NULL, 'p'},
		{"ttft", no_argument, NULL, 't'},          {"help", no_argument, NULL, 'h'},
		{"debug-dir", required_argument, NULL, 'D'},
		{}};
	const char *path = "latsplit.data", *kind = "latency", *outpath = NULL, *component = NULL,
		   *debug_dir = NULL;
	unsigned long request = 0, pid = 0;
	bool svg = false, ttft = false;
	char err[512], title[256];
	struct ls_flame *f;
	FILE *out = stdout;
	int opt, rc = 0;

	optind = 1;
	while ((opt = getopt_long(argc, argv, "k:o:h", longopts, NULL)) != -1) {
		switch (opt) {
		case 'k': kind = optarg; break;
		case 's': svg = true; break;
		case 'o': outpath = optarg; break;
		case 'c': component = optarg; break;
		case 't': ttft = true; break;
		case 'D': debug_dir = optarg; break;
		case 'r':
		case 'p':
			if (!ls_parse_uint(optarg, ~0ul, opt == 'r' ? &request : &pid)) {
				ls_err("flame", "bad %s '%s'", opt == 'r' ? "--request" : "--pid", optarg);
				return EXIT_USAGE;
			}
			break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return EXIT_USAGE;
		}
	}
	if (ls_capture_arg("flame", argc, argv, &path))
		return EXIT_USAGE;
	if (ls_flame_kind_of(kind) < 0) {
		ls_err("flame", "unknown --kind '%s' (latency, gpu, cpu, offcpu)", kind);
		return EXIT_USAGE;
	}
	struct ls_flame_build b = {.kind = ls_flame_kind_of(kind), .ttft = ttft, .request = request,
				   .pid = pid, .component = component, .debug_dir = debug_dir,
				   .path = path};
	struct ls_sink sink = ls_flame_build_sink(&b);
	struct ls_analysis a;
	if (ls_flame_build_init(&b)) {
		ls_err("flame", "out of memory");
		return 1;
	}
	/* one pass: the analysis core's loop feeds the stack data too */
	if (ls_analysis_run(&a, path, &sink, 1, err, sizeof(err))) {
		ls_err("flame", "%s", err);
		ls_flame_build_free(&b);
		return 1;
	}
	warn_loss(a.rd, path);
	ls_analysis_free(&a);
	f = b.f;
	ls_flame_build_ends(&b, err, sizeof(err));
	if (err[0])
		fprintf(stderr, "latsplit flame: %s\n", err);
	if (!ls_flame_total(f))
		fprintf(stderr, "latsplit flame: nothing to draw (no %s data%s)\n", kind,
			request || pid || component ? " matching the filters" : "");
	if (outpath && !(out = ls_open_output("flame", outpath))) {
		ls_flame_build_free(&b);
		return 1;
	}
	if (svg) {
		if (!strcmp(kind, "cpu"))
			snprintf(title, sizeof(title), "latsplit cpu flame graph: %s (%llu samples)", path,
				 (unsigned long long)ls_flame_total(f));
		else
			snprintf(title, sizeof(title), "latsplit %s flame graph: %s%s (%.1f ms in all)",
				 kind, path, ttft ? ", time to first token" : "",
				 ls_flame_total(f) / 1e6);
		ls_flame_svg(f, out, title, !strcmp(kind, "cpu") ? "samples" : "ns");
	} else {
		ls_flame_folded(f, out);
	}
	if (out != stdout && fclose(out))
		rc = 1;
	ls_flame_build_free(&b);
	return rc;
}
