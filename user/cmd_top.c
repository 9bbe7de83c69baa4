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
		"the verdict. A request shows within about a second of its delivery, split\n"
		"provisionally (marked ~), and its final split replaces it 2 s later (late\n"
		"GPU, ACK and engine records are waited for, as report does). q or Ctrl-C\n"
		"quits and detaches everything.\n\n"
		"  -n, --snapshots N  print N snapshots, then exit (for scripts and tests)\n"
		"      --once         the same as -n 1\n"
		"  -i, --interval SEC seconds between snapshots (default 1)\n"
		"  -h, --help         this help\n"
		"Every `latsplit record` option works here too (-p, --port, --metrics, -o to\n"
		"keep a capture as well, ...): see latsplit record --help.\n");
}

int cmd_top(int argc, char **argv)
{
	return ls_record_main(argc, argv, usage);
}
