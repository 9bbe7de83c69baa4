// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * `latsplit top`: the split live, refreshed every second, like top(1) or
 * nvidia-smi dmon. Records as `latsplit record` does (same source flags:
 * -p, --port, -- COMMAND), into no file unless -o is given, and shows the
 * live analysis' recent window (out/top.c).
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static void usage(FILE *out)
{
	fprintf(out,
		"usage: latsplit top [-n N | --once] [-i SECONDS] [-p PID] [--port N] [RECORD OPTIONS]\n"
		"                    [-- COMMAND [ARGS...]]\n\n"
		"The latency split live: requests/s, in flight and drops; p50/p99 and share of\n"
		"each component and sub-part over the last 10 s; the slowest recent requests;\n"
		"the verdict. A request shows about 4 s after it ends (late GPU, ACK and\n"
		"engine records are waited for, as report does). q or Ctrl-C quits and\n"
		"detaches everything.\n\n"
		"  -n, --snapshots N  print N snapshots, then exit (for scripts and tests)\n"
		"      --once         the same as -n 1\n"
		"  -i, --interval SEC seconds between snapshots (default 1)\n"
		"  -h, --help         this help\n"
		"Every `latsplit record` option works here too (-p, --port, --metrics, -o to\n"
		"keep a capture as well, ...): see latsplit record --help.\n");
}

int cmd_top(int argc, char **argv)
{
	struct ls_top_opts top = {.count = 0, .interval_s = 1};
	/* record reads argv[-1] (the program) into the capture header */
	char **all = calloc(argc + 2, sizeof(char *)), **rest = all + 1;
	int nrest = 0, rc;

	if (!all)
		return 1;
	all[0] = argv[-1];
	rest[nrest++] = argv[0];
	/* our flags; the rest is record's (after --, the command's) */
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (!strcmp(a, "--")) {
			while (i < argc)
				rest[nrest++] = argv[i++];
			break;
		}
		if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			usage(stdout);
			free(all);
			return 0;
		}
		if (!strcmp(a, "--once")) {
			top.count = 1;
		} else if (!strcmp(a, "-n") || !strcmp(a, "--snapshots") || !strcmp(a, "-i") ||
			   !strcmp(a, "--interval")) {
			bool n = a[1] == 'n' || a[2] == 's';
			if (i + 1 == argc) {
				ls_err("top", "%s needs a value", a);
				free(all);
				return EXIT_USAGE;
			}
			a = argv[++i];
			if (n ? !ls_parse_uint(a, 1000000, &top.count) || !top.count
			      : !ls_parse_double(a, &top.interval_s) || !(top.interval_s >= 0.1) ||
					top.interval_s > 3600) {
				ls_err("top", "%s: expected %s", a,
				       n ? "a count, 1..1000000" : "seconds, 0.1..3600");
				free(all);
				return EXIT_USAGE;
			}
		} else {
			rest[nrest++] = argv[i];
		}
	}
	rest[nrest] = NULL;
	rc = ls_record_main(nrest, rest, &top);
	free(all);
	return rc;
}
