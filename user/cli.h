/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The subcommands (one cmd_<name>.c each) and the small helpers they share.
 * Exit codes: 0 ok, 1 runtime failure, 2 usage error.
 */
#ifndef LATSPLIT_USER_CLI_H
#define LATSPLIT_USER_CLI_H

#include <stdbool.h>
#include <stdio.h>
#include <linux/types.h>

#define EXIT_USAGE 2

int cmd_record(int argc, char **argv);
int cmd_top(int argc, char **argv);
int cmd_timeline(int argc, char **argv);
/* `latsplit top`'s settings; record with a live screen instead of a file. */
struct ls_top_opts {
	unsigned long count; /* snapshots, then exit (0: until q or Ctrl-C) */
	double interval_s;
};
/* record, or with top_usage `latsplit top` (record's flags and top's). */
int ls_record_main(int argc, char **argv, void (*top_usage)(FILE *out));
int cmd_dump(int argc, char **argv);
int cmd_check(int argc, char **argv);
int cmd_report(int argc, char **argv);
int cmd_flame(int argc, char **argv);

/* "latsplit <cmd>: <message>\n" on stderr. */
void ls_err(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
__u64 ls_now_ns(void);
/* Parses a non-negative number with optional fraction; false if invalid. */
bool ls_parse_double(const char *s, double *out);
bool ls_parse_uint(const char *s, unsigned long max, unsigned long *out);
/* The optional capture FILE after the options (at optind); -1 (after a
 * one-line error) when more arguments follow. */
int ls_capture_arg(const char *cmd, int argc, char **argv, const char **path);

#include <stdio.h>
/* An output file named by -o, for writing: created 0600 (it holds request
 * paths and process names), or an existing regular file emptied; never
 * through a symbolic link, never a FIFO or a device (they could hang the
 * command or clobber what the link names). NULL after a one-line error. */
FILE *ls_open_output(const char *cmd, const char *path);

#endif
