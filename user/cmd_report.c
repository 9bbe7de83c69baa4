// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * `latsplit report`: per-request latency split from a capture. Flags and
 * wiring; the formats are sinks of the analysis: out/report_text.c (a
 * summary, the slowest requests, per-client network facts, the verdict),
 * out/report_rows.c (one JSON record per request, DESIGN.md §6, or CSV),
 * out/html.c (one page).
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis.h"
#include "cli.h"
#include "out/html.h"
#include "out/report_rows.h"
#include "out/report_text.h"
#include "export/otlp.h"

static void usage(FILE *out)
{
	fprintf(out, "usage: latsplit report [FILE] [--json | --csv | --html [-o OUT]] [--ttft] [--top N]\n"
		     "                       [--otlp URL] [--trusted-proxy CIDR]...\n\n"
		     "Splits each HTTP request in a capture (default latsplit.data) into its\n"
		     "latency components, and summarises them.\n\n"
		     "  -j, --json    one JSON record per request (DESIGN.md §6 fields)\n"
		     "      --csv     one CSV row per request\n"
		     "      --ttft    sort and summarise by time to first token\n"
		     "  -n, --top N   slowest requests to list (default 10)\n"
		     "      --html    one self-contained HTML page (verdict, waterfall, flame\n"
		     "                graphs, the report); with -o FILE (default report.html)\n"
		     "  -o FILE       where --html writes\n"
		     "      --otlp URL  also export each request as an OpenTelemetry span (and\n"
		     "                its phases as children) to an OTLP/HTTP endpoint, e.g.\n"
		     "                http://127.0.0.1:4318 (/v1/traces is added when URL has\n"
		     "                no path); joined to the request's traceparent\n"
		     "      --trusted-proxy CIDR  believe X-Forwarded-For (or Forwarded) from\n"
		     "                peers in this network (repeatable, e.g. 10.0.0.0/8): the\n"
		     "                JSON's forwarded_for and the per-client table name the\n"
		     "                client it gives; peers on unix sockets and traced proxies\n"
		     "                are believed always, others never\n"
		     "  -h, --help    this help\n");
}

int cmd_report(int argc, char **argv)
{
	static const struct option longopts[] = {{"json", no_argument, NULL, 'j'},
						  {"csv", no_argument, NULL, 'c'},
						  {"ttft", no_argument, NULL, 't'},
						  {"top", required_argument, NULL, 'n'},
						  {"help", no_argument, NULL, 'h'},
						  {"html", no_argument, NULL, 'H'},
						  {"output", required_argument, NULL, 'o'},
						  {"otlp", required_argument, NULL, 'O'},
						  {"trusted-proxy", required_argument, NULL, 'T'},
						  {}};
	bool html = false;
	const char *outpath = NULL, *otlp_url = NULL;
	const char *path = "latsplit.data";
	bool json = false, csv = false, ttft = false;
	unsigned long top = 10;
	struct ls_analysis rs;
	struct ls_trust trust = {0};
	char err[512];
	int opt;

	optind = 1;
	while ((opt = getopt_long(argc, argv, "jn:ho:", longopts, NULL)) != -1) {
		switch (opt) {
		case 'H':
			html = true;
			break;
		case 'o':
			outpath = optarg;
			break;
		case 'O':
			if (ls_otlp_check_url(optarg, err, sizeof(err))) {
				ls_err("report", "%s", err);
				return EXIT_USAGE;
			}
			otlp_url = optarg;
			break;
		case 'T':
			if (ls_trust_add(&trust, optarg, err, sizeof(err))) {
				ls_err("report", "%s", err);
				return EXIT_USAGE;
			}
			break;
		case 'j':
			json = true;
			break;
		case 'c':
			csv = true;
			break;
		case 't':
			ttft = true;
			break;
		case 'n':
			if (!ls_parse_uint(optarg, 1000000, &top)) {
				ls_err("report", "bad --top '%s' (a count)", optarg);
				return EXIT_USAGE;
			}
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return EXIT_USAGE;
		}
	}
	if (json + csv + html > 1) {
		ls_err("report", "--json, --csv and --html exclude each other");
		return EXIT_USAGE;
	}
	if (outpath && !html) {
		ls_err("report", "-o is for --html (the other formats go to stdout)");
		return EXIT_USAGE;
	}
	if (ls_capture_arg("report", argc, argv, &path))
		return EXIT_USAGE;
	struct ls_report_text *text = NULL;
	struct ls_report_json js = {stdout, ttft, &trust};
	struct ls_html page;
	struct ls_otlp *otlp = NULL;
	struct ls_sink sink[3];
	size_t n = 0;
	if (json) {
		sink[n++] = ls_report_json_sink(&js);
	} else if (csv) {
		sink[n++] = ls_report_csv_sink(stdout);
	} else {
		if (!(text = ls_report_text_new(stdout, path, ttft, top, !html))) {
			ls_err("report", "out of memory for --top %lu", top);
			return 1;
		}
		ls_report_text_trust(text, &trust);
		sink[n++] = ls_report_text_sink(text);
	}
	if (html) {
		ls_html_init(&page, path, outpath ? outpath : "report.html", text);
		sink[n++] = ls_html_sink(&page);
	}
	if (otlp_url) {
		if (!(otlp = ls_otlp_new(otlp_url, err, sizeof(err)))) {
			ls_err("report", "%s", err);
			if (html)
				ls_html_free(&page);
			ls_report_text_free(text);
			return 1;
		}
		sink[n++] = ls_otlp_sink(otlp);
	}
	int rc = ls_analysis_run(&rs, path, sink, n, err, sizeof(err)) ? 1 : 0;
	if (rc)
		ls_err("report", "%s", err);
	if (!rc && (json || csv)) {
		ls_reader_loss_line(rs.rd, err, sizeof(err));
		if (err[0])
			fprintf(stderr, "latsplit report: %s: %s\n", path, err);
		if (rs.drops)
			fprintf(stderr, "latsplit report: %llu events were dropped while recording\n",
				(unsigned long long)rs.drops);
	}
	if (otlp) {
		ls_otlp_summary(otlp, err, sizeof(err));
		fprintf(stderr, "latsplit report: %s\n", err);
		ls_otlp_free(otlp);
	}
	if (!rc)
		ls_analysis_free(&rs);
	if (html)
		ls_html_free(&page);
	ls_report_text_free(text);
	return rc;
}
