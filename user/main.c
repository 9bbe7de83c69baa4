// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * latsplit entry point: subcommand dispatch (bpftool style) and the helpers
 * of cli.h.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "out/output.h"

#define LS_VERSION "0.1.0"

static const struct {
	const char *name;
	int (*fn)(int argc, char **argv);
	const char *summary;
} commands[] = {
	{"check", cmd_check, "what this host supports, and why not"},
	{"record", cmd_record, "capture scheduler, TCP, socket, engine, GPU and stack events"},
	{"top", cmd_top, "the split live: rates, percentiles per component, slowest requests"},
	{"dump", cmd_dump, "print every event of a capture, one line each"},
	{"report", cmd_report, "per-request latency split, summary and slowest requests"},
	{"flame", cmd_flame, "flame graphs: latency split, GPU, CPU, off-CPU; folded or SVG"},
	{"timeline", cmd_timeline, "a Perfetto trace: requests, threads, GPU streams, counters"},
};

void ls_err(const char *cmd, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "latsplit %s: ", cmd);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

__u64 ls_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (__u64)ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

bool ls_parse_double(const char *s, double *out)
{
	char *end;

	errno = 0;
	*out = strtod(s, &end);
	return s[0] && !*end && !errno && *out >= 0;
}

bool ls_parse_uint(const char *s, unsigned long max, unsigned long *out)
{
	char *end;

	if (!s[0] || s[0] == '-')
		return false;
	errno = 0;
	*out = strtoul(s, &end, 10);
	return !*end && !errno && *out <= max;
}

int ls_capture_arg(const char *cmd, int argc, char **argv, const char **path)
{
	if (optind < argc)
		*path = argv[optind++];
	if (optind < argc) {
		ls_err(cmd, "unexpected argument '%s'", argv[optind]);
		return -1;
	}
	return 0;
}

static void usage(FILE *out)
{
	fprintf(out, "usage: latsplit <command> [options]\n\n"
		     "Splits each LLM inference request's latency into network, queueing,\n"
		     "transfer and compute, from eBPF and GPU events.\n\ncommands:\n");
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		fprintf(out, "  %-8s %s\n", commands[i].name, commands[i].summary);
	fprintf(out, "\n'latsplit <command> --help' for a command's options.\n");
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		usage(stderr);
		return EXIT_USAGE;
	}
	if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help") || !strcmp(argv[1], "help")) {
		usage(stdout);
		return 0;
	}
	if (!strcmp(argv[1], "--version") || !strcmp(argv[1], "version")) {
		printf("latsplit %s\n", LS_VERSION);
		return 0;
	}
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++) {
		if (strcmp(argv[1], commands[i].name))
			continue;
		int rc = commands[i].fn(argc - 1, argv + 1);
		/* what went to stdout must have been written: `report --json >
		 * /dev/full` once exited 0 with nothing written */
		errno = 0;
		if (fflush(stdout) || ferror(stdout)) {
			ls_err(commands[i].name, "writing standard output failed: %s; free space where "
			       "it goes, or write elsewhere", errno ? strerror(errno) : "write error");
			return rc ? rc : 1;
		}
		return rc;
	}
	fprintf(stderr, "latsplit: unknown command '%s'; run 'latsplit --help' for the list\n",
		argv[1]);
	return EXIT_USAGE;
}

FILE *ls_open_output(const char *cmd, const char *path)
{
	char why[512];
	FILE *f = ls_out_open(path, why, sizeof(why));

	if (!f)
		ls_err(cmd, "%s", why);
	return f;
}
